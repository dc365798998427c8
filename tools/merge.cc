#include "tools/merge.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "runtime/config.hh"
#include "runtime/json.hh"
#include "runtime/output_file.hh"
#include "runtime/vocabulary.hh"
#include "tools/model_view.hh"
#include "tools/symbolize.hh"
#include "trace/profile.hh"
#include "trace/gain.hh"
#include "trace/page_reopen.hh"

namespace tnbc::tools {

using namespace tnbc::trace;

namespace {
// A merge error, thrown inside this file only and returned by merge() as a Status.
struct MergeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace

namespace {

std::vector<int> positions(const std::vector<int>& order, int n) {
  std::vector<int> pos(static_cast<std::size_t>(n), static_cast<int>(order.size()));
  for (std::size_t k = 0; k < order.size(); ++k)
    if (order[k] >= 0 && order[k] < n) pos[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  return pos;
}

template <class T>
std::optional<double> median(std::vector<T> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  if (v.size() % 2) return static_cast<double>(v[m]);
  return (static_cast<double>(v[m - 1]) + static_cast<double>(v[m])) / 2.0;
}

std::string list_str(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s.empty() ? "(none)" : s;
}

std::string json_str(const std::string& s) { return json::quote(s); }

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string json_opt(const std::optional<double>& v) { return v ? json_num(*v) : "null"; }

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string human_ns(std::optional<double> ns) {
  if (!ns) return "n/a";
  char b[32];
  if (*ns < 1e3) std::snprintf(b, sizeof b, "%.0f ns", *ns);
  else if (*ns < 1e6) std::snprintf(b, sizeof b, "%.1f us", *ns / 1e3);
  else if (*ns < 1e9) std::snprintf(b, sizeof b, "%.2f ms", *ns / 1e6);
  else std::snprintf(b, sizeof b, "%.2f s", *ns / 1e9);
  return b;
}

std::string human_rate(std::optional<double> r) {
  if (!r) return "n/a";
  return tnbc::format_bytes(*r) + "/s";
}

bool counts_as_touch(const SubRecord& s) { return s.order >= 0 && s.how != How::FenceAll; }

}  // namespace

double kendall_tau(const std::vector<int>& a, const std::vector<int>& b, int n) {
  const auto pa = positions(a, n), pb = positions(b, n);
  long long conc = 0, disc = 0, tie_a = 0, tie_b = 0, pairs = 0;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      ++pairs;
      const int da = (pa[i] > pa[j]) - (pa[i] < pa[j]);
      const int db = (pb[i] > pb[j]) - (pb[i] < pb[j]);
      if (da == 0) ++tie_a;
      if (db == 0) ++tie_b;
      if (da * db > 0) ++conc;
      else if (da * db < 0) ++disc;
    }
  const double denom = std::sqrt(static_cast<double>(pairs - tie_a) * static_cast<double>(pairs - tie_b));
  if (denom == 0) return (pairs - tie_a == 0 && pairs - tie_b == 0) ? 1.0 : 0.0;
  return static_cast<double>(conc - disc) / denom;
}

std::vector<int> consensus_order(const std::vector<std::vector<int>>& orders, int n) {
  std::vector<double> sum(static_cast<std::size_t>(n), 0.0);
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (const auto& o : orders) {
    const auto pos = positions(o, n);
    for (int i = 0; i < n; ++i) sum[static_cast<std::size_t>(i)] += pos[static_cast<std::size_t>(i)];
    for (int s : o)
      if (s >= 0 && s < n) seen[static_cast<std::size_t>(s)] = true;
  }
  std::vector<int> out;
  for (int i = 0; i < n; ++i)
    if (seen[static_cast<std::size_t>(i)]) out.push_back(i);
  std::stable_sort(out.begin(), out.end(),
                   [&](int x, int y) { return sum[static_cast<std::size_t>(x)] < sum[static_cast<std::size_t>(y)]; });
  return out;
}

std::vector<int> call_order(const CallRecord& c) {
  std::vector<int> idx;
  for (std::size_t i = 0; i < c.subs.size(); ++i)
    if (counts_as_touch(c.subs[i])) idx.push_back(static_cast<int>(i));
  std::sort(idx.begin(), idx.end(), [&](int a, int b) {
    return c.subs[static_cast<std::size_t>(a)].order < c.subs[static_cast<std::size_t>(b)].order;
  });
  return idx;
}

namespace {

// A median rate that is unbounded (calls read at once beyond the trace's own page cost) is no
// rate: reset, and true.
bool unbounded(std::optional<double>& rate) {
  if (!rate || !std::isinf(*rate)) return false;
  rate.reset();
  return true;
}

// blocks: keep the blocks per peer (trace::blocks_can_differ). The gaps and R_CRC leave out what
// the trace's reopening of a page costs (`page_reopen_ns` per page, the rank's trace file).
RankSite rank_site(int rank, const std::vector<const CallRecord*>& calls, int n, bool blocks, std::uint64_t page,
                   std::uint64_t page_reopen_ns) {
  RankSite rs;
  rs.rank = rank;
  rs.calls = calls.size();
  for (const CallRecord* c : calls) rs.first_calls.push_back(c->seq);
  std::sort(rs.first_calls.begin(), rs.first_calls.end());
  if (rs.first_calls.size() > trace::kFirstCalls) rs.first_calls.resize(trace::kFirstCalls);
  std::vector<std::pair<std::vector<int>, std::uint64_t>> orders;  // first-seen order kept
  std::vector<bool> touched(static_cast<std::size_t>(n), false), present(static_cast<std::size_t>(n), false),
      guarded(static_cast<std::size_t>(n), false);
  std::vector<double> curc, rcrc, dur, root_dur;
  std::vector<std::uint64_t> bytes;
  std::vector<std::vector<double>> gaps, sub_bytes(blocks ? static_cast<std::size_t>(n) : 0);
  std::set<std::uint64_t> keys;
  for (const CallRecord* c : calls) {
    keys.insert(c->key);
    (c->root == c->comm_rank ? root_dur : dur).push_back(static_cast<double>(c->dur_ns));
    std::uint64_t b = 0;
    for (std::size_t i = 0; i < c->subs.size(); ++i) {
      b += c->subs[i].bytes;
      if (i < sub_bytes.size()) sub_bytes[i].push_back(static_cast<double>(c->subs[i].bytes));
      if (c->subs[i].bytes && i < present.size()) present[i] = true;
      if (c->traced && c->subs[i].guarded && !c->subs[i].masked && i < guarded.size()) guarded[i] = true;
    }
    // Per call in which the rank received: a broadcast's root receives nothing, and where the root
    // moves its calls would halve the median at np 2 (then no size matched the broadcast's, and
    // mode optimize cut its broadcasts afresh instead of as traced: session 40).
    if (b > 0) bytes.push_back(b);
    if (c->send_t_ns >= 0) {
      ++rs.send_written;
      if (c->send_t_ns < c->dur_ns) ++rs.send_written_early;
    }
    if (!c->traced) continue;
    ++rs.traced;
    const std::vector<int> o = call_order(*c);
    auto it = std::find_if(orders.begin(), orders.end(), [&](const auto& e) { return e.first == o; });
    if (it == orders.end()) orders.push_back({o, 1});
    else ++it->second;
    for (const SubRecord& s : c->subs) {
      if (s.shared && counts_as_touch(s)) ++rs.shared_attributions;
      if (s.masked) ++rs.masked;
      if (s.how == How::Syscall) ++rs.syscall_touches;
      if (s.how == How::MpiCall) ++rs.mpi_touches;
      if (s.how == How::FenceAll) ++rs.fence_all;
    }
    for (int i : o) touched[static_cast<std::size_t>(i)] = true;
    if (o.empty()) continue;
    std::vector<std::int64_t> t;
    for (int i : o) t.push_back(c->subs[static_cast<std::size_t>(i)].t_ns);
    curc.push_back(static_cast<double>(*std::min_element(t.begin(), t.end())));
    double span = 0, consumed = 0;
    for (std::size_t k = 0; k + 1 < t.size(); ++k) {
      const std::uint64_t b = c->subs[static_cast<std::size_t>(o[k])].bytes;
      const double gap = trace::gap_without_reopen(static_cast<double>(t[k + 1] - t[k]), b, page, page_reopen_ns);
      if (gaps.size() <= k) gaps.emplace_back();
      gaps[k].push_back(gap);
      span += gap;
      consumed += static_cast<double>(b);
    }
    // Nothing left beyond the trace's own page cost: read at once (an unbounded rate).
    if (o.size() >= 2 && t.back() > t.front())
      rcrc.push_back(span > 0 ? consumed / (span / 1e9) : std::numeric_limits<double>::infinity());
  }
  std::uint64_t best = 0;
  for (const auto& [o, cnt] : orders)
    if (cnt > best) {
      best = cnt;
      rs.order = o;
    }
  rs.calls_with_order = best;
  for (int i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (present[u] && !touched[u]) (guarded[u] ? rs.untouched : rs.unobserved).push_back(i);
    if (present[static_cast<std::size_t>(i)]) rs.receives = true;
  }
  rs.keys.assign(keys.begin(), keys.end());
  rs.bytes_per_call = bytes.empty() ? 0 : static_cast<std::uint64_t>(*median(bytes));
  for (auto& sb : sub_bytes) rs.sub_bytes.push_back(median(sb).value_or(0));
  rs.curc_ns = median(curc);
  for (auto& g : gaps) rs.gaps_ns.push_back(*median(g));
  rs.r_crc = median(rcrc);
  rs.crc_at_once = unbounded(rs.r_crc);
  rs.root_calls = root_dur.size();
  rs.root_dur_ns = median(root_dur);
  rs.dur_ns = median(dur.empty() ? root_dur : dur).value_or(0);
  return rs;
}

}  // namespace

namespace {

Profile merge_or_throw(const std::vector<TraceFile>& traces, const std::vector<std::string>& names_in) {
  if (traces.empty()) throw MergeError("no trace files to merge");
  std::vector<std::string> names = names_in;
  for (std::size_t i = names.size(); i < traces.size(); ++i) names.push_back("trace of rank " + std::to_string(traces[i].rank));
  Profile p;
  p.files = names;
  const TraceFile& t0 = traces[0];
  p.np = t0.size;
  p.executable = t0.executable;
  p.run_id = t0.run_id;
  for (std::size_t i = 1; i < traces.size(); ++i) {
    const TraceFile& t = traces[i];
    if (t.size != t0.size)
      throw MergeError("mixed runs: " + names[i] + " was written by a run with " + std::to_string(t.size) +
                       " processes, " + names[0] + " by one with " + std::to_string(t0.size) +
                       " (remove the stale files or use a fresh TNBC_OUTPUT_DIR)");
    if (t.executable != t0.executable)
      throw MergeError("mixed runs: " + names[i] + " traces executable '" + t.executable + "', " + names[0] +
                       " traces '" + t0.executable + "' (one run of one program per directory)");
    if (t.run_id != t0.run_id)
      throw MergeError("mixed runs: " + names[i] + " (run " + t.run_id + ") and " + names[0] + " (run " + t0.run_id +
                       ") come from different runs of " + t0.executable + " (use a fresh TNBC_OUTPUT_DIR per run)");
  }
  std::vector<int> by_rank(static_cast<std::size_t>(p.np), -1);
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const int r = traces[i].rank;
    if (by_rank[static_cast<std::size_t>(r)] >= 0)
      throw MergeError("rank " + std::to_string(r) + " has two traces: " + names[static_cast<std::size_t>(by_rank[static_cast<std::size_t>(r)])] +
                       " and " + names[i]);
    by_rank[static_cast<std::size_t>(r)] = static_cast<int>(i);
  }
  std::string missing;
  for (int r = 0; r < p.np; ++r)
    if (by_rank[static_cast<std::size_t>(r)] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  if (!missing.empty())
    throw MergeError("incomplete run: no trace for rank(s) " + missing + " of " + std::to_string(p.np) +
                     " (did those ranks reach MPI_Finalize?)");
  for (std::size_t i = 0; i < traces.size(); ++i) {
    if (traces[i].ended_by != "finalize")
      p.notes.push_back(names[i] + " was written at exit without MPI_Finalize: it holds what was gathered so far");
    if (traces[i].dropped)
      p.notes.push_back(names[i] + ": " + std::to_string(traces[i].dropped) + " calls were not recorded (storage limit)");
  }

  // The trace's own page cost: each rank's guarded pages (whole pages of its guarded sub-messages,
  // about) times its measured cost of a page's first access after PROT_NONE and back.
  std::vector<double> reopen;
  double busiest_ns = 0;
  int busiest = -1;
  std::uint64_t busiest_pages = 0;
  for (const TraceFile& t : traces) {
    if (!t.page_reopen_ns) continue;
    reopen.push_back(static_cast<double>(t.page_reopen_ns));
    std::uint64_t pages = 0;
    for (const CallRecord& c : t.calls)
      for (const SubRecord& s : c.subs)
        if (s.guarded) pages += trace::reopened_pages(s.bytes, t.page);
    const double ns = static_cast<double>(pages) * static_cast<double>(t.page_reopen_ns);
    if (busiest < 0 || ns > busiest_ns) {
      busiest_ns = ns;
      busiest = t.rank;
      busiest_pages = pages;
    }
  }
  if (!reopen.empty())
    p.notes.push_back("the gaps between first touches and R_CRC leave out the trace's own cost of a page's first access "
                      "after its protection changed, " + human_ns(median(reopen)) + " a page (the ranks' median, "
                      "measured at start), for the whole pages each sub-message opened; over the run about " +
                      human_ns(busiest_ns) + " on rank " + std::to_string(busiest) + " (" +
                      std::to_string(busiest_pages) + " pages guarded) if each is read: part of what tracing added "
                      "to the program's time (docs/trace.md, \"What the trace pass costs\")");

  // Sites, in the order of their first call (lowest rank first).
  struct Acc {
    SiteInfo info;
    std::pair<int, std::uint64_t> first{INT32_MAX, UINT64_MAX};
    std::vector<std::vector<const CallRecord*>> per_rank;
  };
  std::map<std::uint64_t, Acc> acc;
  for (int r = 0; r < p.np; ++r) {
    const TraceFile& t = traces[static_cast<std::size_t>(by_rank[static_cast<std::size_t>(r)])];
    std::map<std::uint64_t, const SiteInfo*> infos;
    for (const SiteInfo& s : t.sites) infos[s.site] = &s;
    for (const CallRecord& c : t.calls) {
      auto it = infos.find(c.site);
      if (it == infos.end())
        throw MergeError(names[static_cast<std::size_t>(by_rank[static_cast<std::size_t>(r)])] + ": call " +
                         std::to_string(c.seq) + " names site " + hex64(c.site) + " that the file does not describe (corrupt trace file)");
      Acc& a = acc[c.site];
      if (a.per_rank.empty()) {
        a.info = *it->second;
        a.per_rank.resize(static_cast<std::size_t>(p.np));
      }
      a.first = std::min(a.first, {r, c.seq});
      a.per_rank[static_cast<std::size_t>(r)].push_back(&c);
    }
  }
  std::vector<Acc*> order;
  for (auto& [k, a] : acc) order.push_back(&a);
  std::sort(order.begin(), order.end(), [](const Acc* x, const Acc* y) { return x->first < y->first; });

  for (Acc* a : order) {
    SiteProfile sp;
    sp.info = a->info;
    int n = 0;
    for (const auto& calls : a->per_rank)
      for (const CallRecord* c : calls) n = std::max(n, static_cast<int>(c->subs.size()));
    sp.sub_messages = n;
    std::vector<std::vector<int>> orders;
    for (int r = 0; r < p.np; ++r) {
      const auto& calls = a->per_rank[static_cast<std::size_t>(r)];
      if (calls.empty()) continue;
      const TraceFile& tf = traces[static_cast<std::size_t>(by_rank[static_cast<std::size_t>(r)])];
      RankSite rs = rank_site(r, calls, n, trace::blocks_can_differ(sp.info.kind), tf.page, tf.page_reopen_ns);
      if (rs.traced && rs.receives) orders.push_back(rs.order);
      sp.calls += rs.calls;
      for (const CallRecord* c : calls)
        for (const SubRecord& s : c->subs) sp.bytes += s.bytes;
      sp.send_written_early_calls += rs.send_written_early;
      sp.ranks.push_back(std::move(rs));
    }
    sp.consensus = consensus_order(orders, n);
    double tau_sum = 0;
    int tau_n = 0;
    const std::vector<int>* first_order = nullptr;
    std::vector<double> curcs, rcrcs;
    for (RankSite& rs : sp.ranks) {
      if (rs.traced && rs.receives) {
        rs.tau = kendall_tau(rs.order, sp.consensus, n);
        tau_sum += rs.tau;
        ++tau_n;
        sp.tau_min = std::min(sp.tau_min, rs.tau);
        if (!first_order) first_order = &rs.order;
        else if (rs.order != *first_order) sp.same_order_everywhere = false;
        if (rs.calls_with_order != rs.traced)
          sp.notes.push_back("rank " + std::to_string(rs.rank) + ": " + std::to_string(rs.traced - rs.calls_with_order) +
                             " of " + std::to_string(rs.traced) + " calls read in another order than the one shown");
      }
      if (rs.curc_ns) curcs.push_back(*rs.curc_ns);
      if (rs.r_crc) rcrcs.push_back(*rs.r_crc);
      else if (rs.crc_at_once) rcrcs.push_back(std::numeric_limits<double>::infinity());
      if (rs.shared_attributions)
        sp.notes.push_back("rank " + std::to_string(rs.rank) + ": " + std::to_string(rs.shared_attributions) +
                           " first touches fell on a page shared by two sub-messages and were attributed by the faulting address");
      if (rs.masked)
        sp.notes.push_back("rank " + std::to_string(rs.rank) + ": " + std::to_string(rs.masked) +
                           " sub-messages were hidden (all their pages opened by a neighbour's touch)");
      if (rs.fence_all)
        sp.notes.push_back("rank " + std::to_string(rs.rank) + ": " + std::to_string(rs.fence_all) +
                           " sub-messages were opened by an MPI call of unknown extent before being read (not counted)");
    }
    sp.tau_mean = tau_n ? tau_sum / tau_n : 1.0;
    sp.curc_ns_median = median(curcs);
    if (!curcs.empty()) {
      sp.curc_ns_min = *std::min_element(curcs.begin(), curcs.end());
      sp.curc_ns_max = *std::max_element(curcs.begin(), curcs.end());
    }
    sp.r_crc_median = median(rcrcs);
    sp.crc_at_once = unbounded(sp.r_crc_median);
    p.sites.push_back(std::move(sp));
  }
  return p;
}

}  // namespace

Result<Profile> merge(const std::vector<TraceFile>& traces, const std::vector<std::string>& names) {
  try {
    return merge_or_throw(traces, names);
  } catch (const MergeError& e) {  // thrown in this file only
    return Status::error(e.what());
  }
}

Result<Profile> merge(const std::vector<TraceFile>& traces) { return merge(traces, {}); }

Result<std::vector<TraceFile>> load_trace_dir(const std::string& dir, std::vector<std::string>* names) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::error(dir + ": not a directory (expected TNBC_OUTPUT_DIR of a trace run)");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("tnbc-trace.", 0) == 0 && f.size() > 15 && f.substr(f.size() - 4) == ".txt") files.push_back(e.path().string());
  }
  if (ec) return Status::error(dir + ": " + ec.message());
  if (files.empty())
    return Status::error(dir + ": no trace files (tnbc-trace.<rank>.txt); run the program with TNBC_MODE=trace and "
                               "TNBC_OUTPUT_DIR=" + dir);
  std::sort(files.begin(), files.end());
  std::vector<TraceFile> out;
  for (const auto& f : files) {
    Result<TraceFile> t = read_trace_file(f);
    if (!t.ok()) return t.status();
    out.push_back(std::move(t).value());
  }
  if (names) *names = files;
  return out;
}

