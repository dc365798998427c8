#include "runtime/model/machine.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/config.hh"
#include "runtime/fnv1a.hh"
#include "runtime/json.hh"

namespace tnbc::model {

Line fit(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  if (n == 0) return {};
  if (n == 1) return {std::max(0.0, y[0]), 0};
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double d = static_cast<double>(n) * sxx - sx * sx;
  Line l;
  l.ns_per_byte = d > 0 ? std::max(0.0, (static_cast<double>(n) * sxy - sx * sy) / d) : 0;
  l.ns = std::max(0.0, (sy - l.ns_per_byte * sx) / static_cast<double>(n));
  return l;
}

Line fit_through(const std::vector<double>& x, const std::vector<double>& y) {
  Line l = fit(x, y);
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) l.points.push_back({x[i], std::max(0.0, y[i])});
  return l;
}

double latency_of(const std::vector<SizePoint>& sweep) {
  double best = -1;
  for (const SizePoint& p : sweep) {
    if (p.bytes > std::max(kLatencySweepBytes, sweep.front().bytes)) break;
    const double l = p.t_ns - p.os_ns - p.or_ns;
    if (best < 0 || l < best) best = l;
  }
  return std::max(0.0, best);
}

std::string load_words(double others_cpu_share, double steal_share) {
  char b[96];
  std::snprintf(b, sizeof b, "other processes took %.0f %% of the CPU time (the hypervisor %.0f %%)", 100 * others_cpu_share,
                100 * steal_share);
  return b;
}

std::string load_advice(double others_cpu_share, double steal_share) {
  if (others_cpu_share > kLoadNoteShare || steal_share <= kLoadNoteShare) return "calibrate again on a quiet node";
  return "calibrate again when the host is quieter, unless its hypervisor always takes that much (a VM on a busy "
         "host: runs there meet it too)";
}

std::string load_note(double others_cpu_share, double steal_share) {
  return "calibrated while " + load_words(others_cpu_share, steal_share) + ": its prices are likely high; " +
         load_advice(others_cpu_share, steal_share);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : (v[k - 1] + v[k]) / 2;
}

Line fit_through_pass_medians(const std::vector<double>& sizes, const std::vector<std::vector<double>>& passes) {
  std::vector<double> x, y;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<double> at;
    for (const auto& pass : passes)
      if (i < pass.size() && pass[i] >= 0) at.push_back(pass[i]);
    if (at.empty()) continue;
    x.push_back(sizes[i]);
    y.push_back(median_of(std::move(at)));
  }
  return x.size() >= 2 ? fit_through(x, y) : Line{};
}

const char* level_name(LevelKind k) { return k == LevelKind::IntraNode ? "intra_node" : "inter_node"; }

int guard_index(std::string_view name) {
  for (int i = 0; i < kGuardBackends; ++i)
    if (kGuardNames[i] == name) return i;
  return -1;
}

namespace {

// Linear interpolation of field f of the points (a sweep's, a line's) at m; beyond the last point
// the slope of the last two points (at least `slope`), below the first the first point's value.
template <class P, class F>
double interpolate(const std::vector<P>& s, double m, F f, double slope) {
  if (m <= s.front().bytes) return f(s.front());
  for (std::size_t i = 1; i < s.size(); ++i)
    if (m <= s[i].bytes) {
      const double a = s[i - 1].bytes, b = s[i].bytes;
      return f(s[i - 1]) + (f(s[i]) - f(s[i - 1])) * (m - a) / (b - a);
    }
  double tail = slope;
  if (s.size() >= 2) {
    const P &p = s[s.size() - 2], &q = s.back();
    tail = std::max(tail, (f(q) - f(p)) / (q.bytes - p.bytes));
  }
  return f(s.back()) + tail * (m - s.back().bytes);
}

}  // namespace

