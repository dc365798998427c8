#include "runtime/model/calibrate_load.hh"

#include <unistd.h>

#include <algorithm>

#include "runtime/futex.hh"

namespace tnbc::model {

LoadWatch::LoadWatch() : host_(host_cpu()), own_s_(process_cpu_s()), wall_ns_(futex::now_ns()) {}

CalibrationLoad LoadWatch::finish(MPI_Comm world) const {
  const double own = process_cpu_s() - own_s_;
  const HostCpu now = host_cpu();
  const double wall_s = static_cast<double>(futex::now_ns() - wall_ns_) / 1e9;
  int rank = 0;
  PMPI_Comm_rank(world, &rank);
  // The ranks on this kernel: their CPU time together, at its first rank.
  MPI_Comm same = MPI_COMM_NULL;
  double ours = own;
  int first = 0;
  if (PMPI_Comm_split(world, static_cast<int>(kernel_id() & 0x7fffffff), rank, &same) == MPI_SUCCESS) {
    PMPI_Reduce(&own, &ours, 1, MPI_DOUBLE, MPI_SUM, 0, same);
    PMPI_Comm_rank(same, &first);
    PMPI_Comm_free(&same);
  }
  // Each machine's shares, at its first rank (the others offer -1), then the largest. Its CPU
  // time neither idle nor stolen was busy; what of it the ranks did not use, others did.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const bool counts = first == 0 && host_.known && now.known && wall_s > 0 && cpus > 0;
  const double cpu_s = wall_s * static_cast<double>(std::max(1L, cpus));
  const double stolen = now.steal_s - host_.steal_s, busy = cpu_s - (now.idle_s - host_.idle_s) - stolen;
  struct {
    double share;
    int rank;
  } others{counts ? std::max(0.0, busy - ours) / cpu_s : -1.0, rank}, worst{-1.0, -1};
  double steal = counts ? std::max(0.0, stolen) / cpu_s : -1.0, most_steal = -1.0;
  PMPI_Allreduce(&others, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, world);
  PMPI_Allreduce(&steal, &most_steal, 1, MPI_DOUBLE, MPI_MAX, world);
  return {worst.share, most_steal, worst.share >= 0 ? worst.rank : -1};
}

}  // namespace tnbc::model
