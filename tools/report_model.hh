// `tnbc report`'s cost-model section (tools/report.cc adds it with one line): from the summaries'
// `model` blocks (runtime/model/summary.hh), where the machine came from, the decisions for the
// whole run (thresholds, pieces) and, in mode optimize, per call site the model's predicted
// blocking time, hidden time and cost, and the decision, with the ranks that made it.
#pragma once

#include <string>

#include "runtime/function_ref.hh"

namespace tnbc::tools {

// The section's text for the run in `dir` (its TNBC_OUTPUT_DIR, or a harness run directory
// holding it in tnbc/); "" when no summary has a `model` block (an older run). `locate` names a
// site's frame at its file:line (tools/report_sections.hh).
std::string model_section(const std::string& dir, FunctionRef<std::string(const std::string&)> locate);

}  // namespace tnbc::tools
