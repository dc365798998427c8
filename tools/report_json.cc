// `tnbc report --json FILE`: the report as JSON (format "tnbc-report", docs/formats.md), and its
// reader. Each run keeps what the figures are computed from (per rank and site) and, for
// readers that do not want to compute, the derived figures (`totals`, `spread`), which the
// reader ignores and recomputes.
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tools/report_render.hh"
#include "trace/json.hh"

namespace tnbc::tools::report {

namespace {

using json::Value;

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
  }
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string opt(const std::optional<double>& v) { return v ? num(*v) : "null"; }

std::string share_json(double part, double whole) { return opt(share(part, whole)); }

// A JSON value written back (canonical: no spaces), for sections' data.
std::string value_text(const Value& v) {
  switch (v.type) {
    case Value::Type::Null: return "null";
    case Value::Type::Bool: return v.boolean ? "true" : "false";
    case Value::Type::Number: return num(v.number);
    case Value::Type::String: return quote(v.string);
    case Value::Type::Array: {
      std::string o = "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) o += (i ? "," : "") + value_text(v.items[i]);
      return o + "]";
    }
    case Value::Type::Object: {
      std::string o = "{";
      for (std::size_t i = 0; i < v.members.size(); ++i)
        o += (i ? "," : "") + quote(v.members[i].first) + ":" + value_text(v.members[i].second);
      return o + "}";
    }
  }
  return "null";
}

template <class T, class F>
std::string list(const std::vector<T>& xs, F f) {
  std::string o = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) o += (i ? ", " : "") + f(xs[i]);
  return o + "]";
}

std::string map_json(const std::map<std::string, double>& m) {
  std::string o = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    o += (first ? "" : ", ") + quote(k) + ": " + num(v);
    first = false;
  }
  return o + "}";
}

std::string spread_json(const Spread& s) {
  return "{\"min\": " + num(s.min) + ", \"mean\": " + num(s.mean) + ", \"max\": " + num(s.max) + ", \"n\": " +
         std::to_string(s.n) + "}";
}

// The derived figures of a sum over calls (and ranks), for readers (docs/formats.md).
std::string totals_json(const RankFigures& t, double wall, double ideal_duration) {
  return "{\"calls\": " + num(t.calls) + ", \"duration_ns\": " + num(t.duration_ns) + ", \"tinit_ns\": " + num(t.tinit_ns) +
         ", \"blocked_ns\": " + num(t.blocked_ns) + ", \"hidden_ns\": " + num(t.hidden_ns) + ", \"ideal_ns\": " +
         opt(t.ideal_ns) + ", \"tinit_share\": " + share_json(t.tinit_ns, t.duration_ns) + ", \"blocked_share\": " +
         share_json(t.blocked_ns, t.duration_ns) + ", \"hidden_share\": " + share_json(t.hidden_ns, t.duration_ns) +
         ", \"exposed_share\": " + share_json(t.duration_ns - t.hidden_ns, t.duration_ns) + ", \"ideal_share\": " +
         (t.ideal_ns ? share_json(*t.ideal_ns, ideal_duration) : "null") + ", \"run_share\": " +
         share_json(t.duration_ns, wall) + ", \"hidden_run_share\": " + share_json(t.hidden_ns, wall) +
         ", \"tinit_run_share\": " + share_json(t.tinit_ns, wall) + "}";
}

std::string node_json(const NodeFigures& n) {
  return "{\"calls\": " + num(n.calls) + ", \"off_calls\": " + num(n.off_calls) + ", \"holds\": " + num(n.holds) +
         ", \"hold_timeouts\": " + num(n.hold_timeouts) + ", \"first_read_calls\": " + num(n.first_read_calls) +
         ", \"first_read_ns_sum\": " + num(n.first_read_ns_sum) + ", \"first_read_ns_max\": " + num(n.first_read_ns_max) +
         ", \"basis\": " + quote(n.basis) + ", \"model_first_read_on_ns\": " + opt(n.model_on_ns) +
         ", \"model_first_read_off_ns\": " + opt(n.model_off_ns) + "}";
}

std::string trial_json(const TrialFigures& t) {
  return "{\"trials\": " + num(t.trials) + ", \"early_ns\": " + num(t.early_ns) + ", \"in_call_ns\": " +
         num(t.in_call_ns) + ", \"verdict\": " + quote(t.in_call ? "in_call" : "early_return") +
         ", \"leaned\": " + (t.leaned ? "true" : "false") + "}";
}

