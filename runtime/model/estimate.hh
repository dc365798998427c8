// The cost model's estimators (LogGP per level, docs/architecture.md "The cost model"): how long
// the MPI library's own blocking collective takes, how tnbc's schedules run (the same steps the
// builders in runtime/coll/ make: heads and tails in the call, body pieces through the send
// window, a segmented binomial tree), what tnbc itself costs (time in the call, publication,
// the progress thread's CPU), and what an early return gains for a program that computes
// T_CURC before it reads and reads at the rate R_CRC (the T-NBC paper's Eq. 1 and Eq. 3).
//
// Every estimate is a bound in the LogGP spirit, taken as the largest of:
//   per rank    the messages a rank sends one after another: sum of g(m) at their levels;
//   per node    the bytes through the node's shared resource at each level (node_out, node_bi):
//               M ranks of a node sharing its link (LogGPH), or one shared queue / memory bus;
//   CPU         the CPU the messages cost their ends (o_s(m) + o_r(m), PLogP), shared by the
//               ranks of a node when it has fewer CPUs than ranks;
//   window      TNBC_SEND_WINDOW sends in flight, each held for L + the time to notice it;
// plus the latency of the last message, and for trees the pipeline along the critical path.
//
// Pure: no MPI, no process state (the `tnbc` tool, `tnbc predict` and the unit tests link it).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/config.hh"
#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"
#include "runtime/schedule.hh"
#include "runtime/vocabulary.hh"

