// Where a rank runs, recorded at MPI_Init for the summary (docs/formats.md, `placement`): its
// host and the CPUs of its affinity mask. On a cluster this is the first thing to check (how
// many ranks per host, bound to which CPUs); the NPB harness and `tnbc report` group the ranks by
// host. Local only: no communication.
#pragma once

#include <sched.h>

#include <string>

namespace tnbc {

struct Placement {
  std::string host;    // gethostname()
  std::string cpus;    // affinity mask as a CPU list, "0-3,8"
  int cpu_count = 0;   // CPUs in it
};

Placement measure_placement();

// "0-3,8,10-11" (the kernel's cpulist format); "" for an empty set.
std::string cpu_list(const cpu_set_t& set);

}  // namespace tnbc