std::string rank_json(const RankFigures& r) {
  return "{\"rank\": " + std::to_string(r.rank) + ", \"calls\": " + num(r.calls) + ", \"bytes\": " + num(r.bytes) +
         ", \"bytes_sent\": " + num(r.bytes_sent) + ", \"early\": " + num(r.early) + ", \"in_call\": " + num(r.in_call) +
         ", \"plain\": " + num(r.plain) + ", \"reasons\": " + map_json(r.reasons) + ", \"tinit_ns\": " + num(r.tinit_ns) +
         ", \"duration_ns\": " + num(r.duration_ns) + ", \"blocked_ns\": " + num(r.blocked_ns) + ", \"hidden_ns\": " +
         num(r.hidden_ns) + ", \"blocked_by_ns\": " + map_json(r.blocked_by_ns) + ", \"waits\": " + map_json(r.waits) +
         ", \"observe_ns\": " + num(r.observe_ns) + ", \"observe_waits\": " + num(r.observe_waits) +
         ", \"ideal_ns\": " + opt(r.ideal_ns) + ", \"node_priorities\": " + (r.node ? node_json(*r.node) : "null") +
         ", \"trial\": " + (r.trial ? trial_json(*r.trial) : "null") + "}";
}

std::string site_json(const Site& s, double wall) {
  const RankFigures t = s.total();
  std::string o = "{\"kind\": " + quote(s.kind) + ", \"lang\": " + quote(s.lang) + ", \"module\": " + quote(s.module) +
                  ", \"offset\": " + quote(s.offset) + ", \"symbol\": " + quote(s.symbol) + ", \"function\": " +
                  quote(s.function) + ", \"file\": " + quote(s.file) + ", \"line\": " + std::to_string(s.line) +
                  ", \"where\": " + quote(s.where()) + ", \"ideal_note\": " + quote(s.ideal_note) + ",\n       \"totals\": " +
                  totals_json(t, wall, t.ideal_ns ? t.duration_ns : 0) + ",\n       \"spread\": {\"duration_per_call_ns\": " +
                  spread_json(s.duration_per_call_ns()) + ", \"tinit_share\": " + spread_json(s.tinit_share()) +
                  ", \"blocked_share\": " + spread_json(s.blocked_share()) + ", \"hidden_share\": " +
                  spread_json(s.hidden_share()) + ", \"ideal_share\": " + spread_json(s.ideal_share()) + "},\n       \"ranks\": " +
                  list(s.ranks, rank_json) + ",\n       \"timeline\": {\"calls\": " + std::to_string(s.timeline.calls) +
                  ", \"tinit_ns\": " + spread_json(s.timeline.tinit_ns) + ", \"duration_ns\": " +
                  spread_json(s.timeline.duration_ns) + ", \"read_order\": " +
                  list(s.timeline.read_order, [](int i) { return std::to_string(i); }) + ", \"subs\": " +
                  list(s.timeline.subs, [](const SubTiming& x) {
                    return "{\"bytes\": " + num(x.bytes) + ", \"arrival_ns\": " + spread_json(x.arrival_ns) +
                           ", \"access_ns\": " + spread_json(x.access_ns) + "}";
                  }) + "}}";
  return o;
}

