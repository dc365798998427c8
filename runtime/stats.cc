#include "runtime/stats.hh"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "runtime/modules.hh"

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

// A site's times and waits, from another shard (the progress thread records completions).
void add_times(SiteCounters& sum, const SiteCounters& c) {
  sum.bytes_sent += c.bytes_sent;
  sum.in_call_ns += c.in_call_ns;
  sum.early_in_call_ns += c.early_in_call_ns;
  sum.early_waited_in_call_ns += c.early_waited_in_call_ns;
  sum.duration_ns += c.duration_ns;
  sum.blocked_ns += c.blocked_ns;
  sum.hidden_ns += c.hidden_ns;
  sum.finished += c.finished;
  for (std::size_t i = 0; i < kWaitSourceCount; ++i) {
    sum.waited_ns[i] += c.waited_ns[i];
    sum.waits[i] += c.waits[i];
  }
  sum.observe_ns += c.observe_ns;
  sum.observe_waits += c.observe_waits;
  sum.timelines.insert(sum.timelines.end(), c.timelines.begin(), c.timelines.end());
}

void add_node(NodeCounters& sum, const NodeCounters& c) {
  if (c.decided) {
    sum.choice = c.choice;
    sum.decided = true;
  }
  sum.calls += c.calls;
  sum.off_calls += c.off_calls;
  sum.holds += c.holds;
  sum.hold_timeouts += c.hold_timeouts;
  sum.first_read_calls += c.first_read_calls;
  sum.first_read_ns_sum += c.first_read_ns_sum;
  sum.first_read_ns_max = std::max(sum.first_read_ns_max, c.first_read_ns_max);
}
}  // namespace

SiteCounters& Stats::site(Kind kind, CallSite site) {
  Shard& sh = shard();
  const SiteKey key{static_cast<int>(kind), static_cast<int>(site.lang), site.return_address};
  if (!(sh.last && sh.last_key == key)) {
    auto [it, added] = sh.sites.try_emplace(key);  // node-based map: the address stays valid
    if (added) {
      it->second.kind = kind;
      it->second.lang = site.lang;
    }
    sh.last = &it->second;
    sh.last_key = key;
  }
  return *sh.last;
}

void Stats::record(SiteCounters& sc, const CallEntry& r) {
  auto& k = shard().kinds[static_cast<std::size_t>(sc.kind)];
  ++k.calls;
  if (sc.lang == Lang::Fortran) ++k.fortran_calls;
  k.bytes += r.received;
  count_outcome(k, r.outcome, r.reason);
  ++sc.calls;
  sc.bytes += r.received;
  sc.bytes_sent += r.sent;
  count_outcome(sc, r.outcome, r.reason);
  const long long in_call = std::max(0LL, r.returned_ns - r.called_ns);
  sc.in_call_ns += in_call;
  if (r.outcome == Outcome::EarlyReturn) {
    sc.early_in_call_ns += in_call;
    sc.early_waited_in_call_ns += std::clamp(r.waited_in_call_ns, 0LL, in_call);
  }
  // A call that did not return early waited for all of its collective in it: its duration is
  // its time in the call, nothing of it hidden. An early return's comes with its completion.
  if (r.outcome != Outcome::EarlyReturn) sc.duration_ns += in_call;
}

void Stats::complete(Kind kind, CallSite where, const Completion& d) {
  SiteCounters& sc = site(kind, where);
  ++sc.finished;
  long long blocked = 0;
  for (std::size_t i = 0; i < kWaitSourceCount; ++i) {
    sc.waited_ns[i] += d.waited_ns[i];
    sc.waits[i] += d.waits[i];
    blocked += d.waited_ns[i];
  }
  // The program's waits may end after the last step (a fault woken once the page is published,
  // a thread scheduled late): the collective lasted for the program until then too, so that
  // Tinit + blocked never exceeds the duration (docs/reports.md, D).
  const long long duration = std::max(d.duration_ns, d.in_call_ns + blocked);
  sc.duration_ns += duration;
  sc.blocked_ns += blocked;
  sc.hidden_ns += std::max(0LL, duration - d.in_call_ns - blocked);
  sc.observe_ns += d.observe_ns;
  sc.observe_waits += d.observe_waits;
  if (d.timeline) sc.timelines.push_back(*d.timeline);
}

