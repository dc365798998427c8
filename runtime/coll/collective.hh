// What a collective is to tnbc: one implementation of `Collective` per file in runtime/coll/
// (bcast.cc, alltoall.cc, allgather.cc, ...), found by Kind (index.cc), run by the engine
// (runtime/engine.hh) and by the trace pass (trace/tracer.hh) alike.
//
//   shim (generated entry point)  -> CollCall: the arguments, normalized
//   Collective::size()            -> what the global decision compares (policy: route)
//   Collective::layout()          -> sub-messages and where they are in the program's buffers
//                                    (profile look-ups, the trace pass)
//   Collective::prepare()         -> staging (fences, send copy, receive area) and the schedule
//                                    (runtime/schedule.hh): everything the engine then runs
//                                    generically (guard, executor, publication)
//
// A collective file calls no MPI function and uses no process state: whatever it needs from MPI
// (type sizes and extents, packing) or from the engine (staging memory, fences, decisions) it
// asks through Types / Services, so the files are unit-tested with fakes and link into the
// `tnbc` tool (mpi.h is included for the handle types only).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/datatype.hh"
#include "runtime/policy.hh"
#include "runtime/schedule.hh"
#include "runtime/status.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

// One buffer argument: `count` elements (or per-peer `counts` at `displs`, in elements of the
// type's extent) of `type` at `buf`.
struct BufferArg {
  const void* buf = nullptr;
  int count = 0;
  const int* counts = nullptr;
  const int* displs = nullptr;
  MPI_Datatype type{};
};

// The arguments of one intercepted call, as the shim's entry point received them. A broadcast's
// buffer is `recv`; `in_place`: the send buffer argument was MPI_IN_PLACE.
struct CollCall {
  Kind kind = Kind::Bcast;
  CallSite site;
  MPI_Comm comm{};
  BufferArg send, recv;
  int root = -1;
  bool in_place = false;
};

// What every part that looks at a call knows besides its arguments.
struct CallContext {
  int rank = 0, size = 1;  // in the call's communicator
  std::size_t page = 4096;
  Types* types = nullptr;
  Policy* policy = nullptr;
  const model::Topology* topology = nullptr;  // where the communicator's ranks run (never null)
};

// What a call sends and receives, before anything is staged.
struct Layout {
  CallShape shape;                  // per sub-message sizes, as every rank computes them (profile keys)
  std::uint64_t received = 0;       // bytes this rank receives (the summary's `bytes`)
  std::uint64_t sent = 0;           // bytes this rank sends from the program's buffer (the trace)
  std::size_t unit = 0;             // what TNBC_MIN_BYTES is compared with (table: SizeUnit)
  bool receives = true;             // false: this rank receives nothing (a broadcast's root)
  bool recv_dense = false, send_dense = false;
  std::vector<ByteRange> recv_spans;  // per sub-message: its bytes in the program's receive buffer
  std::vector<ByteRange> send_spans;  // the blocks of the program's send buffer that are sent
  ByteRange recv_extent;            // all of the receive buffer the call writes
};
// SizeUnit::None: the sizes differ between ranks, nothing global to compare.
inline constexpr std::size_t kNoUnit = SIZE_MAX;

// What the engine lends a collective while it prepares a call: staging memory tied to the call,
// fences, packing, and the decisions (policy).
class Services : public Types {
 public:
  // Waits until no collective in flight still writes or guards these bytes (a new collective may
  // reuse a buffer an earlier one has not published yet).
  virtual void fence(const void* buf, long long count, MPI_Datatype t) = 0;
  // Staging that Send steps read (nullptr: out of memory). Freed with the call.
  virtual char* send_area(std::size_t bytes) = 0;
  // Staging that Recv steps write, at the same offset in its pages as `user` (so whole pages can
  // move between the two); nullptr: out of memory. Freed with the call.
  virtual char* recv_area(std::size_t bytes, const void* user) = 0;
  // `count` elements of `t` at `src` as `bytes` dense bytes at `dst` (memcpy when dense).
  virtual Status pack(const void* src, long long count, MPI_Datatype t, char* dst, std::size_t bytes) = 0;
  virtual Policy& policy() = 0;
  // How this broadcast travels: the policy's global choice, or p2p where the RMA windows it
  // needs could not be had on every rank (the engine decides that alike on all ranks; it may
  // create or grow the communicator's windows here, a collective operation).
  virtual BcastBackend bcast_backend(std::size_t bytes, const model::Topology& comm) { return policy().bcast_backend(bytes, comm); }
};

// Bytes of the receive area to copy into the program's buffer with its datatype, after the last
// receive (a receive type that is not dense: the call completes in it).
struct Unpack {
  std::size_t offset = 0, bytes = 0;
  void* user = nullptr;
  long long count = 0;
  MPI_Datatype type{};
};

// Where the received data lands in the program's buffer, for holding its pages back.
struct GuardSpan {
  std::uintptr_t base = 0;  // the receive area's offsets are relative to this address
  std::uintptr_t lo = 0, hi = 0;  // the bytes the call writes
  ByteRange own;            // this rank's own block, already in place (received by nobody)
};

// A prepared call: the schedule and its data, ready for the engine.
struct Prepared {
  Schedule schedule;
  char* send_data = nullptr;   // the send area Send steps read (may be the program's buffer)
  char* recv_data = nullptr;   // the receive area Recv steps write (may be the program's buffer)
  char* user_recv = nullptr;   // where published steps go (nullptr: Unpack at the end;
                               // == recv_data: received in place, nothing to copy)
  // Per step: where a Send step's bytes are in the program's send buffer when they were not
  // copied into the send area yet (the engine copies them, now or lazily); empty: all copied.
  std::vector<const char*> send_src;
  std::vector<Unpack> unpack;
  // Rank-local: what in the call's layout keeps it from returning early (noncontiguous_datatype;
  // None: nothing). Whether it completes in the call for other reasons (no overlap to gain at
  // its site, too little received here) the engine decides, before preparing it.
  Reason local = Reason::None;
  GuardSpan guard;
};

class Collective {
 public:
  virtual ~Collective() = default;
  // Received and sent bytes and the threshold unit, from the arguments alone (cheap: every call
  // asks). `sent`: what this rank's sub-messages carry (own block included; in place, what the
  // receive side says; a broadcast's root sends the message once, the others nothing).
  struct Size {
    std::uint64_t received = 0;
    std::size_t unit = kNoUnit;
    std::uint64_t sent = 0;
  };
  virtual Size size(const CollCall& c, const CallContext& ctx) const = 0;
  virtual Layout layout(const CollCall& c, const CallContext& ctx) const = 0;
  // Stages the call and builds its schedule. `in_call`: the call completes in it whatever
  // happens (no overlap to gain), so the program's own buffers may be sent from and received
  // into. An error (type signatures that do not match, out of memory) leaves nothing started.
  virtual Status prepare(const CollCall& c, const Layout& l, bool in_call, const CallContext& ctx, Services& s,
                         Prepared& out) const = 0;
};

// The implementation of `k` (runtime/coll/index.cc).
const Collective& collective(Kind k);

}  // namespace tnbc
