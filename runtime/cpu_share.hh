// How much CPU the ranks of a node have, measured at MPI_Init for diagnostics. Overlap needs
// CPU time for the communication besides the computation: the progress thread (and, over TCP,
// the kernel's copies it triggers) runs while the program computes. When a node has more
// ranks than CPUs, or a rank is bound to a single CPU, the progress thread takes that time from
// the computation and little of the communication can be hidden (docs/limitations.md). tnbc
// says so (TNBC_LOG=info, the summary's `node`, `tnbc report`) and changes nothing.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <string>

namespace tnbc {

struct CpuShare {
  int node_ranks = 1;  // ranks of MPI_COMM_WORLD on this node
  int node_rank = 0;   // this rank among them
  int node_cpus = 0;   // CPUs in the union of their affinity masks
  int own_cpus = 0;    // CPUs in this rank's affinity mask
  cpu_set_t own_set{};   // this rank's affinity mask
  cpu_set_t node_set{};  // the union of the node's ranks' masks (own_set where unknown)
  int progress_cpus = 0; // CPUs tnbc's progress thread may run on (0: not placed yet)
  bool progress_on_own_cpu = false;  // placed, and its only CPU is this rank's only CPU
};

// Collective over `world` (every rank calls it): splits it by node and ORs the affinity masks.
CpuShare measure_cpu_share(MPI_Comm world);

// Empty when every rank has a CPU for its computation and one to spare for communication on
// average, else a sentence saying what competes with what.
std::string cpu_share_problem(const CpuShare& c);

}  // namespace tnbc
