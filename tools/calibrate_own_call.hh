// `tnbc calibrate`'s last measurement (tools/calibrate_main.cc): tnbc's own early return, run by
// tnbc's engine (runtime/engine.hh) on every rank, as a program's MPI_Alltoall and MPI_Bcast
// would run it — set-up, send staging, the guard's hold, the first poll, the edge pieces, the
// hand-over —, each call after emptying the caches as the machine file's other in-call costs are
// measured. What the model's priced parts (its copies, hold, posts, wait and hand-over:
// runtime/model/estimate.cc) do not account for is the machine's `in_call_rest`,
// `in_call_rest_bcast` and `in_call_rest_bcast_root` (runtime/model/machine.hh): tnbc's own
// bookkeeping on cold caches (the schedule, the regions, the guard table, the first poll's MPI
// calls), which no LogGP parameter or copy line measures.
//
//   per size (64 KiB, 256 KiB, 1 MiB, 4 MiB per peer, up to --max-bytes), 1 + 7 calls:
//     empty the caches; a barrier; time MPI_Alltoall through the engine (mode nbc, every size
//     returns early; since session 32 on the machine measured so far, so that its calls are cut
//     into the pieces a program's are with the file written, before it the start-up probe's);
//     complete it (Engine::complete_all)
//   then the sizes whose calls fit in the cache (Machine::fits_cache) once more without
//   emptying the caches (`in_call_rest_warm`, since session 24), each call after 3 ms of
//   computation on registers (since session 37: called back to back, the progress thread it
//   wakes never took the caller's CPU, as it does in a program's calls); then the same for MPI_Bcast
//   from rank 0, its receivers' calls timed (`in_call_rest_bcast`, `in_call_rest_bcast_warm`,
//   since session 32: a receiver's call does less than an exchange's) and its root's apart
//   (`in_call_rest_bcast_root`, `in_call_rest_bcast_root_warm`, since session 36: the root
//   copies the message and starts the edges' sends); all of it in three passes (since session
//   30: a short disturbance takes one pass, and the median outvotes it): the slowest rank's
//   (receiver's; the root's) median per size and pass, a cold call's copies counted at the copy
//   line's price (since session 76: the line carries them, the rest does not price their excess
//   again); per size the median over the passes, less
//   the model's Tinit for the same call (a receiver's or the root's for the broadcast) on the
//   machine just measured (the calibrating run's placement), priced warm or cold as the call ran,
//   >= 0: the points of the lines
//
// Where ranks share a node (since session 38), the warm calls only: with the caches emptied the
// call's polls move the peers' data there, which the model prices in the transfer after the call.
//
// Then, where each rank has a node of one CPU to itself (Machine::cpus_per_node 1: its progress
// thread moves the data on the CPU the program computes on), what tnbc's own transfer takes from a
// computation (`cpu_taken`, `cpu_taken_bcast`, since session 33):
//
//   in each of the same three passes, after the kind's calls above, per size: one call, completed,
//     sizes a computation (the Computation of runtime/model/measure.hh) 1.5 times its whole time;
//     3 times the computation alone, then the call (it returns early) and the same computation,
//     then the call completed; the extra time, this rank's medians; the slowest rank's per pass
//     (a broadcast's root among them); per size the median over the passes: the points of the
//     lines, by bytes received
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <functional>

#include "runtime/model/machine.hh"

namespace tnbc::tools {

// Collective over `world`. Sets m.in_call_rest (and m.in_call_rest_bcast, _root) where the ranks are one
// per node and tnbc's engine returned early at every call of the kind, their _warm lines wherever a
// size fits in the cache (where ranks share a node, the _warm lines only), and m.cpu_taken (and
// m.cpu_taken_bcast) where besides a node has one CPU (else leaves them unmeasured and says why on
// `progress`, rank 0's, may be null).
// `empty_caches` reads through calibrate's eviction scratch.
void measure_own_call(MPI_Comm world, model::Machine& m, std::size_t max_bytes, const std::function<void()>& empty_caches,
                      std::FILE* progress);

}  // namespace tnbc::tools
