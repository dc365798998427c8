// The cost model as the offline tools see a run: the machine and the placement a run of the
// library used (its rank 0 wrote them: TNBC_OUTPUT_DIR/tnbc-machine.json and the summary's
// `model` block, runtime/model/startup.hh), or a machine file the user names; and mode
// optimize's verdicts on a profile's sites with them (trace/gain.hh), for `tnbc merge`.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/model/inputs.hh"
#include "runtime/status.hh"
#include "trace/profile.hh"

namespace tnbc::tools {

struct RunModel {
  std::shared_ptr<model::Inputs> inputs;
  std::string origin;  // where the machine came from, for people
};

// `machine_file` if given (--machine, TNBC_MACHINE), else DIR/tnbc-machine.json; the placement
// from DIR/tnbc-summary.0.json's `model` block, else `np` ranks on one node of the machine's CPUs.
Result<RunModel> run_model(const std::string& dir, const std::string& machine_file, int np);

// The modules rank 0 of the run in `dir` recorded in its summary (`modules`: path -> GNU build
// ID), for naming its frames at their file:line (Symbolizer::locate_frame); empty without one.
std::map<std::string, std::string> run_modules(const std::string& dir);

// Per site of `p`, what mode optimize will do with these settings and this model (nullptr: no
// machine: the decision is left to the run), one line each; and a closing paragraph.
std::vector<std::string> site_verdicts(const trace::LoadedProfile& p, const Settings& s, const RunModel* m);
std::string verdict_footer(const Settings& s, const RunModel* m);

}  // namespace tnbc::tools
