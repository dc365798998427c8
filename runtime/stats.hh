// Per-collective-kind and per-call-site counters, written as a per-rank JSON summary
// (format "tnbc-summary", version 1; documented in docs/formats.md) at MPI_Finalize.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <array>
#include <optional>
#include <atomic>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <mutex>
#include <vector>
#include <string>

#include "runtime/config.hh"
#include "runtime/cpu_share.hh"
#include "runtime/node_choice.hh"
#include "runtime/placement.hh"
#include "runtime/site_trial.hh"
#include "runtime/threshold.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

// The summary's format version (docs/formats.md): 2 added `run`, `modules` and the sites' times,
// waits and timelines.
inline constexpr int kSummaryVersion = 2;


struct KindCounters {
  std::uint64_t calls = 0, fortran_calls = 0, bytes = 0;
  std::uint64_t early_return = 0, completed_in_call = 0, passthrough = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::Count_)> reasons{};
};

// Node-level priorities (runtime/node_gate.hh), per call site: calls arbitrated, calls on a
// communicator with a node board that were not (the policy said no), sends held back at least
// once, sends started past a rank that did not move (hold timed out), the time from the call
// until its first-read sub-message was complete here (calls where it was known), and the
// policy's last answer at the site (runtime/node_choice.hh: why, the model's estimates).
struct NodeCounters {
  std::uint64_t calls = 0, off_calls = 0, holds = 0, hold_timeouts = 0;
  std::uint64_t first_read_calls = 0;
  long long first_read_ns_sum = 0, first_read_ns_max = 0;
  NodeChoice choice;
  bool decided = false;
};

// One call, as its site counts it (docs/reports.md defines every figure). Times are
// futex::now_ns (monotonic ns).
struct CallEntry {
  std::uint64_t received = 0, sent = 0;  // bytes (Collective::Size)
  Outcome outcome = Outcome::Passthrough;
  Reason reason = Reason::None;
  long long called_ns = 0, returned_ns = 0;
  // Of an early return's time in the call, the part it waited for its peers: for the data it must
  // have before returning (the pieces that land in partial pages at its buffers' ends, edge
  // sends) and in the ranks' vote (runtime/call_vote.hh). Where a peer calls later, that wait is
  // the peer's lateness, not tnbc's work.
  long long waited_in_call_ns = 0;
};

// A sampled call's timeline (runtime/observe.hh): per sub-message (peer of an exchange, chunk of
// a broadcast) its bytes, when its last piece arrived and when the program first touched it,
// in ns after the call (-1: not known: nothing received, or never touched while held back).
struct Timeline {
  std::uint64_t call = 0;  // the call's index at its site on this rank (0 = first)
  long long in_call_ns = 0, duration_ns = 0;
  std::vector<std::uint64_t> bytes;
  std::vector<long long> arrival_ns, first_access_ns;
};

// What a call that returned early cost the program after the return, recorded when its
// collective finished: its duration and every wait for it, per source.
struct Completion {
  long long in_call_ns = 0, duration_ns = 0;
  std::array<long long, kWaitSourceCount> waited_ns{};
  std::array<std::uint64_t, kWaitSourceCount> waits{};
  long long observe_ns = 0;  // waits only observation caused (the data was there already)
  std::uint64_t observe_waits = 0;
  std::optional<Timeline> timeline;
};

