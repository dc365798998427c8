#include "tools/platform.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tnbc::tools {

namespace {

Result<double> number_with_unit(const std::string& word, const char* what,
                                 std::initializer_list<std::pair<const char*, double>> units) {
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (end == word.c_str() || !std::isfinite(v))
    return Status::error("'" + word + "' is not a " + what);
  const std::string unit(end);
  if (unit.empty()) return v;
  for (const auto& [name, scale] : units)
    if (unit == name) return v * scale;
  std::string known;
  for (const auto& [name, scale] : units) known += std::string(known.empty() ? "" : ", ") + name;
  return Status::error("'" + word + "': unknown unit '" + unit + "' for a " + what + " (one of " + known + ")");
}

}  // namespace

Result<double> parse_bandwidth(const std::string& word) {
  return number_with_unit(word, "bandwidth",
                          {{"Bps", 1}, {"kBps", 1e3}, {"KBps", 1e3}, {"MBps", 1e6}, {"GBps", 1e9}, {"TBps", 1e12},
                           {"bps", 1 / 8.0}, {"kbps", 1e3 / 8}, {"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8},
                           {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}});
}

Result<double> parse_latency(const std::string& word) {
  return number_with_unit(word, "latency", {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}});
}

Result<double> parse_bytes(const std::string& word) {
  return number_with_unit(word, "size", {{"B", 1}, {"KiB", 1024}, {"MiB", 1024 * 1024}, {"kB", 1e3}, {"MB", 1e6}});
}

Result<Platform> parse_platform(const std::string& text, const std::string& name) {
  Platform p;
  p.source = name;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '<') {
    p.xml = name;
    return p;
  }
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool have_nodes = false, have_link = false, have_loop = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key, value, extra;
    if (!(words >> key)) continue;
    auto where = [&] { return name + ":" + std::to_string(lineno) + ": "; };
    if (!(words >> value) || (words >> extra))
      return Status::error(where() + "expected 'key value', got '" + line + "'");
    Result<double> v = Status::error("");
    if (key == "nodes" || key == "cores") {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 1 << 20)
        return Status::error(where() + key + " must be a whole number from 1 to 1048576, not '" + value + "'");
      (key == "nodes" ? p.nodes : p.cores) = static_cast<int>(n);
      have_nodes |= key == "nodes";
      continue;
    }
    const bool bw = key.ends_with("_bw"), size = key == "shm_fragment";
    if (bw || size) v = bw ? parse_bandwidth(value) : parse_bytes(value);
    else if (key.ends_with("_lat") || key == "slice") v = parse_latency(value);
    else
      return Status::error(where() + "unknown key '" + key +
                           "' (nodes, cores, link_bw, link_lat, backbone_bw, backbone_lat, loopback_bw, loopback_lat, "
                           "slice, shm_fragment)");
    if (!v.ok()) return Status::error(where() + v.status().message());
    const double x = v.value();
    if (x < 0 || ((bw || size) && x == 0 && key != "backbone_bw"))
      return Status::error(where() + key + " must be " + (bw || size ? "positive" : "zero or more") + ", not '" +
                           value + "'");
    if (key == "link_bw") p.link_Bps = x, have_link = true;
    else if (key == "link_lat") p.link_lat_s = x;
    else if (key == "backbone_bw") p.backbone_Bps = x;
    else if (key == "backbone_lat") p.backbone_lat_s = x;
    else if (key == "loopback_bw") p.loopback_Bps = x, have_loop = true;
    else if (key == "loopback_lat") p.loopback_lat_s = x;
    else if (key == "slice") p.slice_s = x;
    else if (key == "shm_fragment") p.shm_fragment_B = x;
    else return Status::error(where() + "unknown key '" + key + "'");
  }
  if (!have_nodes) return Status::error(name + ": no 'nodes' line (how many nodes the cluster has)");
  if (!have_link) return Status::error(name + ": no 'link_bw' line (each node's link bandwidth)");
  if (!have_loop) p.loopback_Bps = 4 * p.link_Bps;
  return p;
}

Result<Platform> read_platform(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::error("cannot read the platform file " + path);
  std::stringstream s;
  s << f.rdbuf();
  return parse_platform(s.str(), path);
}

