// Whether the MPI library lets tnbc's progress thread make MPI calls while the program's own
// thread waits inside another MPI call on the same CPU. Open MPI's ob1 does (measured: a root's
// thread sends a broadcast's pieces while its program waits in the next barrier, 16 KiB ~1 ms
// later than the root's own call would, 256 KiB and up on time); Open MPI's UCX does not: the
// program's polling holds the UCX worker's spinlock, so a second thread on that CPU gets it
// rarely (a broadcast's root spinning in its next barrier while its thread sends the pieces:
// 256 KiB took 430-480 ms a call against 2.7 ms; docs/benchmarks.md, "Session 60"). Decides
// TNBC_BCAST_SEND_WINDOW=auto (runtime/policy.cc, bcast_send_window).
#pragma once

#include <string>
#include <string_view>

namespace tnbc {

enum class ThreadProgress {
  Unknown,   // a library or transport not checked (MPICH's devices among them): as if Starved (the safe choice)
  Through,   // another thread's calls go through while the program polls (Open MPI pml ob1)
  Starved,   // they wait for the program's polling to let go (Open MPI pml ucx)
};

struct MpiThreads {
  ThreadProgress progress = ThreadProgress::Unknown;
  std::string transport;  // "Open MPI pml ob1", "MPICH ch4:ucx", ... ("" where the library is not recognised)
};

// After MPI_Init: the library's messaging layer as the running process selected it (Open MPI's
// pml component), or as the library names it (MPICH's device).
MpiThreads mpi_threads();

// What a transport named as mpi_threads() names it lets through (the offline tools read it from a
// machine file, runtime/model/machine.hh).
inline ThreadProgress thread_progress_of(std::string_view transport) {
  if (transport == "Open MPI pml ob1") return ThreadProgress::Through;
  if (transport == "Open MPI pml ucx") return ThreadProgress::Starved;
  return ThreadProgress::Unknown;
}

}  // namespace tnbc
