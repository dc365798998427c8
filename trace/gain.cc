#include "trace/gain.hh"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include "runtime/model/busy_poll.hh"
#include "runtime/site_trial.hh"

namespace tnbc::trace {

namespace {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2.0;
}

std::string ms(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", ns / 1e6);
  return b;
}

}  // namespace

std::optional<double> rank_crc_ns(const ProfileSite::Rank& r, std::optional<double> bytes) {
  if (!r.receives || !r.traced || *r.traced == 0 || !r.curc_ns) return std::nullopt;
  if (r.r_crc && *r.r_crc > 0 && bytes) return *bytes / *r.r_crc * 1e9;
  double t_crc = 0;
  for (double g : r.gaps_ns) t_crc += g;
  return t_crc;
}

bool reads_own_last(const ProfileSite& s) {
  const auto n = static_cast<std::size_t>(s.comm_size);
  if (n < 2) return false;
  const bool one_comm = s.ranks.size() == n && std::all_of(s.ranks.begin(), s.ranks.end(), [&](const ProfileSite::Rank& r) {
                          return r.rank >= 0 && static_cast<std::size_t>(r.rank) < n;
                        });
  const auto full = [&](const ProfileSite::Rank& r) { return r.receives && r.order.size() == n; };
  if (one_comm)
    return std::any_of(s.ranks.begin(), s.ranks.end(), [&](const ProfileSite::Rank& r) { return full(r) && r.order.back() == r.rank; });
  const std::vector<int>* common = nullptr;
  std::size_t alike = 0;
  for (const ProfileSite::Rank& r : s.ranks) {
    if (!full(r)) continue;
    if (!common) common = &r.order;
    if (*common != r.order) return false;
    ++alike;
  }
  return alike >= n;  // at least a communicator's worth of ranks, one order
}

namespace {
// SiteEstimate::blocks: every rank 0..n-1 of the communicator once, each with n blocks.
std::shared_ptr<const model::Blocks> site_blocks(const ProfileSite& s) {
  const int n = s.comm_size;
  if (!blocks_can_differ(s.kind) || n < 2 || s.ranks.size() != static_cast<std::size_t>(n)) return nullptr;
  auto b = std::make_shared<model::Blocks>();
  b->n = n;
  b->bytes.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), -1);
  for (const ProfileSite::Rank& r : s.ranks) {
    if (r.rank < 0 || r.rank >= n || r.sub_bytes.size() != static_cast<std::size_t>(n)) return nullptr;
    const auto row = static_cast<std::size_t>(r.rank) * static_cast<std::size_t>(n);
    if (b->bytes[row] >= 0) return nullptr;  // a rank twice
    for (std::size_t i = 0; i < r.sub_bytes.size(); ++i) b->bytes[row + i] = std::max(0.0, r.sub_bytes[i]);
  }
  return b;
}
}  // namespace

double site_bytes(const ProfileSite& s) {
  double bytes = 0;
  for (const ProfileSite::Rank& r : s.ranks)
    if (r.bytes_per_call) bytes = std::max(bytes, static_cast<double>(*r.bytes_per_call));
  return bytes;
}

