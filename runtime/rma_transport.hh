// The RMA broadcast's windows and transport (seed 000, Paznikov; issue 21). The schedule comes
// from runtime/coll/bcast_rma.cc (Put, Flag and Await steps); this file carries those steps to
// MPI one-sided communication.
//
// Windows, per private communicator (runtime/comm_cache.hh), created on the first RMA broadcast
// and reused; all passive target (MPI_Win_lock_all once, MPI_MODE_NOCHECK):
//
//   data    MPI_Win_allocate'd, tnbc-owned staging: kRmaSlots slots of slot_bytes each. A
//           broadcast of more bytes than a slot creates a larger window (a new window id);
//           every rank decides that alike, from the broadcast's size. The superseded window is
//           freed first, before the larger one is allocated (peak memory: one window, not the
//           sum of all sizes so far): every rank, in that same broadcast call, first waits
//           until its collectives in flight have finished (as MPI_Comm_free does: the progress
//           threads finish them without the calling threads), so no operation of any rank
//           still uses it, then frees it (collective). Growth doubles the slot, so this drain
//           happens at most log2(largest / kRmaMinSlotBytes) times per communicator.
//   control int64 words, per slot: kRmaFlagsPerSlot request flags (one per chunk), the
//           description (root, window id, size, sequence + 1), the done counter.
//
// Sequence numbers: the n-th RMA broadcast on a communicator uses slot n % kRmaSlots; its flags
// are raised to n + 1. A root starts putting once the previous broadcast in its slot was
// counted done by every rank (its root's done counter reached the value every rank computes
// for it), so back-to-back broadcasts overlap up to kRmaSlots deep, and nothing waits for the
// previous broadcast to finish everywhere.
//
// Step by step (runtime/schedule.hh grammar):
//   Put    MPI_Rput into the peer's data window; once locally complete, MPI_Win_flush (remote
//          completion) before the step is done, so its Flag (after it) is seen after the data.
//   Flag   chunk 0 first puts the description and flushes it; then MPI_Accumulate(REPLACE) of
//          the sequence into the peer's flag and MPI_Win_flush. Done counter: MPI_Accumulate(SUM).
//   Await  MPI_Fetch_and_op(MPI_NO_OP) on this rank's own flag (the seed's atomic read); when
//          raised, MPI_Win_sync and the chunk is copied out of the data window into the receive
//          area. kSlotFree / kAllDone read a root's done counter the same way.
// The transport's poll() in the progress thread is the seed's Broadcaster: it notices flags and
// lets the forwarding Puts (which wait for the Await in the schedule) start.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/function_ref.hh"
#include "runtime/policy.hh"
#include "runtime/status.hh"
#include "runtime/transport.hh"

namespace tnbc {

struct PrivateComm;
class RmaComm;

// Broadcasts in flight on one communicator before a root waits for a slot.
inline constexpr int kRmaSlots = 2;
// Request flags per slot: one per chunk (a broadcast has at most TNBC_BCAST_MAX_SEGMENTS + 2).
inline constexpr int kRmaFlagsPerSlot = kTagsPerCollective;
// The smallest data slot (a larger broadcast gets the next power of two).
inline constexpr std::size_t kRmaMinSlotBytes = 64 * 1024;

// One RMA broadcast: where its slot is, and what its steps wait for. Immutable once made.
struct RmaCall {
  std::uint64_t sequence = 0;
  int slot = 0, root = 0, wid = 0, rank = 0, size = 0;
  std::size_t bytes = 0;
  MPI_Win data = MPI_WIN_NULL, ctrl = MPI_WIN_NULL;
  char* data_base = nullptr;  // this rank's data window
  std::size_t slot_bytes = 0;
  std::int64_t* ctrl_base = nullptr;
  int prev_root = -1;            // the slot's previous broadcast (-1: none)
  std::int64_t prev_target = 0;  // its root's done counter when every rank counted it
  std::int64_t target = 0;       // this broadcast's, at `root`
};

// Makes (or grows) `pc`'s windows for a broadcast of `bytes`: collective over the communicator,
// called by every rank with the same `bytes`. An error (MPI_Win_allocate failed on some rank)
// is the same on every rank, and stays: the communicator's broadcasts use p2p from then on.
// Growing, it calls `drain` (wait until every collective in flight on this rank has finished)
// before freeing the superseded data window.
Status rma_ensure(PrivateComm& pc, std::size_t bytes, FunctionRef<void()> drain);
// The next RMA broadcast on `pc` (after rma_ensure; in the order every rank calls).
std::shared_ptr<const RmaCall> rma_begin(PrivateComm& pc, int root, std::size_t bytes);
// Frees `pc`'s windows (collective; nothing may be in flight: after the engine's drain).
void rma_release(PrivateComm& pc);
// Frees every communicator's windows (MPI_Finalize, after the drain).
void rma_release_all();

// Open MPI 4.1's one-sided component osc/rdma backs every window (MPI_Win_allocate and
// MPI_Win_create alike) with a shared-memory file that the communicator's lowest rank on a node
// creates (open(2) without O_EXCL) in its backing directory, named `osc_rdma.<node>.<job>.<cid>`
// (ompi/mca/osc/rdma/osc_rdma_component.c, allocate_state_shared; Open MPI 5 adds the creator's
// pid). A context id is unique per process only: disjoint communicators (the halves of a split)
// have the same ones, so their windows created at once share one file, i.e. one memory (wrong
// data), or one creator unlinks the other's file before its ranks attached (open(2) fails).
// tests/mpi/rma_window_names.c reproduces it. The name is made unique per creator by giving each
// process its own backing directory: a fresh directory (mkdtemp) in the one Open MPI would use
// (/dev/shm, or OMPI_MCA_osc_rdma_backing_directory if set), passed to Open MPI as that MCA
// variable in the environment while PMPI_Init reads it (the variable is read-only after).
//   rma_before_init     before PMPI_Init/PMPI_Init_thread, when RMA broadcasts may be used:
//                       under Open MPI, makes the directory and sets the variable.
//   rma_after_init      after it: the environment as it was (children do not inherit the
//                       directory, which is removed at MPI_Finalize).
//   rma_after_finalize  removes the directory (empty by then: Open MPI unlinks each file once
//                       its ranks attached).
// When the directory cannot be made, rma_probe finds RMA unusable on every rank, with the reason.
void rma_before_init();
void rma_after_init();
void rma_after_finalize();

// The start-up check (collective over `comm`): MPI_Win_allocate works, a flag raised by the
// left neighbour is seen within `timeout_ns` while this rank polls (passive-target progress),
// and the costs of seed 000's formulas as measured here (a flushed flag, flushed puts of 16 and
// 1024 pages, one poll, messages and copies of those sizes; `poll_floor_s`, the progress
// thread's shortest sleep, is added to O_r). Each figure is the median of every rank's samples,
// so equal on every rank (usable: agreed by reduction). `problem` says why not usable.
RmaFacts rma_probe(MPI_Comm comm, std::size_t page, double poll_floor_s, long long timeout_ns, std::string& problem);

std::unique_ptr<Transport> make_rma_transport();

}  // namespace tnbc
