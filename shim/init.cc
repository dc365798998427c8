// MPI_Init / MPI_Init_thread / MPI_Finalize: tnbc asks MPI for MPI_THREAD_MULTIPLE (its
// progress thread calls MPI concurrently with the program), tells the program the level it
// asked for, and starts or stops the runtime around PMPI.
#include <mpi.h>

#include "runtime/runtime.hh"
#include "shim/compose.hh"
#include "shim/handlers.hh"

namespace tnbc::shim {

namespace {
int init_common(int* argc, char*** argv, int required, int* provided) {
  Runtime& rt = Runtime::get();
  rt.configure();
  if (rt.settings().mode == Mode::Off) {
    const int rc = required < 0 ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, required, provided);
    return rc;
  }
  const bool wants_engine = rt.settings().mode == Mode::Nbc || rt.settings().mode == Mode::Optimize;
  const int ask = wants_engine ? MPI_THREAD_MULTIPLE : (required < 0 ? MPI_THREAD_SINGLE : required);
  int got = MPI_THREAD_SINGLE;
  const int rc = PMPI_Init_thread(argc, argv, std::max(ask, required), &got);
  if (rc != MPI_SUCCESS) return rc;
  start_runtime(rt, got);
  // The program sees the level it asked for (never more than MPI gave).
  if (provided) *provided = std::min(required < 0 ? MPI_THREAD_SINGLE : required, got);
  return rc;
}
}  // namespace

int Init(int* argc, char*** argv, CallSite) { return init_common(argc, argv, -1, nullptr); }

int Init_thread(int* argc, char*** argv, int required, int* provided, CallSite) {
  return init_common(argc, argv, required, provided);
}

int Finalize(CallSite) {
  Runtime::get().stop();
  return PMPI_Finalize();
}

}  // namespace tnbc::shim
