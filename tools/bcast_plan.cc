#include "tools/bcast_plan.hh"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "runtime/bcast_cost.hh"
#include "runtime/config.hh"
#include "runtime/model/machine.hh"
#include "runtime/policy.hh"
#include "runtime/threshold.hh"
#include "tools/predict.hh"

namespace tnbc::tools {

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "tnbc: bcast-plan: %s\n", msg.c_str());
  return 2;
}

// "L,o,G,O_r[,C]" in us, us, ns/B, us, ns/B (the start-up line's units): false if not four or five numbers >= 0.
bool parse_rma(const std::string& text, LogGP& c) {
  std::vector<double> v;
  std::stringstream list(text);
  for (std::string tok; std::getline(list, tok, ',');) {
    char* end = nullptr;
    const double x = std::strtod(tok.c_str(), &end);
    if (tok.empty() || !end || *end != '\0' || !(x >= 0)) return false;
    v.push_back(x);
  }
  if (v.size() != 4 && v.size() != 5) return false;
  c.L = v[0] * 1e-6, c.o = c.g = v[1] * 1e-6, c.G = v[2] * 1e-9, c.O_r = v[3] * 1e-6;
  if (v.size() == 5) c.C = v[4] * 1e-9;
  return true;
}

const char* name_of(BcastBackend b) {
  static constexpr const char* kNames[] = {"p2p", "rma-binomial", "rma-linear", "auto"};
  return kNames[static_cast<int>(b)];
}

}  // namespace

int cmd_bcast_plan(const std::vector<std::string>& args) {
  std::string file, rma_text, sizes_text = "16k,64k,256k,1m,4m,8m";
  int np = 0, per_node = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--np") np = std::atoi(value().c_str());
    else if (a == "--per-node") per_node = std::atoi(value().c_str());
    else if (a == "--rma") rma_text = value();
    else if (a == "--sizes") sizes_text = value();
    else if (!a.empty() && a[0] == '-') return fail("unknown option '" + a + "'");
    else file = a;
  }
  if (file.empty() || np < 2 || rma_text.empty())
    return fail("usage: tnbc bcast-plan MACHINE.json --np N (>= 2) [--per-node M (default: all on one node)] "
                "--rma L_us,o_us,G_ns_per_B,O_r_us[,copy_ns_per_B] (the RMA probe's start-up line) [--sizes 16k,64k,256k,1m,4m,8m]");
  RmaFacts facts;
  if (!parse_rma(rma_text, facts.costs)) return fail("--rma wants four or five numbers >= 0: L (us), o (us), G (ns/B), O_r (us)[, copy out (ns/B)]");
  facts.usable = true;
  Result<model::Machine> m = model::read_machine(file);
  if (!m.ok()) return fail(m.status().message());
  std::vector<std::size_t> sizes;
  if (std::string bad; !parse_sizes(sizes_text, sizes, bad)) return fail("not a size: '" + bad + "'");
  if (per_node < 1) per_node = np;
  auto in = std::make_shared<model::Inputs>();
  in->machine = m.value();
  in->world = model::Topology::block(np, per_node, std::max(1, in->machine.cpus_per_node), 1);
  in->source = "file";
  Settings s;
  s.bcast_backend = BcastBackend::Auto;
  const int guard = in->machine.guard_measured[0] ? 0 : -1;
  auto policy = make_policy(s, in->machine.page, nullptr);
  policy->set_rma(facts);
  const ThreadProgress threads = thread_progress_of(in->machine.mpi_transport);  // TNBC_BCAST_SEND_WINDOW=auto
  policy->set_thread_progress(threads);
  policy->start(in, guard, true);
  const model::Topology& t = in->world;
  const auto level = t.nodes() > 1 ? model::LevelKind::InterNode : model::LevelKind::IntraNode;
  const BcastParams c = bcast_params(facts.costs, facts.p2p, &in->machine, level);
  std::printf("tnbc bcast-plan: %s, np=%d, %d per node; RMA L %.2f us, o = g %.2f us, G %.3f ns/B, O_r %.2f us, "
              "copy out %.3f ns/B; RMA needs a %.0f %% lead\n", file.c_str(), np, per_node, c.rma.L * 1e6, c.rma.o * 1e6,
              c.rma.G * 1e9, c.rma.O_r * 1e6, c.rma.C * 1e9, kRmaMargin * 100);
  std::printf("  %12s %9s %14s %14s %14s   %s\n", "bytes", "segments", "p2p us", "rma-binomial us", "rma-linear us", "auto");
  for (std::size_t b : sizes) {
    const int seg = policy->bcast_segments(b, t);
    const BcastCosts k = bcast_costs_pipelined(c.rma, in->machine, t, b, seg, execution(s, guard, -1, threads));
    std::printf("  %12zu %9d %14.1f %14.1f %14.1f   %s\n", b, seg, k.p2p_binomial * 1e6, k.rma_binomial * 1e6,
                k.rma_linear * 1e6, name_of(policy->bcast_backend(b, t)));
  }
  std::printf("  plan: %s\n", ranges_text(policy->bcast_plan(t, kBcastPlanMaxBytes)).c_str());
  return 0;
}

}  // namespace tnbc::tools
