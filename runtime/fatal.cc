#include "runtime/fatal.hh"

#include <mpi.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace tnbc {

namespace {
std::atomic<long long> g_abort_flush_us{0};
}

void set_abort_flush_us(long long us) { g_abort_flush_us.store(us, std::memory_order_relaxed); }

void end_job() {
  const long long us = g_abort_flush_us.load(std::memory_order_relaxed);
  const timespec pause{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  nanosleep(&pause, nullptr);
  PMPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);  // PMPI_Abort does not return; the compiler cannot know
}

}  // namespace tnbc
