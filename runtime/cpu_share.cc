#include "runtime/cpu_share.hh"

#include <thread>

namespace tnbc {

int cpuset_cpu_count() {
  // A thread of its own asks for every CPU: the kernel gives it those of the process's cpuset
  // (its cgroup's, whatever the caller's binding), which sched_getaffinity then reads. The cgroup
  // files need not be visible: `ip netns exec` (npb-harness/netrun.py) remounts /sys without them.
  int count = 0;
  std::thread probe([&count] {
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    cpu_set_t got;
    CPU_ZERO(&got);
    if (sched_setaffinity(0, sizeof all, &all) == 0 && sched_getaffinity(0, sizeof got, &got) == 0)
      count = CPU_COUNT(&got);
  });
  probe.join();
  return count;
}

std::string cpu_share_problem(const CpuShare& c) {
  if (c.node_cpus > 0 && c.node_ranks > c.node_cpus)
    return std::to_string(c.node_ranks) + " ranks share " + std::to_string(c.node_cpus) +
           " CPUs on this node: the progress threads take the CPU time the communication needs from the "
           "computation, so little of it can be hidden";
  if (c.own_cpus == 1 && c.progress_cpus <= 1 && c.cpuset_cpus == 1)
    return "each rank's node has a single CPU (its cpuset cgroup: a container, a job step or an emulated node): "
           "its progress thread shares it with the computation, so little of the communication can be hidden "
           "(nodes with a CPU to spare for each rank: srun --cpus-per-task=2)";
  if (c.own_cpus == 1 && c.progress_cpus <= 1)
    return "each rank is bound to a single CPU (e.g. mpirun --bind-to core): its progress thread shares it with "
           "the computation, so little of the communication can be hidden (mpirun --bind-to none, srun "
           "--cpu-bind=none, or bind each rank to two CPUs: srun --cpus-per-task=2)";
  return {};
}

}  // namespace tnbc