std::string profile_json(const Profile& p) {
  std::ostringstream o;
  o << "{\"format\": \"" << kProfileFormat << "\", \"version\": " << kProfileVersion << ",\n";
  o << " \"np\": " << p.np << ", \"executable\": " << json_str(p.executable) << ", \"run_id\": " << json_str(p.run_id)
    << ",\n";
  o << " \"notes\": [";
  for (std::size_t i = 0; i < p.notes.size(); ++i) o << (i ? ", " : "") << json_str(p.notes[i]);
  o << "],\n \"sites\": [";
  for (std::size_t si = 0; si < p.sites.size(); ++si) {
    const SiteProfile& s = p.sites[si];
    o << (si ? ",\n" : "\n") << "  {\"site\": " << json_str(hex64(s.info.site)) << ", \"kind\": " << json_str(s.info.kind)
      << ", \"comm_size\": " << s.info.comm_size << ",\n   \"frames\": [";
    for (std::size_t k = 0; k < s.info.frames.size(); ++k) {
      const Frame& f = s.info.frames[k];
      o << (k ? ", " : "") << "{\"module\": " << json_str(f.module) << ", \"offset\": " << json_str(hex64(f.offset))
        << ", \"symbol\": " << json_str(f.symbol) << "}";
    }
    o << "],\n   \"sub_messages\": " << s.sub_messages << ", \"calls\": " << s.calls << ", \"bytes\": " << s.bytes
      << ",\n   \"consensus_order\": " << json_ints(s.consensus) << ", \"kendall_tau_mean\": " << json_num(s.tau_mean)
      << ", \"kendall_tau_min\": " << json_num(s.tau_min)
      << ", \"same_order_on_all_ranks\": " << (s.same_order_everywhere ? "true" : "false")
      << ",\n   \"curc_ns\": {\"median\": " << json_opt(s.curc_ns_median) << ", \"min\": " << json_opt(s.curc_ns_min)
      << ", \"max\": " << json_opt(s.curc_ns_max) << "}, \"r_crc_bytes_per_s\": " << json_opt(s.r_crc_median)
      << ",\n   \"send_buffer_written_before_completion\": " << (s.send_written_early_calls ? "true" : "false")
      << ", \"send_written_early_calls\": " << s.send_written_early_calls << ",\n   \"notes\": [";
    for (std::size_t k = 0; k < s.notes.size(); ++k) o << (k ? ", " : "") << json_str(s.notes[k]);
    o << "],\n   \"ranks\": [";
    for (std::size_t k = 0; k < s.ranks.size(); ++k) {
      const RankSite& r = s.ranks[k];
      o << (k ? ",\n" : "\n") << "    {\"rank\": " << r.rank << ", \"calls\": " << r.calls << ", \"traced\": " << r.traced
        << ", \"first_calls\": [";
      for (std::size_t j = 0; j < r.first_calls.size(); ++j) o << (j ? ", " : "") << r.first_calls[j];
      o << "], \"order\": " << json_ints(r.order) << ", \"calls_with_order\": " << r.calls_with_order
        << ", \"untouched\": " << json_ints(r.untouched) << ", \"unobserved\": " << json_ints(r.unobserved)
        << ", \"receives\": " << (r.receives ? "true" : "false")
        << ", \"kendall_tau\": " << (r.receives && r.traced ? json_num(r.tau) : "null") << ", \"keys\": [";
      for (std::size_t j = 0; j < r.keys.size(); ++j) o << (j ? ", " : "") << json_str(hex64(r.keys[j]));
      o << "],\n     \"bytes_per_call\": " << r.bytes_per_call;
      if (!r.sub_bytes.empty()) {
        o << ", \"sub_bytes\": [";
        for (std::size_t j = 0; j < r.sub_bytes.size(); ++j) o << (j ? ", " : "") << json_num(r.sub_bytes[j]);
        o << "]";
      }
      o << ", \"duration_ns\": " << json_num(r.dur_ns);
      if (s.info.kind == "bcast")
        o << ", \"root_calls\": " << r.root_calls << ", \"root_duration_ns\": " << json_opt(r.root_dur_ns);
      o
        << ", \"curc_ns\": " << json_opt(r.curc_ns) << ", \"r_crc_bytes_per_s\": " << json_opt(r.r_crc) << ", \"gaps_ns\": [";
      for (std::size_t j = 0; j < r.gaps_ns.size(); ++j) o << (j ? ", " : "") << json_num(r.gaps_ns[j]);
      o << "],\n     \"shared_page_attributions\": " << r.shared_attributions << ", \"masked\": " << r.masked
        << ", \"syscall_touches\": " << r.syscall_touches << ", \"mpi_call_touches\": " << r.mpi_touches
        << ", \"opened_by_unbounded_fence\": " << r.fence_all << ", \"send_written_calls\": " << r.send_written
        << ", \"send_written_early_calls\": " << r.send_written_early << "}";
    }
    o << "]}";
  }
  o << "\n ]}\n";
  return o.str();
}

