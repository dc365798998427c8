#include "runtime/report.hh"

#include <mpi.h>

#include <cstdint>
#include <functional>

#include "runtime/log.hh"

namespace tnbc {

void report_once(const std::vector<Message>& messages, int rank) {
  std::string all;
  for (const Message& m : messages) all += std::to_string(static_cast<int>(m.level)) + m.text + '\n';
  const std::uint64_t mine = std::hash<std::string>()(all);
  std::uint64_t first = mine;
  PMPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank != 0 && mine == first) return;
  for (const Message& m : messages) log(m.level, "%s", m.text.c_str());
}

}  // namespace tnbc
