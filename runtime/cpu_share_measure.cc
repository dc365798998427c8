// measure_cpu_share (runtime/cpu_share.hh): the collective part, apart from the pure parts the
// tools and unit tests link.
#include <sched.h>

#include <array>
#include <cstring>

#include "runtime/cpu_share.hh"

namespace tnbc {

CpuShare measure_cpu_share(MPI_Comm world) {
  CpuShare c;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) c.own_cpus = CPU_COUNT(&mine);
  c.own_set = mine;
  c.cpuset_cpus = cpuset_cpu_count();
  c.node_set = mine;
  std::array<unsigned char, sizeof(cpu_set_t)> bytes{}, all{};
  std::memcpy(bytes.data(), &mine, sizeof mine);
  PMPI_Comm_size(world, &c.world_ranks);
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

}  // namespace tnbc