std::string profile_summary(const Profile& p, const std::vector<std::string>& verdicts,
                            FunctionRef<std::string(const Frame&)> name) {
  std::ostringstream o;
  std::uint64_t calls = 0;
  for (const auto& s : p.sites) calls += s.calls;
  o << "tnbc merge: " << p.np << " ranks of " << p.executable << ": " << p.sites.size() << " call site"
    << (p.sites.size() == 1 ? "" : "s") << ", " << calls << " calls\n";
  for (const auto& n : p.notes) o << "  note: " << n << "\n";
  for (std::size_t si = 0; si < p.sites.size(); ++si) {
    const SiteProfile& s = p.sites[si];
    o << "\nsite " << si + 1 << ": " << s.info.kind << " over " << s.info.comm_size << " ranks, "
      << s.calls << " calls, " << s.sub_messages << " sub-messages, " << tnbc::format_bytes(static_cast<double>(s.bytes))
      << " received in all  [" << hex64(s.info.site) << "]\n";
    for (std::size_t k = 0; k < s.info.frames.size() && k < 3; ++k) {
      const Frame& f = s.info.frames[k];
      char off[32];
      std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
      const std::string named = name(f);
      o << "  " << (k ? "from " : "at   ")
        << (named.empty() ? (f.symbol.empty() ? "?" : f.symbol) + " (" + f.module + off + ")" : named) << "\n";
    }
    o << "  consensus order: " << list_str(s.consensus) << "\n";
    char tau[96];
    std::snprintf(tau, sizeof tau, "Kendall tau vs consensus: mean %.2f, min %.2f", s.tau_mean, s.tau_min);
    o << "  agreement: " << tau << " -- "
      << (s.same_order_everywhere ? "every rank reads in the same order"
          : s.tau_mean >= 0.8     ? "ranks mostly agree"
                                  : "ranks disagree: one order for all ranks does not fit this site")
      << "\n";
    for (const RankSite& r : s.ranks) {
      char line[160];
      if (!r.receives) {
        std::snprintf(line, sizeof line, "    rank %-3d receives nothing here (root)\n", r.rank);
        o << line;
        continue;
      }
      std::snprintf(line, sizeof line, "    rank %-3d order %-24s tau %5.2f  %llu/%llu calls", r.rank,
                    list_str(r.order).c_str(), r.tau, static_cast<unsigned long long>(r.calls_with_order),
                    static_cast<unsigned long long>(r.traced));
      o << line;
      if (!r.untouched.empty()) o << "  never read: " << list_str(r.untouched);
      if (!r.unobserved.empty()) o << "  not observable (partial or shared pages only): " << list_str(r.unobserved);
      o << "\n";
    }
    o << "  CURC (return -> first access): median " << human_ns(s.curc_ns_median) << " (min " << human_ns(s.curc_ns_min)
      << ", max " << human_ns(s.curc_ns_max) << ")\n";
    o << "  R_CRC (data consumed between first accesses): "
      << (s.crc_at_once ? std::string("at once (between first touches only the trace's own page cost)")
                        : human_rate(s.r_crc_median))
      << "\n";
    o << "  send buffer written before the collective would complete: "
      << (s.send_written_early_calls ? "yes, in " + std::to_string(s.send_written_early_calls) + " calls (copy needed)"
                                     : std::string("no"))
      << "\n";
    for (const auto& n : s.notes) o << "  note: " << n << "\n";
    if (si < verdicts.size()) o << "  optimize: " << verdicts[si] << "\n";
  }
  return o.str();
}