std::string cost_text(const Line& l) {
  auto duration = [](double ns) {
    char b[32];
    if (ns < 1e6) std::snprintf(b, sizeof b, "%.1f us", ns / 1e3);
    else std::snprintf(b, sizeof b, "%.2f ms", ns / 1e6);
    return std::string(b);
  };
  std::string s;
  for (const CostPoint& p : l.points) s += (s.empty() ? "" : ", ") + duration(p.ns) + " at " + format_bytes(p.bytes);
  if (!s.empty()) return s;
  char b[64];
  std::snprintf(b, sizeof b, "%.1f us + %.1f us/MiB", l.ns / 1e3, l.ns_per_byte * 1048.576);
  return b;
}

double Line::through_points(double bytes) const {
  const CostPoint& first = points.front();
  if (bytes <= first.bytes) return first.bytes > 0 ? first.ns * std::max(0.0, bytes) / first.bytes : first.ns;
  if (points.size() == 1) return first.ns + ns_per_byte * (bytes - first.bytes);
  return interpolate(points, bytes, [](const CostPoint& p) { return p.ns; }, 0.0);
}

double Level::T(double m) const {
  if (sweep.empty()) return os_ns + or_ns + L_ns + std::max(0.0, m - 1) * G_ns_per_byte;
  return interpolate(sweep, m, [](const SizePoint& p) { return p.t_ns; }, G_ns_per_byte);
}

double Level::g(double m) const {
  if (sweep.empty()) return std::max(g_ns, m * G_ns_per_byte);
  return interpolate(sweep, m, [](const SizePoint& p) { return p.g_ns; }, G_ns_per_byte);
}

double Level::o_s(double m) const {
  if (sweep.empty()) return os_ns + Os_ns_per_byte * m;
  return interpolate(sweep, m, [](const SizePoint& p) { return p.os_ns; }, Os_ns_per_byte);
}

double Level::head_bytes() const {
  if (sweep.empty() || G_ns_per_byte <= 0) return 0;
  const SizePoint& p = sweep.back();
  return std::clamp(p.bytes - std::max(0.0, p.t_ns - L_ns) / G_ns_per_byte, 0.0, p.bytes);
}

double Level::post(double m, double page) const {
  const bool measured = !sweep.empty() && std::all_of(sweep.begin(), sweep.end(), [](const SizePoint& p) { return p.post_ns >= 0; });
  if (!measured) return o_s(std::min(m, page));
  return interpolate(sweep, m, [](const SizePoint& p) { return p.post_ns; }, 0);
}

double Level::o_r(double m) const {
  if (sweep.empty()) return or_ns + Or_ns_per_byte * m;
  return interpolate(sweep, m, [](const SizePoint& p) { return p.or_ns; }, Or_ns_per_byte);
}

namespace {

// The node sweep's per-byte field f at m bytes and `ranks` ranks (Level::node_exchange).
template <class F>
double node_rate(const std::vector<NodePoint>& s, double m, int ranks, F f) {
  int at = s.front().ranks;  // the most ranks measured up to `ranks`, else the fewest measured
  for (const NodePoint& p : s)
    if (p.ranks <= ranks) at = std::max(at, p.ranks);
  std::vector<const NodePoint*> row;
  for (const NodePoint& p : s)
    if (p.ranks == at) row.push_back(&p);
  if (m <= row.front()->bytes) return f(*row.front());
  for (std::size_t i = 1; i < row.size(); ++i)
    if (m <= row[i]->bytes) {
      const double a = std::log(row[i - 1]->bytes), b = std::log(row[i]->bytes);
      return f(*row[i - 1]) + (f(*row[i]) - f(*row[i - 1])) * (std::log(m) - a) / (b - a);
    }
  return f(*row.back());
}

}  // namespace

double Level::node_exchange(double m, int ranks) const {
  if (node_sweep.empty()) return node_bi();
  return node_rate(node_sweep, m, ranks, [](const NodePoint& p) { return p.exchange_ns_per_byte; });
}