namespace tnbc::model {

// How tnbc runs a collective, as far as it changes its timing (the policy's answers and the
// call's buffers).
struct Execution {
  int window = 4;                // TNBC_SEND_WINDOW (sends in flight on the progress thread; < 1: no limit)
  int bcast_window = 0;          // TNBC_BCAST_SEND_WINDOW resolved (policy.hh; < 1: `window`, none on a shared CPU)
  int guard = 0;                 // guard backend (kGuardNames) holding received pages; -1: none
  int guard_by_size = -1;        // a second one the engine takes per call where it costs less at the call's size (guard_by_size)
  bool eager_copy = true;        // the data to send is copied in the call (else lazily)
  bool unaligned = true;         // receive buffers begin inside a page: edge pieces arrive in the call
  bool node_priorities = false;  // a node's senders give its link to what receivers read first (issue 19)
  double poll_min_ns = 20000;    // TNBC_POLL_MIN_US: how soon a driver polls again after progress
  int bcast_max_segments = static_cast<int>(kDefaultBcastMaxSegments);  // TNBC_BCAST_MAX_SEGMENTS: the most segments a broadcast is cut into
  // TNBC_EARLY_RETURN_MARGIN_{TCOMM,SHARED_NODE,BUSY_POLL}_PCT as shares of Tcomm (0: none): what a
  // predicted saving must exceed, by placement (margin_of_tcomm). Mode optimize weighs each site's
  // saving against it; the sizes that return early (early_return_bands) the saving at best.
  double margin_one_per_node = 0, margin_shared_node = 0, margin_busy_poll = 0;
};

// Which margin of Tcomm `t`'s placement takes: one rank per node, ranks sharing a node whose MPI
// ranks spin (busy_poll.hh), or ranks sharing a node.
enum class MarginPlace { OnePerNode, BusyPoll, SharedNode };
MarginPlace margin_place(const Machine& m, const Topology& t);
// The share of a transfer inside a node that is its ranks' CPU work (Level::cpu_share at the
// node's level). Shared memory: the receiver copies every byte (O_r = G: 1.0); a network stack
// over a loopback shaped to 1 Gbit/s: 0.06 (the wire's time, the CPU idle).
double node_transfer_cpu_share(const Machine& m);
// That margin (mode optimize's judge: trace/gain.hh). Where ranks share a node with a CPU each,
// the two measured shares are weighed by node_transfer_cpu_share: `shared_node` for the
// transfer's CPU work (the model's error measured through shared memory, where an early return
// moves that work beside the program on the same CPUs), `one_per_node` for the rest (the wire's
// time, whose error a network stack between ranks of one node shows as between nodes:
// docs/settings.md). A node with more ranks than CPUs takes `shared_node` whole (its ranks and
// progress threads crowd the CPUs whatever carries the bytes).
double margin_of_tcomm(const Machine& m, const Topology& t, double one_per_node, double busy_poll, double shared_node);
double margin_of_tcomm(const Machine& m, const Topology& t, const Execution& x);

// An exchange whose blocks differ between pairs of ranks (Alltoallv), as a trace recorded it:
// `bytes[j * n + i]`, what rank j receives from rank i per call (the ranks of the estimate's
// topology; the diagonal, a rank's own block, is not sent).
struct Blocks {
  int n = 0;
  std::vector<double> bytes;
  double at(int to, int from) const { return bytes[static_cast<std::size_t>(to) * static_cast<std::size_t>(n) + static_cast<std::size_t>(from)]; }
};

// A collective as the estimators see it.
struct Coll {
  Kind kind = Kind::Alltoall;
  double bytes = 0;      // per peer (Alltoall, Alltoallv as received / (n - 1), Allgather), whole (Bcast)
  // Alltoallv with the trace's blocks (nullptr: every block `bytes`): the bytes through each node's
  // resources of tnbc's schedule, which posts every pair's messages at once and is bound by them;
  // everything else — the library's call (its time follows its heaviest receiver; on one node
  // whose ranks do not spin, the bytes of all its pairs: mpi_blocking_ns), a rank's own messages
  // and CPU, the time in the call — takes `bytes`, the heaviest receiver's block (measured:
  // docs/benchmarks.md, "Session 54", "Session 66").
  std::shared_ptr<const Blocks> blocks;
  int root = 0;          // Bcast
  int segments = 1;      // Bcast: middle chunks (a segmented binomial tree; 1: binomial)
  PieceRule pieces;      // how bodies are cut (TNBC_PIECE_BYTES or the model's rule)
  std::size_t page = 4096;
};

// Chain: each rank sends to the next (the MPI library's pipelined chain; tnbc's schedules are binomial or linear).
enum class BcastTree { Binomial, Linear, Chain };

// What one of tnbc's schedules does, for the slowest rank (ns from the call's entry).
struct Timeline {
  double total_ns = 0;       // until the last step is done
  double in_call_ns = 0;     // Tinit of an early return (staging copy, guard, edges, the wait for
                             // the pieces that land in partial pages)
  double in_call_work_ns = 0;  // of which the work a blocking call does not do (all but the wait)
  double in_call_rest_ns = 0;  // of which the rest calibrate measured of tnbc's own calls (Machine::rest*)
  double in_call_shared_ns = 0;  // of which the call's work waited for a CPU its node's ranks share, while
                                 // the transfer went on (crowded_call): not part of the transfer's scale
  double first_ns = 0;       // until the first piece a reader needs is published (a mean receiver)
  double last_share = 1;     // share of the bytes a reader reads (its own block's too) that it gets
                             // only at the end (the last send window's pieces arrive together)
  double round_share = 1;    // share of the received bytes in the last round of pieces (one from
                             // each peer): over it the sub-messages complete (node_choice)
  double driver_cpu_ns = 0;  // CPU of the driving thread after the return (messages, publication, polls)
  double shared_cpu_ns = 0;  // what the transfer takes from a computation on its CPU (the levels'
                             // measured shared_cpu; 0 where not measured)
  double publish_ns = 0;     // of which publication
  double regions = 0;        // regions a receiver publishes
  int messages = 0;          // MPI messages a rank sends
};

// The MPI library's own blocking collective. On one node, where the library's rules are known
// (mpi_algorithms.hh: Open MPI 4.1's coll/tuned fixed rules), the algorithm it runs at this
// (np, size) — linear or pairwise exchange, a linear, binomial, binary or chain broadcast of
// whole messages — costed round by round with the node's copy rate (node_sweep) for the flows
// that run at once; elsewhere all pairs at once for the exchange family and a pipelined
// binomial tree for Bcast.
double mpi_blocking_ns(const Machine& m, const Topology& t, const Coll& c);
// The library's call as mode nbc weighs its sizes (no measured Tcomm): an exchange between
// nodes on links idle before it (at most mpi_blocking_ns; exchange_idle_link in estimate.cc),
// else mpi_blocking_ns.
double nbc_blocking_ns(const Machine& m, const Topology& t, const Coll& c);

// tnbc's schedule returning early (the progress thread drives it after the call), or completed
// in the call by the calling thread (`early` false: no guard, no staging, no send window).
Timeline tnbc_timeline(const Machine& m, const Topology& t, const Coll& c, const Execution& x, bool early);

// Tinit of an early-returning exchange (Alltoall, Alltoallv) as tnbc_timeline prices it, but
// without the scheduler slice its call waits where the library's ranks spin: where calibrate's own
// calls met the slice, the rest it measured holds it (calibrate subtracts this from the calls it
// measures, as bcast_receiver_in_call_ns and bcast_root_in_call_ns below, which leave it out too).
double exchange_in_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x);

