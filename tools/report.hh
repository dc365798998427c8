// `tnbc report DIR`: a readable account of one run from its per-rank summaries (tools/report.cc).
#pragma once

#include <string>
#include <vector>

namespace tnbc::tools {

// The report text; throws std::runtime_error (naming the file) on unreadable summaries.
std::string report(const std::string& dir);
// The command: prints the report, returns the exit status.
int cmd_report(const std::vector<std::string>& args);

}  // namespace tnbc::tools