double Level::cpu_share() const {
  const double cpu = Os_ns_per_byte + Or_ns_per_byte;
  if (!measured || G_ns_per_byte <= 0 || cpu <= 0) return 1;
  return std::min(1.0, cpu / G_ns_per_byte);
}

double Level::one_flow() const {
  if (node_out_ns_per_byte <= 0) return G_ns_per_byte;
  return node_out_ns_per_byte * std::max(1.0, std::max(1, flows) * cpu_share());
}

double Level::node_ring(double m, int ranks) const {
  if (node_sweep.empty()) return node_bi();  // a ring's ranks send and receive at once
  return node_rate(node_sweep, m, ranks, [](const NodePoint& p) { return p.ring_ns_per_byte; });
}

bool Level::mpi_alltoall_measured() const {
  return !node_sweep.empty() &&
         std::all_of(node_sweep.begin(), node_sweep.end(), [](const NodePoint& p) { return p.mpi_alltoall_ns_per_byte > 0; });
}

double Level::node_mpi_alltoall(double m, int ranks) const {
  if (!mpi_alltoall_measured()) return node_exchange(m, ranks);
  return node_rate(node_sweep, m, ranks, [](const NodePoint& p) { return p.mpi_alltoall_ns_per_byte; });
}

// ---------------------------------------------------------------- writing ----

namespace {

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  const double r = std::round(v);
  const auto res = (std::fabs(v - r) < 1e-9 && std::fabs(v) < 1e15)
                       ? std::to_chars(b, b + sizeof b, static_cast<long long>(r))
                       : std::to_chars(b, b + sizeof b, v, std::chars_format::general, 6);
  return std::string(b, res.ptr);
}

std::string str(const std::string& s) { return json::quote(s); }

std::string line_json(const Line& l) {
  std::string o = "{\"ns\": " + num(l.ns) + ", \"ns_per_byte\": " + num(l.ns_per_byte);
  if (!l.points.empty()) {
    o += ", \"points\": [";
    for (std::size_t i = 0; i < l.points.size(); ++i)
      o += (i ? ", [" : "[") + num(l.points[i].bytes) + ", " + num(l.points[i].ns) + "]";
    o += "]";
  }
  return o + "}";
}

}  // namespace

