// MPI_Init / MPI_Init_thread / MPI_Finalize: tnbc asks MPI for MPI_THREAD_MULTIPLE (its
// progress thread calls MPI concurrently with the program), tells the program the level it
// asked for, and starts or stops the runtime around PMPI.
#include <mpi.h>

#include <cstdlib>

#include "runtime/log.hh"
#include "runtime/placement.hh"
#include "runtime/rma_transport.hh"
#include "runtime/runtime.hh"
#include "shim/compose.hh"
#include "shim/handlers.hh"

namespace tnbc::shim {

namespace {
// Under srun, a job step of N tasks whose MPI_COMM_WORLD is smaller: srun's MPI plugin does not
// match the MPI library and every task runs as its own MPI job (MPICH with --mpi=none or pmix;
// Open MPI stops in MPI_Init itself). Said once, by the step's task 0.
void check_slurm_step() {
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char* task = std::getenv("SLURM_PROCID");
  int size = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (tasks == nullptr || task == nullptr || std::atoi(task) != 0 || std::atoi(tasks) <= size) return;
  const char* plugin = std::getenv("SLURM_MPI_TYPE");
  log(LogLevel::Warn,
      "srun started %s tasks, but MPI_COMM_WORLD has %d: each task runs as a separate MPI job. srun's MPI plugin "
      "(--mpi=%s) does not match the MPI library: Open MPI needs srun --mpi=pmix, MPICH --mpi=pmi2 "
      "(srun --mpi=list; docs/cluster.md)",
      tasks, size, plugin ? plugin : "none");
}

int init_common(int* argc, char*** argv, int required, int* provided) {
  Runtime& rt = Runtime::get();
  rt.configure();
  if (rt.settings().mode == Mode::Off) {
    const int rc = required < 0 ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, required, provided);
    return rc;
  }
  // Mode optimize where every site of the profile is judged no gain: the plain program, at the
  // program's own thread level (nothing of the engine could pay; shim/compose.hh).
  const bool wants_engine =
      rt.settings().mode == Mode::Nbc || (rt.settings().mode == Mode::Optimize && !plain_before_init(rt));
  const int ask = wants_engine ? MPI_THREAD_MULTIPLE : (required < 0 ? MPI_THREAD_SINGLE : required);
  int got = MPI_THREAD_SINGLE;
  // RMA broadcasts: windows whose shared-memory files cannot collide (runtime/rma_transport.hh).
  const bool rma = wants_engine && rt.settings().bcast_backend != BcastBackend::P2p;
  if (rma) rma_before_init();
  const int rc = PMPI_Init_thread(argc, argv, std::max(ask, required), &got);
  if (rma) rma_after_init();
  if (rc != MPI_SUCCESS) return rc;
  rt.stats().set_placement(measure_placement());
  start_runtime(rt, got);
  check_slurm_step();
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
  finish_runtime(Runtime::get());
  Runtime::get().stop();
  const int rc = PMPI_Finalize();
  rma_after_finalize();
  return rc;
}

}  // namespace tnbc::shim