// Tinit of a receiving rank of tnbc's broadcast (every rank but the root) returning early: the
// guard's hold, the hand-over, the rest calibrate measured (Machine::rest_bcast) and the waits for
// the edge pieces that land in partial pages; on a node whose ranks outnumber its CPUs and do not
// spin, all but the rest at the ranks per CPU, as tnbc_timeline prices it (calibrate subtracts
// these from the calls it measures: tools/calibrate_own_call.cc). (tnbc_timeline's in_call_ns is
// the slowest rank's, the root's where its staging copy takes longer.)
double bcast_receiver_in_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x);
// Tinit of the broadcast's root returning early: its copy of the message where the guard cannot
// hold its pages, the sends it starts in its call, the hand-over and the rest calibrate measured
// (Machine::rest_bcast_root); crowded as the receiver's.
double bcast_root_in_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x);

// A broadcast tree of `pieces` pieces of `piece` bytes (plus the two one-page edge chunks):
// the time until the last rank has the last piece. `notice_ns` and `publish` model tnbc's
// progress thread at the inner ranks (0 and a zero line for the MPI library's own).
double bcast_tree_ns(const Machine& m, const Topology& t, double bytes, int root, int pieces, BcastTree tree,
                     double notice_ns, const Line& publish, std::size_t page);

// The code after the call: it computes T_CURC without touching the received data, then reads
// it in order, taking T_CRC = bytes / R_CRC (the trace pass's estimates, or Table 1's).
// `own_last`: in the exchange family some rank reads its own block after every peer's (every
// rank reading the blocks in one order, as Table 1's `seq` and the proxies do: the rank whose
// block that order puts last). Its own block, in place since the call, is then read only after
// the last piece came in (T_CRC / n more at the end), and the program's next collective waits
// for that rank.
struct Program {
  double curc_ns = 0, crc_ns = 0;
  bool own_last = false;
};

// An early return against the blocking call, for a program (Eq. 1 and Eq. 3 with tnbc's costs).
struct Overlap {
  double blocking_ns = 0;     // Tcomm: the blocking call (measured if given, else the model's)
  double model_blocking_ns = 0;
  double ideal_ns = 0;        // Eq. 1: min(Tcomm, T_CURC + T_CRC)
  double hidden_ns = 0;       // Eq. 3: min(Tcomm - Tinit, T_CURC + T_CRC)
  double in_call_ns = 0;      // Tinit (late_ns included)
  double late_ns = 0;         // of Tinit and Tcomm, the wait for a peer that called later (overlap's late_ns)
  double early_total_ns = 0;  // call + CURC + CRC with the early return
  double cost_ns = 0;         // what tnbc costs on top: hidden - saved
  double saved_ns = 0;        // (Tcomm + T_CURC + T_CRC) - early_total: > 0 pays
  double scale = 1;           // what the model's times of tnbc's transfer were scaled by (below)
};
// `measured_blocking_ns` > 0: the blocking time the trace pass measured at the site; the
// model's times of tnbc's schedule are scaled by measured / modelled (the model's error on the
// transfer cancels out of the comparison) — not where the MPI library's ranks spin on fewer CPUs
// than ranks (spins_on): there the library's call is priced by scheduler slices tnbc's yielding
// threads do not wait for, and its measured time follows the ranks' arrivals (np 4 on 2 one-CPU
// nodes, bcast-proxy A: a loop's calls measured 0.55x the model, the first call 1.00x), so the
// ratio says nothing about tnbc's transfer: scaled by it, tnbc's schedule in the call came out
// below its bytes' time on the link (docs/benchmarks.md, "Session 66").
// `late_ns`: of the measured blocking time, the wait for a peer that called later (a broadcast's
// receivers' for a late root: trace/gain.hh's Decision::late_ns). An early return waits for it in
// its call too (the root's first bytes: Tinit includes it), and it is no part of the transfer the
// scale measures.
Overlap overlap(const Machine& m, const Topology& t, const Coll& c, const Execution& x, const Program& p,
                double measured_blocking_ns = 0, double late_ns = 0);