std::string machine_json(const Machine& m) {
  std::ostringstream o;
  o << "{\"format\": \"" << kMachineFormat << "\", \"version\": " << kMachineVersion << ",\n \"method\": " << str(m.method)
    << ", \"created\": " << str(m.created) << ", \"host\": " << str(m.host) << ",\n \"mpi_library\": " << str(m.mpi_library);
  if (!m.mpi_transport.empty()) o << ", \"mpi_transport\": " << str(m.mpi_transport);
  o << ",\n \"ranks\": " << m.ranks << ", \"nodes\": " << m.nodes << ", \"ranks_per_node\": " << m.ranks_per_node
    << ", \"cpus_per_node\": " << m.cpus_per_node << ", \"page\": " << m.page;
  if (m.load_known())
    o << ",\n \"load\": {\"others_cpu_share\": " << num(m.others_cpu_share) << ", \"steal_share\": " << num(m.steal_share) << "}";
  o << ",\n \"levels\": {";
  for (int k = 0; k < kLevels; ++k) {
    const Level& l = m.level[k];
    o << (k ? ",\n  " : "\n  ") << "\"" << level_name(static_cast<LevelKind>(k)) << "\": ";
    if (!l.measured) {
      o << "null";
      continue;
    }
    o << "{\"L_ns\": " << num(l.L_ns) << ", \"o_s_ns\": " << num(l.os_ns) << ", \"o_r_ns\": " << num(l.or_ns)
      << ", \"g_ns\": " << num(l.g_ns) << ", \"G_ns_per_byte\": " << num(l.G_ns_per_byte)
      << ",\n   \"O_s_ns_per_byte\": " << num(l.Os_ns_per_byte) << ", \"O_r_ns_per_byte\": " << num(l.Or_ns_per_byte)
      << ", \"node_out_ns_per_byte\": " << num(l.node_out_ns_per_byte)
      << ", \"node_bi_ns_per_byte\": " << num(l.node_bi_ns_per_byte) << ", \"flows\": " << l.flows << ",\n   \"sweep\": [";
    for (std::size_t i = 0; i < l.sweep.size(); ++i) {
      const SizePoint& p = l.sweep[i];
      o << (i ? ",\n    " : "\n    ") << "{\"bytes\": " << num(p.bytes) << ", \"T_ns\": " << num(p.t_ns)
        << ", \"o_s_ns\": " << num(p.os_ns) << ", \"o_r_ns\": " << num(p.or_ns) << ", \"g_ns\": " << num(p.g_ns);
      if (p.post_ns >= 0) o << ", \"post_ns\": " << num(p.post_ns);
      o << "}";
    }
    o << "],\n   \"node_sweep\": [";
    for (std::size_t i = 0; i < l.node_sweep.size(); ++i) {
      const NodePoint& p = l.node_sweep[i];
      o << (i ? ",\n    " : "\n    ") << "{\"bytes\": " << num(p.bytes) << ", \"ranks\": " << p.ranks
        << ", \"exchange_ns_per_byte\": " << num(p.exchange_ns_per_byte)
        << ", \"ring_ns_per_byte\": " << num(p.ring_ns_per_byte);
      if (p.mpi_alltoall_ns_per_byte > 0) o << ", \"mpi_alltoall_ns_per_byte\": " << num(p.mpi_alltoall_ns_per_byte);
      o << "}";
    }
    o << "]";
    if (l.buffered_send_bytes > 0) o << ",\n   \"buffered_send_bytes\": " << num(l.buffered_send_bytes);
    if (l.shared_cpu_measured()) o << ",\n   \"shared_cpu\": " << line_json(l.shared_cpu);
    o << "}";
  }
  o << "},\n \"guard\": {\"memcpy\": " << line_json(m.memcpy_cost);
  if (m.memcpy_cold_measured()) o << ", \"memcpy_cold\": " << line_json(m.memcpy_cold);
  if (m.memcpy_cold_huge_measured())
    o << ", \"memcpy_cold_huge\": " << line_json(m.memcpy_cold_huge)
      << ", \"huge_page_bytes\": " << num(m.huge_page_bytes);
  if (m.memcpy_in_call_measured()) o << ", \"memcpy_in_call\": " << line_json(m.memcpy_in_call);
  if (m.memcpy_in_call_alone_measured()) o << ", \"memcpy_in_call_alone\": " << line_json(m.memcpy_in_call_alone);
  if (m.in_call_rest_measured()) o << ", \"in_call_rest\": " << line_json(m.in_call_rest);
  if (!m.in_call_rest_warm.points.empty()) o << ", \"in_call_rest_warm\": " << line_json(m.in_call_rest_warm);
  if (m.in_call_rest_bcast_measured()) o << ", \"in_call_rest_bcast\": " << line_json(m.in_call_rest_bcast);
  if (!m.in_call_rest_bcast_warm.points.empty()) o << ", \"in_call_rest_bcast_warm\": " << line_json(m.in_call_rest_bcast_warm);
  if (m.in_call_rest_bcast_root_measured()) o << ", \"in_call_rest_bcast_root\": " << line_json(m.in_call_rest_bcast_root);
  if (!m.in_call_rest_bcast_root_warm.points.empty())
    o << ", \"in_call_rest_bcast_root_warm\": " << line_json(m.in_call_rest_bcast_root_warm);
  if (m.warm_below_bytes > 0) o << ", \"warm_below_bytes\": " << num(m.warm_below_bytes);
  for (int b = 0; b < kGuardBackends; ++b) {
    o << ",\n   \"" << kGuardNames[b] << "\": ";
    if (!m.guard_measured[b]) {
      o << "null";
      continue;
    }
    o << "{\"hold\": " << line_json(m.guard[b].hold) << ", \"publish\": " << line_json(m.guard[b].publish)
      << ", \"fault_ns\": " << num(m.guard[b].fault_ns);
    if (!m.guard[b].hold_warm.points.empty()) o << ", \"hold_warm\": " << line_json(m.guard[b].hold_warm);
    if (m.guard[b].first_read.measured()) o << ", \"first_read\": " << line_json(m.guard[b].first_read);
    o << "}";
  }
  o << "},\n \"progress\": {\"test_ns\": " << num(m.test_ns) << ", \"sleep_ns\": " << num(m.sleep_ns);
  if (m.wake_loaded_ns >= 0) o << ", \"wake_loaded_ns\": " << num(m.wake_loaded_ns);
  if (m.handover_ns >= 0) o << ", \"handover_ns\": " << num(m.handover_ns);
  if (m.handover_warm_ns >= 0) o << ", \"handover_warm_ns\": " << num(m.handover_warm_ns);
  if (m.first_round_ns >= 0) o << ", \"first_round_ns\": " << num(m.first_round_ns);
  if (m.cpu_taken.measured()) o << ",\n  \"cpu_taken\": " << line_json(m.cpu_taken);
  if (m.cpu_taken_bcast.measured()) o << ",\n  \"cpu_taken_bcast\": " << line_json(m.cpu_taken_bcast);
  o << ", \"O_r_ns\": " << num(m.O_r_ns()) << "}}\n";
  return o.str();
}

