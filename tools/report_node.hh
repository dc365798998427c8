// The "node-level priorities" section of `tnbc report` (issue 19; tools/report_sections.hh): per
// call site (numbered as in the call-site table), whether arbitration ran (on how many calls,
// and on which ranks), why or why not (the policy's basis, with the cost model's first-read
// estimates under TNBC_NODE_PRIORITIES=auto: runtime/node_choice.hh), how often a rank held a
// send back and how often a hold timed out (a rank of the node that did not move), and the time
// from the call until the rank had its first-read sub-message (mean per rank: min/mean/max over
// the ranks, and the largest single call). From the sites' NodeFigures (the summaries'
// `node_priorities` blocks); docs/reports.md defines each figure.
#pragma once

#include "tools/report_data.hh"

namespace tnbc::tools::report {

// Text, JSON data (key "node_priorities", docs/formats.md) and HTML of world `w`.
Section node_section(const World& w);

}  // namespace tnbc::tools::report