// Per call site (and thread; summed when the summary is written). Times are sums over calls, ns.
struct SiteCounters {
  Kind kind = Kind::Bcast;
  Lang lang = Lang::C;
  std::uint64_t calls = 0, bytes = 0, bytes_sent = 0;
  std::uint64_t early_return = 0, completed_in_call = 0, passthrough = 0;
  // The calls the timelines sample (the 1st, 2nd, 4th, ...: TNBC_TIMELINE_CALLS, take_sample), counted: the
  // calls that receive data here (not a broadcast's root) and, in the engine, are set to return
  // early. Counted among all calls, a broadcast whose root rotates over 2 ranks had the 2nd, 4th,
  // 8th, ... call of one rank all its root's: one receiving call observed.
  std::uint64_t sampled_from = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::Count_)> reasons{};
  long long in_call_ns = 0;    // Tinit: call to return, every call
  long long early_in_call_ns = 0;  // the part of it in calls that returned early
  long long early_waited_in_call_ns = 0;  // of that, waiting for the peers' data (CallEntry::waited_in_call_ns)
  long long duration_ns = 0;   // call to its last step done (the return, for calls that did not return early)
  long long blocked_ns = 0;    // waits after the return (sum of waited_ns)
  long long hidden_ns = 0;     // per call max(0, duration - Tinit - blocked)
  std::uint64_t finished = 0;  // early returns whose collective finished (counted in the times)
  std::array<long long, kWaitSourceCount> waited_ns{};
  std::array<std::uint64_t, kWaitSourceCount> waits{};
  long long observe_ns = 0;
  std::uint64_t observe_waits = 0;
  std::vector<Timeline> timelines;
  NodeCounters node;  // node-level priorities, where they ran
  SiteTrial trial;    // mode nbc's trial at the site (the engine's, on this thread)
};

// Mode optimize: what the profile decided for a call site (trace/gain.hh), for the summary.
struct ProfileDecision {
  std::uint64_t site = 0;          // the profile's site hash
  std::string kind, where;         // where: innermost frame, "symbol (module+0xoffset)"
  std::string basis;               // trace::basis_name
  bool blocking = false;
  double cost_ns = 0;
  double comm_ns = -1, overlap_ns = -1, saved_ns = 0;  // -1: no estimate (saved_ns then unset)
  double in_call_ns = -1;  // the model's time in the call of an early return there (Tinit); -1: no estimate
  double own_call_ns = -1;  // the model's time of tnbc's schedule completed in the call there; -1: not priced
  std::string receivers;    // a broadcast root's own site: the receivers' site it took this from (trace::Decision)
};