Platform from_machine(const model::Machine& m, const std::string& name) {
  Platform p;
  p.source = "calibration in " + name;
  p.cores = std::max(1, m.cpus_per_node);
  const model::Level& inter = m.at(model::LevelKind::InterNode);
  const model::Level& intra = m.at(model::LevelKind::IntraNode);
  auto per_byte = [](const model::Level& l, double shared) {
    return shared > 0 ? shared : l.G_ns_per_byte;
  };
  // A level that was not measured (a one-node calibration has no inter-node level) takes the other's.
  const model::Level& net = inter.measured ? inter : intra;
  const model::Level& loop = intra.measured ? intra : inter;
  const double net_ns = per_byte(net, net.node_out_ns_per_byte);
  p.link_Bps = net_ns > 0 ? 1e9 / net_ns : 1e9;
  p.link_lat_s = net.L_ns * 1e-9;
  const double loop_ns = per_byte(loop, loop.node_bi_ns_per_byte);
  p.loopback_Bps = loop_ns > 0 ? 1e9 / loop_ns : 4 * p.link_Bps;
  p.loopback_lat_s = loop.L_ns * 1e-9;
  // More ranks per node than CPUs in the calibration, and a ping-pong inside the node that takes a
  // scheduler slice: the ranks busy-polled (the launcher did not know the node was oversubscribed,
  // so MPI does not yield). The intra-node sweep then measured the slices, not the memory: the
  // slice is its latency, a handoff moves what the largest sizes add per two slices (sender's
  // copy-in, receiver's copy-out), and the memory itself copies at the level's CPU gap G after o.
  if (intra.measured && m.ranks_per_node > m.cpus_per_node && intra.L_ns >= kSliceEvidenceNs) {
    p.slice_s = intra.L_ns * 1e-9;
    const auto& sw = intra.sweep;
    const std::size_t n = sw.size();
    const double slope = n >= 2 ? (sw[n - 1].t_ns - sw[n - 2].t_ns) / (sw[n - 1].bytes - sw[n - 2].bytes) : 0;
    if (slope > 0) p.shm_fragment_B = std::max(static_cast<double>(m.page), 2 * intra.L_ns / slope);
    if (intra.G_ns_per_byte > 0) p.loopback_Bps = 1e9 / intra.G_ns_per_byte;
    p.loopback_lat_s = (intra.os_ns + intra.or_ns) * 1e-9;
  }
  return p;
}

std::string platform_misfit(const Platform& p, int np, int per_node) {
  if (np < 1) return "the number of processes must be at least 1";
  if (per_node < 1) return "the ranks per node must be at least 1";
  if (!p.xml.empty()) return "";
  if (p.nodes > 0 && static_cast<long long>(p.nodes) * per_node < np)
    return p.source + " has " + std::to_string(p.nodes) + " nodes: " + std::to_string(np) + " processes at " +
           std::to_string(per_node) + " per node need " + std::to_string((np + per_node - 1) / per_node);
  if (!(p.link_Bps > 0)) return p.source + ": the node link's bandwidth must be positive";
  return "";
}

std::string describe(const Platform& p) {
  if (!p.xml.empty()) return "SimGrid platform " + p.xml;
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s: %s%d cores per node, link %.3g Gb/s %.3g us, %s, inside a node %.3g Gb/s %.3g us",
                p.source.c_str(), p.nodes > 0 ? (std::to_string(p.nodes) + " nodes x ").c_str() : "", p.cores,
                p.link_Bps * 8 / 1e9, p.link_lat_s * 1e6,
                p.backbone_Bps > 0 ? ("backbone " + std::to_string(p.backbone_Bps * 8 / 1e9) + " Gb/s").c_str()
                                   : "no backbone limit",
                p.loopback_Bps * 8 / 1e9, p.loopback_lat_s * 1e6);
  std::string out = buf;
  if (p.slice_s > 0) {
    std::snprintf(buf, sizeof buf, "; a waiting rank busy-polls in slices of %.3g ms, %.3g KiB per handoff inside a node",
                  p.slice_s * 1e3, p.shm_fragment_B / 1024);
    out += buf;
  }
  return out;
}

}  // namespace tnbc::tools