SiteEstimate estimate_site(const ProfileSite& s) {
  SiteEstimate e;
  e.bytes = site_bytes(s);
  std::vector<double> comm, root_comm, curc, crc, overlap;
  // The roles apart where every rank recorded them (a broadcast's profile since session 78).
  const bool roles = !s.ranks.empty() && std::all_of(s.ranks.begin(), s.ranks.end(), [](const ProfileSite::Rank& r) {
    return r.root_calls && r.calls && *r.root_calls <= *r.calls;
  });
  std::uint64_t calls = 0, root_calls = 0;
  for (const ProfileSite::Rank& r : s.ranks) {
    if (roles) {
      calls += *r.calls;
      root_calls += *r.root_calls;
      if (*r.root_calls > 0 && r.root_duration_ns) root_comm.push_back(*r.root_duration_ns);
      if (*r.calls > *r.root_calls && r.duration_ns) comm.push_back(*r.duration_ns);
    } else if (r.duration_ns) {
      comm.push_back(*r.duration_ns);
    }
    const std::optional<double> t_crc_opt =
        rank_crc_ns(r, r.bytes_per_call ? std::optional<double>(static_cast<double>(*r.bytes_per_call)) : std::nullopt);
    if (!t_crc_opt) continue;
    const double t_crc = *t_crc_opt;
    curc.push_back(*r.curc_ns);
    crc.push_back(t_crc);
    overlap.push_back(*r.curc_ns + t_crc);
  }
  e.blocks = site_blocks(s);
  e.estimating_ranks = static_cast<int>(overlap.size());
  e.own_last = s.kind != "bcast" && reads_own_last(s);
  e.comm_ns = median(comm);
  e.root_comm_ns = median(root_comm);
  if (e.root_comm_ns && calls > 0) e.root_share = static_cast<double>(root_calls) / static_cast<double>(calls);
  e.curc_ns = median(curc);
  e.crc_ns = median(crc);
  e.overlap_ns = median(overlap);
  return e;
}

SiteSizes site_sizes(const Settings& s, const Judge& judge, const ProfileSite& site, Kind kind) {
  SiteSizes r;
  r.sizes = s.min_bytes   ? model::SizeBands::from(static_cast<std::size_t>(*s.min_bytes))
            : judge.model ? model::call_bands(judge.model->machine, judge.topology(site.comm_size), kind, judge.exec,
                                              judge.model->machine.page)
                          : model::SizeBands::from(0);
  // The site's size in its kind's unit, where the profile has it (a per-peer or whole size);
  // otherwise (Alltoallv, Allgatherv's largest block) outside only where no size returns early.
  const SizeUnit unit = info(kind).unit;
  const double bytes = site_bytes(site);
  std::optional<std::size_t> at;
  if (unit == SizeUnit::PerPeer) at = static_cast<std::size_t>(bytes / std::max(1, site.comm_size));
  // (A broadcast's site no rank received at, every call its root's, has no size in the profile.)
  if (unit == SizeUnit::Whole && bytes > 0) at = static_cast<std::size_t>(bytes);
  if (!s.min_bytes && judge.model)
    r.own = model::own_call_bands(judge.model->machine, judge.topology(site.comm_size), model::band_kind(kind), judge.exec,
                                  judge.model->machine.page);
  r.outside = model::runs_as_mpi(model::unite(r.sizes, r.own), at);
  return r;
}

model::Topology Judge::topology(int comm_size) const {
  if (!model) return model::Topology::block(comm_size, comm_size, 1, 1);
  const model::Topology& w = model->world;
  if (comm_size == w.n()) return w;
  return model::Topology::block(comm_size, std::min(comm_size, w.max_per_node()), w.cpus_per_node, w.cpus_per_rank);
}

Judge make_judge(const Settings& s, std::shared_ptr<const model::Inputs> model, const model::Execution& x) {
  Judge j;
  j.enabled = s.profile_blocking == ProfileBlocking::Auto;
  if (s.early_return_cost_us)
    j.fixed = CostModel{static_cast<double>(*s.early_return_cost_us) * 1e3, static_cast<double>(s.early_return_cost_us_per_mib) * 1e3};
  j.margin_of_cost = static_cast<double>(s.early_return_margin_cost_pct) / 100.0;
  j.try_within_margin = s.try_within_margin == Switch::On && s.site_trial_calls > 0;
  j.skip_costly_trial = s.skip_costly_trial == Switch::On;
  j.trial_calls = static_cast<int>(s.site_trial_calls);
  j.margin_of_tcomm = static_cast<double>(s.early_return_margin_tcomm_pct) / 100.0;
  j.margin_of_tcomm_shared = static_cast<double>(s.early_return_margin_shared_node_pct) / 100.0;
  j.margin_of_tcomm_busy_poll = static_cast<double>(s.early_return_margin_busy_poll_pct) / 100.0;
  j.margin_of_own = static_cast<double>(s.early_return_margin_own_pct) / 100.0;
  j.margin_of_first_read = static_cast<double>(s.node_priorities_margin_pct) / 100.0;
  j.model = std::move(model);
  j.exec = x;
  j.piece_bytes = s.piece_bytes;
  return j;
}

