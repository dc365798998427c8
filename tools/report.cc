// `tnbc report DIR`: what the calls of one run did, from its per-rank summaries
// (DIR/tnbc-summary.<rank>.json, or DIR/tnbc/ as the NPB harness writes them; docs/formats.md):
// per kind and per call site how many calls returned early, completed in the call or ran as
// plain MPI, and why, and on which ranks; in mode optimize the profile's decision per site
// (which sites completed in the call for lack of overlap to gain, with the estimate behind it).
#include "tools/report.hh"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "runtime/vocabulary.hh"
#include "tools/report_model.hh"
#include "trace/json.hh"

namespace tnbc::tools {

namespace {

namespace fs = std::filesystem;
using json::Value;

struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const Value& need(const Value& obj, const char* key, Value::Type type, const std::string& file) {
  const Value* v = obj.find(key);
  if (!v || v->type != type)
    throw ReportError(file + ": field \"" + key + "\" is missing or not " + json::type_name(type) +
                      " (not a tnbc summary of this version?)");
  return *v;
}

double number(const Value& obj, const char* key) {
  const Value* v = obj.find(key);
  return v && v->type == Value::Type::Number ? v->number : 0;
}

std::string text(const Value& obj, const char* key) {
  const Value* v = obj.find(key);
  return v && v->type == Value::Type::String ? v->string : std::string();
}

std::string ms(const Value& obj, const char* key) {
  const Value* v = obj.find(key);
  if (!v || v->type != Value::Type::Number) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", v->number / 1e6);
  return b;
}

// " on ranks 0,2" when not every rank of the run is in `ranks`, else "".
std::string on_ranks(const std::set<int>& ranks, int size) {
  if (static_cast<int>(ranks.size()) >= size) return "";
  std::string s = " on rank" + std::string(ranks.size() == 1 ? " " : "s ");
  for (int r : ranks) s += (r == *ranks.begin() ? "" : ",") + std::to_string(r);
  return s;
}

struct Summary {
  std::string file;
  Value v;
  int rank = 0;
};

// Where the ranks ran (`placement`, runtime/placement.hh): per host its ranks and their CPUs.
std::string placement_lines(const std::vector<Summary>& sums) {
  std::map<std::string, std::vector<std::pair<int, std::string>>> hosts;  // host -> (rank, "0-1 (2 CPUs)")
  for (const Summary& s : sums)
    if (const Value* p = s.v.find("placement"); p && p->type == Value::Type::Object) {
      const int n = static_cast<int>(number(*p, "cpu_count"));
      hosts[text(*p, "host")].push_back({s.rank, text(*p, "cpus") + " (" + std::to_string(n) + (n == 1 ? " CPU)" : " CPUs)")});
    }
  if (hosts.empty()) return {};
  std::string o = "placement: " + std::to_string(hosts.size()) + (hosts.size() == 1 ? " host" : " hosts") + "\n";
  for (const auto& [host, ranks] : hosts) {
    bool same = true;
    for (const auto& r : ranks) same = same && r.second == ranks[0].second;
    o += "  " + host + ": " + std::to_string(ranks.size()) + (ranks.size() == 1 ? " rank" : " ranks");
    if (same) {
      o += " (";
      for (const auto& r : ranks) o += (&r == &ranks[0] ? "" : ",") + std::to_string(r.first);
      o += "), each on CPUs " + ranks[0].second + "\n";
    } else {
      for (const auto& r : ranks)
        o += (&r == &ranks[0] ? ": rank " : "; rank ") + std::to_string(r.first) + " on CPUs " + r.second;
      o += "\n";
    }
  }
  return o;
}

struct Counts {
  double calls = 0, early = 0, in_call = 0, plain = 0;
  std::map<std::string, double> reasons;
  std::set<int> ranks;
  void add(const Value& v, int rank) {
    ranks.insert(rank);
    calls += number(v, "calls");
    early += number(v, "early_return");
    in_call += number(v, "completed_in_call");
    plain += number(v, "passthrough");
    if (const Value* r = v.find("reasons"); r && r->type == Value::Type::Object)
      for (const auto& [k, n] : r->members) reasons[k] += n.number;
  }
  std::string line() const {
    char b[160];
    std::snprintf(b, sizeof b, "calls %.0f: early return %.0f, completed in the call %.0f, plain MPI %.0f", calls, early,
                  in_call, plain);
    std::string s = b;
    if (!reasons.empty()) {
      s += "; why not early:";
      for (const auto& [k, n] : reasons) s += " " + k + " " + std::to_string(static_cast<long long>(n));
    }
    return s;
  }
};

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> summary_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("tnbc-summary.", 0) == 0 && f.size() > 18 && f.substr(f.size() - 5) == ".json") files.push_back(e.path().string());
  }
  return files;
}