// ---------------------------------------------------------------- reading ----

namespace {

using json::Value;

struct MachineError : std::runtime_error {  // thrown inside this file only
  using std::runtime_error::runtime_error;
};

class Reader {
 public:
  explicit Reader(const std::string& name) : name_(name) {}
  [[noreturn]] void fail(const std::string& field, const Value& at, const std::string& problem) const {
    throw MachineError("machine file " + name_ + ": " + (field.empty() ? "" : field + ": ") + problem + " (line " +
                       std::to_string(at.line) + ", column " + std::to_string(at.column) +
                       "); write a new one with `tnbc calibrate`");
  }
  const Value& member(const Value& obj, const std::string& path, const char* key, Value::Type type) const {
    const Value* v = obj.find(key);
    const std::string field = path.empty() ? key : path + "." + key;
    if (!v) fail(field, obj, "missing");
    if (v->type != type) fail(field, *v, std::string("expected ") + json::type_name(type) + ", found " + json::type_name(v->type));
    return *v;
  }
  double number(const Value& obj, const std::string& path, const char* key) const {
    const Value& v = member(obj, path, key, Value::Type::Number);
    if (!(v.number >= 0)) fail(path.empty() ? key : path + "." + key, v, "expected a number >= 0");
    return v.number;
  }
  int integer(const Value& obj, const std::string& path, const char* key, int lo) const {
    const Value& v = member(obj, path, key, Value::Type::Number);
    if (!v.integer || v.int_value < lo || v.int_value > (1 << 30))
      fail(path.empty() ? key : path + "." + key, v, "expected an integer >= " + std::to_string(lo));
    return static_cast<int>(v.int_value);
  }
  std::string text(const Value& obj, const char* key) const { return member(obj, "", key, Value::Type::String).string; }
  Line line(const Value& obj, const std::string& path, const char* key) const {
    const Value& l = member(obj, path, key, Value::Type::Object);
    const std::string p = path + "." + key;
    Line out(number(l, p, "ns"), number(l, p, "ns_per_byte"));
    // Optional (calibrate writes them since session 20): [bytes, ns] per size measured.
    if (!l.find("points")) return out;
    const Value& pts = member(l, p, "points", Value::Type::Array);
    for (std::size_t i = 0; i < pts.items.size(); ++i) {
      const Value& pt = pts.items[i];
      const std::string pp = p + ".points[" + std::to_string(i) + "]";
      if (pt.type != Value::Type::Array || pt.items.size() != 2 || pt.items[0].type != Value::Type::Number ||
          pt.items[1].type != Value::Type::Number || !(pt.items[0].number > 0) || !(pt.items[1].number >= 0))
        fail(pp, pt, "expected [bytes > 0, ns >= 0]");
      if (!out.points.empty() && pt.items[0].number <= out.points.back().bytes) fail(pp, pt, "sizes must increase");
      out.points.push_back({pt.items[0].number, pt.items[1].number});
    }
    return out;
  }

