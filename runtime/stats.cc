#include "runtime/stats.hh"

#include <time.h>

#include <dlfcn.h>

#include <cstdio>
#include <algorithm>
#include <sstream>
#include <tuple>
#include <vector>

namespace tnbc {

Stats::Shard& Stats::shard() {
  // initial-exec: the library is loaded at start-up (LD_PRELOAD), so static TLS is available
  // and the access costs no call.
  static thread_local Shard* mine [[gnu::tls_model("initial-exec")]] = nullptr;
  if (mine == nullptr) {
    mine = new Shard();
    std::lock_guard lock(mutex_);
    shards_.push_back(mine);
  }
  return *mine;
}

namespace {
// The outcome and reason counters kinds and sites both keep.
template <class Counters>
void count_outcome(Counters& c, Outcome outcome, Reason reason) {
  switch (outcome) {
    case Outcome::EarlyReturn: ++c.early_return; break;
    case Outcome::CompletedInCall: ++c.completed_in_call; break;
    case Outcome::Passthrough: ++c.passthrough; break;
  }
  if (reason != Reason::None) ++c.reasons[static_cast<std::size_t>(reason)];
}

// Adds another shard's outcome and reason counters (and calls, bytes) into `sum`.
template <class Counters>
void add_counts(Counters& sum, const Counters& c) {
  sum.calls += c.calls;
  sum.bytes += c.bytes;
  sum.early_return += c.early_return;
  sum.completed_in_call += c.completed_in_call;
  sum.passthrough += c.passthrough;
  for (std::size_t r = 0; r < c.reasons.size(); ++r) sum.reasons[r] += c.reasons[r];
}

void add_node(NodeCounters& sum, const NodeCounters& c) {
  sum.calls += c.calls;
  sum.holds += c.holds;
  sum.hold_timeouts += c.hold_timeouts;
  sum.first_read_calls += c.first_read_calls;
  sum.first_read_ns_sum += c.first_read_ns_sum;
  sum.first_read_ns_max = std::max(sum.first_read_ns_max, c.first_read_ns_max);
}
}  // namespace

void Stats::record(Kind kind, CallSite site, std::uint64_t bytes, Outcome outcome, Reason reason) {
  Shard& sh = shard();
  auto& k = sh.kinds[static_cast<std::size_t>(kind)];
  ++k.calls;
  if (site.lang == Lang::Fortran) ++k.fortran_calls;
  k.bytes += bytes;
  count_outcome(k, outcome, reason);
  SiteCounters& sc = this->site(sh, kind, site);
  ++sc.calls;
  sc.bytes += bytes;
  count_outcome(sc, outcome, reason);
}

SiteCounters& Stats::site(Shard& sh, Kind kind, CallSite site) {
  const SiteKey key{static_cast<int>(kind), static_cast<int>(site.lang), site.return_address};
  if (!(sh.last && sh.last_key == key)) {
    sh.last = &sh.sites[key];  // node-based map: the address stays valid
    sh.last_key = key;
  }
  return *sh.last;
}

void Stats::record_node(Kind kind, CallSite where, const NodeRecord& r) {
  NodeCounters& n = site(shard(), kind, where).node;
  ++n.calls;
  n.holds += r.holds;
  n.hold_timeouts += r.hold_timeouts;
  if (r.first_read_ns >= 0) {
    ++n.first_read_calls;
    n.first_read_ns_sum += r.first_read_ns;
    n.first_read_ns_max = std::max(n.first_read_ns_max, r.first_read_ns);
  }
}

std::size_t Stats::record_profile_decision(const ProfileDecision& d) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < decisions_.size(); ++i)
    if (decisions_[i].d.site == d.site && decisions_[i].d.basis == d.basis) {
      ++decisions_[i].calls;
      return i;
    }
  decisions_.push_back({d, 1});
  return decisions_.size() - 1;
}

void Stats::count_profile_decision(std::size_t entry) {
  std::lock_guard lock(mutex_);
  if (entry < decisions_.size()) ++decisions_[entry].calls;
}

void Stats::set_profile_blocking(const std::string& state) {
  std::lock_guard lock(mutex_);
  profile_blocking_ = state;
}

KindCounters Stats::kind(Kind k) const {
  std::lock_guard lock(mutex_);
  KindCounters sum;
  for (const Shard* sh : shards_) {
    const auto& c = sh->kinds[static_cast<std::size_t>(k)];
    add_counts(sum, c);
    sum.fortran_calls += c.fortran_calls;
  }
  return sum;
}

