// Where other parts plug into `tnbc report`: each adds a Section (a title, text, JSON data and
// HTML) per world, computed from the world's figures and its ranks' summaries as read; the text,
// JSON and HTML outputs print the sections after the call sites, in this order.
//
// The list is extra_sections, in tools/report.cc: one line per section there. Issue 16's cost
// model (tools/report_model.cc: predicted blocking and hidden time, cost and decision per site,
// from the summaries' per-site `model` blocks) adds its own with
//     sections.push_back(text_section("model", "cost model", model_section(world.dir, locate)));
// A section with nothing in it (an older run without `model` blocks) is left out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/function_ref.hh"
#include "tools/report_data.hh"
#include "trace/json.hh"

namespace tnbc::tools::report {

// `summaries`: rank -> that rank's summary (docs/formats.md), valid during the call only.
// `locate`: a frame as the runtime names it ("symbol (module+0xoffset)") at its file:line where
// the report resolves sources (Symbolizer::locate_frame). Defined in tools/report.cc (the sections list).
std::vector<Section> extra_sections(const World& world, const std::map<int, const json::Value*>& summaries,
                                    FunctionRef<std::string(const std::string&)> locate);

// A section that is text only: the HTML shows it preformatted (escaped), the JSON has no data.
Section text_section(const std::string& key, const std::string& title, const std::string& text);

}  // namespace tnbc::tools::report
