// The composition root: the one place that knows which parts each mode runs.
#pragma once

#include "runtime/runtime.hh"

namespace tnbc::shim {

// After PMPI_Init*: starts `rt` in its mode. `provided`: the thread level MPI gave tnbc.
// Collective over MPI_COMM_WORLD.
void start_runtime(Runtime& rt, int provided);

}  // namespace tnbc::shim