const char* basis_name(Basis b) {
  switch (b) {
    case Basis::NoOverlapToGain: return "no_overlap_to_gain";
    case Basis::OwnCallFaster: return "own_call_faster";
    case Basis::OverlapPays: return "overlap_pays";
    case Basis::PartnerInCall: return "partner_in_call";
    case Basis::PartnerEarly: return "partner_early";
    case Basis::NotInProfile: return "not_in_profile";
    case Basis::OtherSizes: return "other_sizes";
    case Basis::NoEstimate: return "no_estimate";
    case Basis::Off: return "off";
    case Basis::WithinMargin: return "within_margin";
    case Basis::TrialCostlier: return "trial_costlier";
  }
  return "unknown";
}

Decision decide(const SiteEstimate& e, const CostModel& cost) {
  Decision d;
  d.cost_ns = cost.cost_ns(e.bytes);
  d.comm_ns = e.comm_ns;
  d.overlap_ns = e.overlap_ns;
  if (!e.overlap_ns || !e.comm_ns) {
    d.basis = Basis::NoEstimate;
  } else {
    d.saved_ns = std::min(*e.comm_ns, *e.overlap_ns) - d.cost_ns;
    d.basis = *d.saved_ns > 0 ? Basis::OverlapPays : Basis::NoOverlapToGain;
  }
  return d;
}

std::optional<model::Program> site_program(const SiteEstimate& e) {
  if (!e.overlap_ns) return std::nullopt;
  return model::Program{e.curc_ns.value_or(0), std::max(0.0, *e.overlap_ns - e.curc_ns.value_or(0)), e.own_last};
}

namespace {
// The setting that holds a placement's margin of Tcomm (Judge::margin_of_tcomm and the others).
std::string margin_setting(model::MarginPlace place) {
  switch (place) {
    case model::MarginPlace::OnePerNode: return env_name_of(&Settings::early_return_margin_tcomm_pct);
    case model::MarginPlace::BusyPoll: return env_name_of(&Settings::early_return_margin_busy_poll_pct);
    case model::MarginPlace::SharedNode: return env_name_of(&Settings::early_return_margin_shared_node_pct);
  }
  return {};
}
}  // namespace

