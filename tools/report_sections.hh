// Where other parts plug into `tnbc report`: each adds a Section (a title, text, JSON data and
// HTML) per world, computed from the world's figures and its ranks' summaries as read; the text,
// JSON and HTML outputs print the sections after the call sites, in this order.
//
// Issue 16 (the LogGP cost model: predicted blocking and hidden time, cost and decision per
// site, from the summaries' per-site `model` blocks) adds its section with one line in
// extra_sections (tools/report_sections.cc), e.g.
//     sections.push_back(model_section(world, summaries));   // tools/report_model.cc
#pragma once

#include <map>
#include <vector>

#include "tools/report_data.hh"
#include "trace/json.hh"

namespace tnbc::tools::report {

// `summaries`: rank -> that rank's summary (docs/formats.md), valid during the call only.
std::vector<Section> extra_sections(const World& world, const std::map<int, const json::Value*>& summaries);

}  // namespace tnbc::tools::report