void Stats::set_profile(const std::string& file, const std::string& status) {
  std::lock_guard lock(mutex_);
  profile_file_ = file;
  profile_status_ = status;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += c; }
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else out += c;
  }
  return out;
}

double thread_cpu_seconds(pthread_t thread) {
  clockid_t clock;
  struct timespec t;
  if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &t) != 0) return -1;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

namespace {
void reasons_json(std::ostringstream& j, const std::array<std::uint64_t, static_cast<std::size_t>(Reason::Count_)>& reasons) {
  bool first = true;
  for (std::size_t r = 0; r < reasons.size(); ++r) {
    if (reasons[r] == 0) continue;
    j << (first ? "" : ", ") << "\"" << reason_name(static_cast<Reason>(r)) << "\": " << reasons[r];
    first = false;
  }
}

std::string ns_json(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}
}  // namespace

std::string Stats::summary_json(int rank, int size, const std::string& mode) const {
  std::array<KindCounters, kKindCount> kinds_;
  for (std::size_t i = 0; i < kinds_.size(); ++i) kinds_[i] = kind(static_cast<Kind>(i));
  std::lock_guard lock(mutex_);
  std::unordered_map<SiteKey, SiteCounters, SiteHash> sites_;
  for (const Shard* sh : shards_)
    for (const auto& [key, c] : sh->sites) {
      add_counts(sites_[key], c);
      add_node(sites_[key].node, c.node);
    }
  std::ostringstream j;
  j << "{\"format\": \"tnbc-summary\", \"version\": 1, \"rank\": " << rank << ", \"size\": " << size
    << ", \"mode\": \"" << json_escape(mode) << "\",\n \"placement\": {\"host\": \"" << json_escape(placement_.host)
    << "\", \"cpus\": \"" << placement_.cpus << "\", \"cpu_count\": " << placement_.cpu_count << "},\n \"collectives\": {";
  for (std::size_t i = 0; i < kinds_.size(); ++i) {
    const auto& k = kinds_[i];
    j << (i ? ",\n   " : "\n   ") << "\"" << kind_name(static_cast<Kind>(i)) << "\": {\"calls\": " << k.calls
      << ", \"fortran_calls\": " << k.fortran_calls << ", \"bytes\": " << k.bytes
      << ", \"early_return\": " << k.early_return << ", \"completed_in_call\": " << k.completed_in_call
      << ", \"passthrough\": " << k.passthrough << ", \"reasons\": {";
    reasons_json(j, k.reasons);
    j << "}}";
  }
  j << "},\n \"guards\": {\"userfaultfd\": " << guards_[0].load() << ", \"prot_none\": " << guards_[1].load()
    << ", \"userfaultfd_moved\": " << guards_[2].load() << "},\n ";
  j << "\"overhead\": {\"in_early_calls_s\": " << static_cast<double>(in_call_ns_.load()) / 1e9
    << ", \"progress_thread_cpu_s\": " << progress_cpu_s_ << ", \"uffd_listener_cpu_s\": " << listener_cpu_s_
    << "},\n ";
  if (!threshold_.basis.empty()) {
    // min_bytes null: no size pays (every collective runs blocking).
    const MeasuredCosts& c = threshold_.costs;
    j << "\"threshold\": {\"min_bytes\": "
      << (threshold_.min_bytes == kNeverPays ? std::string("null") : std::to_string(threshold_.min_bytes))
      << ", \"basis\": \"" << threshold_.basis << "\"";
    if (threshold_.basis == "measured")
      j << ", \"from_this_rank\": " << (threshold_.from_this_rank ? "true" : "false") << ", \"backend\": \""
        << c.backend << "\", \"link_ns\": " << ns_json(c.link.fixed_ns) << ", \"link_ns_per_byte\": "
        << c.link.per_byte_ns << ", \"guard_ns\": " << ns_json(c.guard.fixed_ns) << ", \"guard_ns_per_byte\": "
        << c.guard.per_byte_ns << ", \"copy_ns_per_byte\": " << c.copy_per_byte_ns;
    j << "},\n ";
  }
  if (have_node_)
    j << "\"node\": {\"ranks\": " << node_.node_ranks << ", \"cpus\": " << node_.node_cpus
      << ", \"own_cpus\": " << node_.own_cpus << ", \"cpu_contention\": "
      << (node_problem_.empty() ? std::string("null") : "\"" + json_escape(node_problem_) + "\"") << "},\n ";
  if (!profile_status_.empty())
    j << "\"profile\": {\"file\": \"" << json_escape(profile_file_) << "\", \"status\": \"" << profile_status_
      << "\", \"calls_ordered\": " << profile_uses(ProfileUse::Ordered)
      << ", \"calls_unknown_site\": " << profile_uses(ProfileUse::UnknownSite)
      << ", \"calls_other_sizes\": " << profile_uses(ProfileUse::OtherSizes);
  if (!profile_status_.empty() && !profile_blocking_.empty()) {
    std::uint64_t blocking = 0;
    for (const DecisionEntry& e : decisions_) blocking += e.d.blocking ? e.calls : 0;
    j << ", \"blocking\": \"" << profile_blocking_ << "\", \"calls_blocking\": " << blocking << ",\n   \"decisions\": [";
    // In order of first use (the same on every rank for SPMD programs).
    for (std::size_t i = 0; i < decisions_.size(); ++i) {
      const ProfileDecision& d = decisions_[i].d;
      char site[24];
      std::snprintf(site, sizeof site, "0x%016llx", static_cast<unsigned long long>(d.site));
      j << (i ? ",\n    " : "\n    ") << "{\"site\": \"" << site << "\", \"kind\": \"" << d.kind << "\", \"where\": \""
        << json_escape(d.where) << "\", \"decision\": \"" << (d.blocking ? "blocking" : "early_return")
        << "\", \"basis\": \"" << d.basis << "\", \"calls\": " << decisions_[i].calls
        << ", \"comm_ns\": " << (d.comm_ns < 0 ? "null" : ns_json(d.comm_ns))
        << ", \"overlap_ns\": " << (d.overlap_ns < 0 ? "null" : ns_json(d.overlap_ns))
        << ", \"cost_ns\": " << ns_json(d.cost_ns)
        << ", \"saved_ns\": " << (d.comm_ns < 0 || d.overlap_ns < 0 ? "null" : ns_json(d.saved_ns)) << "}";
    }
    j << "]";
  }
  if (!profile_status_.empty()) j << "},\n ";
  j << "\"sites\": [";
  bool first = true;
  // Sorted by kind and address so that summaries of different ranks line up.
  std::vector<std::pair<SiteKey, SiteCounters>> sorted(sites_.begin(), sites_.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.kind, a.first.lang, a.first.address) < std::tie(b.first.kind, b.first.lang, b.first.address);
  });
  for (const auto& [key, s] : sorted) {
    const int kind = key.kind, lang = key.lang;
    const void* addr = key.address;
    Dl_info info{};
    std::string module = "?", symbol = "?";
    std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(addr);
    // The return address points after the call; step back one byte to stay inside it.
    if (addr && dladdr(static_cast<const char*>(addr) - 1, &info)) {
      if (info.dli_fname) module = info.dli_fname;
      if (info.dli_sname) symbol = info.dli_sname;
      offset -= reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    }
    char off[32];
    std::snprintf(off, sizeof off, "0x%zx", static_cast<std::size_t>(offset));
    j << (first ? "\n  " : ",\n  ") << "{\"kind\": \"" << kind_name(static_cast<Kind>(kind))
      << "\", \"lang\": \"" << (lang == static_cast<int>(Lang::Fortran) ? "fortran" : "c")
      << "\", \"module\": \"" << json_escape(module) << "\", \"offset\": \"" << off
      << "\", \"symbol\": \"" << json_escape(symbol) << "\", \"calls\": " << s.calls
      << ", \"bytes\": " << s.bytes << ", \"early_return\": " << s.early_return
      << ", \"completed_in_call\": " << s.completed_in_call << ", \"passthrough\": " << s.passthrough
      << ", \"reasons\": {";
    reasons_json(j, s.reasons);
    j << "}";
    if (s.node.calls)  // node-level priorities ran at this site
      j << ", \"node_priorities\": {\"calls\": " << s.node.calls << ", \"holds\": " << s.node.holds
        << ", \"hold_timeouts\": " << s.node.hold_timeouts << ", \"first_read_calls\": " << s.node.first_read_calls
        << ", \"first_read_ms_mean\": "
        << (s.node.first_read_calls ? static_cast<double>(s.node.first_read_ns_sum) / 1e6 / static_cast<double>(s.node.first_read_calls) : 0.0)
        << ", \"first_read_ms_max\": " << static_cast<double>(s.node.first_read_ns_max) / 1e6 << "}";
    j << "}";
    first = false;
  }
  j << "]}\n";
  return j.str();
}

}  // namespace tnbc
