/* MPI-side helpers shared by the MPI benchmark programs. They call PMPI_* only, so that with
 * libtnbc.so preloaded the measured calls are the only ones tnbc sees. */
#pragma once

#include <mpi.h>

#include "bench_common.h"

/* out[i] = max over the ranks of MPI_COMM_WORLD of in[i] (on every rank; in == out allowed). */
void bench_max_over_ranks(const double* in, double* out, int n);
/* "machine" (with the MPI library's version) and "tnbc" for the JSON file. */
void bench_json_mpi_header(bench_json* j);
/* One MPI_Bcast (root 0) of `bytes` from recv, or one MPI_Alltoall of `bytes` per peer, after a
 * barrier: the slowest rank's time, s, on every rank. The call itself is MPI_* (what tnbc, if
 * preloaded, intercepts); the barrier and the maximum are PMPI_*. */
double bench_timed_bcast_or_alltoall(int bcast, char* send, char* recv, size_t bytes);