std::string world_json(const World& w) {
  auto strings = [](const std::vector<std::string>& xs) { return list(xs, quote); };
  auto ints = [](const std::vector<int>& xs) { return list(xs, [](int i) { return std::to_string(i); }); };
  std::string o = "{\"dir\": " + quote(w.dir) + ", \"run_id\": " + quote(w.run_id) + ", \"mode\": " + quote(w.mode) +
                  ", \"executable\": " + quote(w.executable) + ", \"spawned\": " + (w.spawned ? "true" : "false") +
                  ", \"size\": " + std::to_string(w.size) + ", \"ranks\": " + ints(w.ranks) + ", \"summary_version\": " +
                  std::to_string(w.summary_version) + ", \"wall_ns\": " + list(w.wall_ns, num) + ",\n     \"hosts\": " +
                  list(w.hosts, [&](const Host& h) {
                    return "{\"host\": " + quote(h.host) + ", \"ranks\": " + ints(h.ranks) + ", \"cpus\": " + strings(h.cpus) +
                           ", \"cpu_counts\": " + ints(h.cpu_counts) + "}";
                  }) +
                  ",\n     \"kinds\": " +
                  list(w.kinds, [](const KindCounts& k) {
                    return "{\"kind\": " + quote(k.kind) + ", \"calls\": " + num(k.calls) + ", \"early\": " + num(k.early) +
                           ", \"in_call\": " + num(k.in_call) + ", \"plain\": " + num(k.plain) + ", \"reasons\": " +
                           map_json(k.reasons) + "}";
                  }) +
                  ",\n     \"in_early_calls_s\": " + num(w.in_early_calls_s) +
                  ", \"in_early_calls_waiting_s\": " + num(w.in_early_calls_waiting_s) +
                  ", \"progress_cpu_s\": " + num(w.progress_cpu_s) +
                  ", \"copies_s\": " + num(w.copies_s) + ", \"copies_priced_s\": " + num(w.copies_priced_s) +
                  ", \"early_returns\": " + num(w.early_returns) + ", \"threshold\": " + quote(w.threshold) +
                  ", \"cpu_contention\": " + quote(w.cpu_contention) + ", \"profile_file\": " + quote(w.profile_file) +
                  ", \"profile_status\": " + quote(w.profile_status) + ", \"profile_blocking\": " + quote(w.profile_blocking) +
                  ", \"profile_unknown_site_calls\": " + num(w.profile_unknown_site_calls) +
                  ", \"profile_other_sizes_calls\": " + num(w.profile_other_sizes_calls) +
                  ",\n     \"decisions\": " +
                  list(w.decisions, [&](const Decision& d) {
                    return "{\"site\": " + quote(d.site) + ", \"kind\": " + quote(d.kind) + ", \"where\": " + quote(d.where) +
                           ", \"decision\": " + quote(d.decision) + ", \"basis\": " + quote(d.basis) + ", \"calls\": " +
                           num(d.calls) + ", \"ranks\": " + ints(d.ranks) + ", \"comm_ns\": " + opt(d.comm_ns) +
                           ", \"overlap_ns\": " + opt(d.overlap_ns) + ", \"cost_ns\": " + opt(d.cost_ns) + ", \"saved_ns\": " +
                           opt(d.saved_ns) + ", \"in_call_ns\": " + opt(d.in_call_ns) +
                           (d.receivers.empty() ? "" : ", \"receivers\": " + quote(d.receivers)) + "}";
                  }) +
                  ",\n     \"totals\": " + totals_json(w.total(), w.wall_total_ns(), w.ideal_duration_ns()) +
                  ",\n     \"sites\": [";
  for (std::size_t i = 0; i < w.sites.size(); ++i) o += (i ? ",\n      " : "\n      ") + site_json(w.sites[i], w.wall_total_ns());
  o += "],\n     \"sections\": " + list(w.sections, [](const Section& s) {
         return "{\"key\": " + quote(s.key) + ", \"title\": " + quote(s.title) + ", \"text\": " + quote(s.text) +
                ", \"data\": " + (s.data.empty() ? std::string("null") : s.data) + ", \"html\": " + quote(s.html) + "}";
       });
  return o + ",\n     \"notes\": " + strings(w.notes) + "}";
}

// ---------------------------------------------------------------- reading back

struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const Value& field(const Value& o, const char* key, Value::Type t) {
  const Value* v = o.find(key);
  if (!v || v->type != t) {
    char where[64];
    std::snprintf(where, sizeof where, "line %d, column %d: ", o.line, o.column);
    throw Bad(std::string(where) + "field \"" + key + "\" is missing or not " + json::type_name(t));
  }
  return *v;
}
double number(const Value& o, const char* key) { return field(o, key, Value::Type::Number).number; }
std::string str(const Value& o, const char* key) { return field(o, key, Value::Type::String).string; }
std::optional<double> maybe(const Value& o, const char* key) {
  const Value* v = o.find(key);
  if (!v || v->type == Value::Type::Null) return std::nullopt;
  return number(o, key);
}
std::vector<int> ints(const Value& o, const char* key) {
  std::vector<int> v;
  for (const Value& x : field(o, key, Value::Type::Array).items) v.push_back(static_cast<int>(x.number));
  return v;
}
std::vector<std::string> strings(const Value& o, const char* key) {
  std::vector<std::string> v;
  for (const Value& x : field(o, key, Value::Type::Array).items) v.push_back(x.string);
  return v;
}
std::map<std::string, double> numbers(const Value& o, const char* key) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : field(o, key, Value::Type::Object).members) m[k] = v.number;
  return m;
}
Spread spread(const Value& o, const char* key) {
  const Value& s = field(o, key, Value::Type::Object);
  return {number(s, "min"), number(s, "mean"), number(s, "max"), static_cast<int>(number(s, "n"))};
}

