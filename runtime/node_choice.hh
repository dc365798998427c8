// Whether node-level priorities (runtime/node_gate.hh) pay for one call: the decision behind
// TNBC_NODE_PRIORITIES=auto (Policy::node_priorities). Arbitration only reorders the sends of a
// node's ranks on its link; it pays where several ranks of the node send over that link at once
// (else there is nothing to reorder) and the cost model says the readers get their first-read
// sub-message (all of it: what tests/bench/first_read.c measures) earlier by more than the
// transfer as a whole ends later, plus the model's error margin.
//
// Exchange family (Alltoall, Alltoallv, Allgather). From the model's timeline of tnbc's schedule
// (runtime/model/estimate.hh: `after` = total_ns - in_call_ns, the transfer after the return,
// bound by the node's link where M ranks share it; `last` = round_share, the share of the bytes
// in the last round of pieces;
// D = driver_cpu_ns, the CPU one rank's progress thread spends on it) and the node's CPUs C
// (Topology::cpus_per_node: its share of the host's where emulated nodes share one):
//
//   what the link's order costs (arbitration gives the link to one rank at a time):
//     serial   = M x one rank's stream alone x the share of its peers on the link: each rank's
//                window, gaps and CPU now run one after another, not side by side (the stream
//                without the node's shared link: its bound is `after`'s, and a rank alone on one
//                node's loopback would otherwise be charged its receives as well)
//     CPU      the program computes after the early return (what overlap is for), so the node's
//              M computing threads compete with its progress threads for C CPUs:
//                cpu_off = M D / min(M, C / 2)          M drivers at once, each min(1, C / 2M)
//                cpu_on  = M D / min(1, C / (M + 1))    one driver at a time (the held ones sleep)
//     hand-off (M - 1) x (L + notice + wake): the next rank's progress thread sees its turn
//     stalls   M x sends x max(0, wake - (window - 1) g(piece)): the one driver wakes for each
//              completed send; while it waits for a CPU only its own window keeps the link busy
//              (off, the other ranks' windows do)
//     wake     where the node's M computing ranks and the one driver outnumber its CPUs
//              (M + 1 > C), the machine's measured wake-up on a busy CPU (Machine::wake_loaded_ns,
//              `tnbc calibrate`); not measured (the start-up probe, version 2 files, a calibration
//              that could not pin a thread): kUnmeasuredWakeNs, the slice the progress thread asks
//              the scheduler for (0.1 ms; measured 0-1.4 us on this project's machines: a stated,
//              pessimistic default, so an uncalibrated crowded node leans to off); else 0
//   after_off = max(after, cpu_off)            after_on = max(after, serial, cpu_on) + hand-offs + stalls
//   first_off = in_call + after_off x (1 - last / 2)   every rank sends piece k to every peer, then
//                                                      piece k+1: a sub-message's last piece comes
//                                                      in the last round
//   first_on  = in_call + max(after, serial, cpu_on) / M + its stalls   the node's most urgent
//                                                      sender (the one every receiver reads first)
//                                                      has the link first
//   on when   (first_off - first_on) - max(0, after_on - after_off) > margin x the MPI library's
//             blocking time
//   or, where the profile gives the program's T_CURC and T_CRC at the site (model::Program), when
//   it has read everything earlier by more than the margin:
//     done = max(end + T_CRC / n, max(in_call + T_CURC, first) + T_CRC)
//   (a program that reads all of it right after the call gains nothing from an earlier first
//   read and loses whatever the end loses: is-proxy's Alltoallv with early return forced)
//
// so a link that one rank's driver cannot keep busy alone (window, CPU: ranks and progress
// threads outnumber the node's CPUs, as 2 ranks per core on this project's 2-core machine) turns
// the earlier first read into a later end, and auto says off (basis `costs`).
//
// Broadcast: which ranks of a node forward over its link depends on the root (a binomial tree,
// runtime/coll/bcast.cc); the model simulates the tree's pieces through every node's link, in
// the order they become ready (off) or in the arbitration's key order (on: a piece earlier in
// the read order first, node-wide; a wake-up where the link passes to another rank's driver),
// and compares when the receivers have the first-read chunk (their mean) and when the last rank
// has everything, with the same CPU shares.
//
// with M the ranks of the node on its link and the margin a share of the model's blocking time
// (node_margin_share below: TNBC_NODE_PRIORITIES_MARGIN_PCT for a first read judged alone,
// TNBC_EARLY_RETURN_MARGIN_COST_PCT with the program: a reader faster than the data, Table 1 (c),
// gains 10-28 % measured at 4 MiB, ~20 % modelled, below the first read's 45 %).
// Rank-local: it changes when this rank's sends start, never which messages exist.
//
// Pure: no MPI (the policy, `tnbc merge` and the unit tests call it).
#pragma once

