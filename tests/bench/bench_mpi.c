#include "bench_mpi.h"

#include <string.h>

void bench_max_over_ranks(const double* in, double* out, int n) {
  PMPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

void bench_json_mpi_header(bench_json* j) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  PMPI_Get_library_version(version, &len);
  version[strcspn(version, "\n,")] = 0;   /* first line / clause: name and version */
  bench_json_machine(j, version);
  bench_json_tnbc(j);
}

double bench_timed_bcast_or_alltoall(int bcast, char* send, char* recv, size_t bytes) {
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now();
  if (bcast) MPI_Bcast(recv, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  else MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
  double mine = bench_now() - t0, worst = 0;
  PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
