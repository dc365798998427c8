#include "tools/report_trial.hh"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "tools/report_render.hh"

namespace tnbc::tools::report {

namespace {

// Ranks' medians closer than this print as one value.
constexpr double kSameNs = 5e3;

// "9.70 ms", or "9.61-9.74 ms" where the ranks differ.
std::string range_ms(const std::vector<double>& ns) {
  const auto [lo, hi] = std::minmax_element(ns.begin(), ns.end());
  if (*hi - *lo < kSameNs) return milliseconds(*lo);
  std::string low = milliseconds(*lo);
  return low.substr(0, low.find(' ')) + "-" + milliseconds(*hi);
}

}  // namespace

std::string trial_text(const World& w) {
  std::string o;
  for (std::size_t i = 0; i < w.sites.size(); ++i) {
    std::vector<double> early, in_call;
    int ranks_in_call = 0, ranks_leaned = 0;
    double agreed = 0;  // calls the ranks agreed to run as the library's own (runtime/call_vote.hh)
    double tried = 0, priced_loss = 0;  // the trial's calls in the call; in the call on the model's sign
    for (const RankFigures& r : w.sites[i].ranks) {
      if (auto it = r.reasons.find("site_trial"); it != r.reasons.end()) tried += it->second;
      if (auto it = r.reasons.find("priced_loss"); it != r.reasons.end()) priced_loss += it->second;
      if (!r.trial) continue;
      early.push_back(r.trial->early_ns);
      in_call.push_back(r.trial->in_call_ns);
      ranks_in_call += r.trial->in_call ? 1 : 0;
      ranks_leaned += r.trial->in_call && r.trial->leaned ? 1 : 0;
      if (auto it = r.reasons.find("agreed_plain"); it != r.reasons.end()) agreed += it->second;
    }
    const std::string number = "  " + std::to_string(i + 1) + (i + 1 < 10 ? "   " : "  ");
    const auto calls = [](double n) { return std::to_string(static_cast<long long>(n)); };
    if (early.empty()) {
      // Tried, or waited for the turn leaning to the call, but no rank's trial reached a verdict.
      if (tried == 0 && priced_loss == 0) continue;
      o += number + "no verdict on any rank (the run ended first, or the trial got no sample of each kind): " +
           calls(tried) + " trial calls in the call";
      if (priced_loss > 0) o += ", " + calls(priced_loss) + " in the call on the model's sign (a loss priced)";
      o += "\n";
      continue;
    }
    char ranks[64];
    std::snprintf(ranks, sizeof ranks, "%d of %zu ranks", ranks_in_call, early.size());
    o += number + "early return " + range_ms(early) + ", in the call " + range_ms(in_call) +
         ": later calls complete in the call on " + ranks;
    if (ranks_leaned > 0)
      o += " (on " + std::to_string(ranks_leaned) + " of them the model's sign: a loss priced, and early returns " +
           "not faster by the trial's margin)";
    if (agreed > 0)
      o += "; " + calls(agreed) + " of them (all ranks) ran as the MPI library's own, agreed by the ranks " +
           "(TNBC_SITE_TRIAL_AGREE)";
    o += "\n";
  }
  if (o.empty()) return o;
  return "each site's last trial per rank (mode nbc, and mode optimize's sites whose predicted saving lies within the "
         "model's margins; TNBC_SITE_TRIAL_CALLS): the median time from a call to the site's next call\nafter an early "
         "return and after a completion in the call (range over the ranks):\n" + o;
}

}  // namespace tnbc::tools::report