// The broadcast's root returning early against its blocking call, `measured_blocking_ns` (the
// trace's median over the root's calls; the model's where 0), for a program that computes `p`
// after the call (the trace sees its receivers' reading only: theirs). The root reads nothing: it
// gains its call's time less its Tinit (bcast_root_in_call_ns), at most `p`'s time (Eq. 3: its
// next collective on the buffer waits for the sends); where it has no CPU to spare, the sends its
// progress thread makes after the return come out of the computation they overlap (cpu_taken_ns,
// at most the call's time less Tinit: a root whose blocking send returned with its message
// buffered had spent its call on that work). No reader, no scale.
Overlap bcast_root_overlap(const Machine& m, const Topology& t, const Coll& c, const Execution& x, const Program& p,
                           double measured_blocking_ns = 0);

// Where a rank's computation shares its CPU with its progress thread in a way calibrate
// measures (Machine::cpu_taken: tnbc's own transfer beside a computation) and the model prices
// by that measurement: between nodes of one CPU (one rank each, or more), and on one node whose
// ranks have no more CPUs than ranks, in a machine file calibrated on one node. Calibrate asks
// it of its own placement; cpu_taken_ns of a placement's topology.
bool cpu_taken_placement(const Machine& m, const Topology& t);

// tnbc's schedule completed in the call by the calling thread (no guard, no staging, no send
// window): the call's time for the slowest rank. Where the MPI library's ranks spin on fewer CPUs
// than ranks (busy_poll.hh) tnbc's yielding threads may move the same bytes several times faster
// than the library's call (np 4 on 2 one-CPU nodes: ft-proxy W 1.99x, NPB FT.A 2.03x with every
// Alltoall so; docs/benchmarks.md, "Session 42").
double own_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x);
// Whether tnbc's schedule completed in the call (`own_ns`) beats the library's call (`blocking_ns`)
// by the placement's margin of Tcomm (margin_of_tcomm): never at a margin of 100 % or more.
bool own_call_pays(double own_ns, double blocking_ns, double margin);

// ---- decisions (the policy asks; inputs equal on every rank give answers equal on every rank) ----

// An early return for a program whose reading mode nbc cannot know: what it gains at best (the
// program computes past the whole transfer before it reads: Tcomm - Tinit - the driver's stolen
// CPU) against what it loses at worst (the program reads at once: tnbc's whole transfer, the
// reader's wake-up per region, minus Tcomm), both by `overlap` with tnbc's costs. Early return
// pays where the gain is at least the loss (the margin: a program between the two extremes).
struct ReadOnceBalance {
  double blocking_ns = 0;      // the MPI library's own call
  double read_at_once_ns = 0;  // call to last byte read with an early return, read at once
  double gain_ns = 0;          // at best (>= 0)
  double loss_ns = 0;          // at worst (>= 0)
  bool pays() const { return blocking_ns > 0 && gain_ns >= loss_ns; }
};
ReadOnceBalance read_once_balance(const Machine& m, const Topology& t, const Execution& x, const Coll& c);
// A broadcast of `bytes` cut into `segments`.
ReadOnceBalance bcast_balance(const Machine& m, const Topology& t, const Execution& x, double bytes, int segments,
                              std::size_t page);
// A call of the exchange family (`k`: Alltoall, Alltoallv, Allgather(v); `bytes` per peer), its
// bodies cut by the model's piece rule (piece_scale), as the policy cuts them.
Coll exchange_coll(const Machine& m, const Topology& t, Kind k, const Execution& x, double bytes, std::size_t page);
// exchange_coll's call read at once.
ReadOnceBalance exchange_balance(const Machine& m, const Topology& t, Kind k, const Execution& x, double bytes,
                                 std::size_t page);

// The smallest size at which `k` returns early on `t` (bytes per peer; a broadcast's whole
// message): early_return_bands' first; SIZE_MAX when no size up to 1 GiB pays.
std::size_t threshold_bytes(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page);

// The exchange family's smallest sub-message (bytes per peer) whose transfer takes at least what
// returning early adds (time in the call, publication, a reader's wake-up): a whole number of
// pages, at least kMinGuardablePages; SIZE_MAX when none up to 1 GiB does. Below it no program
// gains; above it exchange_balance decides (bands.hh).
std::size_t exchange_floor(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page);

// The broadcast's segment count in 1..max_segments: the one that lets a reader that reads as
// fast as the data comes finish first (segments pipeline the tree and let the reader start
// early; each costs messages, publications and noticing at every inner rank).
int bcast_segments(const Machine& m, const Topology& t, double bytes, const Execution& x, int max_segments,
                   std::size_t page);

