// What other processes and the hypervisor took of the machines' CPUs while `tnbc calibrate`
// measured (runtime/host_cpu.hh): per kernel its ranks run on, over the CPUs those ranks may use
// (the union of their affinity masks: a job's cpuset on a shared node, not the whole node), the
// CPU time /proc/stat counts neither idle nor stolen less the CPU time of the calibrating ranks,
// and the stolen time, each as a share of those CPUs' time (wall time x CPUs). Quiet, the
// launcher's daemons and the kernel's threads take 1-2 % here (docs/benchmarks.md, "Session
// 30"). A calibration that shared its CPUs (a build beside it, another job on them) measures
// transfers and tnbc's own call slow, and every decision taken from the file prices early return
// wrongly; `tnbc calibrate` warns and the machine file keeps the figures
// (Machine::others_cpu_share, steal_share).
#pragma once

#include <mpi.h>

#include <vector>

#include "runtime/host_cpu.hh"

namespace tnbc::model {

struct CalibrationLoad {
  double others_share = -1;  // the largest over the machines; -1: unknown (no /proc/stat)
  double steal_share = -1;   // the largest over the machines; -1: unknown
  int rank = -1;             // a rank on the machine with the largest others_share
};

// Started on every rank of `world` when the measurements start; `finish` is collective.
class LoadWatch {
 public:
  LoadWatch();
  CalibrationLoad finish(MPI_Comm world) const;

 private:
  std::vector<CpuTimes> start_;
  double own_s_ = 0;
  long long wall_ns_ = 0;
};

}  // namespace tnbc::model
