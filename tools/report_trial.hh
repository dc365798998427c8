// The "the site trial" section of `tnbc report` (tools/report_sections.hh): per call site
// (numbered as in the call-site table) whose trial reached a verdict on some rank
// (runtime/site_trial.hh; mode nbc, and mode optimize's sites within the model's margins), the
// last trial's medians of an iteration after an early return and after a completion in the call
// (the range over the ranks), and on how many ranks the site's later calls complete in the call
// (on how many of them on the model's sign, `leaned`); a site that tried, or waited leaning to
// the call, without a verdict on any rank: its calls so. From the sites' TrialFigures (the summaries' `trial` blocks;
// each rank's figures are in the report JSON's ranks too). Empty where no trial decided.
#pragma once

#include <string>

#include "tools/report_data.hh"

namespace tnbc::tools::report {

std::string trial_text(const World& w);

}  // namespace tnbc::tools::report