World read_world(const Value& v) {
  World w;
  w.dir = str(v, "dir");
  w.run_id = str(v, "run_id");
  w.mode = str(v, "mode");
  w.executable = str(v, "executable");
  w.spawned = field(v, "spawned", Value::Type::Bool).boolean;
  w.size = static_cast<int>(number(v, "size"));
  w.ranks = ints(v, "ranks");
  w.summary_version = static_cast<int>(number(v, "summary_version"));
  for (const Value& x : field(v, "wall_ns", Value::Type::Array).items) w.wall_ns.push_back(x.number);
  for (const Value& h : field(v, "hosts", Value::Type::Array).items)
    w.hosts.push_back({str(h, "host"), ints(h, "ranks"), strings(h, "cpus"), ints(h, "cpu_counts")});
  for (const Value& k : field(v, "kinds", Value::Type::Array).items)
    w.kinds.push_back({str(k, "kind"), number(k, "calls"), number(k, "early"), number(k, "in_call"), number(k, "plain"),
                       numbers(k, "reasons")});
  w.in_early_calls_s = number(v, "in_early_calls_s");
  w.in_early_calls_waiting_s = maybe(v, "in_early_calls_waiting_s").value_or(0);  // since session 75
  w.progress_cpu_s = number(v, "progress_cpu_s");
  w.copies_s = maybe(v, "copies_s").value_or(0);  // absent from reports written before session 26
  w.copies_priced_s = maybe(v, "copies_priced_s").value_or(0);
  w.early_returns = number(v, "early_returns");
  w.threshold = str(v, "threshold");
  w.cpu_contention = str(v, "cpu_contention");
  w.profile_file = str(v, "profile_file");
  w.profile_status = str(v, "profile_status");
  w.profile_blocking = str(v, "profile_blocking");
  // Absent from reports written before session 72.
  w.profile_unknown_site_calls = maybe(v, "profile_unknown_site_calls").value_or(0);
  w.profile_other_sizes_calls = maybe(v, "profile_other_sizes_calls").value_or(0);
  for (const Value& d : field(v, "decisions", Value::Type::Array).items)
    w.decisions.push_back({str(d, "site"), str(d, "kind"), str(d, "where"), str(d, "decision"), str(d, "basis"),
                           number(d, "calls"), ints(d, "ranks"), maybe(d, "comm_ns"), maybe(d, "overlap_ns"),
                           maybe(d, "cost_ns"), maybe(d, "saved_ns"), maybe(d, "in_call_ns"),
                           d.find("receivers") ? str(d, "receivers") : std::string()});
  for (const Value& s : field(v, "sites", Value::Type::Array).items) {
    Site site;
    site.kind = str(s, "kind");
    site.lang = str(s, "lang");
    site.module = str(s, "module");
    site.offset = str(s, "offset");
    site.symbol = str(s, "symbol");
    site.function = str(s, "function");
    site.file = str(s, "file");
    site.line = static_cast<int>(number(s, "line"));
    site.ideal_note = str(s, "ideal_note");
    for (const Value& r : field(s, "ranks", Value::Type::Array).items) {
      RankFigures f;
      f.rank = static_cast<int>(number(r, "rank"));
      f.calls = number(r, "calls");
      f.bytes = number(r, "bytes");
      f.bytes_sent = number(r, "bytes_sent");
      f.early = number(r, "early");
      f.in_call = number(r, "in_call");
      f.plain = number(r, "plain");
      f.reasons = numbers(r, "reasons");
      f.tinit_ns = number(r, "tinit_ns");
      f.duration_ns = number(r, "duration_ns");
      f.blocked_ns = number(r, "blocked_ns");
      f.hidden_ns = number(r, "hidden_ns");
      f.blocked_by_ns = numbers(r, "blocked_by_ns");
      f.waits = numbers(r, "waits");
      f.observe_ns = number(r, "observe_ns");
      f.observe_waits = number(r, "observe_waits");
      f.ideal_ns = maybe(r, "ideal_ns");
      if (const Value* t = r.find("trial"); t && t->type == Value::Type::Object) {
        TrialFigures& x = f.trial.emplace();
        x.trials = number(*t, "trials");
        x.early_ns = number(*t, "early_ns");
        x.in_call_ns = number(*t, "in_call_ns");
        x.in_call = str(*t, "verdict") == "in_call";
        x.leaned = json::bool_or(*t, "leaned", false);  // since session 77
      }
      if (const Value* n = r.find("node_priorities"); n && n->type == Value::Type::Object) {
        NodeFigures& x = f.node.emplace();
        x.calls = number(*n, "calls");
        x.off_calls = number(*n, "off_calls");
        x.holds = number(*n, "holds");
        x.hold_timeouts = number(*n, "hold_timeouts");
        x.first_read_calls = number(*n, "first_read_calls");
        x.first_read_ns_sum = number(*n, "first_read_ns_sum");
        x.first_read_ns_max = number(*n, "first_read_ns_max");
        x.basis = str(*n, "basis");
        x.model_on_ns = maybe(*n, "model_first_read_on_ns");
        x.model_off_ns = maybe(*n, "model_first_read_off_ns");
      }
      site.ranks.push_back(f);
    }
    const Value& t = field(s, "timeline", Value::Type::Object);
    site.timeline.calls = static_cast<int>(number(t, "calls"));
    site.timeline.tinit_ns = spread(t, "tinit_ns");
    site.timeline.duration_ns = spread(t, "duration_ns");
    site.timeline.read_order = ints(t, "read_order");
    for (const Value& x : field(t, "subs", Value::Type::Array).items)
      site.timeline.subs.push_back({number(x, "bytes"), spread(x, "arrival_ns"), spread(x, "access_ns")});
    w.sites.push_back(std::move(site));
  }
  for (const Value& s : field(v, "sections", Value::Type::Array).items) {
    const Value* data = s.find("data");
    w.sections.push_back({str(s, "key"), str(s, "title"), str(s, "text"),
                          data && data->type != Value::Type::Null ? value_text(*data) : std::string(), str(s, "html")});
  }
  w.notes = strings(v, "notes");
  return w;
}

}  // namespace