#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"
#include "runtime/sched_slice.hh"

namespace tnbc {

// Why arbitration did or did not run for a call. Names are part of the summary format
// (`node_priorities.basis`, docs/formats.md).
enum class NodeBasis {
  Setting,      // TNBC_NODE_PRIORITIES=on (or off)
  Gains,        // on: the model's first read comes earlier, net of a later end, by more than the margin
  NoGain,       // off: the first read comes no earlier by more than the margin
  OneSender,    // off: fewer than two ranks of the node send over its link in this call
  NoProfile,    // off: auto without a profile (no read order worth keeping node-wide)
  NoModel,      // on: auto in mode optimize, but no cost model to judge with
  Costs,        // off: the first read comes earlier, but the transfer ends later by more (one
                // driver at a time cannot keep the link busy: CPUs shared, window, wake-ups),
                // or the program, which reads it all soon after the call, finishes no earlier
};
const char* node_basis_name(NodeBasis b);

struct NodeChoice {
  bool on = false;
  NodeBasis basis = NodeBasis::Setting;
  double first_on_ns = -1, first_off_ns = -1;  // the model's first read with, without (-1: not judged)
  double end_on_ns = -1, end_off_ns = -1;      // the model's end of the transfer with, without
  double done_on_ns = -1, done_off_ns = -1;    // the program has read everything, with, without (-1: unknown program)
  double margin_ns = 0;
};

// How many ranks of node `node` of `t` send over its link: its ranks when there are at least two
// and some rank of `t` is reached over the link (another node, or TNBC_NODE_LOCAL_SENDS=link),
// else 0. (A running rank counts its communicator's board: node_link_senders, node_gate.hh.)
int link_senders(const model::Topology& t, int node, bool local_on_link);

// The margin's share of the model's blocking time (Policy::node_priorities, `tnbc merge`): a first
// read judged alone, `of_tcomm` (TNBC_NODE_PRIORITIES_MARGIN_PCT: the model's error on it);
// with the `program` known, `of_cost` (TNBC_EARLY_RETURN_MARGIN_COST_PCT: both ends of reading come
// from one model run twice, so what matters is its error on their difference, as on tnbc's own
// costs; measured within ~10 % of the program's end, docs/benchmarks.md node priorities session 9).
inline double node_margin_share(double of_tcomm, double of_cost, bool program) { return program ? of_cost : of_tcomm; }

// The model's verdict for collective `c` over `comm` with `x` where `senders` ranks of this
// node send over its link; `margin_share` of the model's blocking time is the gain to exceed.
// `program`: the code after the call at its site (the profile's estimates; nullptr: unknown,
// the first read's gain is judged alone).
NodeChoice node_choice(const model::Machine& m, const model::Topology& comm, const model::Coll& c,
                       const model::Execution& x, int senders, double margin_share,
                       const model::Program* program = nullptr);

// The CPU the node's progress threads have together while its `ranks` ranks compute, in CPUs:
// all `ranks` driving at once (off), or one at a time (on). `cpus`: the node's.
struct DriverCpu {
  double off = 1, on = 1;
};
DriverCpu driver_cpu(int ranks, int cpus);

// The wake-up charged where the machine has none measured (Machine::wake_loaded_ns < 0): the
// progress thread's requested time slice (runtime/sched_slice.hh), of the order of what a woken
// thread with that slice waits for a CPU a computing thread holds (EEVDF, Linux >= 6.12).
inline constexpr double kUnmeasuredWakeNs = static_cast<double>(kShortSliceNs);
inline bool unmeasured_wake(const model::Machine& m) { return m.wake_loaded_ns < 0; }

// What waking up costs arbitration on a node of `cpus` CPUs whose `senders` ranks compute while
// one driver at a time has the link: per hand-off of the link (the next driver's wake-up on a
// busy CPU), per send of the driver that has it (that wake-up less what its window's other
// sends in flight cover, `sends` sends of `bytes` in all on `link`), and for all of one rank's
// sends. All 0 where the CPUs suffice or the measured wake-up is 0; kUnmeasuredWakeNs where
// the machine has none measured.
struct Wakes {
  double handoff_ns = 0, send_ns = 0, rank_ns = 0;
};
Wakes wakes(const model::Machine& m, const model::Level& link, const model::Execution& x, int senders, int cpus,
            double sends, double bytes);

}  // namespace tnbc
