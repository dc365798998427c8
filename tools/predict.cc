#include "tools/predict.hh"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "runtime/config.hh"
#include "runtime/model/bands.hh"
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
  // --program CURC_MS,CRC_MS [--tcomm-ms T]: also the early return's predicted total for a
  // program that computes T_CURC, then reads for T_CRC (overlap(), Eq. 1 and 3 with tnbc's costs),
  // with the blocking time T measured (else the model's); --own-last: some rank reads its own
  // block after every peer's (model::Program::own_last).
  std::string program;
  bool own_last = false;
  double tcomm_ms = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--np") np = std::atoi(value().c_str());
    else if (a == "--per-node") per_node = std::atoi(value().c_str());
    else if (a == "--sizes") sizes_text = value();
    else if (a == "--json") json = true;
    else if (a == "--program") program = value();
    else if (a == "--tcomm-ms") tcomm_ms = std::atof(value().c_str());
    else if (a == "--own-last") own_last = true;
    else if (!a.empty() && a[0] == '-') return fail("unknown option '" + a + "'");
    else file = a;
  }
  if (file.empty() || np < 1)
    return fail("usage: tnbc predict MACHINE.json --np N [--per-node M (default: all on one node)] "
                "[--sizes 64k,256k,1m,4m,16m] [--program CURC_MS,CRC_MS [--tcomm-ms T] [--own-last]] [--json]");
  model::Program prog;
  const bool with_program = !program.empty();
  if (with_program) {
    char* end = nullptr;
    prog.curc_ns = std::strtod(program.c_str(), &end) * 1e6;
    if (!end || *end != ',') return fail("--program wants CURC_MS,CRC_MS, not '" + program + "'");
    const char* crc = end + 1;
    prog.crc_ns = std::strtod(crc, &end) * 1e6;
    if (end == crc || *end != '\0' || prog.curc_ns < 0 || prog.crc_ns < 0)
      return fail("--program wants CURC_MS,CRC_MS, not '" + program + "'");
    prog.own_last = own_last;
  } else if (own_last) {
    return fail("--own-last describes the program of --program CURC_MS,CRC_MS: give both");
  }
  Result<model::Machine> m = model::read_machine(file);
  if (!m.ok()) return fail(m.status().message());
  const model::Machine& machine = m.value();
  std::vector<std::size_t> sizes;
  if (std::string bad; !parse_sizes(sizes_text, sizes, bad)) return fail("not a size: '" + bad + "'");
  if (per_node < 1) per_node = np;
  const model::Topology t =
      model::Topology::block(np, per_node, std::max(1, machine.cpus_per_node), 1);
  // Priced as a run with this environment's TNBC_* settings would run (TNBC_SEND_WINDOW, ...).
  const ConfigResult cfg = load_config(process_getenv);
  if (!cfg.errors.empty()) return fail(cfg.errors.front().message);
  const Settings& settings = cfg.settings;
  const model::Execution x = execution(settings, machine);
  if (json) std::printf("{\"machine\": \"%s\", \"np\": %d, \"per_node\": %d, \"results\": [", file.c_str(), np, per_node);
  else
    std::printf("tnbc predict: %s (%s), np=%d, %d per node\n  %-9s %12s %14s %14s %14s %14s\n", file.c_str(),
                machine.method.c_str(), np, per_node, "kind", "bytes", "blocking us", "tnbc call us", "tnbc total us",
                "in-call us");
  bool first = true;
  for (std::size_t b : sizes)
    for (Kind k : {Kind::Bcast, Kind::Alltoall}) {
      const model::Coll c = model::run_coll(machine, t, x, k, static_cast<double>(b), settings.piece_bytes);  // as a run cuts it
      const double blocking = model::mpi_blocking_ns(machine, t, c);
      const model::Timeline tl = model::tnbc_timeline(machine, t, c, x, true);
      const double own = model::own_call_ns(machine, t, c, x);  // tnbc's schedule completed in the call
      const char* name = k == Kind::Bcast ? "bcast" : "alltoall";
      const model::Overlap o = with_program ? model::overlap(machine, t, c, x, prog, tcomm_ms * 1e6) : model::Overlap{};
      if (json) {
        std::printf("%s\n {\"kind\": \"%s\", \"bytes\": %zu, \"blocking_s\": %.9g, \"in_call_s\": %.9g, \"total_s\": %.9g, "
                    "\"own_call_s\": %.9g",
                    first ? "" : ",", name, b, blocking / 1e9, tl.in_call_ns / 1e9, tl.total_ns / 1e9, own / 1e9);
        if (with_program)
          std::printf(", \"early_total_s\": %.9g, \"hidden_s\": %.9g, \"cost_s\": %.9g, \"saved_s\": %.9g", o.early_total_ns / 1e9,
                      o.hidden_ns / 1e9, o.cost_ns / 1e9, o.saved_ns / 1e9);
        std::printf("}");
      } else {
        std::printf("  %-9s %12zu %14.1f %14.1f %14.1f %14.1f", name, b, blocking / 1e3, tl.in_call_ns / 1e3,
                    tl.total_ns / 1e3, own / 1e3);
        if (with_program)
          std::printf("   early return + program %.1f us (saved %.1f us, cost %.1f us)", o.early_total_ns / 1e3,
                      o.saved_ns / 1e3, o.cost_ns / 1e3);
        std::printf("\n");
      }
      first = false;
    }
  if (json) std::printf("]}\n");
  else
    std::printf("  TNBC_MIN_BYTES=auto: MPI_Bcast returns early: %s; MPI_Alltoall: %s per peer; below those, MPI_Alltoall "
                "completes tnbc's schedule in the call (in-call us, faster than the library's by the margin): %s per peer\n",
                model::early_return_bands(machine, t, Kind::Bcast, x, machine.page).text().c_str(),
                model::early_return_bands(machine, t, Kind::Alltoall, x, machine.page).text().c_str(),
                model::own_call_bands(machine, t, Kind::Alltoall, x, machine.page).text().c_str());
  return 0;
}

}  // namespace tnbc::tools