std::vector<Stats::SiteTotal> Stats::site_totals() const {
  std::vector<SiteTotal> out;
  for (const auto& [key, c] : merged_sites()) out.push_back({c.kind, key.address, c.calls, c.bytes});
  return out;
}

std::vector<std::pair<Stats::SiteKey, SiteCounters>> Stats::merged_sites() const {
  std::lock_guard lock(mutex_);
  std::unordered_map<SiteKey, SiteCounters, SiteHash> sum;
  for (const Shard* sh : shards_)
    for (const auto& [key, c] : sh->sites) {
      auto [it, added] = sum.try_emplace(key);
      if (added) {
        it->second.kind = c.kind;
        it->second.lang = c.lang;
      }
      add_counts(it->second, c);
      add_times(it->second, c);
      add_node(it->second.node, c.node);
      if (c.trial.trials > it->second.trial.trials) it->second.trial = c.trial;  // the thread that tried most
    }
  std::vector<std::pair<SiteKey, SiteCounters>> sorted(sum.begin(), sum.end());
  // Sorted by kind and address so that summaries of different ranks line up.
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.kind, a.first.lang, a.first.address) < std::tie(b.first.kind, b.first.lang, b.first.address);
  });
  for (auto& [key, c] : sorted)
    std::sort(c.timelines.begin(), c.timelines.end(), [](const Timeline& a, const Timeline& b) { return a.call < b.call; });
  return sorted;
}

Stats::Totals Stats::totals() const {
  Totals t;
  for (const auto& [key, c] : merged_sites()) {
    t.in_call_ns += c.in_call_ns;
    t.duration_ns += c.duration_ns;
    t.hidden_ns += c.hidden_ns;
  }
  return t;
}