// PieceRule::scale_bytes for the exchange family on this topology: the fixed cost of one more
// piece over the per-byte time of the call's transfer.
double piece_scale(const Machine& m, const Topology& t, const Execution& x, std::size_t page);
// How a run cuts an exchange's sub-messages (runtime/policy.cc): TNBC_PIECE_BYTES where set,
// else the model's rule at piece_scale. The estimates a decision or a report takes must cut them
// alike: the pieces set what a reader waits for (Timeline::first_ns, last_share).
PieceRule run_pieces(const Machine& m, const Topology& t, const Execution& x, std::size_t page, PieceSetting setting);
// How a run cuts a broadcast of `bytes` (runtime/policy.cc, bcast_segments, where no trace's
// count applies): bcast_segments up to TNBC_BCAST_MAX_SEGMENTS. The root starts a send per piece
// in its call and every piece is noticed and published: estimates that decide must count them.
int run_segments(const Machine& m, const Topology& t, const Execution& x, double bytes, std::size_t page);
// A collective of `bytes` (per peer; a broadcast's whole message) on the machine's page, cut as
// a run cuts it: run_pieces for the exchange family, run_segments for a broadcast.
Coll run_coll(const Machine& m, const Topology& t, const Execution& x, Kind kind, double bytes, PieceSetting setting);

// Whether copying `bytes` to send lazily (read-only pages, copied by the progress thread) costs
// the call less than copying them in it, including the write fault a program that overwrites
// its send buffer at once takes (`written_early`).
bool lazy_copy_pays(const Machine& m, double bytes, bool written_early, std::size_t page);

// Whether the userfaultfd guard should publish by moving the buffer's own pages out and back
// (userfaultfd_move) rather than by installing copies (userfaultfd_copy): the hold and the
// publication (the accesses around them included: measure.hh, guard_lines), summed over the sizes
// both were measured at, cost no more. True where either is unmeasured (the start-up probe
// measures the first backend only): moving, as before session 55.
bool page_moves_pay(const Machine& m);
// Whether guard backend `a` (a kGuardNames index) costs no more than `b`: the geometric mean,
// over the sizes both were measured at, of a's guard_cycle_ns over b's is at most 1 (every size
// weighs alike). True where either is unmeasured.
bool guard_costs_no_more(const Machine& m, int a, int b);
// The guard backend that holds the calls where `first` (a kGuardNames index, -1: none) is the
// first that works here: copying in place of moving where page_moves_pay says so, else `first`.
// The engine's choice at MPI_Init and the offline tools' (priced_guards) go through it.
int guard_that_runs(const Machine& m, int first);
// PROT_NONE where the engine takes it per call, in place of `runs` (guard_that_runs), at the
// sizes it costs less (by_size_pays): where `protect_usable` (TNBC_GUARD=auto, publication through
// /proc/self/mem on every rank) and it costs less than `runs` at one size at least that both were
// measured at; else -1. On the guests here userfaultfd's copying frees and allocates each
// buffer's pages at every call, which at NPB's sizes costs far more than PROT_NONE, whose pages
// stay; up to 4 MiB copying is the cheaper (docs/benchmarks.md, "Session 56").
int guard_by_size(const Machine& m, int runs, bool protect_usable);
// Whether a call guarding `bytes` takes `by_size` rather than `runs` (guard_cycle_ns, through the
// measured points). False where by_size is -1.
bool by_size_pays(const Machine& m, int runs, int by_size, double bytes);
// Hold, one region's publication and the reader's first reads (GuardCost::first_read) of `bytes` with `g`.
double guard_cycle_ns(const GuardCost& g, double bytes);
// The fixed part of a region's publication: the line's intercept, or its smallest point (one page).
double publish_per_region(const GuardCost& g);
// `a` and `b` as one guard that takes, at each size both were measured at, the one whose
// guard_cycle_ns is less there (its hold, publication, first reads and warm hold there): how the model prices
// the calls of an engine choosing per call (Execution::guard_by_size).
GuardCost guard_envelope(const GuardCost& a, const GuardCost& b);
// The guard backends the engine prices its calls with, as far as the machine alone tells (the
// offline tools: `tnbc merge`, `tnbc predict`, the plain-program check): the first measured in the
// engine's order (userfaultfd moving, copying, PROT_NONE) through guard_that_runs, and PROT_NONE
// per call where guard_by_size says so (as TNBC_GUARD=auto runs); -1 where none was measured.
struct PricedGuards {
  int runs = -1, by_size = -1;
};
PricedGuards priced_guards(const Machine& m);

}  // namespace tnbc::model
