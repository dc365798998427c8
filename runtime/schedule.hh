// A collective as a schedule: a DAG of steps (after MPICH gentran, whose algorithms add
// vertices with the list of vertices they wait for; and LibNBC, whose schedules are written
// down and run by one interpreter). Builders (runtime/coll/) produce it from inputs that are
// identical on every rank (sizes, ranks, root, page size, the settings that shape messages,
// checked at MPI_Init), so all ranks agree on the messages, their lengths and tags; offsets are
// rank-local. The executor (runtime/executor.hh) runs it.
//
// Grammar (what a builder may write):
//
//   schedule := step*                       steps are numbered in the order they were added
//   step     := kind peer offset length [source] tag_offset priority sub edge after*
//   kind     := Send | Recv | Copy | Put | Flag | Await     (Handoff: reserved)
//   after    := an earlier step's number    the step starts only once every `after` is done
//
//   Send     a message of `length` bytes to `peer`, read from the send area at `offset`
//   Recv     a message from `peer`, written into the receive area at `offset`
//   Copy     `length` bytes from the send area at `source` to the receive area at `offset`
//            (no message; completes like a Recv: published, then done)
//   Put      RMA (runtime/rma_transport.hh): `length` bytes into `peer`'s data window at
//            `offset` in the broadcast's slot, read from the send area at `offset` (the root) or
//            from this rank's own data window (a rank forwarding what it received)
//   Flag     RMA: atomically raises `peer`'s request flag number `tag_offset` for this
//            broadcast (flag 0 also carries the description: root, window id, size, sequence);
//            tag_offset == kDoneCounter: adds one to `peer`'s done counter (the root's)
//   Await    RMA: waits until this rank's flag `tag_offset` is raised for this broadcast, then
//            takes `length` bytes at `offset` out of its data window into the receive area
//            (lands like a Recv: published, then done); tag_offset == kSlotFree: waits until
//            the broadcast slot's previous use is done on every rank (the root's done counter);
//            kAllDone: until every rank counted this broadcast done (length 0)
//   tag      the collective's base tag + `tag_offset` (< kTagsPerCollective)
//   priority lower starts first: receives all at once, sends in this order through the send
//            gate (TNBC_SEND_WINDOW; node-level arbitration plugs in there)
//   sub      the sub-message it belongs to (peer for exchanges, chunk for a broadcast): what the
//            trace pass records reads of and a profile orders
//   edge     a head or tail (may land in a receiver's partial page): started from inside the
//            call, so that other ranks' calls do not wait for this rank's progress thread
//
// Pure: no MPI, no globals (the `tnbc` tool and the unit tests link it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

namespace tnbc {

enum class StepKind : std::uint8_t { Send, Recv, Copy, Put, Flag, Handoff, Await };
const char* step_kind_name(StepKind k);
// Steps whose data lands in the receive area and is published into the program's buffer.
inline bool lands(StepKind k) { return k == StepKind::Recv || k == StepKind::Copy || k == StepKind::Await; }

// How one rank's sends in a collective relate to its receives (Schedule::send_role).
enum class SendRole : std::uint8_t {
  Staged,   // it receives, and every send's data is there from the start (the exchanges)
  Forward,  // some send waits for a receive (a broadcast's inner rank forwarding what it got)
  Only,     // it receives nothing (a broadcast's root)
};
inline constexpr std::size_t kSendRoleCount = 3;
// Steps that hand bytes to another rank (what a timeout report calls "not delivered").
inline bool delivers(StepKind k) { return k == StepKind::Send || k == StepKind::Put || k == StepKind::Flag; }
// The counters a Flag or Await step names instead of a request flag (tag_offset, RMA only).
inline constexpr int kDoneCounter = -1;  // Flag: count this rank done at the root
inline constexpr int kAllDone = -1;      // Await at the root: every rank counted done
inline constexpr int kSlotFree = -2;     // Await at the root: the slot's previous broadcast is done

struct Step {
  StepKind kind = StepKind::Recv;
  int peer = -1;
  std::size_t offset = 0;   // Send: into the send area; Recv, Copy: into the receive area
  std::size_t length = 0;
  std::size_t source = 0;   // Copy: where in the send area it copies from
  int tag_offset = 0;
  std::int64_t priority = 0;
  int sub = -1;
  bool edge = false;
};

class Schedule {
 public:
  // Adds a step that starts once every step in `after` is done; returns its number.
  int add(const Step& s, std::initializer_list<int> after = {});
  int add(const Step& s, std::span<const int> after);
  std::size_t size() const { return steps_.size(); }
  bool empty() const { return steps_.empty(); }
  const Step& operator[](std::size_t i) const { return steps_[i]; }
  std::span<const Step> steps() const { return steps_; }
  auto begin() const { return steps_.begin(); }
  auto end() const { return steps_.end(); }
  std::span<const int> after(std::size_t i) const {
    return std::span<const int>(deps_).subspan(first_dep_[i], first_dep_[i + 1] - first_dep_[i]);
  }
  std::size_t count(StepKind k) const;
  // Landing steps that carry bytes (what a guard holds back).
  std::size_t landing_with_bytes() const;
  // How this rank's sends relate to its receives (what the send window depends on: policy.hh).
  SendRole send_role() const;

