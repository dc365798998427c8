#include "runtime/model/calibrate_load.hh"

#include <sched.h>

#include <algorithm>

#include "runtime/futex.hh"

namespace tnbc::model {

LoadWatch::LoadWatch() : start_(cpu_times()), own_s_(process_cpu_s()), wall_ns_(futex::now_ns()) {}

CalibrationLoad LoadWatch::finish(MPI_Comm world) const {
  const double own = process_cpu_s() - own_s_;
  const std::vector<CpuTimes> now = cpu_times();
  const double wall_s = static_cast<double>(futex::now_ns() - wall_ns_) / 1e9;
  int rank = 0;
  PMPI_Comm_rank(world, &rank);
  // The ranks on this kernel: their CPU time together and the CPUs they may use, at its first rank.
  cpu_set_t mine, cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
  MPI_Comm same = MPI_COMM_NULL;
  double ours = own;
  int first = 0;
  if (PMPI_Comm_split(world, static_cast<int>(kernel_id() & 0x7fffffff), rank, &same) == MPI_SUCCESS) {
    PMPI_Reduce(&own, &ours, 1, MPI_DOUBLE, MPI_SUM, 0, same);
    PMPI_Reduce(&mine, &cpus, static_cast<int>(sizeof mine), MPI_BYTE, MPI_BOR, 0, same);
    PMPI_Comm_rank(same, &first);
    PMPI_Comm_free(&same);
  }
  // Over those CPUs: the time neither idle nor stolen was busy; what of it the ranks did not use,
  // others did.
  double idle = 0, stolen = 0, count = 0;
  for (std::size_t k = 0; k < std::min(start_.size(), now.size()); ++k)
    if (start_[k].listed && now[k].listed && k < CPU_SETSIZE && CPU_ISSET(k, &cpus)) {
      idle += now[k].idle_s - start_[k].idle_s;
      stolen += now[k].steal_s - start_[k].steal_s;
      ++count;
    }
  // Each machine's shares, at its first rank (the others offer -1), then the largest.
  const bool counts = first == 0 && count > 0 && wall_s > 0;
  const double cpu_s = wall_s * std::max(1.0, count);
  struct {
    double share;
    int rank;
  } others{counts ? std::max(0.0, cpu_s - idle - stolen - ours) / cpu_s : -1.0, rank}, worst{-1.0, -1};
  double steal = counts ? std::max(0.0, stolen) / cpu_s : -1.0, most_steal = -1.0;
  PMPI_Allreduce(&others, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, world);
  PMPI_Allreduce(&steal, &most_steal, 1, MPI_DOUBLE, MPI_MAX, world);
  return {worst.share, most_steal, worst.share >= 0 ? worst.rank : -1};
}

}  // namespace tnbc::model
