// The outputs of `tnbc report`, all from the same figures (tools/report_data.hh):
//   text  mpiP-style tables per call site (report_text.cc)
//   JSON  the same content, format "tnbc-report" (docs/formats.md), and its reader (report_json.cc)
//   HTML  one self-contained page: per call site an SVG timeline of sub-message arrivals against
//         first accesses; with comparisons, bars of hidden vs exposed time per pass (report_html.cc)
// `runs[0]` is the run reported; further runs (--compare) are compared with it.
#pragma once

#include <string>
#include <vector>

#include "runtime/status.hh"
#include "tools/report_data.hh"

namespace tnbc::tools::report {

std::string render_text(const std::vector<Run>& runs);
std::string render_json(const std::vector<Run>& runs);
// A report JSON back into runs (what render_json wrote): an error names the line and column.
Result<std::vector<Run>> parse_report_json(const std::string& text);
std::string render_html(const std::vector<Run>& runs);

// The world's placement (hosts, ranks, CPUs) and its collectives' outcomes (per kind, Tinit per
// early return, the copies against the model's price, the size threshold, CPU contention), as the
// text prints them; the HTML shows the same lines preformatted.
std::string placement_text(const World& w);
std::string collectives_text(const World& w);

// Shared formatting: "12.3%" of a share (0.123), "n/a" when unknown; "1.23 ms".
std::string percent(std::optional<double> share);
std::string milliseconds(double ns);
// Text for HTML (element content and attribute values).
std::string html_escape(const std::string& s);
// JSON text of a string and of a number (null when not finite), as the report JSON writes them.
std::string json_string(const std::string& s);
std::string json_number(double v);

}  // namespace tnbc::tools::report