Decision decide(const SiteEstimate& e, Kind kind, int comm_size, const Judge& j) {
  if (j.fixed || !j.model) return decide(e, j.fixed.value_or(CostModel{}));
  Decision d;
  d.by_model = true;
  d.comm_ns = e.comm_ns;
  d.overlap_ns = e.overlap_ns;
  if (!e.overlap_ns || !e.comm_ns || comm_size < 2) {
    d.basis = Basis::NoEstimate;
    return d;
  }
  const model::Topology t = j.topology(comm_size);
  // The profile's bytes are what the rank received per call (its own block included for the
  // exchange family); the model wants bytes per peer, or the broadcast's message.
  model::Coll c =
      model::run_coll(j.model->machine, t, j.exec, kind, kind == Kind::Bcast ? e.bytes : e.bytes / comm_size, j.piece_bytes);
  // The trace's blocks where the site's ranks are the world's, as the topology's are (a
  // communicator of the world's size whose ranks another order numbers is taken in the world's).
  if (e.blocks && comm_size == j.model->world.n()) c.blocks = e.blocks;
  d.by_blocks = c.blocks != nullptr;
  const model::Program p = *site_program(e);
  // A broadcast's roles apart (SiteEstimate::root_share). The receivers' Tcomm beyond the transfer
  // (the longer of the root's own call and the model's) is their wait for a root that came late:
  // an early return waits for the root's first bytes as long, and it is no part of the transfer.
  const bool roles = kind == Kind::Bcast && e.root_comm_ns && e.root_share > 0;
  const double late =
      roles ? std::max(0.0, *e.comm_ns - std::max(*e.root_comm_ns, model::mpi_blocking_ns(j.model->machine, t, c))) : 0;
  model::Overlap o = model::overlap(j.model->machine, t, c, j.exec, p, *e.comm_ns, late);
  // The root's calls end before its receivers' by its lead on them (their transfer less its call),
  // and what its early return saves or costs within that lead changes no one's time: the program's
  // next step waits for the receivers. A loss beyond it does.
  if (roles) {
    const model::Overlap r = model::bcast_root_overlap(j.model->machine, t, c, j.exec, p, *e.root_comm_ns);
    const double lead = std::max(0.0, *e.comm_ns - late - *e.root_comm_ns);
    const double beyond = std::min(0.0, r.saved_ns + lead);
    o.saved_ns += beyond;
    o.cost_ns -= beyond;
    o.early_total_ns -= beyond;
    d.root_comm_ns = e.root_comm_ns;
    d.root_saved_ns = r.saved_ns;
    d.root_lead_ns = lead;
    d.root_share = e.root_share;
  }
  d.model_blocking_ns = o.model_blocking_ns;
  d.late_ns = o.late_ns;
  d.hidden_ns = o.hidden_ns;
  d.in_call_ns = o.in_call_ns;
  d.cost_ns = o.cost_ns;
  d.saved_ns = o.saved_ns;
  // The placement's setting, and its share of Tcomm with that setting at `at` (the others as set;
  // weighed where ranks share a node: model::margin_of_tcomm). Indexed by MarginPlace.
  const model::MarginPlace place = model::margin_place(j.model->machine, t);
  const std::array<double, 3> settings = {j.margin_of_tcomm, j.margin_of_tcomm_busy_poll, j.margin_of_tcomm_shared};
  static_assert(static_cast<int>(model::MarginPlace::OnePerNode) == 0 && static_cast<int>(model::MarginPlace::BusyPoll) == 1 &&
                static_cast<int>(model::MarginPlace::SharedNode) == 2);
  const double setting = settings[static_cast<std::size_t>(place)];
  auto of_tcomm_at = [&](double at) {
    std::array<double, 3> s = settings;
    s[static_cast<std::size_t>(place)] = at;
    return model::margin_of_tcomm(j.model->machine, t, s[0], s[1], s[2]);
  };
  const double of_tcomm = of_tcomm_at(setting);
  // The margin: what the model may overstate an early return's saving by, a share of the time of
  // the call it replaces (plus a share of its cost).
  auto margin_at = [&](double share, double replaced_ns) {
    return j.margin_of_cost * std::max(0.0, o.cost_ns) + share * replaced_ns;
  };
  // tnbc's schedule completed in the call (the program computes after it), against the library's
  // call by the same share of Tcomm. Where it beats the library's, an early return must beat it
  // instead, by a share of its time (TNBC_EARLY_RETURN_MARGIN_OWN_PCT): both are the model's
  // prices of tnbc's own schedules, whose errors the placement's share of Tcomm, sized for the
  // library's call, overstates. np 4 on 2 one-CPU nodes (docs/benchmarks.md, "Session 62"): the
  // share at which each site would return early ranked the measured difference between the
  // early return (mode nbc) and the schedule in the call (optimize) in each program measured —
  // 0-6 % where the early return measured 2-4 % slower (ft-proxy A, NPB FT.A), 3-11 % where it
  // measured 5-12 % faster (NPB IS.A, is-proxy A, bcast-proxy W), 34 % where 29 % (bcast-proxy
  // A); 5 % lies where the first two overlap. Until
  // session 61 the share was the placement's of the library's Tcomm, then (to session 62) the
  // placement's of this schedule's time (45 % with busy polling).
  // Scaled as overlap() scales the early return's; it waits for a late root as long.
  const double own = model::own_call_ns(j.model->machine, t, c, j.exec) * o.scale + o.late_ns;
  d.own_call_ns = own;
  const double beyond_own = own + p.curc_ns + p.crc_ns - o.early_total_ns;
  // The call the early return replaces, as measured: a receiver's wait for a late root included
  // (the receivers' pricing where a node's one CPU carries both the transfer and the program is
  // optimistic: docs/benchmarks.md, "Session 78").
  const double replaced = o.blocking_ns;
  auto basis_at = [&](double share) {
    if (model::own_call_pays(own, o.blocking_ns, share))
      return beyond_own > margin_at(j.margin_of_own, own) ? Basis::OverlapPays : Basis::OwnCallFaster;
    return o.saved_ns > margin_at(share, replaced) ? Basis::OverlapPays : Basis::NoOverlapToGain;
  };
  const bool against_own = model::own_call_pays(own, o.blocking_ns, of_tcomm);
  d.margin_ns = against_own ? margin_at(j.margin_of_own, own) : margin_at(of_tcomm, replaced);
  if (against_own) d.beyond_own_ns = beyond_own;
  d.basis = basis_at(of_tcomm);
  if (d.basis != Basis::OverlapPays) {
    // The setting that held it, at each whole percentage below its value, from the top: the
    // first that admits it. Against tnbc's schedule in the call, that margin is its own share;
    // against the library's, the placement's setting (its share weighed where ranks share a
    // node; not every smaller one need: where tnbc's schedule in the call then beats the
    // library's, the early return must beat that instead).
    const double held_by = against_own ? j.margin_of_own : setting;
    for (int pct = static_cast<int>(std::ceil(held_by * 100)) - 1; pct >= 0 && !d.early_at_pct; --pct) {
      const bool early = against_own ? beyond_own > margin_at(pct / 100.0, own)
                                     : basis_at(of_tcomm_at(pct / 100.0)) == Basis::OverlapPays;
      if (early) d.early_at_pct = pct;
    }
    if (d.early_at_pct)
      d.margin_setting = against_own ? env_name_of(&Settings::early_return_margin_own_pct) : margin_setting(place);
  }
  return d;
}

