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
  int world_ranks = 0; // ranks of MPI_COMM_WORLD (0: not measured; one node where node_ranks has them all)
  int node_rank = 0;   // this rank among them
  int node_cpus = 0;   // CPUs in the union of their affinity masks
  int own_cpus = 0;    // CPUs in this rank's affinity mask
  int cpuset_cpus = 0; // CPUs the rank's cpuset lets it have, binding aside (cpuset_cpu_count; 0: unknown)
  cpu_set_t own_set{};   // this rank's affinity mask
  cpu_set_t node_set{};  // the union of the node's ranks' masks (own_set where unknown)
  int progress_cpus = 0; // CPUs tnbc's progress thread may run on (0: not placed yet)
  bool progress_on_own_cpu = false;  // placed, and its only CPU is this rank's only CPU

  // Every rank of the world on this node (false where the world's size was not measured).
  bool one_node() const { return world_ranks > 0 && node_ranks >= world_ranks; }
};

// Collective over `world` (every rank calls it): splits it by node and ORs the affinity masks.
CpuShare measure_cpu_share(MPI_Comm world);

// Whether tnbc's progress thread has no CPU but the callers': its only CPU is this rank's, or
// the node has as many ranks as the CPUs it may run on (each of them some rank's). Woken at the
// hand-over of an early return, it then takes a caller's CPU, so it waits for that call's
// return before its round (Progress::wait_for_returns). Measured on shared memory, np 2 on a
// node of 2 CPUs with the thread on both: its first round (the receiver's copies of a Bcast's
// bodies) ran while the leaf's caller waited for a CPU, 1.0 ms in the call where 0.3 without
// (docs/benchmarks.md, "Session 25").
inline bool progress_takes_callers_cpu(const CpuShare& c) {
  return c.progress_on_own_cpu || (c.progress_cpus > 0 && c.node_ranks >= c.progress_cpus);
}

// The CPUs this process's cpuset lets a thread have, whatever the rank's binding (0: unknown): a
// container, a Slurm job step or an emulated node (npb-harness/netrun.py) that gives the rank one
// CPU leaves no binding option a second one.
int cpuset_cpu_count();

// Empty when every rank has a CPU for its computation and one to spare for communication on
// average, else a sentence saying what competes with what.
std::string cpu_share_problem(const CpuShare& c);

}  // namespace tnbc