std::string json_string(const std::string& s) { return quote(s); }
std::string json_number(double v) { return num(v); }

std::string render_json(const std::vector<Run>& runs) {
  std::string o = "{\"format\": \"" + std::string(kReportFormat) + "\", \"version\": " + std::to_string(kReportVersion) +
                  ",\n \"runs\": [";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    o += (i ? ",\n  " : "\n  ") + std::string("{\"source\": ") + quote(r.source) + ", \"label\": " + quote(r.label) +
         ", \"profile\": " + quote(r.profile) + ", \"notes\": " + list(r.notes, quote) + ",\n   \"worlds\": [";
    for (std::size_t k = 0; k < r.worlds.size(); ++k) o += (k ? ",\n    " : "\n    ") + world_json(r.worlds[k]);
    o += "]}";
  }
  return o + "]}\n";
}

Result<std::vector<Run>> parse_report_json(const std::string& text) {
  Result<Value> parsed = json::parse(text);
  if (!parsed.ok()) return Status::error("not valid JSON: " + parsed.status().message());
  const Value& v = parsed.value();
  if (v.type != Value::Type::Object || !v.find("format") || v.find("format")->type != Value::Type::String ||
      v.find("format")->string != kReportFormat)
    return Status::error(std::string("not a tnbc report (its \"format\" is not \"") + kReportFormat + "\")");
  const Value* version = v.find("version");
  if (!version || version->type != Value::Type::Number || version->number != kReportVersion)
    return Status::error("a tnbc report of another format version (this tnbc reads version " +
                         std::to_string(kReportVersion) + ")");
  try {
    std::vector<Run> runs;
    for (const Value& r : field(v, "runs", Value::Type::Array).items) {
      Run run;
      run.source = str(r, "source");
      run.label = str(r, "label");
      run.profile = str(r, "profile");
      run.notes = strings(r, "notes");
      for (const Value& w : field(r, "worlds", Value::Type::Array).items) run.worlds.push_back(read_world(w));
      runs.push_back(std::move(run));
    }
    return runs;
  } catch (const Bad& e) {  // thrown in this file only
    return Status::error(e.what());
  }
}

}  // namespace tnbc::tools::report
