// A collective as a schedule of pieces (after LibNBC's rounds and MPICH gentran's DAGs).
//
// A piece is one point-to-point message: a whole sub-message, or the head, one body piece or
// the tail of one (see `split_points`). Each piece says what to send or receive, to or from
// which peer, at which offset of the schedule's staging buffers, with which tag and priority;
// a send may wait for one receive to complete first (`after`, a broadcast's forwarding edge).
// The progress thread posts receives at once and sends in priority order (lower value first)
// through a bounded window.
//
// Builders use only inputs that are identical on every rank (sizes, ranks, root, page size,
// TNBC_PIECE_BYTES — checked to be equal on all ranks at MPI_Init, runtime/runtime.cc), so all
// ranks agree on the pieces, their lengths and their tags; offsets are rank-local.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tnbc {

enum class Dir : std::uint8_t { Send, Recv };

struct Piece {
  Dir dir = Dir::Recv;
  int peer = -1;
  std::size_t offset = 0;  // Send: into the send staging; Recv: into the receive layout
  std::size_t length = 0;
  int tag_offset = 0;      // added to the schedule's base tag
  std::int64_t priority = 0;
  int after = -1;          // index of a Recv piece this Send waits for (-1: none)
  int sub = -1;            // which sub-message (peer for all-to-all, chunk for broadcast)
  bool edge = false;       // a head or tail (may land in a receiver's partial page): the
                           // calling thread sends it before returning
};

// Tags one collective may use: every piece's tag_offset is below this (the engine gives each
// collective on a communicator a block of this many tags, runtime/engine.cc).
inline constexpr int kTagsPerCollective = 128;
// So a sub-message has at most this many body pieces (its head and tail take one tag each),
// and a broadcast at most this many pieces in all its middle chunks.
inline constexpr std::size_t kMaxBodyPieces = kTagsPerCollective - 2;

// TNBC_PIECE_BYTES: how a body is cut into pieces. nullopt: auto (below); 0: not at all (the
// whole body is one piece); else at most that many bytes per piece (rounded down to whole
// pages, at least one page).
using PieceSetting = std::optional<std::uint64_t>;

// The cost model of TNBC_PIECE_BYTES=auto (docs/architecture.md, "Piece size"). Each further
// piece costs one more MPI message (matching, a rendezvous above the eager limit, one more
// completion the progress thread must get a CPU to see) and one more region to publish (one
// more UFFDIO_MOVE, UFFDIO_COPY or mprotect, ~10-50 us fixed each on the VMs here:
// docs/benchmarks.md, guard_costs); it buys that a program reading the data right after the call waits for the
// first piece of a sub-message instead of its whole body.
//   auto = max(kAutoPieceMinBytes, sub-message / kAutoPiecesPerSub), in whole pages:
// - kAutoPieceMinBytes keeps the fixed costs small against a piece's own transfer time: on the
//   emulated 4 Gbit/s link, 64 KiB pieces (16 per MiB) made Table 1 (c) measurably slower than
//   uncut bodies — more messages than the send window and the busy CPUs keep moving —, 128 KiB
//   and larger ones did not;
// - kAutoPiecesPerSub bounds the extra messages and publications per sub-message however large
//   it is. At 1 MiB per peer 256 KiB pieces (4) were a little better than 128 KiB (8) and both
//   better than uncut bodies; at 4 MiB per peer 256 KiB, 512 KiB and 1 MiB pieces measured alike
//   and better than uncut: so the fewest pieces that got the gain, 4 (docs/benchmarks.md,
//   "Pieces"; measured at np 4 on a shared 2-core VM, where differences below ~0.1 of ach/ideal
//   are noise).
inline constexpr std::size_t kAutoPieceMinBytes = 128 * 1024;
inline constexpr std::size_t kAutoPiecesPerSub = 4;

// The most bytes a body piece of a sub-message (or broadcast chunk) of `length` bytes may
// have: a whole number of pages, at least one; SIZE_MAX for "no cut" (setting 0).
std::size_t piece_limit(std::size_t length, std::size_t page, PieceSetting setting);

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

