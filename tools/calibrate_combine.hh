// `tnbc calibrate --combine A.json B.json ... [-o FILE]`: one machine file, each field the median
// over several calibrations (runtime/model/combine.hh). No launcher: it only reads files.
//
//   for i in 1 2 3; do mpirun -np 4 tnbc calibrate -o m$i.json; done
//   tnbc calibrate --combine m1.json m2.json m3.json -o machine.json
#pragma once

#include <string>
#include <vector>

namespace tnbc::tools {

// `args`: what follows `--combine`. Returns the exit code (0; 2 with one message on stderr).
int calibrate_combine(const std::vector<std::string>& args);

}  // namespace tnbc::tools
