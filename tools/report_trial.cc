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
    int ranks_in_call = 0;
    double agreed = 0;  // calls the ranks agreed to run as the library's own (runtime/call_vote.hh)
    for (const RankFigures& r : w.sites[i].ranks) {
      if (!r.trial) continue;
      early.push_back(r.trial->early_ns);
      in_call.push_back(r.trial->in_call_ns);
      ranks_in_call += r.trial->in_call ? 1 : 0;
      if (auto it = r.reasons.find("agreed_plain"); it != r.reasons.end()) agreed += it->second;
    }
    if (early.empty()) continue;
    char ranks[64];
    std::snprintf(ranks, sizeof ranks, "%d of %zu ranks", ranks_in_call, early.size());
    o += "  " + std::to_string(i + 1) + (i + 1 < 10 ? "   " : "  ") + "early return " + range_ms(early) +
         ", in the call " + range_ms(in_call) + ": later calls complete in the call on " + ranks;
    if (agreed > 0)
      o += "; " + std::to_string(static_cast<long long>(agreed)) +
           " of them (all ranks) ran as the MPI library's own, agreed by the ranks (TNBC_SITE_TRIAL_AGREE)";
    o += "\n";
  }
  if (o.empty()) return o;
  return "each site's last trial per rank (mode nbc, TNBC_SITE_TRIAL_CALLS): the median time from a call to the "
         "site's next call\nafter an early return and after a completion in the call (range over the ranks):\n" + o;
}

}  // namespace tnbc::tools::report