 private:
  std::string name_;
};

Machine parse_or_throw(std::string_view text, const std::string& name) {
  Reader r(name);
  Result<Value> parsed = json::parse(text);
  if (!parsed.ok()) throw MachineError("machine file " + name + ": not valid JSON: " + parsed.status().message());
  const Value& root = parsed.value();
  if (root.type != Value::Type::Object) r.fail("", root, "expected a JSON object");
  const Value* format = root.find("format");
  if (!format || format->type != Value::Type::String || format->string != kMachineFormat)
    r.fail("format", format ? *format : root, std::string("not a \"") + kMachineFormat + "\" file");
  const Value& version = r.member(root, "", "version", Value::Type::Number);
  if (!version.integer || version.int_value != kMachineVersion)
    r.fail("version", version, "version " + (version.integer ? std::to_string(version.int_value) : std::string("?")) +
                                   ", this tnbc reads version " + std::to_string(kMachineVersion));
  Machine m;
  m.method = r.text(root, "method");
  m.created = r.text(root, "created");
  m.host = r.text(root, "host");
  m.mpi_library = r.text(root, "mpi_library");
  if (root.find("mpi_transport")) m.mpi_transport = r.text(root, "mpi_transport");  // since session 60
  m.ranks = r.integer(root, "", "ranks", 1);
  m.nodes = r.integer(root, "", "nodes", 1);
  m.ranks_per_node = r.integer(root, "", "ranks_per_node", 1);
  m.cpus_per_node = r.integer(root, "", "cpus_per_node", 1);
  m.page = static_cast<std::size_t>(r.integer(root, "", "page", 1));
  if (root.find("load")) {  // optional (since session 30)
    const Value& load = r.member(root, "", "load", Value::Type::Object);
    m.others_cpu_share = r.number(load, "load", "others_cpu_share");
    m.steal_share = r.number(load, "load", "steal_share");
  }
  const Value& levels = r.member(root, "", "levels", Value::Type::Object);
  for (int k = 0; k < kLevels; ++k) {
    const char* key = level_name(static_cast<LevelKind>(k));
    const Value* lv = levels.find(key);
    const std::string p = std::string("levels.") + key;
    if (!lv) r.fail(p, levels, "missing (null when not measured)");
    if (lv->type == Value::Type::Null) continue;
    if (lv->type != Value::Type::Object) r.fail(p, *lv, "expected an object or null");
    Level& l = m.level[k];
    l.measured = true;
    l.L_ns = r.number(*lv, p, "L_ns");
    l.os_ns = r.number(*lv, p, "o_s_ns");
    l.or_ns = r.number(*lv, p, "o_r_ns");
    l.g_ns = r.number(*lv, p, "g_ns");
    l.G_ns_per_byte = r.number(*lv, p, "G_ns_per_byte");
    l.Os_ns_per_byte = r.number(*lv, p, "O_s_ns_per_byte");
    l.Or_ns_per_byte = r.number(*lv, p, "O_r_ns_per_byte");
    l.node_out_ns_per_byte = r.number(*lv, p, "node_out_ns_per_byte");
    l.node_bi_ns_per_byte = r.number(*lv, p, "node_bi_ns_per_byte");
    l.flows = r.integer(*lv, p, "flows", 1);
    const Value& sweep = r.member(*lv, p, "sweep", Value::Type::Array);
    double last = 0;
    for (std::size_t i = 0; i < sweep.items.size(); ++i) {
      const Value& pt = sweep.items[i];
      const std::string pp = p + ".sweep[" + std::to_string(i) + "]";
      if (pt.type != Value::Type::Object) r.fail(pp, pt, "expected an object");
      SizePoint s{r.number(pt, pp, "bytes"), r.number(pt, pp, "T_ns"), r.number(pt, pp, "o_s_ns"),
                  r.number(pt, pp, "o_r_ns"), r.number(pt, pp, "g_ns"), -1};
      if (pt.find("post_ns")) s.post_ns = r.number(pt, pp, "post_ns");  // optional (session 20)
      if (i > 0 && s.bytes <= last) r.fail(pp + ".bytes", pt, "sizes must increase");
      last = s.bytes;
      l.sweep.push_back(s);
    }
    const Value& nodes = r.member(*lv, p, "node_sweep", Value::Type::Array);
    for (std::size_t i = 0; i < nodes.items.size(); ++i) {
      const Value& pt = nodes.items[i];
      const std::string pp = p + ".node_sweep[" + std::to_string(i) + "]";
      if (pt.type != Value::Type::Object) r.fail(pp, pt, "expected an object");
      NodePoint n{r.number(pt, pp, "bytes"), r.integer(pt, pp, "ranks", 1), r.number(pt, pp, "exchange_ns_per_byte"),
                  r.number(pt, pp, "ring_ns_per_byte")};
      // Optional (files written before session 14: 0, the exchange pattern's rate stands in).
      if (pt.find("mpi_alltoall_ns_per_byte")) n.mpi_alltoall_ns_per_byte = r.number(pt, pp, "mpi_alltoall_ns_per_byte");
      if (n.bytes <= 0) r.fail(pp + ".bytes", pt, "expected a size > 0");
      if (i > 0) {
        const NodePoint& q = l.node_sweep.back();
        if (n.ranks < q.ranks || (n.ranks == q.ranks && n.bytes <= q.bytes))
          r.fail(pp, pt, "points must be sorted by ranks, then by increasing size");
      }
      l.node_sweep.push_back(n);
    }
    // Optional (files written before it was measured keep loading: 0, not measured).
    if (lv->find("buffered_send_bytes")) l.buffered_send_bytes = r.number(*lv, p, "buffered_send_bytes");
    if (lv->find("shared_cpu")) l.shared_cpu = r.line(*lv, p, "shared_cpu");
  }
  const Value& guard = r.member(root, "", "guard", Value::Type::Object);
  m.memcpy_cost = r.line(guard, "guard", "memcpy");
  if (guard.find("memcpy_cold")) m.memcpy_cold = r.line(guard, "guard", "memcpy_cold");  // optional, as above
  if (guard.find("memcpy_cold_huge")) {  // optional (since session 81)
    m.memcpy_cold_huge = r.line(guard, "guard", "memcpy_cold_huge");
    m.huge_page_bytes = r.number(guard, "guard", "huge_page_bytes");
  }
  if (guard.find("memcpy_in_call")) m.memcpy_in_call = r.line(guard, "guard", "memcpy_in_call");  // optional
  if (guard.find("memcpy_in_call_alone")) m.memcpy_in_call_alone = r.line(guard, "guard", "memcpy_in_call_alone");  // optional
  if (guard.find("in_call_rest")) m.in_call_rest = r.line(guard, "guard", "in_call_rest");  // optional
  if (guard.find("in_call_rest_warm")) m.in_call_rest_warm = r.line(guard, "guard", "in_call_rest_warm");  // optional
  if (guard.find("in_call_rest_bcast")) m.in_call_rest_bcast = r.line(guard, "guard", "in_call_rest_bcast");  // optional
  if (guard.find("in_call_rest_bcast_warm"))
    m.in_call_rest_bcast_warm = r.line(guard, "guard", "in_call_rest_bcast_warm");  // optional
  if (guard.find("in_call_rest_bcast_root"))
    m.in_call_rest_bcast_root = r.line(guard, "guard", "in_call_rest_bcast_root");  // optional
  if (guard.find("in_call_rest_bcast_root_warm"))
    m.in_call_rest_bcast_root_warm = r.line(guard, "guard", "in_call_rest_bcast_root_warm");  // optional
  if (guard.find("warm_below_bytes")) m.warm_below_bytes = r.number(guard, "guard", "warm_below_bytes");  // optional
  for (int b = 0; b < kGuardBackends; ++b) {
    const std::string key(kGuardNames[b]);
    const Value* g = guard.find(key);
    const std::string p = "guard." + key;
    if (!g) r.fail(p, guard, "missing (null when not measured)");
    if (g->type == Value::Type::Null) continue;
    if (g->type != Value::Type::Object) r.fail(p, *g, "expected an object or null");
    m.guard_measured[b] = true;
    m.guard[b] = {r.line(*g, p, "hold"), r.line(*g, p, "publish"), r.number(*g, p, "fault_ns"), {}, {}};
    if (g->find("hold_warm")) m.guard[b].hold_warm = r.line(*g, p, "hold_warm");     // optional
    if (g->find("first_read")) m.guard[b].first_read = r.line(*g, p, "first_read");  // optional (session 57)
  }
  const Value& progress = r.member(root, "", "progress", Value::Type::Object);
  m.test_ns = r.number(progress, "progress", "test_ns");
  m.sleep_ns = r.number(progress, "progress", "sleep_ns");
  // Optional (files written before it was measured keep loading: not measured, -1).
  if (progress.find("wake_loaded_ns")) m.wake_loaded_ns = r.number(progress, "progress", "wake_loaded_ns");
  if (progress.find("handover_ns")) m.handover_ns = r.number(progress, "progress", "handover_ns");
  if (progress.find("handover_warm_ns")) m.handover_warm_ns = r.number(progress, "progress", "handover_warm_ns");
  if (progress.find("first_round_ns")) m.first_round_ns = r.number(progress, "progress", "first_round_ns");
  if (progress.find("cpu_taken")) m.cpu_taken = r.line(progress, "progress", "cpu_taken");
  if (progress.find("cpu_taken_bcast")) m.cpu_taken_bcast = r.line(progress, "progress", "cpu_taken_bcast");
  return m;
}

}  // namespace

