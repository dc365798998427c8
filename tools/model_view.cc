#include "tools/model_view.hh"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/json.hh"
#include "runtime/model/bands.hh"
#include "runtime/model/busy_poll.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/startup.hh"
#include "runtime/policy.hh"
#include "runtime/threshold.hh"
#include "trace/gain.hh"

namespace tnbc::tools {

namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream t;
  if (in) t << in.rdbuf();
  return t.str();
}

// The placement rank 0 recorded in its summary (`model.topology`), if any.
bool summary_topology(const std::string& dir, model::Topology& t) {
  const std::string text = read_text((fs::path(dir) / "tnbc-summary.0.json").string());
  if (text.empty()) return false;
  Result<json::Value> v = json::parse(text);
  if (!v.ok()) return false;
  const json::Value* m = v.value().find("model");
  const json::Value* topo = m ? m->find("topology") : nullptr;
  const json::Value* node = topo ? topo->find("node") : nullptr;
  if (!node || node->type != json::Value::Type::Array) return false;
  t.node.clear();
  for (const json::Value& x : node->items) t.node.push_back(static_cast<int>(x.number));
  if (const json::Value* c = topo->find("cpus_per_node")) t.cpus_per_node = std::max(1, static_cast<int>(c->number));
  if (const json::Value* c = topo->find("cpus_per_rank")) t.cpus_per_rank = std::max(1, static_cast<int>(c->number));
  return !t.node.empty();
}

}  // namespace

std::map<std::string, std::string> run_modules(const std::string& dir) {
  std::map<std::string, std::string> out;
  Result<json::Value> v = json::parse(read_text((fs::path(dir) / "tnbc-summary.0.json").string()));
  const json::Value* m = v.ok() ? v.value().find("modules") : nullptr;
  if (!m || m->type != json::Value::Type::Object) return out;
  for (const auto& [path, info] : m->members) out[path] = json::string_or(info, "build_id");
  return out;
}

Result<RunModel> run_model(const std::string& dir, const std::string& machine_file, int np) {
  const std::string path = !machine_file.empty() ? machine_file : (fs::path(dir) / model::kMachineFileName).string();
  Result<model::Machine> m = model::read_machine(path);
  if (!m.ok()) return m.status();
  RunModel r;
  r.inputs = std::make_shared<model::Inputs>();
  r.inputs->machine = std::move(m).value();
  r.inputs->source = "file";
  r.inputs->file = path;
  r.origin = path + (machine_file.empty() ? " (the machine the trace run used: " + r.inputs->machine.method + ")" : "");
  if (!summary_topology(dir, r.inputs->world) || r.inputs->world.n() != np) {
    const model::Machine& mm = r.inputs->machine;
    r.inputs->world = model::Topology::block(np, std::max(1, mm.ranks_per_node), mm.cpus_per_node, 1);
    r.origin += "; placement assumed: " + std::to_string(std::max(1, mm.ranks_per_node)) + " ranks per node";
  }
  return r;
}

namespace {

// Node-level priorities at a site (runtime/node_choice.hh), as the optimized run's policy will
// judge them on the busiest node of the placement: "" where they do not apply.
std::string node_verdict(const trace::ProfileSite& site, const Settings& s, const RunModel* m, const trace::Judge& judge) {
  const std::optional<Kind> kind = kind_named(site.kind);
  if (!kind || s.node_priorities == NodePriorities::Off || !m) return "";
  const model::Topology t = judge.topology(site.comm_size);
  int node = 0;
  for (int j = 0; j < t.nodes(); ++j)
    if (t.ranks_on(j) > t.ranks_on(node)) node = j;
  const int senders = link_senders(t, node, s.node_local_sends == NodeLocalSends::Link);
  if (s.node_priorities == NodePriorities::On) return senders > 0 ? "; node-level priorities on (set)" : "";
  const model::Machine& mach = m->inputs->machine;
  model::Coll c;
  c.kind = *kind;
  c.page = mach.page;
  const double bytes = trace::site_bytes(site);
  c.bytes = *kind == Kind::Bcast ? bytes : bytes / std::max(1, site.comm_size);
  if (*kind != Kind::Bcast)
    c.pieces = model::run_pieces(mach, t, judge.exec, mach.page, s.piece_bytes);
  else {  // the trace's chunks (two edges and the segments); the root: the rank that received nothing
    c.segments = std::max(1, site.sub_messages - 2);
    for (const auto& r : site.ranks)
      if (!r.receives) c.root = r.rank;
  }
  // The program after the call at the site, as the run's policy takes it (runtime/policy.hh).
  const trace::SiteEstimate e = trace::estimate_site(site);
  const std::optional<model::Program> sp = trace::site_program(e);
  const std::optional<model::Program> program =
      sp && e.comm_ns ? model_program({*sp, *e.comm_ns}, mach, t, c) : std::nullopt;
  const NodeChoice n = node_choice(mach, t, c, judge.exec, senders,
                                   node_margin_share(judge.margin_of_first_read, judge.margin_of_cost, program.has_value()),
                                   program ? &*program : nullptr);
  if (n.basis == NodeBasis::OneSender) return "";  // one rank per node: nothing to arbitrate
  char b[256];
  std::snprintf(b, sizeof b, "; node-level priorities %s (%s", n.on ? "on" : "off", node_basis_name(n.basis));
  std::string o = b;
  if (n.first_on_ns >= 0) {
    std::snprintf(b, sizeof b, ": first read %.2f ms with, %.2f ms without, end %.2f / %.2f ms, margin %.2f ms",
                  n.first_on_ns / 1e6, n.first_off_ns / 1e6, n.end_on_ns / 1e6, n.end_off_ns / 1e6, n.margin_ns / 1e6);
    o += b;
    if (program) {
      std::snprintf(b, sizeof b, "; the program: T_CURC %.2f ms, T_CRC %.2f ms (model time)", program->curc_ns / 1e6,
                    program->crc_ns / 1e6);
      o += b;
    }
  }
  return o + ")";
}

}  // namespace