model::Summary::Site summary_site(const Decision& d, std::uint64_t site, const std::string& kind, const std::string& where) {
  model::Summary::Site s;
  s.site = site;
  s.kind = kind;
  s.where = where;
  s.basis = basis_name(d.basis);
  if (d.comm_ns) s.blocking_ns = *d.comm_ns;
  if (d.model_blocking_ns) s.model_blocking_ns = *d.model_blocking_ns;
  if (d.saved_ns) {
    s.hidden_ns = d.hidden_ns.value_or(std::min(*d.comm_ns, d.overlap_ns.value_or(0)));
    s.cost_ns = d.cost_ns;
    s.saved_ns = *d.saved_ns;
  }
  if (d.in_call_ns) s.in_call_ns = *d.in_call_ns;
  if (d.early_at_pct) {
    s.early_at_pct = *d.early_at_pct;
    s.margin_setting = d.margin_setting;
  }
  return s;
}

Decision decide(const ProfileSite* site, bool sizes_recorded, const Judge& j) {
  Decision d;
  if (!j.enabled) d.basis = Basis::Off;
  else if (!site) d.basis = Basis::NotInProfile;
  else if (!sizes_recorded) d.basis = Basis::OtherSizes;
  else d = decide(estimate_site(*site), kind_named(site->kind).value_or(Kind::Alltoall), site->comm_size, j);
  return d;
}

Decision decide(const ProfileSite* site, bool sizes_recorded, const CostModel& cost, bool enabled) {
  Judge j;
  j.enabled = enabled;
  j.fixed = cost;
  return decide(site, sizes_recorded, j);
}

namespace {

// The sites' partner groups (align_partners): each site's group, numbered by one of its sites.
std::vector<std::size_t> partner_groups(const std::vector<ProfileSite>& sites, std::size_t n) {
  // Union-find over the sites: partners share a group.
  std::vector<std::size_t> up(n);
  for (std::size_t i = 0; i < n; ++i) up[i] = i;
  auto root = [&](std::size_t i) {
    while (up[i] != i) i = up[i] = up[up[i]];
    return i;
  };
  std::vector<std::vector<std::uint64_t>> places(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const ProfileSite::Rank& r : sites[i].ranks) places[i].insert(places[i].end(), r.first_calls.begin(), r.first_calls.end());
    std::sort(places[i].begin(), places[i].end());
  }
  auto share_a_place = [&](std::size_t a, std::size_t b) {
    for (std::size_t x = 0, y = 0; x < places[a].size() && y < places[b].size();) {
      if (places[a][x] == places[b][y]) return true;
      places[a][x] < places[b][y] ? ++x : ++y;
    }
    return false;
  };
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = i + 1; k < n; ++k)
      if (sites[i].kind == sites[k].kind && sites[i].comm_size == sites[k].comm_size && share_a_place(i, k))
        up[root(k)] = root(i);
  std::vector<std::size_t> group(n);
  for (std::size_t i = 0; i < n; ++i) group[i] = root(i);
  return group;
}