std::string report_or_throw(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ReportError(dir + ": not a directory (expected TNBC_OUTPUT_DIR of a run)");
  std::vector<std::string> files = summary_files(dir);
  // A run directory of the NPB harness holds them in tnbc/ (`tnbc exec --output-dir RUN/tnbc`).
  if (files.empty() && fs::is_directory(fs::path(dir) / "tnbc", ec)) files = summary_files((fs::path(dir) / "tnbc").string());
  if (files.empty())
    throw ReportError(dir + ": no summaries (tnbc-summary.<rank>.json, here or in " + dir + "/tnbc); run with TNBC_OUTPUT_DIR=" + dir);
  std::vector<Summary> sums;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream t;
    t << in.rdbuf();
    Summary s{f, {}, 0};
    Result<Value> parsed = json::parse(t.str());
    if (!parsed.ok()) throw ReportError(f + ": not valid JSON: " + parsed.status().message());
    s.v = std::move(parsed).value();
    if (s.v.type != Value::Type::Object || text(s.v, "format") != "tnbc-summary")
      throw ReportError(f + ": not a tnbc summary (format \"tnbc-summary\")");
    s.rank = static_cast<int>(need(s.v, "rank", Value::Type::Number, f).number);
    sums.push_back(std::move(s));
  }
  std::sort(sums.begin(), sums.end(), [](const Summary& a, const Summary& b) { return a.rank < b.rank; });

  std::ostringstream o;
  const int size = static_cast<int>(number(sums[0].v, "size"));
  o << "tnbc report: " << dir << ": " << sums.size() << " of " << size << " ranks, mode " << text(sums[0].v, "mode") << "\n";
  o << placement_lines(sums);

  o << "\ncollectives (all ranks):\n";
  for (const CollectiveInfo& coll : collectives()) {
    const char* kind = coll.name;
    Counts c;
    for (const Summary& s : sums)  // a summary of a version that knew fewer collectives lacks some
      if (const Value* k = need(s.v, "collectives", Value::Type::Object, s.file).find(kind)) c.add(*k, s.rank);
    if (c.calls == 0) continue;
    char k[16];
    std::snprintf(k, sizeof k, "%-10s", kind);
    o << "  " << k << c.line() << "\n";
  }

  // tnbc's own costs (`overhead`): Tinit per early return, the CPU its threads used.
  {
    double in_early_s = 0, progress_s = 0, early = 0;
    bool have = false;
    for (const Summary& s : sums) {
      const Value* ov = s.v.find("overhead");
      if (!ov || ov->type != Value::Type::Object) continue;
      have = true;
      in_early_s += number(*ov, "in_early_calls_s");
      progress_s += std::max(0.0, number(*ov, "progress_thread_cpu_s"));
      for (const CollectiveInfo& coll : collectives())
        if (const Value* k = need(s.v, "collectives", Value::Type::Object, s.file).find(coll.name))
          early += number(*k, "early_return");
    }
    if (have && early > 0) {
      char b[200];
      std::snprintf(b, sizeof b,
                    "  time inside the early-returning calls (Tinit): %.3f ms per early return; progress threads' CPU "
                    "%.3f s (all ranks)\n",
                    in_early_s / early * 1e3, progress_s);
      o << b;
    }
  }

  // The size threshold (`threshold`, runtime/threshold.hh): the same on every rank by
  // construction; said once, with the basis and, when measured, the lowest rank's costs.
  if (const Value* t = sums[0].v.find("threshold"); t && t->type == Value::Type::Object) {
    const Value* mb = t->find("min_bytes");
    const std::string value = !mb || mb->type != Value::Type::Number
                                  ? std::string("none: no size pays, every collective ran blocking")
                                  : std::to_string(static_cast<long long>(mb->number)) + " bytes per sub-message";
    o << "  size threshold (TNBC_MIN_BYTES): " << value << " (" << text(*t, "basis") << ")";
    if (text(*t, "basis") == "measured") {
      const double mib = 1 << 20;
      char b[240];
      std::snprintf(b, sizeof b,
                    "; rank %d measured link %.0f us + %.0f us/MiB, guard (%s) %.0f us + %.0f us/MiB, copy %.0f us/MiB",
                    sums[0].rank, number(*t, "link_ns") / 1e3, number(*t, "link_ns_per_byte") * mib / 1e3, text(*t, "backend").c_str(),
                    number(*t, "guard_ns") / 1e3, number(*t, "guard_ns_per_byte") * mib / 1e3,
                    number(*t, "copy_ns_per_byte") * mib / 1e3);
      o << b;
    }
    o << "\n";
  }

  // CPU contention on a node (`node`, runtime/cpu_share.hh): said for the first rank reporting it.
  for (const Summary& s : sums)
    if (const Value* n = s.v.find("node"); n && n->type == Value::Type::Object && !text(*n, "cpu_contention").empty()) {
      o << "  CPUs (node of rank " << s.rank << "): " << text(*n, "cpu_contention") << "\n";
      break;
    }

  // Call sites by (kind, module, offset): the return address of the MPI entry point.
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<std::string, Counts>> sites;
  for (const Summary& s : sums)
    for (const Value& site : need(s.v, "sites", Value::Type::Array, s.file).items) {
      auto& e = sites[{text(site, "kind"), basename_of(text(site, "module")), text(site, "offset")}];
      e.first = text(site, "symbol");
      e.second.add(site, s.rank);
    }
  o << "\ncall sites (return address of the MPI call; all ranks that called it):\n";
  for (const auto& [key, e] : sites) {
    const auto& [kind, module, offset] = key;
    o << "  " << kind << " at " << e.first << " (" << module << "+" << offset << ")" << on_ranks(e.second.ranks, size)
      << ": " << e.second.line() << "\n";
  }

  const Value* profile = sums[0].v.find("profile");
  if (profile && profile->type == Value::Type::Object) {
    o << "\nprofile " << text(*profile, "file") << ": " << text(*profile, "status");
    if (profile->find("blocking")) o << ", blocking decisions " << text(*profile, "blocking");
    o << "\n";
    // Decisions per (profile site, basis), with the ranks that made them. Ranks may decide
    // differently (their own call stacks name the site; a call that does not return early still
    // runs tnbc's schedule): listed, not warned about.
    struct Entry {
      const Value* first = nullptr;
      double calls = 0;
      std::set<int> ranks;
    };
    std::map<std::pair<std::string, std::string>, Entry> decisions;
    std::vector<std::string> order;
    for (const Summary& s : sums) {
      const Value* p = s.v.find("profile");
      const Value* d = p ? p->find("decisions") : nullptr;
      if (!d || d->type != Value::Type::Array) continue;
      for (const Value& x : d->items) {
        const std::string site = text(x, "site");
        Entry& e = decisions[{site, text(x, "basis")}];
        if (!e.first) {
          e.first = &x;
          order.push_back(site + "\n" + text(x, "basis"));
        }
        e.calls += number(x, "calls");
        e.ranks.insert(s.rank);
      }
    }
    if (!order.empty()) o << "  per site (profile site id; calls over all ranks):\n";
    for (const std::string& k : order) {
      const std::string site = k.substr(0, k.find('\n')), basis = k.substr(k.find('\n') + 1);
      const Entry& e = decisions[{site, basis}];
      const Value& x = *e.first;
      const std::string ranks = on_ranks(e.ranks, size);
      o << "  " << text(x, "kind") << " at " << text(x, "where") << " [" << site << "]: "
        << (text(x, "decision") == "blocking" ? "COMPLETED IN THE CALL" : "returned early") << " (" << basis << "), "
        << static_cast<long long>(e.calls) << " calls" << (ranks.empty() ? " on all ranks" : ranks);
      if (x.find("saved_ns") && x.find("saved_ns")->type == Value::Type::Number)
        o << "; min(Tcomm " << ms(x, "comm_ns") << ", T_CURC + T_CRC " << ms(x, "overlap_ns") << ") - cost "
          << ms(x, "cost_ns") << " = " << ms(x, "saved_ns");
      o << "\n";
    }
  }
  o << model_section(dir);  // the cost model's figures per site (tools/report_model.cc)
  return o.str();
}

}  // namespace

Result<std::string> report(const std::string& dir) {
  try {
    return report_or_throw(dir);
  } catch (const ReportError& e) {  // thrown in this file only
    return Status::error(e.what());
  }
}

int cmd_report(const std::vector<std::string>& args) {
  if (args.size() != 1 || (!args[0].empty() && args[0][0] == '-')) {
    std::fprintf(stderr, "tnbc: report: usage: tnbc report DIR   (DIR: TNBC_OUTPUT_DIR of a run, or a harness run directory)\n");
    return 2;
  }
  const Result<std::string> r = report(args[0]);
  if (!r.ok()) {
    std::fprintf(stderr, "tnbc: report: %s\n", r.status().message().c_str());
    return 2;
  }
  std::fputs(r.value().c_str(), stdout);
  return 0;
}

}  // namespace tnbc::tools
