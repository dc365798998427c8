// Every decision a collective's execution depends on, asked in one place and answered by the
// cost model (runtime/model/: the machine's LogGP parameters, the run's placement, the
// estimators) and, in mode optimize, the profile; settings given explicitly override the model
// (TNBC_MIN_BYTES, TNBC_PIECE_BYTES, TNBC_SEND_COPY, TNBC_EARLY_RETURN_COST_US). docs/architecture.md,
// "The cost model", lists each decision with its rule.
//
// Two kinds of questions, and the rule that keeps ranks matching:
//   global      route, route_call, bcast_segments, pieces, bcast_backend: they decide which messages exist (or
//               whether tnbc runs the call at all). Every rank must answer alike, so they use
//               only inputs equal on every rank: the arguments every rank has alike, settings
//               compared at MPI_Init, the machine (one file every rank read alike, or the probe's
//               values agreed by a reduction), the placement (gathered), the profile (its hash
//               compared at MPI_Init).
//   rank-local  complete_in_call, read_order, early_return_pays, lazy_send_copy, guards,
//               send_window, caller_starts_sends: they change who drives which message and
//               when, never which messages exist, so ranks may answer differently
//               (runtime/read_order.hh).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "runtime/bcast_cost.hh"
#include "runtime/config.hh"
#include "runtime/model/bands.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/inputs.hh"
#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"
#include "runtime/cpu_share.hh"
#include "runtime/mpi_threads.hh"
#include "runtime/node_choice.hh"
#include "runtime/read_order.hh"
#include "runtime/schedule.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

// The guard backends (runtime/guard_backend.hh), as a policy names them.
enum class GuardKind { Userfaultfd, ProtNone };

// Who drives a schedule: the progress thread (after an early return) or the calling thread
// (the part of an early return done in the call, or a call that completes in it).
enum class Driver { ProgressThread, CallingThread };

// How a calling thread waits in drive() (runtime/executor.hh): like a blocking MPI call, it polls
// back to back; on a node with more ranks than CPUs it yields the CPU between polls once
// `spin_ns` passed without progress (as MPI libraries do when oversubscribed). Never a sleep: a
// sleeping caller wakes late (~60 us on the VMs here) for messages that take 10-100 us.
struct Waiting {
  long long spin_ns = 0;
  bool yield = false;
  long long timeout_ns = 0;  // without progress: `timed_out`
};

// What the start-up probe found about the MPI library's one-sided communication (agreed over
// MPI_COMM_WORLD, so equal on every rank): whether RMA works here and its costs.
struct RmaFacts {
  bool usable = false;
  LogGP costs;  // the probe's figures (seed 000's parameters); zero: not measured
  LogGP p2p;    // the same for point-to-point messages (a stage = one message of m bytes)
};