Result<Machine> parse_machine(std::string_view text, const std::string& name) {
  try {
    return parse_or_throw(text, name);
  } catch (const MachineError& e) {
    return Status::error(e.what());
  }
}

Result<Machine> read_machine(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("machine file " + path + ": cannot be read (missing or not readable)");
  std::ostringstream t;
  t << in.rdbuf();
  if (t.str().empty()) return Status::error("machine file " + path + ": empty");
  return parse_machine(t.str(), path);
}

std::string misfit(const Machine& m, const RunFacts& run) {
  if (m.mpi_library != run.mpi_library)
    return "it was measured with another MPI library (\"" + m.mpi_library + "\"; this run: \"" + run.mpi_library + "\")";
  if (m.nodes != run.nodes)
    return "it was measured on " + std::to_string(m.nodes) + " node" + (m.nodes == 1 ? "" : "s") + ", this run has " +
           std::to_string(run.nodes);
  if (run.max_ranks_per_node > 1 && !m.at(LevelKind::IntraNode).measured)
    return "this run has several ranks on a node, and the file has no intra-node level (calibrate with at least 2 "
           "ranks on a node)";
  if (run.nodes > 1 && !m.at(LevelKind::InterNode).measured)
    return "this run spans several nodes, and the file has no inter-node level";
  return {};
}

std::uint64_t machine_hash(const Machine& m) {
  const std::string text = machine_json(m);
  return fnv1a64(text.data(), text.size());
}

}  // namespace tnbc::model
