// Reading a run's summaries into the report's figures (tools/report_data.hh). What can go wrong
// with the input, and what happens (each said once, as a note, the rest reported):
//   no summaries                      error (the directory, and where they were looked for)
//   a file truncated / not JSON       left out, named, with the parser's line and column
//   not a tnbc summary, bad fields    left out, named
//   a newer format version            left out (this tnbc cannot read it)
//   versions 1 and 2 mixed            the newest version's files are reported
//   summaries of several runs         the run with the newest files is reported, the others named
//   ranks missing                     "3 of 4 ranks"; the figures are over the ranks read
//   a module moved / rebuilt / no -g  module+offset instead of file:line (tools/symbolize.hh)
//   a profile of another program      no ideal, said
// Worlds started by MPI_Comm_spawn write into DIR/spawned-<id>/ (runtime/output_file.hh) and are
// reported apart, each as its own world.
#include "tools/report_data.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runtime/vocabulary.hh"
#include "tools/report_sections.hh"
#include "tools/symbolize.hh"
#include "trace/gain.hh"
#include "trace/profile.hh"

namespace tnbc::tools::report {

namespace fs = std::filesystem;
using json::Value;

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  s.n = static_cast<int>(values.size());
  return s;
}

namespace {

// A problem with one file: the file is left out (thrown inside this file only).
struct FileProblem : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

double number(const Value& obj, const char* key, double fallback = 0) { return json::number_or(obj, key, fallback); }

std::optional<double> optional_number(const Value& obj, const char* key) {
  const Value* v = obj.find(key);
  if (v && v->type == Value::Type::Number) return v->number;
  return std::nullopt;
}

std::string text(const Value& obj, const char* key) { return json::string_or(obj, key); }

const Value& need(const Value& obj, const char* key, Value::Type type) {
  const Value* v = obj.find(key);
  if (!v || v->type != type)
    throw FileProblem(std::string("field \"") + key + "\" is missing or not " + json::type_name(type));
  return *v;
}

std::map<std::string, double> number_map(const Value* obj) {
  std::map<std::string, double> m;
  if (obj && obj->type == Value::Type::Object)
    for (const auto& [k, v] : obj->members)
      if (v.type == Value::Type::Number) m[k] = v.number;
  return m;
}

struct Summary {
  std::string file;
  Value v;
  int rank = 0, size = 0, version = 0;
  std::string run_id, mode;
  fs::file_time_type mtime;
};

// "tnbc-summary.<digits>.json"
bool is_summary_name(const std::string& f) {
  const std::string head = "tnbc-summary.", tail = ".json";
  if (f.size() <= head.size() + tail.size() || f.compare(0, head.size(), head) != 0 ||
      f.compare(f.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  const std::string mid = f.substr(head.size(), f.size() - head.size() - tail.size());
  return std::all_of(mid.begin(), mid.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> summary_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_summary_name(e.path().filename().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

Summary read_summary(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw FileProblem("cannot be read");
  std::ostringstream t;
  t << in.rdbuf();
  const std::string content = t.str();
  if (content.empty()) throw FileProblem("is empty (the rank did not finish writing it?)");
  Result<Value> parsed = json::parse(content);
  if (!parsed.ok())
    throw FileProblem("is truncated or not valid JSON (" + parsed.status().message() +
                      "), as when a run is killed while it writes its summaries");
  Summary s;
  s.file = file;
  s.v = std::move(parsed).value();
  if (s.v.type != Value::Type::Object || text(s.v, "format") != "tnbc-summary")
    throw FileProblem("is not a tnbc summary (its \"format\" is not \"tnbc-summary\")");
  s.version = static_cast<int>(need(s.v, "version", Value::Type::Number).number);
  if (s.version < 1 || s.version > 2)
    throw FileProblem("has format version " + std::to_string(s.version) +
                      ", which this tnbc cannot read (it reads versions 1 and 2): a newer tnbc wrote it");
  s.rank = static_cast<int>(need(s.v, "rank", Value::Type::Number).number);
  s.size = static_cast<int>(need(s.v, "size", Value::Type::Number).number);
  if (s.size < 1 || s.rank < 0 || s.rank >= s.size)
    throw FileProblem("says rank " + std::to_string(s.rank) + " of " + std::to_string(s.size) + " ranks");
  s.mode = text(s.v, "mode");
  need(s.v, "collectives", Value::Type::Object);
  for (const Value& site : need(s.v, "sites", Value::Type::Array).items)
    if (site.type != Value::Type::Object) throw FileProblem("has a call site that is not an object");
  if (s.version >= 2) s.run_id = text(need(s.v, "run", Value::Type::Object), "id");
  std::error_code ec;
  s.mtime = fs::last_write_time(file, ec);
  return s;
}

// The summaries of one world: read, bad files left out (noted), one run and one version kept.
std::vector<Summary> read_world(const std::vector<std::string>& files, std::vector<std::string>& notes) {
  std::vector<Summary> good;
  for (const std::string& f : files) {
    try {
      good.push_back(read_summary(f));
    } catch (const FileProblem& e) {
      notes.push_back(f + " " + e.what() + ": left out");
    }
  }
  if (good.empty()) return good;
  // Versions: the newest.
  int newest = 0;
  for (const Summary& s : good) newest = std::max(newest, s.version);
  if (std::any_of(good.begin(), good.end(), [&](const Summary& s) { return s.version != newest; })) {
    std::vector<int> old;
    for (const Summary& s : good)
      if (s.version != newest) old.push_back(s.rank);
    notes.push_back("summaries of different tnbc versions: rank(s) " + ranks_text(old) +
                    " wrote an older format; only the version " + std::to_string(newest) + " summaries are reported");
    std::erase_if(good, [&](const Summary& s) { return s.version != newest; });
  }
  // Runs: the one whose files are newest (version 1 has no run id: its np and mode tell).
  auto run_of = [](const Summary& s) { return s.run_id.empty() ? s.mode + "/np" + std::to_string(s.size) : s.run_id; };
  std::map<std::string, std::vector<const Summary*>> runs;
  for (const Summary& s : good) runs[run_of(s)].push_back(&s);
  if (runs.size() > 1) {
    std::string keep;
    fs::file_time_type latest = fs::file_time_type::min();
    for (const auto& [id, ss] : runs)
      for (const Summary* s : ss)
        if (s->mtime >= latest) {
          latest = s->mtime;
          keep = id;
        }
    std::string others;
    for (const auto& [id, ss] : runs) {
      if (id == keep) continue;
      std::vector<int> ranks;
      for (const Summary* s : ss) ranks.push_back(s->rank);
      std::sort(ranks.begin(), ranks.end());
      others += (others.empty() ? "" : "; ") + std::string("run ") + id + " (" + std::to_string(ss.front()->size) +
                " ranks, files of rank(s) " + ranks_text(ranks) + ")";
    }
    notes.push_back("the directory holds summaries of " + std::to_string(runs.size()) + " runs: reporting run " + keep +
                    " (the newest files), leaving out " + others + "; give each run its own TNBC_OUTPUT_DIR");
    std::erase_if(good, [&](const Summary& s) { return run_of(s) != keep; });
  }
  std::sort(good.begin(), good.end(), [](const Summary& a, const Summary& b) { return a.rank < b.rank; });
  // One file per rank.
  for (std::size_t i = 1; i < good.size();)
    if (good[i].rank == good[i - 1].rank) {
      notes.push_back(good[i].file + " is a second summary of rank " + std::to_string(good[i].rank) + ": left out");
      good.erase(good.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  return good;
}

unsigned long long parse_hex(const std::string& s) {
  try {
    return std::stoull(s, nullptr, 16);
  } catch (const std::exception&) {
    return 0;
  }
}

RankFigures rank_figures(const Value& site, int rank) {
  RankFigures r;
  r.rank = rank;
  r.calls = number(site, "calls");
  r.bytes = number(site, "bytes");
  r.bytes_sent = number(site, "bytes_sent");
  r.early = number(site, "early_return");
  r.in_call = number(site, "completed_in_call");
  r.plain = number(site, "passthrough");
  r.reasons = number_map(site.find("reasons"));
  if (const Value* t = site.find("time_ns"); t && t->type == Value::Type::Object) {
    r.tinit_ns = number(*t, "in_call");
    r.duration_ns = number(*t, "duration");
    r.blocked_ns = number(*t, "blocked");
    r.hidden_ns = number(*t, "hidden");
  }
  r.blocked_by_ns = number_map(site.find("blocked_ns"));
  r.waits = number_map(site.find("waits"));
  if (const Value* o = site.find("observation"); o && o->type == Value::Type::Object) {
    r.observe_ns = number(*o, "ns");
    r.observe_waits = number(*o, "waits");
  }
  if (const Value* n = site.find("node_priorities"); n && n->type == Value::Type::Object) {
    NodeFigures& f = r.node.emplace();
    f.calls = number(*n, "calls");
    f.off_calls = number(*n, "off_calls");
    f.holds = number(*n, "holds");
    f.hold_timeouts = number(*n, "hold_timeouts");
    f.first_read_calls = number(*n, "first_read_calls");
    f.first_read_ns_sum = number(*n, "first_read_ms_mean") * 1e6 * f.first_read_calls;
    f.first_read_ns_max = number(*n, "first_read_ms_max") * 1e6;
    f.basis = text(*n, "basis");  // "" in summaries before the model decided (arbitrated calls only)
    if (const Value* m = n->find("model_first_read_ms"); m && m->type == Value::Type::Object) {
      f.model_on_ns = number(*m, "on") * 1e6;
      f.model_off_ns = number(*m, "off") * 1e6;
    }
  }
  if (const Value* t = site.find("trial"); t && t->type == Value::Type::Object) {
    TrialFigures& f = r.trial.emplace();
    f.trials = number(*t, "trials");
    f.early_ns = number(*t, "early_ns");
    f.in_call_ns = number(*t, "in_call_ns");
    f.in_call = text(*t, "verdict") == "in_call";
    f.leaned = json::bool_or(*t, "leaned", false);  // since session 77
  }
  return r;
}

// The sampled calls of every rank at one site, per sub-message.
Timeline timeline_of(const std::vector<const Value*>& lists) {
  Timeline t;
  std::vector<double> tinit, duration;
  std::vector<std::vector<double>> bytes, arrival, access;
  // Per sub-message, its position in each observed call's own order of first touches (0 =
  // touched first in that call): ranks' clocks and computations differ, positions do not.
  std::vector<double> position_sum;
  std::vector<int> positions;
  for (const Value* list : lists) {
    if (!list || list->type != Value::Type::Array) continue;
    for (const Value& call : list->items) {
      const Value* b = call.find("bytes");
      const Value* a = call.find("arrival_ns");
      const Value* f = call.find("first_access_ns");
      if (!b || !a || !f || b->type != Value::Type::Array || a->type != Value::Type::Array ||
          f->type != Value::Type::Array || a->items.size() != b->items.size() || f->items.size() != b->items.size())
        continue;
      ++t.calls;
      tinit.push_back(number(call, "in_call_ns"));
      duration.push_back(number(call, "duration_ns"));
      const std::size_t n = b->items.size();
      if (bytes.size() < n) {
        bytes.resize(n);
        arrival.resize(n);
        access.resize(n);
      }
      if (position_sum.size() < n) {
        position_sum.resize(n);
        positions.resize(n);
      }
      std::vector<std::size_t> touched;
      for (std::size_t k = 0; k < n; ++k) {
        bytes[k].push_back(b->items[k].number);
        if (a->items[k].number >= 0) arrival[k].push_back(a->items[k].number);
        if (f->items[k].number >= 0) {
          access[k].push_back(f->items[k].number);
          touched.push_back(k);
        }
      }
      std::stable_sort(touched.begin(), touched.end(),
                       [&](std::size_t x, std::size_t y) { return f->items[x].number < f->items[y].number; });
      for (std::size_t i = 0; i < touched.size(); ++i) {
        position_sum[touched[i]] += static_cast<double>(i);
        ++positions[touched[i]];
      }
    }
  }
  t.tinit_ns = spread_of(tinit);
  t.duration_ns = spread_of(duration);
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    SubTiming s;
    s.bytes = spread_of(bytes[k]).mean;
    s.arrival_ns = spread_of(arrival[k]);
    s.access_ns = spread_of(access[k]);
    t.subs.push_back(s);
    if (s.access_ns.n > 0) t.read_order.push_back(static_cast<int>(k));
  }
  // By mean position in the calls' own orders; equal positions by mean first-touch time.
  auto mean_position = [&](int k) { return position_sum[static_cast<std::size_t>(k)] / positions[static_cast<std::size_t>(k)]; };
  std::stable_sort(t.read_order.begin(), t.read_order.end(), [&](int a, int b) {
    if (mean_position(a) != mean_position(b)) return mean_position(a) < mean_position(b);
    return t.subs[static_cast<std::size_t>(a)].access_ns.mean < t.subs[static_cast<std::size_t>(b)].access_ns.mean;
  });
  return t;
}

// T_CURC and R_CRC per rank for the sites of a trace profile (tools/report_data.hh: ideal).
class Ideal {
 public:
  // Loads `path` for a world of `np` ranks running `executable`; a note says why it is not used
  // (`quiet`: a profile given for the job's first world, which a spawned world need not match).
  Ideal(const std::string& path, int np, const std::string& executable, bool quiet, std::vector<std::string>& notes) {
    if (path.empty()) return;
    Result<trace::LoadedProfile> p = trace::read_profile(path);
    if (!p.ok()) {
      notes.push_back("profile " + path + " cannot be used for the ideal (Eq. 1): " + p.status().message());
      return;
    }
    profile_ = std::move(p).value();
    if (profile_.np != np || (!executable.empty() && profile_.executable != executable)) {
      if (!quiet)
        notes.push_back("profile " + path + " is of another run (" + std::to_string(profile_.np) + " ranks of " +
                      profile_.executable + "; this one: " + std::to_string(np) + " ranks of " +
                      (executable.empty() ? std::string("?") : executable) + "): no ideal (Eq. 1)");
      profile_ = {};
      return;
    }
    usable_ = true;
  }
  bool usable() const { return usable_; }

  // Eq. 1 over one rank's calls at a site; `why` says why not.
  std::optional<double> of(const Site& s, const RankFigures& r, std::string& why) const {
    if (!usable_) return std::nullopt;
    const unsigned long long offset = parse_hex(s.offset);
    const trace::ProfileSite::Rank* best = nullptr;
    bool site_found = false, receives_nothing = false;
    for (const trace::ProfileSite& ps : profile_.sites) {
      if (ps.kind != s.kind || ps.module != basename_of(s.module) || parse_hex(ps.offset) != offset) continue;
      site_found = true;
      for (const trace::ProfileSite::Rank& pr : ps.ranks) {
        receives_nothing = receives_nothing || (pr.rank == r.rank && !pr.receives);
        if (pr.rank == r.rank && pr.curc_ns && (!best || pr.calls.value_or(0) > best->calls.value_or(0))) best = &pr;
      }
    }
    if (!site_found) {
      why = "not in the profile (called from elsewhere in the trace pass?)";
      return std::nullopt;
    }
    // A rank that receives nothing (a broadcast's root) needs no data: all of it could be hidden.
    if (!best && receives_nothing) return r.duration_ns;
    if (!best || r.calls <= 0) {
      why = "the profile has no estimate for some ranks (the trace saw none of their data touched)";
      return std::nullopt;
    }
    const std::optional<double> t_crc = trace::rank_crc_ns(*best, r.bytes / r.calls);
    if (!t_crc) return std::nullopt;
    const double per_call = std::min(r.duration_ns / r.calls, *best->curc_ns + *t_crc);
    return per_call * r.calls;
  }

 private:
  trace::LoadedProfile profile_;
  bool usable_ = false;
};

std::string threshold_line(const Value& t, int rank) {
  const Value* mb = t.find("min_bytes");
  std::string o = "size threshold (TNBC_MIN_BYTES): ";
  o += !mb || mb->type != Value::Type::Number ? std::string("none: no size pays, every collective ran blocking")
                                             : std::to_string(static_cast<long long>(mb->number)) + " bytes per sub-message";
  o += " (" + text(t, "basis") + ")";
  if (text(t, "basis") == "measured") {
    const double mib = 1 << 20;
    char b[240];
    std::snprintf(b, sizeof b,
                  "; rank %d measured link %.0f us + %.0f us/MiB, guard (%s) %.0f us + %.0f us/MiB, copy %.0f us/MiB", rank,
                  number(t, "link_ns") / 1e3, number(t, "link_ns_per_byte") * mib / 1e3, text(t, "backend").c_str(),
                  number(t, "guard_ns") / 1e3, number(t, "guard_ns_per_byte") * mib / 1e3,
                  number(t, "copy_ns_per_byte") * mib / 1e3);
    o += b;
  }
  return o;
}

World build_world(const std::string& dir, const std::vector<Summary>& sums, const LoadOptions& opt, Symbolizer& sym,
                  std::vector<std::string> notes, std::string& used_profile) {
  World w;
  w.dir = dir;
  w.notes = std::move(notes);
  const Value& first = sums.front().v;
  w.size = sums.front().size;
  w.mode = sums.front().mode;
  w.summary_version = sums.front().version;
  w.run_id = sums.front().run_id;
  if (const Value* run = first.find("run"); run && run->type == Value::Type::Object) {
    w.spawned = text(*run, "world") == "spawned";
    w.executable = text(*run, "executable");
  }
  for (const Summary& s : sums) {
    w.ranks.push_back(s.rank);
    const Value* run = s.v.find("run");
    w.wall_ns.push_back(run && run->type == Value::Type::Object ? number(*run, "wall_ns") : 0);
  }
  if (static_cast<int>(sums.size()) < w.size) {
    std::vector<int> missing;
    for (int r = 0, i = 0; r < w.size; ++r) {
      if (i < static_cast<int>(sums.size()) && sums[static_cast<std::size_t>(i)].rank == r) ++i;
      else missing.push_back(r);
    }
    w.notes.push_back(std::to_string(sums.size()) + " of " + std::to_string(w.size) + " ranks left a summary (missing: rank(s) " +
                      ranks_text(missing) + "; did they end without MPI_Finalize, or write elsewhere?): the figures are "
                      "over the ranks read");
  }
  if (w.summary_version < 2)
    w.notes.push_back("summaries of an older tnbc (format version 1): calls and decisions only, no times");

  // Placement.
  for (const Summary& s : sums)
    if (const Value* p = s.v.find("placement"); p && p->type == Value::Type::Object) {
      auto it = std::find_if(w.hosts.begin(), w.hosts.end(), [&](const Host& h) { return h.host == text(*p, "host"); });
      if (it == w.hosts.end()) {
        w.hosts.push_back({text(*p, "host"), {}, {}, {}});
        it = w.hosts.end() - 1;
      }
      it->ranks.push_back(s.rank);
      it->cpus.push_back(text(*p, "cpus"));
      it->cpu_counts.push_back(static_cast<int>(number(*p, "cpu_count")));
    }

  // Calls per kind.
  for (const CollectiveInfo& coll : collectives()) {
    KindCounts k;
    k.kind = coll.name;
    for (const Summary& s : sums)
      if (const Value* c = s.v.find("collectives")->find(coll.name); c && c->type == Value::Type::Object) {
        k.calls += number(*c, "calls");
        k.early += number(*c, "early_return");
        k.in_call += number(*c, "completed_in_call");
        k.plain += number(*c, "passthrough");
        for (const auto& [name, n] : number_map(c->find("reasons"))) k.reasons[name] += n;
      }
    if (k.calls > 0) w.kinds.push_back(k);
  }
  for (const Summary& s : sums) {
    if (const Value* ov = s.v.find("overhead"); ov && ov->type == Value::Type::Object) {
      w.in_early_calls_s += number(*ov, "in_early_calls_s");
      w.in_early_calls_waiting_s += number(*ov, "in_early_calls_waiting_s");  // since session 75
      w.progress_cpu_s += std::max(0.0, number(*ov, "progress_thread_cpu_s"));
      if (const Value* cc = ov->find("in_call_copies"); cc && cc->type == Value::Type::Object) {
        w.copies_s += std::max(0.0, number(*cc, "s"));
        w.copies_priced_s += std::max(0.0, number(*cc, "priced_s"));
      }
    }
  }
  for (const KindCounts& k : w.kinds) w.early_returns += k.early;
  if (const Value* t = first.find("threshold"); t && t->type == Value::Type::Object)
    w.threshold = threshold_line(*t, sums.front().rank);
  for (const Summary& s : sums)
    if (const Value* n = s.v.find("node"); n && n->type == Value::Type::Object && !text(*n, "cpu_contention").empty()) {
      w.cpu_contention = "node of rank " + std::to_string(s.rank) + ": " + text(*n, "cpu_contention");
      break;
    }

  // Mode optimize's decisions, per (profile site, basis), with the ranks that made them.
  if (const Value* p = first.find("profile"); p && p->type == Value::Type::Object) {
    w.profile_file = text(*p, "file");
    w.profile_status = text(*p, "status");
    w.profile_blocking = text(*p, "blocking");
  }
  for (const Summary& s : sums) {
    const Value* p = s.v.find("profile");
    if (p && p->type == Value::Type::Object) {
      w.profile_unknown_site_calls += number(*p, "calls_unknown_site");
      w.profile_other_sizes_calls += number(*p, "calls_other_sizes");
    }
    const Value* d = p ? p->find("decisions") : nullptr;
    if (!d || d->type != Value::Type::Array) continue;
    for (const Value& x : d->items) {
      auto it = std::find_if(w.decisions.begin(), w.decisions.end(), [&](const Decision& e) {
        return e.site == text(x, "site") && e.basis == text(x, "basis");
      });
      if (it == w.decisions.end()) {
        w.decisions.push_back({text(x, "site"), text(x, "kind"), text(x, "where"), text(x, "decision"), text(x, "basis"), 0,
                               {}, optional_number(x, "comm_ns"), optional_number(x, "overlap_ns"),
                               optional_number(x, "cost_ns"), optional_number(x, "saved_ns"),
                               optional_number(x, "in_call_ns"), text(x, "receivers")});
        it = w.decisions.end() - 1;
      }
      it->calls += number(x, "calls");
      it->ranks.push_back(s.rank);
    }
  }

  // Call sites by (kind, module file name, offset): the return address of the MPI call.
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;
  std::vector<Site> raw;
  std::vector<std::vector<const Value*>> timelines;
  std::map<std::string, std::string> build_ids;
  for (const Summary& s : sums)
    if (const Value* m = s.v.find("modules"); m && m->type == Value::Type::Object)
      for (const auto& [path, info] : m->members) build_ids.emplace(path, text(info, "build_id"));
  for (const Summary& s : sums)
    for (const Value& v : s.v.find("sites")->items) {
      const auto key = std::make_tuple(text(v, "kind"), basename_of(text(v, "module")), text(v, "offset"));
      auto [it, added] = index.try_emplace(key, raw.size());
      if (added) {
        Site site;
        site.kind = text(v, "kind");
        site.lang = text(v, "lang");
        site.module = text(v, "module");
        site.offset = text(v, "offset");
        site.symbol = text(v, "symbol");
        raw.push_back(site);
        timelines.emplace_back();
      }
      raw[it->second].ranks.push_back(rank_figures(v, s.rank));
      timelines[it->second].push_back(v.find("timelines"));
    }

  // Where each is, and the ideal (the profile knows sites by return address too).
  std::string profile_path = opt.profile;
  if (profile_path.empty() && w.mode == "optimize" && w.profile_status == "loaded") {
    std::error_code ec;
    if (fs::is_regular_file(w.profile_file, ec)) profile_path = w.profile_file;
  }
  const Ideal ideal(profile_path, w.size, w.executable, w.spawned, w.notes);
  for (Site& s : raw) {
    if (opt.resolve) {
      std::string note;
      const auto b = build_ids.find(s.module);
      const SourceLocation loc = sym.locate(s.module, b == build_ids.end() ? "" : b->second, parse_hex(s.offset), note);
      if (!note.empty()) w.notes.push_back(note);
      s.function = loc.function;
      s.file = loc.file;
      s.line = loc.line;
    }
    if (!ideal.usable()) {
      s.ideal_note = profile_path.empty() ? "no trace profile (tnbc report --profile FILE)"
                     : w.spawned            ? "no trace profile of this world"
                                            : "the profile cannot be used";
      continue;
    }
    for (RankFigures& r : s.ranks) {
      std::string why;
      r.ideal_ns = ideal.of(s, r, why);
      if (!r.ideal_ns && s.ideal_note.empty()) s.ideal_note = why.empty() ? "no estimate" : why;
    }
  }

  // One site per line of source: a compiler may have made several calls of one MPI call (branches
  // duplicated); they are one call site to the reader. Unresolved sites stay apart.
  std::map<std::tuple<std::string, std::string, std::string, int, std::string>, std::size_t> by_line;
  std::vector<std::vector<const Value*>> merged_timelines;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    Site& s = raw[i];
    const auto key = s.file.empty() ? std::make_tuple(s.kind, basename_of(s.module) + "+" + s.offset, std::string(), 0, std::string())
                                    : std::make_tuple(s.kind, std::string(), s.file, s.line, s.function);
    auto [it, added] = by_line.try_emplace(key, w.sites.size());
    if (added) {
      w.sites.push_back(std::move(s));
      merged_timelines.push_back(timelines[i]);
      continue;
    }
    Site& into = w.sites[it->second];
    if (into.ideal_note.empty()) into.ideal_note = s.ideal_note;
    for (const RankFigures& r : s.ranks) {
      auto same = std::find_if(into.ranks.begin(), into.ranks.end(), [&](const RankFigures& x) { return x.rank == r.rank; });
      if (same == into.ranks.end()) {
        into.ranks.push_back(r);
        continue;
      }
      const std::optional<double> ideal_sum =
          same->ideal_ns && r.ideal_ns ? std::optional<double>(*same->ideal_ns + *r.ideal_ns) : std::nullopt;
      add_figures(*same, r);
      same->ideal_ns = ideal_sum;
    }
    std::sort(into.ranks.begin(), into.ranks.end(), [](const RankFigures& a, const RankFigures& b) { return a.rank < b.rank; });
    auto& lists = merged_timelines[it->second];
    lists.insert(lists.end(), timelines[i].begin(), timelines[i].end());
  }
  for (std::size_t i = 0; i < w.sites.size(); ++i) w.sites[i].timeline = timeline_of(merged_timelines[i]);
  if (ideal.usable()) used_profile = profile_path;
  // The profile's frames in the decisions, at their file:line as the call sites (after those:
  // a module's note is said there, once).
  const auto locate = [&](const std::string& where) {
    std::string note;
    return opt.resolve ? sym.locate_frame(where, build_ids, note) : where;
  };
  for (Decision& d : w.decisions) {
    d.where = locate(d.where);
    if (!d.receivers.empty()) d.receivers = locate(d.receivers);
  }
  // Other parts of the report (the cost model's, tools/report_sections.hh) read the summaries too.
  std::map<int, const Value*> by_rank;
  for (const Summary& s : sums) by_rank[s.rank] = &s.v;
  w.sections = extra_sections(w, by_rank, locate);
  std::erase_if(w.sections, [](const Section& s) { return s.text.empty() && s.html.empty() && s.data.empty(); });
  return w;
}

}  // namespace

std::string ranks_text(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

std::string Site::where() const {
  const std::string fn = !function.empty() ? function : symbol != "?" ? symbol : "";
  const std::string place = !file.empty() && line > 0 ? basename_of(file) + ":" + std::to_string(line)
                                                      : basename_of(module) + "+" + offset;
  return fn.empty() ? place : fn + " (" + place + ")";
}

void add_figures(RankFigures& t, const RankFigures& r) {
  t.calls += r.calls;
  t.bytes += r.bytes;
  t.bytes_sent += r.bytes_sent;
  t.early += r.early;
  t.in_call += r.in_call;
  t.plain += r.plain;
  for (const auto& [k, n] : r.reasons) t.reasons[k] += n;
  t.tinit_ns += r.tinit_ns;
  t.duration_ns += r.duration_ns;
  t.blocked_ns += r.blocked_ns;
  t.hidden_ns += r.hidden_ns;
  for (const auto& [k, n] : r.blocked_by_ns) t.blocked_by_ns[k] += n;
  for (const auto& [k, n] : r.waits) t.waits[k] += n;
  t.observe_ns += r.observe_ns;
  t.observe_waits += r.observe_waits;
  if (r.node) {
    if (!t.node) t.node.emplace();
    add_node_figures(*t.node, *r.node);
  }
}

void add_node_figures(NodeFigures& t, const NodeFigures& r) {
  t.calls += r.calls;
  t.off_calls += r.off_calls;
  t.holds += r.holds;
  t.hold_timeouts += r.hold_timeouts;
  t.first_read_calls += r.first_read_calls;
  t.first_read_ns_sum += r.first_read_ns_sum;
  t.first_read_ns_max = std::max(t.first_read_ns_max, r.first_read_ns_max);
  if (!r.basis.empty()) t.basis = r.basis;
  if (r.model_on_ns) t.model_on_ns = r.model_on_ns, t.model_off_ns = r.model_off_ns;
}

RankFigures Site::total() const {
  RankFigures t;
  t.rank = -1;
  bool all_ideal = !ranks.empty();
  double ideal = 0;
  for (const RankFigures& r : ranks) {
    add_figures(t, r);
    all_ideal = all_ideal && r.ideal_ns.has_value();
    ideal += r.ideal_ns.value_or(0);
  }
  if (all_ideal) t.ideal_ns = ideal;
  return t;
}

namespace {
template <class F>
Spread per_rank(const std::vector<RankFigures>& ranks, F f) {
  std::vector<double> v;
  for (const RankFigures& r : ranks)
    if (std::optional<double> x = f(r)) v.push_back(*x);
  return spread_of(v);
}
}  // namespace

std::optional<double> share(double part, double whole) {
  if (whole <= 0) return std::nullopt;
  return part / whole;
}

Spread Site::duration_per_call_ns() const {
  return per_rank(ranks, [](const RankFigures& r) { return r.calls > 0 ? std::optional(r.duration_ns / r.calls) : std::nullopt; });
}
Spread Site::tinit_share() const {
  return per_rank(ranks, [](const RankFigures& r) { return share(r.tinit_ns, r.duration_ns); });
}
Spread Site::blocked_share() const {
  return per_rank(ranks, [](const RankFigures& r) { return share(r.blocked_ns, r.duration_ns); });
}
Spread Site::hidden_share() const {
  return per_rank(ranks, [](const RankFigures& r) { return share(r.hidden_ns, r.duration_ns); });
}
Spread Site::ideal_share() const {
  return per_rank(ranks, [](const RankFigures& r) {
    return r.ideal_ns ? share(*r.ideal_ns, r.duration_ns) : std::nullopt;
  });
}

double World::wall_total_ns() const {
  double sum = 0;
  for (double w : wall_ns) sum += w;
  return sum;
}

RankFigures World::total() const {
  RankFigures t;
  t.rank = -1;
  double ideal = 0;
  bool any_ideal = false;
  for (const Site& s : sites) {
    const RankFigures r = s.total();
    add_figures(t, r);
    if (r.ideal_ns) {
      any_ideal = true;
      ideal += *r.ideal_ns;
    }
  }
  if (any_ideal) t.ideal_ns = ideal;
  return t;
}

double World::ideal_duration_ns() const {
  double d = 0;
  for (const Site& s : sites)
    if (const RankFigures r = s.total(); r.ideal_ns) d += r.duration_ns;
  return d;
}

std::optional<double> World::model_tinit_ns() const {
  double ns = 0, calls = 0;
  for (const Decision& d : decisions)
    if (d.decision == "early_return" && d.in_call_ns) ns += d.calls * *d.in_call_ns, calls += d.calls;
  if (calls <= 0) return std::nullopt;
  return ns / calls;
}

Result<Run> load_run(const std::string& dir, const LoadOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::error(dir + ": not a directory (expected the TNBC_OUTPUT_DIR of a run, or a harness run directory)");
  // A harness run directory holds them in tnbc/ (`tnbc exec --output-dir RUN/tnbc`).
  std::string base = dir;
  if (summary_files(base).empty() && fs::is_directory(fs::path(dir) / "tnbc", ec)) base = (fs::path(dir) / "tnbc").string();
  std::vector<std::string> world_dirs;
  if (!summary_files(base).empty()) world_dirs.push_back(base);
  std::vector<std::string> spawned;
  for (const auto& e : fs::directory_iterator(base, ec))
    if (e.is_directory() && e.path().filename().string().rfind("spawned-", 0) == 0) spawned.push_back(e.path().string());
  std::sort(spawned.begin(), spawned.end());
  world_dirs.insert(world_dirs.end(), spawned.begin(), spawned.end());
  if (world_dirs.empty()) {
    bool traces = false;
    for (const auto& e : fs::directory_iterator(base, ec))
      traces = traces || e.path().filename().string().rfind("tnbc-trace.", 0) == 0;
    return Status::error(dir + ": no summaries (tnbc-summary.<rank>.json, here or in " + dir +
                         "/tnbc): run the program with TNBC_OUTPUT_DIR=" + dir + " (and a mode other than off)" +
                         (traces ? "; the trace files here are for `tnbc merge`" : ""));
  }
  Run run;
  run.source = dir;
  Symbolizer sym;
  std::vector<std::string> unreadable;
  for (const std::string& wd : world_dirs) {
    std::vector<std::string> notes;
    const std::vector<Summary> sums = read_world(summary_files(wd), notes);
    if (sums.empty()) {
      for (const std::string& n : notes) run.notes.push_back(n);
      unreadable.push_back(wd);
      continue;
    }
    std::string used;
    run.worlds.push_back(build_world(wd, sums, opt, sym, std::move(notes), used));
    if (run.profile.empty()) run.profile = used;
  }
  if (run.worlds.empty()) {
    std::string why;
    for (const std::string& n : run.notes) why += "\n  " + n;
    return Status::error(dir + ": no summary could be read:" + why);
  }
  run.label = run.worlds.front().mode;
  return run;
}

}  // namespace tnbc::tools::report
