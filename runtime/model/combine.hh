// `tnbc calibrate --combine` (tools/tnbc.cc): one machine file from several calibrations of the
// same machine, each field the median of its values. One calibration is one launch, and on a
// node with more ranks than CPUs a launch runs fast or slow as a whole (docs/benchmarks.md, cost
// model, sessions 10-11: the np 4 exchange rate at 4 MiB 0.127-0.196 ns/B between three
// launches): the median of several launches is the machine, one launch is a draw.
//
// The files must describe the same placement: the same MPI library, ranks, nodes, ranks and CPUs
// per node, page size, the same levels and guard backends measured and the same sweep sizes
// (calibrate with the same options); otherwise one message naming the first file that differs
// and the field. Pure: no MPI.
#pragma once

#include <string>
#include <vector>

#include "runtime/model/machine.hh"
#include "runtime/status.hh"

namespace tnbc::model {

// The field whose values differ the most between the files: (max - min) / median.
struct Spread {
  double relative = 0;
  std::string field;
};

struct Combined {
  Machine machine;
  Spread widest;
};

// `names[i]` names `files[i]` in the messages. At least 2 files.
Result<Combined> combine_machines(const std::vector<Machine>& files, const std::vector<std::string>& names);

}  // namespace tnbc::model