class Stats {
 public:
  // Cheap on the hot path: each thread counts into its own shard (no lock, no atomics);
  // shards are summed when read. `site` is this thread's counters of a call site (stable; a
  // loop calling from one site skips the look-up); `record` counts one call there, on the same
  // thread. `calls` before the record is the call's index at the site (sampling).
  SiteCounters& site(Kind kind, CallSite site);
  void record(SiteCounters& site, const CallEntry& call);
  // The collective of an early return finished (on the progress thread): its duration, waits
  // and timeline.
  void complete(Kind kind, CallSite site, const Completion& done);
  // A timeline recorded another way (the trace pass: blocking calls, first touches traced).
  void add_timeline(Kind kind, CallSite where, Timeline t) { site(kind, where).timelines.push_back(std::move(t)); }
  KindCounters kind(Kind k) const;
  // One arbitrated call's node-level counters (runtime/node_gate.hh); first_read_ns -1: unknown.
  struct NodeRecord {
    bool arbitrated = false;  // false: the policy said no (counted in off_calls)
    NodeChoice choice;
    std::uint32_t holds = 0, hold_timeouts = 0;
    long long first_read_ns = -1;
  };
  void record_node(Kind kind, CallSite site, const NodeRecord& r);
  // Which guard held an early-returned receive buffer back (runtime/uffd.hh, runtime/guard.hh);
  // UserfaultfdMoved counts the userfaultfd ones whose pages were swapped, not copied (a subset).
  enum class GuardUsed { Userfaultfd, ProtNone, UserfaultfdMoved };
  void record_guard(GuardUsed g) { guards_[static_cast<std::size_t>(g)].fetch_add(1, std::memory_order_relaxed); }
  // How a broadcast that took tnbc's schedule travelled (TNBC_BCAST_BACKEND; never Auto).
  // A vote of a communicator's ranks (runtime/call_vote.hh): keys it agreed to run as the
  // library's own, and keys it sent back through tnbc to be tried again.
  void record_vote(std::uint64_t agreed, std::uint64_t retried) {
    votes_[0].fetch_add(1, std::memory_order_relaxed);
    votes_[1].fetch_add(agreed, std::memory_order_relaxed);
    votes_[2].fetch_add(retried, std::memory_order_relaxed);
  }
  void record_bcast_backend(BcastBackend b) {
    bcast_backends_[static_cast<std::size_t>(b)].fetch_add(1, std::memory_order_relaxed);
  }
  // Mode optimize: the profile (TNBC_PROFILE) and its status ("loaded", "rejected", "none"),
  // and per call whether its read order came from the profile (runtime/read_order.hh).
  enum class ProfileUse { Ordered, UnknownSite, OtherSizes };
  void set_profile(const std::string& file, const std::string& status);
  void record_profile(ProfileUse u, std::uint64_t calls = 1) {
    profile_uses_[static_cast<std::size_t>(u)].fetch_add(calls, std::memory_order_relaxed);
  }
  std::uint64_t profile_uses(ProfileUse u) const { return profile_uses_[static_cast<std::size_t>(u)].load(); }
  // tnbc's own copies in its calls (the own block into place, the send pieces staged): how many,
  // their bytes and time, and what the machine's in-call copy line (model::Machine::in_call_copy)
  // priced them at: the run's check of that input of Tinit's estimate.
  struct CallCopies {
    std::uint64_t copies = 0, bytes = 0, ns = 0, priced_ns = 0;
  };
  void record_call_copy(std::uint64_t copies, std::uint64_t bytes, long long ns, double priced_ns) {
    call_copies_[0].fetch_add(copies, std::memory_order_relaxed);
    call_copies_[1].fetch_add(bytes, std::memory_order_relaxed);
    call_copies_[2].fetch_add(static_cast<std::uint64_t>(std::max(0LL, ns)), std::memory_order_relaxed);
    call_copies_[3].fetch_add(static_cast<std::uint64_t>(std::max(0.0, priced_ns)), std::memory_order_relaxed);
  }
  CallCopies call_copies() const {
    return {call_copies_[0].load(), call_copies_[1].load(), call_copies_[2].load(), call_copies_[3].load()};
  }
  // The staging of tnbc's calls (EngineImpl::staging): blocks mapped afresh (their first touches
  // fault) and their bytes; the waits for the progress thread's round before a block came back
  // to the pools (or the wait ran out), how many and how long.
  struct Staging {
    std::uint64_t mapped = 0, mapped_bytes = 0, settles = 0, settle_ns = 0;
  };
  void record_staging_map(std::uint64_t bytes) {
    staging_[0].fetch_add(1, std::memory_order_relaxed);
    staging_[1].fetch_add(bytes, std::memory_order_relaxed);
  }
  void record_settle(long long ns) {
    staging_[2].fetch_add(1, std::memory_order_relaxed);
    staging_[3].fetch_add(static_cast<std::uint64_t>(std::max(0LL, ns)), std::memory_order_relaxed);
  }
  Staging staging() const { return {staging_[0].load(), staging_[1].load(), staging_[2].load(), staging_[3].load()}; }
  // tnbc's own costs: the CPU time of its threads (read at shutdown; -1 when unknown).
  void set_thread_cpu(double progress_s, double listener_s) {
    progress_cpu_s_ = progress_s;
    listener_cpu_s_ = listener_s;
  }
  // The size threshold of early return (TNBC_MIN_BYTES; runtime/threshold.hh): its value, why
  // ("set", "measured", "single_rank", "nothing_to_guard", "not_measured"), this rank's
  // measured costs and whether its own value is the one used (the largest over the ranks).
  struct Threshold {
    std::size_t min_bytes = 0;
    std::string basis;
    MeasuredCosts costs;
    bool from_this_rank = true;
  };
  void set_threshold(const Threshold& t) { threshold_ = t; }
  // The CPUs of this rank's node (runtime/cpu_share.hh), and what competes with what ("" if fine).
  void set_node(const CpuShare& c, const std::string& problem) {
    node_ = c;
    node_problem_ = problem;
    have_node_ = true;
  }
  // Where this rank runs (runtime/placement.hh), recorded at MPI_Init in every mode.
  void set_placement(const Placement& p) { placement_ = p; }
  // The run (docs/formats.md `run`): its id (drawn by rank 0 of MPI_COMM_WORLD), whether this
  // world was started by MPI_Comm_spawn, and the program's wall time from MPI_Init to
  // MPI_Finalize.
  struct Run {
    std::uint64_t id = 0;
    bool spawned = false;
    long long wall_ns = 0;
    std::string executable;  // /proc/self/exe (what a profile names)
  };
  void set_run(const Run& r) { run_ = r; }
  const Run& run() const { return run_; }
  // Sums over this rank's call sites (the lines rank 0 prints at MPI_Finalize).
  struct Totals {
    long long in_call_ns = 0, duration_ns = 0, hidden_ns = 0;
  };
  Totals totals() const;
  // Per call of mode optimize: the profile's decision for its site (one entry per site and basis,
  // with the number of calls). `profile_blocking` is TNBC_PROFILE_BLOCKING: "auto" or "off".
  // Returns the entry, which later calls with the same decision count (count_profile_decision).
  std::size_t record_profile_decision(const ProfileDecision& d);
  void count_profile_decision(std::size_t entry);
  void set_profile_blocking(const std::string& state);
  // A block another part writes (its JSON text, asked for when the summary is written): the
  // cost model's `model` block (runtime/model/summary.hh).
  void add_block(const std::string& name, std::function<std::string()> json);
  // Every site's calls and bytes received so far, summed over the threads.
  struct SiteTotal {
    Kind kind;
    const void* address;  // the call's return address
    std::uint64_t calls, bytes;
  };
  std::vector<SiteTotal> site_totals() const;
  // JSON text of the whole summary (rank, size and mode are the caller's).
  std::string summary_json(int rank, int size, const std::string& mode) const;

