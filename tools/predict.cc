#include "tools/predict.hh"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "runtime/config.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"
#include "runtime/policy.hh"

namespace tnbc::tools {

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "tnbc: predict: %s\n", msg.c_str());
  return 2;
}

}  // namespace

std::size_t parse_size(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end && (*end == 'k' || *end == 'K')) v *= 1024, ++end;
  else if (end && (*end == 'm' || *end == 'M')) v *= 1024 * 1024, ++end;
  return end && *end == '\0' && v > 0 ? static_cast<std::size_t>(v) : 0;
}

bool parse_sizes(const std::string& list, std::vector<std::size_t>& out, std::string& bad) {
  std::stringstream in(list);
  for (std::string tok; std::getline(in, tok, ',');) {
    const std::size_t b = parse_size(tok);
    if (!b) {
      bad = tok;
      return false;
    }
    out.push_back(b);
  }
  return true;
}

int cmd_predict(const std::vector<std::string>& args) {
  std::string file, sizes_text = "64k,256k,1m,4m,16m";
  int np = 0, per_node = 0;
  bool json = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--np") np = std::atoi(value().c_str());
    else if (a == "--per-node") per_node = std::atoi(value().c_str());
    else if (a == "--sizes") sizes_text = value();
    else if (a == "--json") json = true;
    else if (!a.empty() && a[0] == '-') return fail("unknown option '" + a + "'");
    else file = a;
  }
  if (file.empty() || np < 1)
    return fail("usage: tnbc predict MACHINE.json --np N [--per-node M (default: all on one node)] "
                "[--sizes 64k,256k,1m,4m,16m] [--json]");
  Result<model::Machine> m = model::read_machine(file);
  if (!m.ok()) return fail(m.status().message());
  const model::Machine& machine = m.value();
  std::vector<std::size_t> sizes;
  if (std::string bad; !parse_sizes(sizes_text, sizes, bad)) return fail("not a size: '" + bad + "'");
  if (per_node < 1) per_node = np;
  const model::Topology t =
      model::Topology::block(np, per_node, std::max(1, machine.cpus_per_node), 1);
  const model::Execution x = execution(Settings{}, machine.guard_measured[0] ? 0 : -1);
  if (json) std::printf("{\"machine\": \"%s\", \"np\": %d, \"per_node\": %d, \"results\": [", file.c_str(), np, per_node);
  else
    std::printf("tnbc predict: %s (%s), np=%d, %d per node\n  %-9s %12s %14s %14s %14s\n", file.c_str(),
                machine.method.c_str(), np, per_node, "kind", "bytes", "blocking us", "tnbc call us", "tnbc total us");
  bool first = true;
  for (std::size_t b : sizes)
    for (Kind k : {Kind::Bcast, Kind::Alltoall}) {
      model::Coll c;
      c.kind = k;
      c.bytes = static_cast<double>(b);
      c.page = machine.page;
      const double blocking = model::mpi_blocking_ns(machine, t, c);
      const model::Timeline tl = model::tnbc_timeline(machine, t, c, x, true);
      const char* name = k == Kind::Bcast ? "bcast" : "alltoall";
      if (json)
        std::printf("%s\n {\"kind\": \"%s\", \"bytes\": %zu, \"blocking_s\": %.9g, \"in_call_s\": %.9g, \"total_s\": %.9g}",
                    first ? "" : ",", name, b, blocking / 1e9, tl.in_call_ns / 1e9, tl.total_ns / 1e9);
      else
        std::printf("  %-9s %12zu %14.1f %14.1f %14.1f\n", name, b, blocking / 1e3, tl.in_call_ns / 1e3, tl.total_ns / 1e3);
      first = false;
    }
  if (json) std::printf("]}\n");
  return 0;
}

}  // namespace tnbc::tools