int cmd_merge(const std::vector<std::string>& args) {
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "tnbc: merge: %s\n", msg.c_str());
    return 2;
  };
  std::string dir, out, machine;
  bool quiet = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      if (i + 1 >= args.size()) return fail(a + " needs a file name");
      out = args[++i];
    } else if (a.rfind("--output=", 0) == 0) {
      out = a.substr(9);
    } else if (a == "--machine") {
      if (i + 1 >= args.size()) return fail(a + " needs a file name");
      machine = args[++i];
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "' (tnbc merge DIR [-o FILE] [--machine FILE] [--quiet])");
    } else if (dir.empty()) {
      dir = a;
    } else {
      return fail("one trace directory only ('" + dir + "' and '" + a + "' given)");
    }
  }
  if (dir.empty()) return fail("no trace directory given (tnbc merge DIR [-o FILE])");
  if (out.empty()) out = (std::filesystem::path(dir) / "app.profile").string();
  std::vector<std::string> names;
  Result<std::vector<TraceFile>> traces = load_trace_dir(dir, &names);
  if (!traces.ok()) return fail(traces.status().message());
  Result<Profile> merged = merge(traces.value(), names);
  if (!merged.ok()) return fail(merged.status().message());
  const Profile& p = merged.value();
  {
    const std::string json = profile_json(p);
    const std::filesystem::path path(out);
    const std::string parent = path.has_parent_path() ? path.parent_path().string() : std::string(".");
    if (const Status st = write_output_file(parent, path.filename().string(), json); !st.ok()) return fail(st.message());
    if (!quiet) {
      // What mode optimize will decide per site with the settings of this environment, read
      // back from the file exactly as the library reads it (trace/gain.hh).
      auto cfg = load_config(&process_getenv);
      Result<LoadedProfile> reread = parse_profile(json, out);
      if (!reread.ok()) return fail("internal error: the profile just written does not read back: " + reread.status().message());
      const LoadedProfile& back = reread.value();
      // The cost model of the trace run (its rank 0 wrote tnbc-machine.json and its placement
      // here), or the machine file given (--machine, TNBC_MACHINE).
      if (machine.empty()) machine = cfg.settings.machine;
      Result<RunModel> rm = run_model(dir, machine, back.np);
      const RunModel* model = rm.ok() ? &rm.value() : nullptr;
      // Frames at their file:line, the executable's as the trace run recorded it (its build ID);
      // why a module's could not be, once, after the sites.
      Symbolizer sym;
      const std::map<std::string, std::string> modules = run_modules(dir);
      std::vector<std::string> notes;
      const auto name = [&](const Frame& f) {
        std::string note;
        std::string named = sym.name_call(f.symbol.empty() ? "?" : f.symbol, f.module, f.offset, modules, note);
        if (!note.empty()) notes.push_back(note);
        return named;
      };
      std::fputs(profile_summary(p, site_verdicts(back, cfg.settings, model), name).c_str(), stdout);
      for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
      std::fputs(verdict_footer(cfg.settings, model).c_str(), stdout);
      if (!model) std::printf("cost model: %s\n", rm.status().message().c_str());
    }
    std::printf("%sprofile written to %s\n", quiet ? "" : "\n", out.c_str());
    return 0;
  }
}

}  // namespace tnbc::tools
