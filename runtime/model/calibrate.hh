// `tnbc calibrate` (tools/calibrate_main.cc): measures the machine file (runtime/model/machine.hh)
// under the launcher, every rank taking part. The method (docs/architecture.md, "The cost model"):
//
//   levels      a pair of ranks on one node (intra_node) and, with several nodes, rank 0 and the
//               first rank of another node (inter_node); the other ranks wait at barriers.
//               Sizes 1 B, 64 B, 1 KiB, 4 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB (up to
//               --max-bytes), each:
//     T(m)      ping-pong (MPI_Send / MPI_Recv), half the median round trip;
//     o_s, o_r  a train of 8 messages posted at once (MPI_Isend / MPI_Irecv) and tested the way
//               tnbc's progress thread does (MPI_Testall, then a sleep of TNBC_POLL_MIN_US):
//               each side's thread CPU time per message inside the posting and testing calls,
//               less its idle tests (the tests that found the train incomplete x one idle
//               MPI_Testall's CPU, measured at each size: measure.hh idle_test_cpu_ns), neither
//               the sleeps nor the acknowledgement (PLogP's overheads; with TCP they hold the
//               kernel's copies, LogGOPS's O per byte; not the transfer time); and the
//               sender's wall time in its loop of 8 MPI_Isend per message (post_ns: what a
//               broadcast's root pays for each send it starts in its call);
//     g(m)      the same train sent with MPI_Waitall: (time of 8 - time of 1) / 7 until the
//               receiver has them (the gap between back-to-back messages);
//               then L = T(1) - o_s(1) - o_r(1), G = the slope of g over the three largest
//               sizes, O_s and O_r the slopes of o_s and o_r there;
//     buffered  one blocking MPI_Send of m bytes, 64 KiB doubling, the receiver receiving at
//               once: the bytes still in the transport's buffers when the send returned,
//               m (t_recv - t_send) / t_recv (median per size); the largest (buffered_send_bytes);
//   node        every rank of a node at once, 8 messages of 1 MiB (or --max-bytes / 4) to a
//               partner: inside each node (pairs of its ranks) and between nodes (rank i of
//               node 0 with rank i of node 1): bytes leaving the node per ns (node_out: only one
//               side sends) and bytes in and out together (node_bi: both send);
//   node sweep  inside a node, 2..M of its ranks at once, 64 KiB .. --max-bytes per message,
//               caches first filled with other data: every pair exchanging one message, each
//               copying its own block, posted in the order of Open MPI's linear Alltoall
//               (exchange), and each rank sending one to the next (ring); then, on a
//               communicator of the same ranks, the library's own MPI_Alltoall at those sizes,
//               rotated, as a program calls it: the caches emptied once per round, MPI's own
//               waits (mpi_alltoall_ns_per_byte; the one-node estimate of MPI's Alltoall);
//   guard       rank 0, each backend this kernel has (userfaultfd with page moves, with copies;
//               PROT_NONE with /proc/self/mem): hold back and publish 1, 16, 256 and 1024 pages,
//               each cycle after emptying the caches, as a call finds the program's pages (lines
//               through the medians, the hold's medians kept as its points); a reader's wait on a page held back: a SIGSEGV
//               round trip on a PROT_NONE page (handler, mprotect, retry) plus the wake-up of a
//               thread asleep on a futex (what a reader pays besides the data's arrival);
//   memcpy      4 KiB .. 16 MiB, a line; and into a fresh mapping (first-touch faults: memcpy_cold);
//               and tnbc's own in-call copy (bulk_copy) of 64 KiB .. 4 MiB (and 16, 64 MiB where
//               the arena holds four of them) between arenas outside the caches, every rank at
//               once, the slowest rank (memcpy_in_call: Tinit's copies), in three passes (after
//               the levels, after the node measurements, at the end; the arenas and the
//               caches' eviction scratch made at the start, before any timing): the line and, as
//               its points, per size the median over the passes of the slowest rank's median;
//   progress    one MPI_Testsome over 8 pending receives, one sleep of TNBC_POLL_MIN_US; rank 0:
//               a sleep's extra wait on a busy CPU, and the hand-over at the end of an early
//               return (a poke of a thread standing for the progress thread, placed as the runtime
//               places it, asleep; the caller's time until it runs on, after emptying the caches
//               and again warm; then, the caller computing on, the thread's first round after
//               the return: measure.hh, handover).
//   shared CPU  per level, its pair: each rank's computing thread and its exchanging thread on
//               one CPU; the computation's extra time while 256 KiB, 1 MiB, 4 MiB go each way
//               (polled as the progress thread polls a long transfer), the slower rank's; a line
//               (Level::shared_cpu: what an early return's transfer takes from the program's CPU).
//
//   own call    last, every rank (CalibrateOptions::last, from tools/calibrate_main.cc): tnbc's
//               own early return through its engine, the part the model's priced parts miss
//               (Machine::in_call_rest; tools/calibrate_own_call.hh), cold and, at the sizes
//               whose calls fit in the L2 cache (Machine::fits_cache), warm; three passes over
//               the sizes, per size the median. The guard's holds are measured warm at those
//               sizes too (hold_warm).
//   load        from the start to the end, on each machine (kernel) the ranks run on, the CPU time
//               neither idle nor the ranks' own and the hypervisor's steal (Machine::others_cpu_share,
//               steal_share; runtime/model/calibrate_load.hh).
//
// Medians of repetitions after a warm-up; each size repeated until about --seconds-per-size
// (at least 5 times). Collective over `world`; the machine file is rank 0's.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>

#include "runtime/model/machine.hh"
#include "runtime/status.hh"

namespace tnbc::model {

struct CalibrateOptions {
  // Run last on every rank (may be empty), with the machine measured so far and a way to empty
  // the caches as the other in-call costs are measured: `tnbc calibrate`'s own early return
  // (tools/calibrate_own_call.hh), which needs tnbc's engine, not part of the model.
  std::function<void(Machine&, const std::function<void()>& empty_caches)> last;
  std::size_t max_bytes = 4u << 20;
  double seconds_per_size = 0.05;
  // The last-level cache the cold measurements empty (reading twice as much) and copy past; 0:
  // this CPU's (model::last_level_cache_bytes). A smaller one makes the calibration quicker and
  // its cold costs too low (the tests' short calibrations).
  std::size_t cache_bytes = 0;
  // The largest copy the memcpy lines and tnbc's in-call copy measure; 0: as the model prices the
  // largest calls (16 MiB for memcpy, 64 MiB in a call where the node's arena allows). A smaller
  // one maps far less memory (the tests' short calibrations) and leaves larger copies to the line.
  std::size_t copy_bytes = 0;
  long long poll_ns = 20000;  // TNBC_POLL_MIN_US, as the progress thread sleeps
  long long poll_max_ns = 100000;  // TNBC_POLL_MAX_US, its longest sleep while steps take long
};

// `progress` (rank 0, may be null): one line per step.
Result<Machine> calibrate(MPI_Comm world, const CalibrateOptions& o, std::FILE* progress);

}  // namespace tnbc::model
