// The composition root: the one place that knows which parts each mode runs.
#pragma once

#include "runtime/runtime.hh"

namespace tnbc::shim {

// Before PMPI_Init* (after Runtime::configure): whether mode optimize runs the plain program
// (trace/plain_run.hh: every site of the profile judged no gain); then MPI is asked for the
// program's own thread level, not MPI_THREAD_MULTIPLE, and start_runtime attaches no engine.
bool plain_before_init(Runtime& rt);

// After PMPI_Init*: starts `rt` in its mode. `provided`: the thread level MPI gave tnbc.
// Collective over MPI_COMM_WORLD.
void start_runtime(Runtime& rt, int provided);

// At MPI_Finalize, before the summary: a plain run's call sites against the profile that decided
// it (trace/plain_run.hh, sizes_not_recorded): counted in the summary, said by rank 0.
void finish_runtime(Runtime& rt);

}  // namespace tnbc::shim
