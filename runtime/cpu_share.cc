#include "runtime/cpu_share.hh"

#include <sched.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace tnbc {

CpuShare measure_cpu_share(MPI_Comm world) {
  CpuShare c;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) c.own_cpus = CPU_COUNT(&mine);
  c.own_set = mine;
  c.node_set = mine;
  std::array<unsigned char, sizeof(cpu_set_t)> bytes{}, all{};
  std::memcpy(bytes.data(), &mine, sizeof mine);
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return c;
  PMPI_Comm_size(node, &c.node_ranks);
  PMPI_Comm_rank(node, &c.node_rank);
  PMPI_Allreduce(bytes.data(), all.data(), static_cast<int>(all.size()), MPI_BYTE, MPI_BOR, node);
  PMPI_Comm_free(&node);
  cpu_set_t un;
  std::memcpy(&un, all.data(), sizeof un);
  c.node_cpus = CPU_COUNT(&un);
  c.node_set = un;
  return c;
}

std::string cpu_share_problem(const CpuShare& c) {
  if (c.node_cpus > 0 && c.node_ranks > c.node_cpus)
    return std::to_string(c.node_ranks) + " ranks share " + std::to_string(c.node_cpus) +
           " CPUs on this node: the progress threads take the CPU time the communication needs from the "
           "computation, so little of it can be hidden";
  if (c.own_cpus == 1 && c.progress_cpus <= 1)
    return "each rank is bound to a single CPU (e.g. mpirun --bind-to core): its progress thread shares it with "
           "the computation, so little of the communication can be hidden (mpirun --bind-to none, srun "
           "--cpu-bind=none, or bind each rank to two CPUs: srun --cpus-per-task=2)";
  return {};
}

}  // namespace tnbc
