// Every decision a collective's execution depends on, asked in one place. Today's rules
// (RulesPolicy, policy.cc) answer from the settings, the threshold measured at MPI_Init and, in
// mode optimize, the profile; a cost model answers the same questions later (docs/extending.md).
//
// Two kinds of questions, and the rule that keeps ranks matching:
//   global      route, bcast_segments, pieces: they decide which messages exist. Every rank must
//               answer alike, so they may use only inputs equal on every rank (the arguments
//               every rank has alike, settings compared at MPI_Init, values agreed by reduction).
//   rank-local  complete_in_call, read_order, early_return_pays, lazy_send_copy, guards,
//               send_window: they change who drives which message and when, never which
//               messages exist, so ranks may answer differently (runtime/read_order.hh).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "runtime/config.hh"
#include "runtime/cpu_share.hh"
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

class Policy {
 public:
  virtual ~Policy() = default;
  // ---- start-up input ----
  // The size threshold (TNBC_MIN_BYTES as set, or measured at MPI_Init and agreed over the
  // ranks: runtime/cost_probe.hh), before the first collective.
  virtual void set_min_bytes(std::size_t min_bytes) = 0;
  // ---- global ----
  // Reason::None: the call takes tnbc's schedule; else it runs as plain PMPI_* for that reason.
  // `unit`: the collective's size as its table row says (kNoUnit: sizes differ between ranks).
  // A communicator of one rank has nothing to exchange: its calls are the MPI library's own.
  virtual Reason route(Kind kind, bool intercommunicator, int comm_size, std::size_t unit) const = 0;
  virtual int bcast_segments(std::size_t bytes) const = 0;
  virtual PieceSetting pieces(Kind kind) const = 0;
  // ---- rank-local ----
  // Whether a call whose sizes differ between ranks (SizeUnit::None) receives enough here to
  // return early; else it completes in the call (below_threshold).
  virtual bool early_return_pays(Kind kind, std::uint64_t received) const = 0;
  // Mode optimize: no overlap to gain at the call's site, so it completes in the call.
  virtual bool complete_in_call(const CallShape& call) = 0;
  // The order receivers read the sub-messages in (a permutation; empty: default order).
  virtual std::vector<int> read_order(const CallShape& call) = 0;
  virtual bool lazy_send_copy() const = 0;
  // The guard backends to try, in order.
  virtual std::span<const GuardKind> guards() const = 0;
  // Whether the userfaultfd guard may move pages (UFFDIO_MOVE) instead of copying.
  virtual bool swap_pages() const = 0;
  // Sends of one collective a driver keeps in flight at once (< 1: no limit).
  virtual int send_window(Driver d) const = 0;
  // How a calling thread waits for its steps (runtime/executor.hh, drive).
  virtual Waiting waiting() const = 0;
  // Start-up input: the CPUs of this rank's node (runtime/cpu_share.hh).
  virtual void set_cpu_share(const CpuShare& c) = 0;
  // ---- node-level priorities (runtime/node_gate.hh) ----
  // Global (collective): whether each communicator gets a node board when tnbc duplicates it.
  // From settings compared at MPI_Init only.
  virtual bool node_links() const = 0;
  // Rank-local: whether this call's sends to other nodes wait for the node's more urgent ones
  // (only asked where the communicator has a board: more than one of its ranks on this node).
  virtual bool node_priorities(Kind kind) const = 0;
  // How long a send waits for a rank of its node that does not move, then starts (counted).
  virtual long long node_hold_ns() const = 0;
  // Whether sends to ranks of the same node use the node's link (then they are arbitrated too).
  virtual bool node_local_on_link() const = 0;
};

// Today's rules. `page`: the page size (equal on all ranks, checked at MPI_Init); `orders`: the
// profile of mode optimize (nullptr: default orders, never blocking).
std::unique_ptr<Policy> make_rules_policy(const Settings& s, std::size_t page, std::unique_ptr<ReadOrderSource> orders);

}  // namespace tnbc