// Alltoall(v): `send_bytes[p]` / `send_offset[p]` (into the send staging) and `recv_bytes[p]` /
// `recv_offset[p]` (into the receive layout) for every peer p; the block to self is not a
// piece (the engine copies it). Each sub-message is cut by split_points with the limit
// piece_limit(its length, page, `pieces`), so the sender and the receiver of a sub-message
// cut it alike. `order` lists the peers in the order this rank's data is needed by receivers
// (default: 0..n-1). Send priority, lowest first:
//
//   1. heads and tails, all peers (the calling thread sends them before it returns),
//   2. body pieces: by place in `order`, then by piece index, then ring distance
//      (peer - rank mod n) — body 0 to every peer, then body 1 to every peer, ...:
//
//   rank r = 1, n = 4, 3 body pieces each        send staging             receive layout
//     edges:  h2 t2 h3 t3 h0 t0                   [to p0|to p2|to p3]      [p0][p1=self][p2][p3]
//     bodies: b0>2 b0>3 b0>0  b1>2 b1>3 b1>0       Isend(peer, tag) in      Irecv(peer, tag) for
//             b2>2 b2>3 b2>0                       this order, window W     every piece, all posted
//
// so that every receiver gets the start of its sub-message first, and a reader right after
// the call waits for one piece, not for a whole body. Receives are posted in the same
// scheme with the sender's place in `order`.
std::vector<Piece> build_alltoallv(int rank, int size, const std::vector<std::size_t>& send_bytes,
                                   const std::vector<std::size_t>& send_offset,
                                   const std::vector<std::size_t>& recv_bytes,
                                   const std::vector<std::size_t>& recv_offset, std::size_t page,
                                   const std::vector<int>& order, PieceSetting pieces);

// Broadcast chunks: the first page, `segments` page-multiple segments, the last page (chunks of
// zero length are dropped). The chunks are what the trace pass records reads of and what a
// profile orders (trace/tracer.cc computes the same list); the root sends chunks in
// `chunk_order` (default: the order of the chunk list); every rank uses the same list.
struct Chunk {
  std::size_t offset, length;
};
std::vector<Chunk> bcast_chunks(std::size_t bytes, std::size_t page, int segments);
// How many segments a broadcast of `bytes` gets: one per three pages (the smallest guardable
// segment: a whole page between the partial pages it may share), at least 1, at most
// `max_segments` (TNBC_BCAST_MAX_SEGMENTS). Depends on the message and settings only, never on
// measured costs, so the trace pass and the optimized pass cut alike.
int bcast_segments(std::size_t bytes, std::size_t page, int max_segments);

// Binomial tree over relative ranks (rel = (rank - root + n) % n), segmented and pipelined:
//
//          0            piece k: 0 -> 4, 0 -> 2, 0 -> 1   (largest subtree first)
//        / | \                   2 -> 3 after 2 received k
//       4  2  1                  4 -> 6, 4 -> 5 after 4 received k; 6 -> 7 likewise
//      / \   |
//     6   5  3              An inner node forwards piece k as soon as k has arrived, while
//     |                     later pieces are still in flight.
//     7
//
// The first and last chunks are one piece each. With an explicit TNBC_PIECE_BYTES every middle
// chunk is cut into pieces by body_cuts with piece_limit(chunk length, page, `pieces`) (at most
// kMaxBodyPieces in all the middle chunks together); with auto (nullopt) it is not: the
// segments are a pipeline of pieces already, and each further piece costs every inner node a
// round trip through its progress thread (receive seen, forward posted) — cut at 128-256 KiB,
// Table 1 (b)/(c) measured slower than with whole segments (docs/benchmarks.md, "Pieces"). Pieces are numbered along the chunk list (not `chunk_order`, which
// may differ between ranks), piece by piece, and tag_offset = that number:
//
//   chunks   | first page |      segment 1       |      segment 2       | last page |
//   pieces   |     0      |  1  |  2  |  3  |  4  |  5  |  6  |  7  |  8 |     9     |
//
// They are sent in `chunk_order` (the edges first, engine.cc), within a chunk piece by piece;
// Piece::sub is the chunk. Offsets of Send and Recv pieces both index the same buffer (the
// root's copy, or the receive staging that non-roots forward from).
std::vector<Piece> build_bcast(int rank, int size, int root, const std::vector<Chunk>& chunks,
                               const std::vector<int>& chunk_order, std::size_t page, PieceSetting pieces);

// Binomial tree helpers (exposed for tests).
int bcast_parent(int rank, int size, int root);
std::vector<int> bcast_children(int rank, int size, int root);

}  // namespace tnbc
