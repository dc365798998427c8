#include "tools/calibrate_combine.hh"

#include <cstdio>

#include "runtime/model/combine.hh"
#include "runtime/model/machine.hh"
#include "runtime/output_file.hh"

namespace tnbc::tools {

std::optional<std::vector<std::string>> combine_request(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  bool combine = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "-o" || args[i] == "--output") && i + 1 < args.size()) {
      rest.push_back(args[i]);
      rest.push_back(args[++i]);
    } else if (args[i] == "--combine") {
      combine = true;
    } else {
      rest.push_back(args[i]);
    }
  }
  if (!combine) return std::nullopt;
  return rest;
}

int calibrate_combine(const std::vector<std::string>& args) {
  std::string out = "machine.json";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "-o" || args[i] == "--output") && i + 1 < args.size()) out = args[++i];
    else if (!args[i].empty() && args[i][0] == '-') {
      std::fprintf(stderr, "tnbc: calibrate --combine: unknown option '%s' (usage: tnbc calibrate --combine "
                           "A.json B.json ... [-o FILE])\n", args[i].c_str());
      return 2;
    } else {
      names.push_back(args[i]);
    }
  }
  std::vector<model::Machine> ms;
  for (const std::string& n : names) {
    auto m = model::read_machine(n);
    if (!m.ok()) {
      std::fprintf(stderr, "tnbc: calibrate --combine: %s\n", m.status().message().c_str());
      return 2;
    }
    if (m.value().method != "calibrate") {
      std::fprintf(stderr, "tnbc: calibrate --combine: %s was not written by `tnbc calibrate` (method \"%s\")\n",
                   n.c_str(), m.value().method.c_str());
      return 2;
    }
    if (m.value().disturbed())
      std::fprintf(stderr, "tnbc: calibrate --combine: note: %s was measured while %s; the median outvotes it where most "
                   "inputs were quiet (of three or more)\n", n.c_str(),
                   model::load_words(m.value().others_cpu_share, m.value().steal_share).c_str());
    ms.push_back(std::move(m.value()));
  }
  auto c = model::combine_machines(ms, names);
  if (!c.ok()) {
    std::fprintf(stderr, "tnbc: %s\n", c.status().message().c_str());
    return 2;
  }
  const std::size_t slash = out.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : out.substr(0, slash);
  const std::string file = slash == std::string::npos ? out : out.substr(slash + 1);
  if (auto st = write_output_file(dir.empty() ? "/" : dir, file, model::machine_json(c.value().machine)); !st.ok()) {
    std::fprintf(stderr, "tnbc: calibrate --combine: %s\n", st.message().c_str());
    return 2;
  }
  std::fprintf(stderr, "tnbc: calibrate --combine: the median of %zu calibrations written to %s", ms.size(), out.c_str());
  if (!c.value().widest.field.empty())
    std::fprintf(stderr, "; they differ most in %s (%.0f %% of the median)", c.value().widest.field.c_str(),
                 100 * c.value().widest.relative);
  std::fprintf(stderr, "\n");
  return 0;
}

}  // namespace tnbc::tools