// A site's calls over its ranks, at least one: the weight of its per-call figures in its group.
double site_calls(const ProfileSite& site) {
  double calls = 0;
  for (const ProfileSite::Rank& r : site.ranks) calls += static_cast<double>(r.calls.value_or(0));
  return std::max(1.0, calls);
}

// align_partners and leave_to_trial over the sites' partner groups (partner_groups), computed
// once by decide_sites for both.
void align_groups(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions,
                  const std::vector<std::size_t>& group) {
  const std::size_t n = group.size();
  // Each group's first site that the model has complete in the call, its first that returns
  // early, and the sum over its sites of their calls' predicted savings beyond their margins.
  std::vector<const ProfileSite*> in_call(n, nullptr), early(n, nullptr);
  std::vector<double> beyond(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const Decision& d = decisions[i];
    if (!d.by_model) continue;
    const std::size_t g = group[i];
    if (d.blocking() && !in_call[g]) in_call[g] = &sites[i];
    if (d.basis == Basis::OverlapPays && !early[g]) early[g] = &sites[i];
    if (!d.saved_ns) continue;
    beyond[g] += site_calls(sites[i]) * (d.beyond_own_ns.value_or(*d.saved_ns) - d.margin_ns);
  }
  for (std::size_t i = 0; i < n; ++i) {
    Decision& d = decisions[i];
    const std::size_t g = group[i];
    if (!in_call[g] || !early[g] || !d.by_model) continue;
    if (beyond[g] > 0 && d.blocking()) {
      d.basis = Basis::PartnerEarly;
      d.partner = early[g]->where;
      d.early_at_pct.reset();  // returns early: no margin to name
      d.margin_setting.clear();
    } else if (beyond[g] <= 0 && d.basis == Basis::OverlapPays) {
      d.basis = Basis::PartnerInCall;
      d.partner = in_call[g]->where;
    }
  }
}

}  // namespace

bool trial_costlier(double saved_ns, double margin_ns, std::uint64_t calls, int trial_calls) {
  const double completions = trial_completions(trial_calls);
  if (saved_ns <= 0 || margin_ns <= 0 || completions == 0) return false;
  const double m = std::max(margin_ns, saved_ns);
  const double after = static_cast<double>(calls) - 1 - trial_calls;  // the calls after the warm-up and the trial
  const double gain_where_there = (saved_ns + m) * (saved_ns + m) / (4 * m);
  const double loss_where_not = (m - saved_ns) * (m - saved_ns) / (4 * m);
  return completions * gain_where_there > std::max(0.0, after) * loss_where_not;
}