void Stats::record_node(Kind kind, CallSite where, const NodeRecord& r) {
  NodeCounters& n = site(kind, where).node;
  n.choice = r.choice;
  n.decided = true;
  if (!r.arbitrated) {
    ++n.off_calls;
    return;
  }
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

void Stats::add_block(const std::string& name, std::function<std::string()> json) {
  std::lock_guard lock(mutex_);
  blocks_.emplace_back(name, std::move(json));
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

namespace {
std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

template <class T, std::size_t N>
void array_json(std::ostringstream& j, const std::array<T, N>& values) {
  j << "{";
  for (std::size_t i = 0; i < N; ++i)
    j << (i ? ", " : "") << "\"" << wait_source_name(static_cast<WaitSource>(i)) << "\": " << values[i];
  j << "}";
}

template <class T>
void list_json(std::ostringstream& j, const std::vector<T>& values) {
  j << "[";
  for (std::size_t i = 0; i < values.size(); ++i) j << (i ? ", " : "") << values[i];
  j << "]";
}

// One site: where (module, offset, symbol), what its calls did, and what they cost the program.
void site_json(std::ostringstream& j, const SiteCounters& s, const CodeLocation& where) {
  char off[32];
  std::snprintf(off, sizeof off, "0x%zx", static_cast<std::size_t>(where.offset));
  j << "{\"kind\": \"" << kind_name(s.kind) << "\", \"lang\": \"" << (s.lang == Lang::Fortran ? "fortran" : "c")
    << "\", \"module\": \"" << json_escape(where.module) << "\", \"offset\": \"" << off << "\", \"symbol\": \""
    << json_escape(where.symbol) << "\", \"calls\": " << s.calls << ", \"bytes\": " << s.bytes
    << ", \"bytes_sent\": " << s.bytes_sent << ", \"early_return\": " << s.early_return
    << ", \"completed_in_call\": " << s.completed_in_call << ", \"passthrough\": " << s.passthrough << ", \"reasons\": {";
  reasons_json(j, s.reasons);
  j << "},\n   \"time_ns\": {\"in_call\": " << s.in_call_ns << ", \"duration\": " << s.duration_ns
    << ", \"blocked\": " << s.blocked_ns << ", \"hidden\": " << s.hidden_ns << ", \"in_early_calls\": " << s.early_in_call_ns
    << ", \"in_early_calls_waiting\": " << s.early_waited_in_call_ns << "}, \"finished\": " << s.finished << ", \"blocked_ns\": ";
  array_json(j, s.waited_ns);
  j << ", \"waits\": ";
  array_json(j, s.waits);
  j << ", \"observation\": {\"ns\": " << s.observe_ns << ", \"waits\": " << s.observe_waits << "},\n   \"timelines\": [";
  for (std::size_t i = 0; i < s.timelines.size(); ++i) {
    const Timeline& t = s.timelines[i];
    j << (i ? ",\n    " : "\n    ") << "{\"call\": " << t.call << ", \"in_call_ns\": " << t.in_call_ns
      << ", \"duration_ns\": " << t.duration_ns << ", \"bytes\": ";
    list_json(j, t.bytes);
    j << ", \"arrival_ns\": ";
    list_json(j, t.arrival_ns);
    j << ", \"first_access_ns\": ";
    list_json(j, t.first_access_ns);
    j << "}";
  }
  j << "]";
  if (s.trial.trials > 0)  // mode nbc's trial reached a verdict (docs/formats.md)
    j << ", \"trial\": {\"trials\": " << s.trial.trials << ", \"early_ns\": " << s.trial.early_ns
      << ", \"in_call_ns\": " << s.trial.in_call_ns << ", \"verdict\": \""
      << (s.trial.in_call ? "in_call" : "early_return") << "\", \"leaned\": " << (s.trial.leaned ? "true" : "false")
      << "}";
  if (s.node.decided)  // the communicator had a node board (docs/formats.md)
    j << ", \"node_priorities\": {\"calls\": " << s.node.calls << ", \"off_calls\": " << s.node.off_calls
      << ", \"basis\": \"" << node_basis_name(s.node.choice.basis) << "\", \"model_first_read_ms\": "
      << (s.node.choice.first_on_ns < 0 ? std::string("null")
                                        : "{\"on\": " + std::to_string(s.node.choice.first_on_ns / 1e6) +
                                              ", \"off\": " + std::to_string(s.node.choice.first_off_ns / 1e6) +
                                              ", \"margin\": " + std::to_string(s.node.choice.margin_ns / 1e6) +
                                              ", \"end_on\": " + std::to_string(s.node.choice.end_on_ns / 1e6) +
                                              ", \"end_off\": " + std::to_string(s.node.choice.end_off_ns / 1e6) +
                                              (s.node.choice.done_on_ns < 0
                                                   ? std::string()
                                                   : ", \"done_on\": " + std::to_string(s.node.choice.done_on_ns / 1e6) +
                                                         ", \"done_off\": " + std::to_string(s.node.choice.done_off_ns / 1e6)) +
                                              "}")
      << ", \"holds\": " << s.node.holds
      << ", \"hold_timeouts\": " << s.node.hold_timeouts << ", \"first_read_calls\": " << s.node.first_read_calls
      << ", \"first_read_ms_mean\": "
      << (s.node.first_read_calls ? static_cast<double>(s.node.first_read_ns_sum) / 1e6 / static_cast<double>(s.node.first_read_calls) : 0.0)
      << ", \"first_read_ms_max\": " << static_cast<double>(s.node.first_read_ns_max) / 1e6 << "}";
  j << "}";
}
}  // namespace

std::string Stats::summary_json(int rank, int size, const std::string& mode) const {
  std::array<KindCounters, kKindCount> kinds_;
  for (std::size_t i = 0; i < kinds_.size(); ++i) kinds_[i] = kind(static_cast<Kind>(i));
  const auto sites = merged_sites();
  std::lock_guard lock(mutex_);
  std::ostringstream j;
  long long in_early_ns = 0, in_early_waiting_ns = 0;
  for (const auto& [key, c] : sites) {
    in_early_ns += c.early_in_call_ns;
    in_early_waiting_ns += c.early_waited_in_call_ns;
  }
  j << "{\"format\": \"tnbc-summary\", \"version\": " << kSummaryVersion << ", \"rank\": " << rank << ", \"size\": " << size
    << ", \"mode\": \"" << json_escape(mode) << "\",\n \"run\": {\"id\": \"" << hex(run_.id) << "\", \"world\": \""
    << (run_.spawned ? "spawned" : "main") << "\", \"wall_ns\": " << run_.wall_ns << ", \"executable\": \""
    << json_escape(run_.executable) << "\"},\n \"placement\": {\"host\": \""
    << json_escape(placement_.host) << "\", \"cpus\": \"" << placement_.cpus << "\", \"cpu_count\": " << placement_.cpu_count
    << "},\n \"collectives\": {";
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
  j << "\"bcast_backends\": {\"p2p\": " << bcast_backends_[0].load() << ", \"rma_binomial\": " << bcast_backends_[1].load()
    << ", \"rma_linear\": " << bcast_backends_[2].load() << "},\n ";
  j << "\"agreement\": {\"votes\": " << votes_[0].load() << ", \"agreed\": " << votes_[1].load()
    << ", \"retried\": " << votes_[2].load() << "},\n ";
  j << "\"overhead\": {\"in_early_calls_s\": " << static_cast<double>(in_early_ns) / 1e9
    << ", \"in_early_calls_waiting_s\": " << static_cast<double>(in_early_waiting_ns) / 1e9
    << ", \"progress_thread_cpu_s\": " << progress_cpu_s_ << ", \"uffd_listener_cpu_s\": " << listener_cpu_s_;
  const CallCopies cc = call_copies();
  j << ", \"in_call_copies\": {\"copies\": " << cc.copies << ", \"bytes\": " << cc.bytes
    << ", \"s\": " << static_cast<double>(cc.ns) / 1e9 << ", \"priced_s\": " << static_cast<double>(cc.priced_ns) / 1e9
    << "}";
  const Staging st = staging();
  j << ", \"staging\": {\"mapped\": " << st.mapped << ", \"mapped_bytes\": " << st.mapped_bytes
    << ", \"settles\": " << st.settles << ", \"settle_s\": " << static_cast<double>(st.settle_ns) / 1e9 << "}},\n ";
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
      << ", \"own_cpus\": " << node_.own_cpus << ", \"cpuset_cpus\": " << node_.cpuset_cpus
      << ", \"progress_cpus\": " << node_.progress_cpus
      << ", \"cpu_contention\": "
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
        << ", \"saved_ns\": " << (d.comm_ns < 0 || d.overlap_ns < 0 ? "null" : ns_json(d.saved_ns))
        << ", \"in_call_ns\": " << (d.in_call_ns < 0 ? "null" : ns_json(d.in_call_ns))
        << ", \"own_call_ns\": " << (d.own_call_ns < 0 ? "null" : ns_json(d.own_call_ns));
      if (!d.receivers.empty()) j << ", \"receivers\": \"" << json_escape(d.receivers) << "\"";
      j << "}";
    }
    j << "]";
  }
  if (!profile_status_.empty()) j << "},\n ";
  for (const auto& [name, block] : blocks_) j << "\"" << json_escape(name) << "\": " << block() << ",\n ";
  // Sites, and the modules they are in with their build IDs (to resolve file:line later).
  std::map<std::string, std::string> modules;
  j << "\"sites\": [";
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const CodeLocation where = locate_return_address(sites[i].first.address);
    modules.emplace(where.module, where.build_id);
    j << (i ? ",\n  " : "\n  ");
    site_json(j, sites[i].second, where);
  }
  j << "],\n \"modules\": {";
  bool first = true;
  for (const auto& [path, id] : modules) {
    j << (first ? "" : ", ") << "\"" << json_escape(path) << "\": {\"build_id\": "
      << (id.empty() ? std::string("null") : "\"" + id + "\"") << "}";
    first = false;
  }
  j << "}}\n";
  return j.str();
}

}  // namespace tnbc
