#include "trace/gain.hh"

#include <algorithm>
#include <cstdio>
#include <vector>

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

SiteEstimate estimate_site(const ProfileSite& s) {
  SiteEstimate e;
  std::vector<double> comm, curc, crc, overlap;
  for (const ProfileSite::Rank& r : s.ranks) {
    if (r.duration_ns) comm.push_back(*r.duration_ns);
    if (r.bytes_per_call) e.bytes = std::max(e.bytes, static_cast<double>(*r.bytes_per_call));
    const std::optional<double> t_crc_opt =
        rank_crc_ns(r, r.bytes_per_call ? std::optional<double>(static_cast<double>(*r.bytes_per_call)) : std::nullopt);
    if (!t_crc_opt) continue;
    const double t_crc = *t_crc_opt;
    curc.push_back(*r.curc_ns);
    crc.push_back(t_crc);
    overlap.push_back(*r.curc_ns + t_crc);
  }
  e.estimating_ranks = static_cast<int>(overlap.size());
  e.comm_ns = median(comm);
  e.curc_ns = median(curc);
  e.crc_ns = median(crc);
  e.overlap_ns = median(overlap);
  return e;
}

CostModel cost_model(const Settings& s) {
  return {static_cast<double>(s.early_return_cost_us) * 1e3, static_cast<double>(s.early_return_cost_us_per_mib) * 1e3};
}

const char* basis_name(Basis b) {
  switch (b) {
    case Basis::NoOverlapToGain: return "no_overlap_to_gain";
    case Basis::OverlapPays: return "overlap_pays";
    case Basis::NotInProfile: return "not_in_profile";
    case Basis::OtherSizes: return "other_sizes";
    case Basis::NoEstimate: return "no_estimate";
    case Basis::Off: return "off";
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

Decision decide(const ProfileSite* site, bool sizes_recorded, const CostModel& cost, bool enabled) {
  Decision d;
  if (!enabled) d.basis = Basis::Off;
  else if (!site) d.basis = Basis::NotInProfile;
  else if (!sizes_recorded) d.basis = Basis::OtherSizes;
  else d = decide(estimate_site(*site), cost);
  return d;
}

std::string describe(const Decision& d) {
  std::string out = d.blocking() ? "completes in the call: " : "returns early: ";
  switch (d.basis) {
    case Basis::NoOverlapToGain: out += "no overlap to gain"; break;
    case Basis::OverlapPays: out += "the overlap pays"; break;
    case Basis::NotInProfile: return out + "the site is not in the profile";
    case Basis::OtherSizes: return out + "the profile recorded other sizes at this site";
    case Basis::NoEstimate: return out + "no estimate (the trace saw no access to the received data)";
    case Basis::Off: return out + "decisions off (TNBC_PROFILE_BLOCKING=off)";
  }
  if (d.saved_ns)
    out += " (min(Tcomm " + ms(*d.comm_ns) + ", T_CURC + T_CRC " + ms(*d.overlap_ns) + ") - cost " + ms(d.cost_ns) +
           " = " + ms(*d.saved_ns) + ")";
  return out;
}

}  // namespace tnbc::trace
