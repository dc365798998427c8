// `tnbc report DIR [--compare DIR2]... [--profile FILE] [--json FILE] [--html FILE]`: what the
// collectives of a run did and what they cost the program, per call site (tools/report.cc).
#pragma once

#include <string>
#include <vector>

namespace tnbc::tools {

// The command: prints the text report, writes the JSON and HTML ones; returns the exit status.
int cmd_report(const std::vector<std::string>& args);

}  // namespace tnbc::tools
