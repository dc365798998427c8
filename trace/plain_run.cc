#include "trace/plain_run.hh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "runtime/model/bands.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/inputs.hh"
#include "runtime/policy.hh"
#include "trace/gain.hh"
#include "trace/profile.hh"

namespace tnbc::trace {

PlainRun judge_plain_run(const Settings& s, const std::string& executable, const std::string& mpi_library,
                         int cpus_per_rank) {
  PlainRun r;
  if (s.mode != Mode::Optimize || s.profile.empty() || s.profile_blocking != ProfileBlocking::Auto) return r;
  // Whatever is wrong with the profile or the machine file is said after MPI_Init, where the
  // engine reads them again: here only the verdict.
  Result<LoadedProfile> p = read_profile(s.profile);
  if (!p.ok() || p.value().sites.empty() || !check_profile_run(p.value(), p.value().np, executable).ok()) return r;
  const LoadedProfile& prof = p.value();
  std::shared_ptr<model::Inputs> in;
  model::PricedGuards guard;
  if (!s.early_return_cost_us) {
    if (s.machine.empty()) {
      r.because = "no machine file (TNBC_MACHINE): the cost model is the start-up probe's, after MPI_Init";
      return r;
    }
    Result<model::Machine> m = model::read_machine(s.machine);
    if (!m.ok() || m.value().mpi_library != mpi_library) return r;
    in = std::make_shared<model::Inputs>();
    in->machine = std::move(m).value();
    in->source = "file";
    in->file = s.machine;
    const int per_node = std::clamp(in->machine.ranks_per_node, 1, std::max(1, prof.np));
    in->world = model::Topology::block(prof.np, per_node, std::max(1, in->machine.cpus_per_node), std::max(1, cpus_per_rank));
    guard = model::priced_guards(in->machine);
  }
  const Judge judge = make_judge(s, in, execution(s, guard));
  // As the run judges them (ProfileOrders: aligned with their partners, those inside the margins
  // left to the trial).
  const std::vector<Decision> decided = decide_sites(prof.sites, judge);
  for (std::size_t i = 0; i < prof.sites.size(); ++i) {
    const ProfileSite& site = prof.sites[i];
    const std::optional<Kind> kind = kind_named(site.kind);
    if (!kind) return r;
    // Outside the sizes that return early the call is plain MPI anyway (Policy::route).
    const bool below = site_sizes(s, judge, site, *kind).outside;
    const Decision& d = decided[i];
    if (!below && !d.library_call()) {
      r.because = std::string(d.blocking() ? "a site runs tnbc's schedule in the call (" : "a site returns early (") +
                  site.where + ")";
      r.sites.clear();
      return r;
    }
    model::Summary::Site entry = summary_site(d, site.site, site.kind, "plain program: " + site.where);
    entry.decision = "plain";
    if (below) entry.basis = "below_threshold";
    r.sites.push_back(entry);
    PlainRun::Recorded rec{site.kind, site.module, std::strtoull(site.offset.c_str(), nullptr, 16), {}};
    for (const ProfileSite::Rank& rk : site.ranks)
      if (rk.receives && rk.bytes_per_call && rk.keys.size() == 1)
        rec.bytes_per_call.emplace_back(rk.rank, *rk.bytes_per_call);
    r.recorded.push_back(std::move(rec));
  }
  r.plain = true;
  r.np = prof.np;
  r.because = "every site of the profile " + s.profile + " (" + std::to_string(prof.sites.size()) +
              ") is judged no gain" +
              (in ? " by the cost model (machine " + s.machine + ", placement assumed: " + std::to_string(prof.np) +
                        " ranks, " + std::to_string(in->world.max_per_node()) + " per node)"
                  : " by TNBC_EARLY_RETURN_COST_US");
  return r;
}

SizesNotRecorded sizes_not_recorded(const PlainRun& p, int rank, const std::vector<RunSite>& run) {
  SizesNotRecorded out;
  for (const RunSite& site : run) {
    if (site.calls == 0) continue;
    char off[32];
    std::snprintf(off, sizeof off, "0x%jx", static_cast<std::uintmax_t>(site.offset));
    const std::string base = std::filesystem::path(site.module).filename().string();
    const std::string where = site.kind + " at " + base + "+" + off;
    // The profile's sites with this innermost frame (several where one function is called from
    // several places: the summary's site sums them) and the one size they recorded for `rank`.
    int matches = 0;
    std::vector<std::uint64_t> sizes;
    for (const PlainRun::Recorded& r : p.recorded) {
      if (r.kind != site.kind || r.module != base || r.offset != site.offset) continue;
      ++matches;
      for (const auto& [rk, bytes] : r.bytes_per_call)
        if (rk == rank) sizes.push_back(bytes);
    }
    if (matches == 0) {
      out.unknown_site_calls += site.calls;
      out.sites.push_back(where + " (not in the profile)");
      continue;
    }
    const bool one_size = static_cast<int>(sizes.size()) == matches &&
                          std::all_of(sizes.begin(), sizes.end(), [&](std::uint64_t b) { return b == sizes[0]; });
    if (blocks_can_differ(site.kind) || !one_size) continue;
    const double per_call = static_cast<double>(site.bytes) / static_cast<double>(site.calls);
    if (per_call != static_cast<double>(sizes[0])) {
      out.other_sizes_calls += site.calls;
      out.sites.push_back(where + " (" + format_bytes(per_call) + " received a call, the profile " +
                          format_bytes(static_cast<double>(sizes[0])) + ")");
    }
  }
  return out;
}

PlainAgreement agree_plain(bool all, bool any) {
  if (all != any) return PlainAgreement::Disagree;
  return all ? PlainAgreement::Plain : PlainAgreement::Engine;
}

}  // namespace tnbc::trace
