// Per-collective-kind and per-call-site counters, written as a per-rank JSON summary
// (format "tnbc-summary", version 1; documented in docs/formats.md) at MPI_Finalize.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <mutex>
#include <vector>
#include <string>

#include "runtime/cpu_share.hh"
#include "runtime/placement.hh"
#include "runtime/threshold.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {



struct KindCounters {
  std::uint64_t calls = 0, fortran_calls = 0, bytes = 0;
  std::uint64_t early_return = 0, completed_in_call = 0, passthrough = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::Count_)> reasons{};
};

// Node-level priorities (runtime/node_gate.hh), per call site: calls arbitrated, sends held back
// at least once, sends started past a rank that did not move (hold timed out), and the time
// from the call until its first-read sub-message was complete here (calls where it was known).
struct NodeCounters {
  std::uint64_t calls = 0, holds = 0, hold_timeouts = 0;
  std::uint64_t first_read_calls = 0;
  long long first_read_ns_sum = 0, first_read_ns_max = 0;
};

struct SiteCounters {
  std::uint64_t calls = 0, bytes = 0;
  std::uint64_t early_return = 0, completed_in_call = 0, passthrough = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(Reason::Count_)> reasons{};
  NodeCounters node;
};

// Mode optimize: what the profile decided for a call site (trace/gain.hh), for the summary.
struct ProfileDecision {
  std::uint64_t site = 0;          // the profile's site hash
  std::string kind, where;         // where: innermost frame, "symbol (module+0xoffset)"
  std::string basis;               // trace::basis_name
  bool blocking = false;
  double cost_ns = 0;
  double comm_ns = -1, overlap_ns = -1, saved_ns = 0;  // -1: no estimate (saved_ns then unset)
};

class Stats {
 public:
  // Cheap on the hot path: each thread counts into its own shard (no lock, no atomics);
  // shards are summed when read.
  void record(Kind kind, CallSite site, std::uint64_t bytes, Outcome outcome, Reason reason);
  KindCounters kind(Kind k) const;
  // One arbitrated call's node-level counters (runtime/node_gate.hh); first_read_ns -1: unknown.
  struct NodeRecord {
    std::uint32_t holds = 0, hold_timeouts = 0;
    long long first_read_ns = -1;
  };
  void record_node(Kind kind, CallSite site, const NodeRecord& r);
  // Which guard held an early-returned receive buffer back (runtime/uffd.hh, runtime/guard.hh);
  // UserfaultfdMoved counts the userfaultfd ones whose pages were swapped, not copied (a subset).
  enum class GuardUsed { Userfaultfd, ProtNone, UserfaultfdMoved };
  void record_guard(GuardUsed g) { guards_[static_cast<std::size_t>(g)].fetch_add(1, std::memory_order_relaxed); }
  // Mode optimize: the profile (TNBC_PROFILE) and its status ("loaded", "rejected", "none"),
  // and per call whether its read order came from the profile (runtime/read_order.hh).
  enum class ProfileUse { Ordered, UnknownSite, OtherSizes };
  void set_profile(const std::string& file, const std::string& status);
  void record_profile(ProfileUse u) { profile_uses_[static_cast<std::size_t>(u)].fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t profile_uses(ProfileUse u) const { return profile_uses_[static_cast<std::size_t>(u)].load(); }
  // tnbc's own costs: wall time inside calls that returned early (Tinit, summed), and the CPU
  // time of its threads (read at shutdown; -1 when unknown).
  void record_in_call(long long ns) { in_call_ns_.fetch_add(static_cast<std::uint64_t>(std::max(0LL, ns)), std::memory_order_relaxed); }
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
  // Per call of mode optimize: the profile's decision for its site (one entry per site and basis,
  // with the number of calls). `profile_blocking` is TNBC_PROFILE_BLOCKING: "auto" or "off".
  // Returns the entry, which later calls with the same decision count (count_profile_decision).
  std::size_t record_profile_decision(const ProfileDecision& d);
  void count_profile_decision(std::size_t entry);
  void set_profile_blocking(const std::string& state);
  // JSON text of the whole summary (rank, size and mode are the caller's).
  std::string summary_json(int rank, int size, const std::string& mode) const;

 private:
  struct SiteKey {
    int kind, lang;
    const void* address;
    bool operator==(const SiteKey&) const = default;
  };
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
  SiteCounters& site(Shard& sh, Kind kind, CallSite site);

  std::array<std::atomic<std::uint64_t>, 3> guards_{};  // rare (early returns only): shared
  std::array<std::atomic<std::uint64_t>, 3> profile_uses_{};
  std::string profile_file_, profile_status_;  // set once at start-up
  std::atomic<std::uint64_t> in_call_ns_{0};
  double progress_cpu_s_ = -1, listener_cpu_s_ = -1;  // set once at shutdown
  std::string profile_blocking_;
  Threshold threshold_;
  CpuShare node_;
  std::string node_problem_;
  Placement placement_;
  bool have_node_ = false;
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