 private:
  std::vector<Step> steps_;
  std::vector<std::uint32_t> first_dep_{0};  // step i waits for deps_[first_dep_[i] .. first_dep_[i + 1])
  std::vector<int> deps_;
};

// ---- cutting sub-messages into pieces (shared by the builders) ----

// Tags one collective may use: every step's tag_offset is below this (the engine gives each
// collective on a communicator a block of this many tags, runtime/engine.cc).
inline constexpr int kTagsPerCollective = 128;
// So a sub-message has at most this many body pieces (its head and tail take one tag each),
// and a broadcast at most this many pieces in all its middle chunks.
inline constexpr std::size_t kMaxBodyPieces = kTagsPerCollective - 2;

// TNBC_PIECE_BYTES: how a body is cut into pieces. nullopt: auto (below); 0: not at all (the
// whole body is one piece); else at most that many bytes per piece (rounded down to whole
// pages, at least one page).
using PieceSetting = std::optional<std::uint64_t>;

// TNBC_PIECE_BYTES=auto = max(kAutoPieceMinBytes, sub-message / kAutoPiecesPerSub), in whole
// pages: about four pieces per sub-message, none so small that its fixed costs (one more
// message, one more publication) dominate its transfer. Why these numbers: docs/settings.md
// (TNBC_PIECE_BYTES) and docs/benchmarks.md ("Pieces").
inline constexpr std::size_t kAutoPieceMinBytes = 128 * 1024;
inline constexpr std::size_t kAutoPiecesPerSub = 4;

// The most bytes a body piece of a sub-message (or broadcast chunk) of `length` bytes may
// have: a whole number of pages, at least one; SIZE_MAX for "no cut" (setting 0).
std::size_t piece_limit(std::size_t length, std::size_t page, PieceSetting setting);

// How the bodies of one call are cut: TNBC_PIECE_BYTES as set, or under auto the cost model's
// rule (runtime/model/estimate.hh, piece_scale): k = sqrt(length / scale) pieces, where scale is
// the fixed cost of one more piece (a message, a publication, noticing it) over the call's
// transfer time per byte — the k that minimises k x fixed cost + the wait for one piece of
// length / k; fewer than 2 pieces: not cut. Without a model (scale 0) auto is the rule of thumb
// above. Both ends of a sub-message compute the same limit: the length, the page size and the
// scale (from inputs equal on every rank) are all they use.
struct PieceRule {
  PieceSetting setting;
  double scale_bytes = 0;
  PieceRule(PieceSetting s = std::nullopt, double scale = 0) : setting(s), scale_bytes(scale) {}
};
std::size_t piece_limit(std::size_t length, std::size_t page, const PieceRule& rule);

// Cuts [begin, end) into at most `max_pieces` pieces of at most `limit` bytes (or the fewest
// that `max_pieces` allows), balanced: every piece but the last is the same whole number of
// pages long. Returns the inner cut points (neither `begin` nor `end`); `begin` must be
// page-aligned relative to what the cuts should align with.
std::vector<std::size_t> body_cuts(std::size_t begin, std::size_t end, std::size_t page, std::size_t limit,
                                   std::size_t max_pieces = kMaxBodyPieces);

// Where each sub-message's pieces begin and end. A sub-message of `length` bytes longer than
// two pages is cut into a head [0, page), body pieces and a tail [length - page, length), so
// that the bytes any receiver holds in a partial (unguardable) first or last page of its buffer
// arrive as small messages of their own:
//
//   offset 0     page        page+P      page+2P               length-page    length
//          | head |  body 0   |  body 1   |  ...  | body m-1    |     tail     |
//          tag 0    tag 1       tag 2               tag m         tag m+1
//
// Body pieces are whole pages long (P = `limit` or less, balanced), except the last one, which
// ends where the tail begins. The cuts are page multiples from the sub-message's start, which
// is what sender and receiver share: in a receive buffer that is not page-aligned, each body
// cut falls inside a page, and that page becomes a region of its own waiting for both pieces
// (guard.cc, plan_regions). Returns the cut points including 0 and length.
std::vector<std::size_t> split_points(std::size_t length, std::size_t page, std::size_t limit = SIZE_MAX);

// The cut the exchange builders use: as above with the limit piece_limit(length, rule), except
// that under auto (no TNBC_PIECE_BYTES) the body's first and last pieces are smaller — a ramp up
// and a ramp down, each piece twice (half) the one before, from limit / 2^kRampDoublings (whole
// pages, never below kAutoPieceMinBytes; no ramp where that is above half the limit) — and the
// middle is balanced at the limit, no piece longer than it:
//
//   | head | s | 2s | P | P | ... | P' | 2s | s | tail |      s = P / 4, P = the limit
//
// A reader slower than the arrival waits for the first piece only, which is now small; a reader
// faster than it reads the last piece after it has arrived, which is now small too; in between
// the pieces stay as large as the cost model allows (their fixed costs). A ramp that does not
// fit (a body shorter than both ramps and one full piece) loses its largest steps first.
// Explicit settings keep the balanced cut. docs/benchmarks.md, "Core efficiency".
inline constexpr int kRampDoublings = 2;
std::vector<std::size_t> split_points(std::size_t length, std::size_t page, const PieceRule& rule);

}  // namespace tnbc