 private:
  struct SiteKey {
    int kind, lang;
    const void* address;
    bool operator==(const SiteKey&) const = default;
  };
  // Every site's counters summed over the shards, in a stable order (kind, language, address).
  std::vector<std::pair<SiteKey, SiteCounters>> merged_sites() const;
  struct SiteHash {
    std::size_t operator()(const SiteKey& k) const {
      return std::hash<const void*>()(k.address) ^ (static_cast<std::size_t>(k.kind * 2 + k.lang) << 1);
    }
  };
  struct Shard {
    std::array<KindCounters, kKindCount> kinds{};
    std::unordered_map<SiteKey, SiteCounters, SiteHash> sites;
    SiteKey last_key{-1, -1, nullptr};  // loops call from one site: skip the hash look-up
    SiteCounters* last = nullptr;
  };
  Shard& shard();

  std::array<std::atomic<std::uint64_t>, 3> guards_{};  // rare (early returns only): shared
  std::array<std::atomic<std::uint64_t>, 3> bcast_backends_{};  // p2p, rma_binomial, rma_linear
  std::array<std::atomic<std::uint64_t>, 3> votes_{};  // votes, keys agreed, keys retried
  std::array<std::atomic<std::uint64_t>, 3> profile_uses_{};
  std::array<std::atomic<std::uint64_t>, 4> call_copies_{};  // CallCopies' fields, in order
  std::array<std::atomic<std::uint64_t>, 4> staging_{};      // Staging's fields, in order
  std::string profile_file_, profile_status_;  // set once at start-up
  double progress_cpu_s_ = -1, listener_cpu_s_ = -1;  // set once at shutdown
  std::string profile_blocking_;
  Threshold threshold_;
  CpuShare node_;
  std::string node_problem_;
  Placement placement_;
  Run run_;
  bool have_node_ = false;
  std::vector<std::pair<std::string, std::function<std::string()>>> blocks_;  // under mutex_
  struct DecisionEntry {
    ProfileDecision d;
    std::uint64_t calls = 0;
  };
  std::vector<DecisionEntry> decisions_;  // under mutex_; few (one per site and basis)
  mutable std::mutex mutex_;     // guards the list of shards
  std::vector<Shard*> shards_;   // one per thread that recorded; never freed (threads may exit)
};

// CPU seconds a thread of this process has used (-1 when unknown).
double thread_cpu_seconds(pthread_t thread);

// Escapes a string for JSON output.
std::string json_escape(const std::string& s);

}  // namespace tnbc