namespace {

void try_groups(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions, const Judge& j,
                const std::vector<std::size_t>& group) {
  if (!j.try_within_margin) return;
  const std::size_t n = group.size();
  // Per group, over its sites the model runs as the library's call: their calls' predicted
  // savings and the cost's shares, summed; a group with such a site the model did not price
  // keeps them all the library's.
  // A group none of whose sites any rank calls at least twice as often as the trial takes (its
  // warm-up and trial_calls) keeps them the library's: its verdict would govern fewer calls than
  // the trial spends, half of them in the losing way. NPB FT.A's forward transform, one call a
  // rank, was all warm-up (session 76: FT.A 0.993); its loop's site, 6 calls a rank, spent 5 on
  // the trial: on the AMD guest of session 81, optimize 0.961x the plain program, 1.039x faster
  // with its within-margin sites the library's (8 interleaved repetitions). A profile without call
  // counts (older files) tries them as before.
  std::vector<double> saved(n, 0.0), share(n, 0.0), margin(n, 0.0), weight(n, 0.0);
  std::vector<bool> priced(n, true);
  std::vector<std::uint64_t> most(n, 0);  // UINT64_MAX: a site without call counts
  for (std::size_t i = 0; i < n; ++i) {
    const Decision& d = decisions[i];
    if (d.basis != Basis::NoOverlapToGain) continue;
    if (!d.by_model || !d.saved_ns) {
      priced[group[i]] = false;
      continue;
    }
    const double calls = site_calls(sites[i]);
    saved[group[i]] += calls * *d.saved_ns;
    share[group[i]] += calls * j.margin_of_cost * d.cost_ns;
    margin[group[i]] += calls * d.margin_ns;
    weight[group[i]] += calls;
    if (sites[i].ranks.empty()) most[group[i]] = UINT64_MAX;
    for (const ProfileSite::Rank& r : sites[i].ranks)
      most[group[i]] = std::max(most[group[i]], r.calls.value_or(UINT64_MAX));
  }
  const std::uint64_t trial = static_cast<std::uint64_t>(std::max(0, j.trial_calls)) + 1;
  for (std::size_t i = 0; i < n; ++i) {
    Decision& d = decisions[i];
    const std::size_t g = group[i];
    if (d.basis != Basis::NoOverlapToGain || !priced[g] || saved[g] <= -share[g]) continue;
    if (most[g] < 2 * trial) {
      d.untried_calls = most[g];
      continue;
    }
    // Per call over the group (its calls' weights): priced at a gain, a trial that would cost
    // more than it protects leaves the calls to the model's word (a site without call counts:
    // tried, as before).
    d.basis = j.skip_costly_trial && most[g] != UINT64_MAX && weight[g] > 0 &&
                      trial_costlier(saved[g] / weight[g], margin[g] / weight[g], most[g], j.trial_calls)
                  ? Basis::TrialCostlier
                  : Basis::WithinMargin;
    d.early_at_pct.reset();  // not held back: the trial (or the model's word) decides
    d.margin_setting.clear();
  }
}

}  // namespace

void align_partners(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions) {
  align_groups(sites, decisions, partner_groups(sites, std::min(sites.size(), decisions.size())));
}

void leave_to_trial(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions, const Judge& j) {
  try_groups(sites, decisions, j, partner_groups(sites, std::min(sites.size(), decisions.size())));
}

namespace {

bool received_at(const ProfileSite& site) {
  return std::any_of(site.ranks.begin(), site.ranks.end(), [](const ProfileSite::Rank& r) { return r.receives; });
}

// follow_receivers over the sites' partner groups (partner_groups).
void follow_groups(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions,
                   const std::vector<std::size_t>& group) {
  const std::size_t n = group.size();
  std::vector<std::optional<std::size_t>> lead(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!decisions[i].by_model || !received_at(sites[i])) continue;
    std::optional<std::size_t>& l = lead[group[i]];
    if (!l || (decisions[*l].library_call() && !decisions[i].library_call())) l = i;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::optional<std::size_t> l = lead[group[i]];
    if (!l || decisions[i].basis != Basis::NoEstimate || sites[i].kind != "bcast" || received_at(sites[i])) continue;
    decisions[i] = decisions[*l];
    decisions[i].receivers = sites[*l].where;
  }
}

}  // namespace

void follow_receivers(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions) {
  follow_groups(sites, decisions, partner_groups(sites, std::min(sites.size(), decisions.size())));
}

std::vector<Decision> decide_sites(const std::vector<ProfileSite>& sites, const Judge& j) {
  std::vector<Decision> d;
  d.reserve(sites.size());
  for (const ProfileSite& site : sites) d.push_back(decide(&site, true, j));
  const std::vector<std::size_t> group = partner_groups(sites, d.size());
  align_groups(sites, d, group);
  try_groups(sites, d, j, group);
  follow_groups(sites, d, group);
  return d;
}

