// `tnbc calibrate --combine A.json B.json ... [-o FILE]`: one machine file, each field the median
// over several calibrations (runtime/model/combine.hh). No launcher: it only reads files.
//
//   for i in 1 2 3; do mpirun -np 4 tnbc calibrate -o m$i.json; done
//   tnbc calibrate --combine m1.json m2.json m3.json -o machine.json
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tnbc::tools {

// `args`: what follows `calibrate`. The arguments other than `--combine` (in order) when `--combine`
// is one of them, wherever it stands (`tnbc calibrate -o F --combine A B`; not as the value of
// -o); nullopt when it is not (a calibration to launch).
std::optional<std::vector<std::string>> combine_request(const std::vector<std::string>& args);

// `args`: the arguments other than `--combine`. Returns the exit code (0; 2 with one message on stderr).
int calibrate_combine(const std::vector<std::string>& args);

}  // namespace tnbc::tools
