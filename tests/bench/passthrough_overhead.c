/* Cost of tnbc on calls it lets through (issue: benchmark suite, "pass-through cost").
 * In one run, interleaved in blocks: 8-byte MPI_Bcast and small MPI_Alltoall through the
 * intercepted entry points (MPI_*) and straight to the library (PMPI_*). With libtnbc.so
 * preloaded the ratio is tnbc's overhead on calls below its threshold; without it, ~1.00.
 * usage: passthrough_overhead [--calls N (per block, default 2000)] [--blocks N (default 10)]
 *                             [--json FILE]
 */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "bench_mpi.h"

enum { BCAST_MPI, BCAST_PMPI, ALLTOALL_MPI, ALLTOALL_PMPI, NCASES };

static void run_case(int which, int calls, double* word, int* s, int* r) {
  for (int i = 0; i < calls; i++) {
    switch (which) {
      case BCAST_MPI: MPI_Bcast(word, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
      case BCAST_PMPI: PMPI_Bcast(word, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
      case ALLTOALL_MPI: MPI_Alltoall(s, 4, MPI_INT, r, 4, MPI_INT, MPI_COMM_WORLD); break;
      default: PMPI_Alltoall(s, 4, MPI_INT, r, 4, MPI_INT, MPI_COMM_WORLD); break;
    }
  }
}

static void report(bench_json* j, const char* key, const char* label, const double* mpi, const double* pmpi,
                   int blocks, int calls, int rank) {
  double* ratio = malloc((size_t)blocks * sizeof(double));
  for (int b = 0; b < blocks; b++) ratio[b] = mpi[b] / pmpi[b];
  const double r = bench_median(ratio, blocks);
  const double us_mpi = bench_median_of(mpi, blocks) / calls * 1e6, us_pmpi = bench_median_of(pmpi, blocks) / calls * 1e6;
  if (rank == 0)
    printf("  %-26s %10.3f %10.3f %8.3f %+9.1f%%\n", label, us_mpi, us_pmpi, r, 100.0 * (r - 1.0));
  bench_json_object(j, key);
  bench_json_num(j, "mpi_us_per_call", us_mpi);
  bench_json_num(j, "pmpi_us_per_call", us_pmpi);
  bench_json_num(j, "ratio", r);
  bench_json_num(j, "overhead", r - 1.0);
  bench_json_end(j);
  free(ratio);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int calls = 2000, blocks = 10;
  const char* json = NULL;
  static const struct option opts[] = {{"calls", required_argument, 0, 'c'}, {"blocks", required_argument, 0, 'b'},
                                       {"json", required_argument, 0, 'j'}, {0, 0, 0, 0}};
  int c, bad = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'c') bad |= (calls = atoi(optarg)) < 1;
    else if (c == 'b') bad |= (blocks = atoi(optarg)) < 1;
    else if (c == 'j') json = optarg;
    else bad = 1;
  }
  if (bad || optind < argc) {
    if (rank == 0) fprintf(stderr, "usage: passthrough_overhead [--calls N] [--blocks N] [--json FILE]\n");
    MPI_Finalize();
    return 2;
  }
  double word = 1.0;
  int* s = calloc((size_t)np, 4 * sizeof(int));
  int* r = calloc((size_t)np, 4 * sizeof(int));
  double* t = calloc((size_t)NCASES * blocks, sizeof(double));   /* t[case * blocks + block] */
  for (int b = 0; b < blocks; b++) {
    for (int k = 0; k < NCASES; k++) {
      const int which = (k + b) % NCASES;   /* rotated: no case always runs first */
      PMPI_Barrier(MPI_COMM_WORLD);
      const double t0 = bench_now();
      run_case(which, calls, &word, s, r);
      t[which * blocks + b] = bench_now() - t0;
    }
  }
  bench_max_over_ranks(t, t, NCASES * blocks);

  bench_json j;
  if (bench_json_open(&j, rank == 0 ? json : NULL, "passthrough_overhead") != 0) PMPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  bench_json_object(&j, "parameters");
  bench_json_int(&j, "np", np);
  bench_json_int(&j, "calls_per_block", calls);
  bench_json_int(&j, "blocks", blocks);
  bench_json_end(&j);
  if (rank == 0) {
    printf("passthrough_overhead: np %d, %d blocks x %d calls, medians over blocks (max over ranks)\n", np, blocks,
           calls);
    bench_print_tnbc(stdout);
    printf("  %-26s %10s %10s %8s %10s\n", "call", "MPI_ us", "PMPI_ us", "ratio", "overhead");
  }
  bench_json_object(&j, "results");
  report(&j, "bcast_8B", "MPI_Bcast 8 B", &t[BCAST_MPI * blocks], &t[BCAST_PMPI * blocks], blocks, calls, rank);
  report(&j, "alltoall_16B_per_peer", "MPI_Alltoall 16 B/peer", &t[ALLTOALL_MPI * blocks], &t[ALLTOALL_PMPI * blocks],
         blocks, calls, rank);
  bench_json_end(&j);
  bench_json_close(&j);
  free(s);
  free(r);
  free(t);
  MPI_Finalize();
  return 0;
}