class Policy {
 public:
  virtual ~Policy() = default;
  // ---- global ----
  // Reason::None: the call takes tnbc's schedule; else it runs as plain PMPI_* for that reason.
  // `unit`: the collective's size as its table row says (kNoUnit: sizes differ between ranks);
  // `comm`: where its communicator's ranks run. A communicator of one rank has nothing to
  // exchange: its calls are the MPI library's own.
  virtual Reason route(Kind kind, bool intercommunicator, const model::Topology& comm, std::size_t unit) = 0;
  // After the call's layout (mode optimize): Reason::NoOverlapToGain when every rank is known to
  // run this call without an early return (the profile shows no overlap to gain wherever it was
  // called with these sizes): then it is the MPI library's own call, on every rank alike.
  virtual Reason route_call(const CallShape& call) = 0;
  virtual int bcast_segments(std::size_t bytes, const model::Topology& comm) = 0;
  virtual PieceRule pieces(Kind kind, const model::Topology& comm) = 0;
  // How a broadcast of `bytes` over `comm`'s ranks travels (never Auto): TNBC_BCAST_BACKEND,
  // auto by the costs of runtime/bcast_cost.hh (bcast_params: the RMA probe's and the machine's
  // figures at the level `comm` crosses); p2p wherever RMA is not usable.
  virtual BcastBackend bcast_backend(std::size_t bytes, const model::Topology& comm) = 0;
  // What auto would choose on `comm` over sizes up to `max_bytes` (for the start-up log line).
  virtual std::vector<BcastRange> bcast_plan(const model::Topology& comm, std::size_t max_bytes) = 0;
  // ---- rank-local ----
  // Whether a call that took tnbc's schedule receives enough here to return early; else it
  // completes in the call (below_threshold). Asked of every such call: never true for a kind
  // no size pays for (threshold SIZE_MAX), true for one that receives nothing here otherwise.
  virtual bool early_return_pays(Kind kind, std::uint64_t received, const model::Topology& comm) = 0;
  // Whether tnbc's schedule completed in the call beats the library's call at `per_peer` bytes
  // (a broadcast's whole message) on `comm` (model::own_call_bands; never without a model or with
  // TNBC_MIN_BYTES set): where it does, a rank does not vote for the library's own call
  // (runtime/call_vote.hh).
  virtual bool own_call_faster(Kind kind, const model::Topology& comm, std::size_t per_peer) = 0;
  // Mode optimize: no overlap to gain at the call's site, so it completes in the call.
  virtual bool complete_in_call(const CallShape& call) = 0;
  // Whether the complete_in_call() just asked on this thread rested on the profile's evidence
  // (ReadOrderSource::judged_last); false without a profile. Where not, mode nbc's trial may try
  // the call's site (runtime/site_trial.hh).
  virtual bool judged_last() const = 0;
  // Whether that call's site is on trial leaning to completion in the call
  // (ReadOrderSource::leans_in_call_last); false without a profile.
  virtual bool leans_in_call_last() const = 0;
  // The order receivers read the sub-messages in (a permutation; empty: default order).
  virtual std::vector<int> read_order(const CallShape& call) = 0;
  // Whether `bytes` to send are copied lazily (runtime/send_copy.hh) rather than in the call.
  virtual bool lazy_send_copy(std::uint64_t bytes) const = 0;
  // Whether the own block (Alltoall/Alltoallv) is then a Copy step after the return too (not
  // under TNBC_SEND_COPY=lazy-sends: there it is copied into place in the call).
  virtual bool lazy_own_block(std::uint64_t bytes) const = 0;
  // The guard backends to try, in order.
  virtual std::span<const GuardKind> guards() const = 0;
  // Whether the userfaultfd guard may move pages (UFFDIO_MOVE) instead of copying.
  virtual bool swap_pages() const = 0;
  // Sends of one collective a driver keeps in flight at once (< 1: no limit), by how the rank's
  // sends in it relate to its receives (schedule.hh, SendRole).
  virtual int send_window(Driver d, SendRole role) const = 0;
  // Whether the calling thread of an early return starts every send of a collective in which the
  // rank's sends have `role` and whose data is ready in the call (bodies too, not only the edges),
  // so that none waits for the progress thread's first round after the return. The progress
  // thread completes them (runtime/engine.cc, return_early).
  virtual bool caller_starts_sends(SendRole role) const = 0;
  // ---- start-up (MPI_Init, once, before the first collective) ----
  // What the global answers depend on besides the model and the arguments: a hash of the
  // profile and the settings that judge it (0 without a profile). The engine compares it
  // between ranks.
  virtual std::uint64_t fingerprint() const = 0;
  // The model's inputs, the guard backend early returns use first (kGuardNames index; -1: none
  // works here), whether every rank has the same fingerprint (else the profile routes no call to
  // plain MPI: ranks could answer differently), and the guard the engine takes instead per call
  // where it costs less at the call's size (model::guard_by_size; -1: none).
  virtual void start(std::shared_ptr<const model::Inputs> model, int guard_index, bool agreed, int guard_by_size = -1) = 0;
  // The model's inputs (nullptr before start() or without a model).
  virtual std::shared_ptr<const model::Inputs> inputs() const = 0;
  // The size threshold for `kind` on `comm`: bytes per the table's unit (SIZE_MAX: no size pays),
  // the smallest of early_return_sizes.
  virtual std::size_t threshold(Kind kind, const model::Topology& comm) = 0;
  // The sizes at which `kind` returns early on `comm` (route and early_return_pays decide by
  // them): from TNBC_MIN_BYTES up as set, else the model's (model::early_return_bands: a
  // broadcast where its balance pays at the call's size, which may be a band).
  virtual model::SizeBands early_return_sizes(Kind kind, const model::Topology& comm) = 0;
  // How a calling thread waits for its steps (runtime/executor.hh, drive).
  virtual Waiting waiting() const = 0;
  // Start-up input: the CPUs of this rank's node (runtime/cpu_share.hh).
  virtual void set_cpu_share(const CpuShare& c) = 0;
  // Start-up input, before the model starts: whether the MPI library lets the progress thread's
  // calls through while the program waits inside MPI (runtime/mpi_threads.hh).
  virtual void set_thread_progress(ThreadProgress p) = 0;
  // Rank-local: where the progress thread runs (TNBC_PROGRESS_CPUS; never Auto). A rank bound to
  // one CPU would otherwise share it between its computation and its communication.
  virtual ProgressCpus progress_cpus(const CpuShare& c) const = 0;
  // Start-up input: the RMA probe (runtime/rma_transport.hh), before the first collective.
  virtual void set_rma(const RmaFacts& r) = 0;
  // ---- node-level priorities (runtime/node_gate.hh) ----
  // Global (collective): whether each communicator gets a node board when tnbc duplicates it.
  // From settings compared at MPI_Init only.
  virtual bool node_links() const = 0;
  // Rank-local: whether this call's sends to other nodes wait for the node's more urgent ones,
  // and why (runtime/node_choice.hh: auto asks the model). Only asked where the communicator has
  // a board (more than one of its ranks on this node); `senders`: how many ranks of this
  // node send over its link in this call (0 or the node's ranks of the communicator).
  virtual NodeChoice node_priorities(const CallShape& call, const model::Topology& comm, int senders) = 0;
  // How long a send waits for a rank of its node that does not move, then starts (counted).
  virtual long long node_hold_ns() const = 0;
  // Whether sends to ranks of the same node use the node's link (then they are arbitrated too).
  virtual bool node_local_on_link() const = 0;
};

