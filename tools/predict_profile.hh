// `tnbc predict --profile APP.profile --machine MACHINE.json --np N [...]`: what tnbc would hide
// for this program at N processes, simulated with SimGrid (tools/predict_sim.hh) from the trace
// pass's profile and a calibrated machine (docs/predict.md). Built only with SimGrid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/machine.hh"
#include "runtime/status.hh"
#include "tools/predict_sim.hh"
#include "trace/profile.hh"

namespace tnbc::tools {

enum class Scaling { Strong, Weak, Fixed };
const char* scaling_name(Scaling s);
std::string scaling_rule(Scaling s);  // one sentence for the output

// The profile's sites at N processes under `s` (sizes and times scaled), or the reason it cannot
// be: N below the profile's np with strong scaling, a profile without any collective tnbc runs.
// `data_scale`: the traced problem's data times this (another class of the same benchmark: its
// blocks and T_CURC grow with it) before the scaling to N. `skip_first`: each rank's first K calls
// of each collective kind are left out (a set-up or warm-up before the program's timed part),
// placed by the profile's `first_calls`; a profile without them is simulated whole, with a note.
Result<std::vector<SimSite>> sites_at(const trace::LoadedProfile& p, int np, Scaling s, std::vector<std::string>& notes,
                                      double data_scale = 1, int skip_first = 0);

// Where a site's first simulated call falls in the ranks' sequences of collectives (the least
// over the ranks; the largest value: unknown) and whether calls of it were left out (--skip-first).
struct Staging {
  std::uint64_t first = 0;
  bool skipped = false;
};
// Each site's cold_calls (SimSite): 1 for the first site in program order of each size class of
// tnbc's staging pool, unless calls left out made that class already (they ran before: the
// sites' own left-out calls, `staging[i].skipped`, and the sites all of whose calls were left
// out, `left_out`); else 0.
void mark_cold_calls(std::vector<SimSite>& sites, const std::vector<Staging>& staging,
                     const std::vector<SimSite>& left_out, int np);

// How many of each rank's calls at each site of `p` fall among the rank's first `k` calls of
// the site's collective kind ([site][rank]; empty and a note when a site lacks `first_calls`).
std::vector<std::vector<double>> leading_calls(const trace::LoadedProfile& p, int k, std::vector<std::string>& notes);

// The MPI library a machine file was calibrated with against the one this tnbc is built with:
// empty when they are the same library and version (major.minor), else one sentence.
std::string mpi_misfit(const model::Machine& m, const std::string& built_with);
// "Open MPI 4.1", "MPICH 4.0" from a library's version string (the first line is enough).
std::string mpi_family(const std::string& version);

// The profile's executable was rebuilt after the profile was written, or is not `program`:
// one sentence (empty: fine).
std::string program_misfit(const trace::LoadedProfile& p, const std::string& profile_path, const std::string& program);

int cmd_predict_profile(const std::vector<std::string>& args);

}  // namespace tnbc::tools
