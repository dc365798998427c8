// What `tnbc predict --profile` says at other process counts, for people: the picture (SVG) of
// the predicted hidden share and speedup against N for nbc, optimize and optimize with node
// priorities, and a small table — the "predicted at other process counts" section of `tnbc
// report` (text, JSON, HTML page) and of the harness's comparison pages (npb-harness/predict.py
// passes its predictions with --predicted). The single source of that picture.
//
// The figures come from `tnbc predict --json` files (format tnbc-predict, docs/formats.md):
// given ones (--predicted), or made by running `tnbc predict` once per N (--what-if-np) as child
// processes of this tnbc: SimGrid keeps one engine per process, and a simulation that fails then
// costs the page only its section.
#pragma once

#include <string>
#include <vector>

#include "runtime/status.hh"
#include "tools/report_data.hh"

namespace tnbc::tools {

inline constexpr int kPictureVariants = 3;  // nbc, optimize, optimize+node (the simulation's names)
extern const char* const kPictureVariantNames[kPictureVariants];

// One process count, the whole program (the collective sections) as `tnbc predict` gives it.
struct WhatIfPoint {
  int np = 0, per_node = 0;
  double blocking_s = 0;                    // the blocking collectives' time (Tcomm x calls)
  double hidden[kPictureVariants] = {};     // hidden share of Tcomm
  double speedup[kPictureVariants] = {};    // of the collective sections
  std::string scaling, source;              // strong/weak/fixed; the JSON file
};

// The program figures of a `tnbc predict --json` file; an error names the file and what is wrong.
Result<WhatIfPoint> read_predict_json(const std::string& path);

// What to predict for the report: --what-if-np with --profile and --machine (and the optional
// --ranks-per-node, --platform, --scaling), and/or --predicted FILES.
struct WhatIfRequest {
  std::vector<int> nps;
  std::string profile, machine, platform, scaling;
  int per_node = 0;
  std::vector<std::string> predicted;
  bool wanted() const { return !nps.empty() || !predicted.empty(); }
};

struct WhatIf {
  std::vector<WhatIfPoint> points;    // sorted by N
  std::vector<std::string> failures;  // one sentence per N or file that gave nothing
};

// Runs `tnbc_exe predict` per N of the request (into a temporary directory, removed after) and
// reads the given files. Never fails as a whole: what could not be predicted is in `failures`.
WhatIf gather_what_if(const WhatIfRequest& r, const std::string& tnbc_exe);

// The picture: two panels (hidden share, speedup) against N on a log axis, one line per variant,
// every point marked. `<svg class="what-if">`, its polylines `class="what-if-line VARIANT"`.
std::string what_if_svg(const std::string& title, const std::vector<WhatIfPoint>& points);

// The report's section (key "what_if"): the picture and the table in HTML, the table as text,
// the points as JSON data; empty (left out) when there are no points.
report::Section what_if_section(const WhatIf& w);

}  // namespace tnbc::tools