// The policy. `page`: the page size (equal on all ranks, checked at MPI_Init); `orders`: the
// profile of mode optimize (nullptr: default orders, never blocking). Until start() it answers
// with the built-in rules (the unit tests, a run where nothing could be measured).
std::unique_ptr<Policy> make_policy(const Settings& s, std::size_t page, std::unique_ptr<ReadOrderSource> orders);

// The program after a call (the profile's wall times) in the model's time: scaled by the model's
// blocking time over the one the trace pass measured, as model::overlap scales the model's
// transfer to the measured one (node-level priorities compare it with the model's timeline).
// Nothing without a measured blocking time.
std::optional<model::Program> model_program(const SiteProgram& p, const model::Machine& m, const model::Topology& comm,
                                            const model::Coll& c);

// A broadcast's own send window (TNBC_BCAST_SEND_WINDOW; 0: TNBC_SEND_WINDOW's, and the root's
// call starts the sends on a shared CPU). auto: 1 where the MPI library lets the progress thread's
// calls through while the program waits inside MPI and the run spans nodes (`one_node` false), 0
// where it starves them or is not known, and on one node: there each piece through the window
// waited for the root's thread to see the one before complete, the receiver copying in a third of
// the time (np 2 and 4 on one node of 2 CPUs, Table 1's 4 MiB broadcast: 0.6-1.5 ms a call more
// than the sends all started; docs/benchmarks.md, "Session 63").
int bcast_send_window(const Settings& s, ThreadProgress p, bool one_node = false);
// The model's view of how tnbc runs with these settings (window, poll interval, send copy). The
// offline tools know no running library: TNBC_BCAST_SEND_WINDOW=auto is priced as unknown (0).
model::Execution execution(const Settings& s, int guard_index, int guard_by_size = -1,
                           ThreadProgress threads = ThreadProgress::Unknown, bool one_node = false);
// The same with the guards the offline tools price a machine's calls with (model::priced_guards).
inline model::Execution execution(const Settings& s, const model::PricedGuards& g) { return execution(s, g.runs, g.by_size); }
// ... and the transport and node count the machine file was calibrated on (TNBC_BCAST_SEND_WINDOW=auto).
inline model::Execution execution(const Settings& s, const model::Machine& m) {
  const model::PricedGuards g = model::priced_guards(m);
  return execution(s, g.runs, g.by_size, thread_progress_of(m.mpi_transport), m.nodes == 1);
}

}  // namespace tnbc
