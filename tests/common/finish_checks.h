/* Test helper (MPI C programs): sums every rank's failed and total checks on rank 0, which
 * prints "<name>: N passed, M failed" (what run_mpi_test.py's --expect-output looks for), ends
 * MPI and returns the exit status: 0 when no check failed anywhere. */
#pragma once

#include <mpi.h>
#include <stdio.h>

static inline int finish_checks(const char* name, long bad, long checks) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long all_bad = 0, all_checks = 0;
  MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %ld passed, %ld failed\n", name, all_checks - all_bad, all_bad);
  MPI_Finalize();
  return all_bad != 0;
}
