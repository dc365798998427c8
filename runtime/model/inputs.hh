// What the cost model decides from in a run, equal on every rank (runtime/model/probe.hh):
// the machine (a file every rank read alike, or the start-up probe's agreed values) and
// MPI_COMM_WORLD's placement.
#pragma once

#include <memory>
#include <string>

#include "runtime/model/machine.hh"
#include "runtime/model/summary.hh"
#include "runtime/model/topology.hh"

namespace tnbc::model {

struct Inputs {
  Machine machine;
  Topology world;
  std::string source;  // "file" or "probe"
  std::string file;    // TNBC_MACHINE as given
  // The summary's `model` block, where the parts that decide record what they decided.
  std::shared_ptr<Summary> summary = std::make_shared<Summary>();
};

}  // namespace tnbc::model