std::vector<std::string> site_verdicts(const trace::LoadedProfile& p, const Settings& s, const RunModel* m) {
  std::vector<std::string> out;
  const trace::Judge judge =
      trace::make_judge(s, m ? m->inputs : nullptr, m ? execution(s, m->inputs->machine) : execution(s, model::PricedGuards{}));
  const std::vector<trace::Decision> d = trace::decide_sites(p.sites, judge);
  for (std::size_t i = 0; i < p.sites.size(); ++i) {
    const trace::ProfileSite& site = p.sites[i];
    const std::optional<Kind> kind = kind_named(site.kind);
    const double bytes = trace::site_bytes(site);
    // The sizes that return early (Policy::route): from TNBC_MIN_BYTES up, else the model's.
    if (kind) {
      const trace::SiteSizes sizes = trace::site_sizes(s, judge, site, *kind);
      if (sizes.outside) {
        // The site's own figures too (decide judges it whatever its size): what the model
        // predicts there, and the margin that would let it return early where one would.
        const std::string figures = trace::describe_figures(d[i]);
        out.push_back("plain MPI anyway: outside the sizes that return early (" + sizes.sizes.text() +
                      (s.min_bytes ? ", TNBC_MIN_BYTES set)"
                                   : ", from the cost model) and those where tnbc's schedule in the call is faster (" +
                                         sizes.own.text() + ")") +
                      (figures.empty() ? "" : "; the site by the model " + figures));
        continue;
      }
    }
    if (!judge.fixed && !m) {
      out.push_back("decided when the optimized run starts, by its cost model (no machine file here: keep the trace "
                    "run's tnbc-machine.json in this directory, or give --machine FILE)");
      continue;
    }
    std::string v = trace::describe(d[i]);
    const std::string node = node_verdict(site, s, m, judge);  // where tnbc's schedule runs
    if (d[i].library_call()) {
      // Plain MPI when every site of this kind and size is judged so (ReadOrderSource::plain). A
      // broadcast's site no rank received at (its roots' own: trace::follow_receivers) has no size
      // here: taken as of any size.
      bool all = true;
      for (std::size_t k = 0; k < p.sites.size(); ++k) {
        const double other = trace::site_bytes(p.sites[k]);
        const bool unsized = site.kind == "bcast" && (other == 0 || bytes == 0);
        const bool same = p.sites[k].kind == site.kind && p.sites[k].comm_size == site.comm_size &&
                          (!kind || !info(*kind).sizes_agree || other == bytes || unsized);
        all = all && (!same || d[k].library_call());
      }
      v += all ? "; plain MPI on every rank (every site of this kind and size is judged alike)"
               : "; tnbc's schedule completed in the call (another site of this kind and size does not run the "
                 "library's call)" + node;
    } else if (d[i].blocking()) {
      v += "; tnbc's schedule completed in the call" + node;
    } else {
      v += node;
    }
    out.push_back(v);
  }
  return out;
}

std::string verdict_footer(const Settings& s, const RunModel* m) {
  char line[512];
  if (s.early_return_cost_us) {
    std::snprintf(line, sizeof line,
                  "\noptimize: a site's calls do not return early when min(Tcomm, T_CURC + T_CRC) <= cost = %llu us + "
                  "%lld us/MiB (TNBC_EARLY_RETURN_COST_US set; TNBC_PROFILE_BLOCKING=%s)\n",
                  static_cast<unsigned long long>(*s.early_return_cost_us),
                  static_cast<long long>(s.early_return_cost_us_per_mib),
                  s.profile_blocking == ProfileBlocking::Auto ? "auto" : "off");
    return line;
  }
  std::string o = "\noptimize: a site returns early when the cost model predicts a saving above its margin (" +
                  std::to_string(s.early_return_margin_cost_pct) + "% of the predicted cost + " +
                  std::to_string(s.early_return_margin_tcomm_pct) + "% of Tcomm, " +
                  std::to_string(s.early_return_margin_shared_node_pct) +
                  "% where ranks share a node (of the transfer's CPU work, the rest as one per node), " +
                  std::to_string(s.early_return_margin_busy_poll_pct) +
                  "% where they share it and MPI's ranks spin; against tnbc's schedule in the call, where that beats "
                  "the library's, " + std::to_string(s.early_return_margin_own_pct) +
                  "% of its time: TNBC_EARLY_RETURN_MARGIN_*_PCT); TNBC_PROFILE_BLOCKING=" +
                  (s.profile_blocking == ProfileBlocking::Auto ? "auto" : "off") + "\n";
  if (m) o += "cost model: " + m->origin + "\n";
  if (m && m->inputs && model::spins_on(m->inputs->machine, m->inputs->world)) {
    const model::BusyPoll b = model::busy_poll(m->inputs->machine);
    char line[320];
    std::snprintf(line, sizeof line,
                  "busy polling: the calibration's ping-pong inside a node took a scheduler slice (%.2f ms) with %d "
                  "ranks on %d CPUs: MPI's ranks spin there, its shared memory moves %.1f KiB per hand-off; tnbc's "
                  "threads yield (runtime/model/busy_poll.hh)\n",
                  b.slice_ns / 1e6, m->inputs->world.max_per_node(), m->inputs->world.cpus_per_node,
                  b.fragment_bytes / 1024);
    o += line;
  }
  return o;
}

}  // namespace tnbc::tools
