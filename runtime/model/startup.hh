// The cost model when a run starts (MPI_Init): the placement and the machine
// (runtime/model/probe.hh: TNBC_MACHINE's file, or the start-up probe), said once by rank 0
// (TNBC_LOG=info: what the model uses; a file that cannot be used: a warning with the reason),
// written to TNBC_OUTPUT_DIR/tnbc-machine.json by rank 0 (the format of `tnbc calibrate`: a
// later run may use it as TNBC_MACHINE, `tnbc merge` reads it) and to the summary's `model`
// block (runtime/model/summary.hh).
#pragma once

#include <mpi.h>

#include <memory>

#include "runtime/config.hh"
#include "runtime/model/inputs.hh"

namespace tnbc {
class GuardBackend;
class Stats;
}  // namespace tnbc

namespace tnbc::model {

inline constexpr const char* kMachineFileName = "tnbc-machine.json";

// Collective over `world_dup` (tnbc's duplicate of MPI_COMM_WORLD, nothing else in flight on it).
// `backend`: the guard backend early returns use first (nullptr: none).
std::shared_ptr<const Inputs> start_model(const Settings& s, MPI_Comm world_dup, GuardBackend* backend,
                                          std::size_t page, Stats& stats);

}  // namespace tnbc::model
