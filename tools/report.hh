// `tnbc report DIR`: a readable account of one run from its per-rank summaries (tools/report.cc).
#pragma once

#include <string>
#include <vector>

#include "runtime/status.hh"

namespace tnbc::tools {

// The report text, or an error naming the file that cannot be read.
Result<std::string> report(const std::string& dir);
// The command: prints the report, returns the exit status.
int cmd_report(const std::vector<std::string>& args);

}  // namespace tnbc::tools