std::string describe(const Decision& d) {
  std::string out = d.blocking() ? "completes in the call: " : "returns early: ";
  switch (d.basis) {
    case Basis::NoOverlapToGain: out += "no overlap to gain"; break;
    case Basis::OwnCallFaster: out += "tnbc's schedule in the call is faster"; break;
    case Basis::OverlapPays: out += "the overlap pays"; break;
    case Basis::PartnerInCall:
      out += "the same calls complete in the call on other ranks (at " + d.partner + "), though the overlap pays here";
      break;
    case Basis::PartnerEarly:
      out += "the same calls return early on other ranks (at " + d.partner +
             "), whose predicted savings beyond their margins outweigh this site's shortfall";
      break;
    case Basis::NotInProfile: return out + "the site is not in the profile";
    case Basis::OtherSizes: return out + "the profile recorded other sizes at this site";
    case Basis::NoEstimate:
      return out + "no estimate (the trace saw no access to the received data), so the site trial decides where it runs";
    case Basis::Off: return out + "decisions off (TNBC_PROFILE_BLOCKING=off)";
    case Basis::WithinMargin:
      out += "on trial: the predicted saving lies within the model's margins, so the site trial decides (and where "
             "every rank completes the calls in the call, they run as the MPI library's own)";
      break;
    case Basis::TrialCostlier:
      out += "not tried: the predicted saving lies within the model's margins, but the site trial's completions in "
             "the call would cost more than it could save over the site's calls";
      break;
  }
  if (!d.receivers.empty()) out += " (the root's own call site: as its receivers' at " + d.receivers + ")";
  const std::string figures = describe_figures(d);
  if (!figures.empty()) out += " " + figures;
  if (d.untried_calls)
    out += "; inside the margins, not tried: " + std::to_string(*d.untried_calls) +
           (*d.untried_calls == 1 ? " call" : " calls") + " a rank, fewer than twice what the site trial takes";
  return out;
}

std::string describe_figures(const Decision& d) {
  if (!d.saved_ns || !d.comm_ns || !d.overlap_ns) return "";
  if (!d.by_model)
    return "(min(Tcomm " + ms(*d.comm_ns) + ", T_CURC + T_CRC " + ms(*d.overlap_ns) + ") - cost " + ms(d.cost_ns) +
           " = " + ms(*d.saved_ns) + ")";
  std::string root;
  if (d.root_comm_ns && d.root_saved_ns && d.root_lead_ns) {
    char share[32];
    std::snprintf(share, sizeof share, "%.0f%%", 100 * d.root_share);
    root = "; the receivers' calls: the root's (" + std::string(share) + " of the calls) " + ms(*d.root_comm_ns) +
           ", its early return saving " + ms(*d.root_saved_ns) + " within its lead of " + ms(*d.root_lead_ns) +
           " on them";
  }
  if (d.late_ns > 0) root += "; of it " + ms(d.late_ns) + " waiting for the late root, in an early return's call too";
  return "(predicted: blocking " + ms(*d.comm_ns) + " (model " + ms(d.model_blocking_ns.value_or(0)) + root +
         "), T_CURC + T_CRC " + ms(*d.overlap_ns) + ", in the call " + ms(d.in_call_ns.value_or(0)) + ", hidden " +
         ms(d.hidden_ns.value_or(0)) + ", cost " + ms(d.cost_ns) + ": saved " + ms(*d.saved_ns) +
         (d.beyond_own_ns ? std::string()
                          : (*d.saved_ns > d.margin_ns ? " > margin " : " <= margin ") + ms(d.margin_ns)) +
         (d.own_call_ns ? "; tnbc's schedule in the call " + ms(*d.own_call_ns) : "") +
         (d.beyond_own_ns ? ", faster than the library's: an early return saves " + ms(*d.beyond_own_ns) +
                                " more" + (*d.beyond_own_ns > d.margin_ns ? " > margin " : " <= margin ") +
                                ms(d.margin_ns)
                          : "") +
         (d.by_blocks ? "; tnbc's schedules priced from the trace's blocks per pair of ranks" : "") + ")" +
         (d.early_at_pct ? "; it would return early at " + d.margin_setting + "=" + std::to_string(*d.early_at_pct) : "");
}

}  // namespace tnbc::trace
