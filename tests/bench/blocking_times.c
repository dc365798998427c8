/* The blocking collectives' times the cost model predicts (docs/benchmarks.md, "The cost model
 * against measurements"): MPI_Bcast and MPI_Alltoall at each size, the sizes and kinds
 * interleaved within every iteration (rotated, so none always runs first), each call after a
 * barrier, timed on every rank; per call the slowest rank's time, then the median over the
 * iterations. Run it without tnbc (the calls are the MPI library's own); the model's
 * prediction for the same run: `tnbc model` (tests/bench/model_validation.py compares them).
 * usage: blocking_times [--sizes 64k,256k,1m,4m,16m] [--iterations N (default 9)] [--json FILE]
 */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_mpi.h"

#define MAX_SIZES 16

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  size_t sizes[MAX_SIZES];
  int nsizes = 0, iterations = 9, bad = 0;
  const char* json = NULL;
  char list[256] = "64k,256k,1m,4m,16m";
  static const struct option opts[] = {{"sizes", required_argument, 0, 's'}, {"iterations", required_argument, 0, 'i'},
                                       {"json", required_argument, 0, 'j'}, {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 's') snprintf(list, sizeof list, "%s", optarg);
    else if (c == 'i') bad |= (iterations = atoi(optarg)) < 1;
    else if (c == 'j') json = optarg;
    else bad = 1;
  }
  nsizes = bench_parse_sizes(list, sizes, MAX_SIZES);
  if (bad || nsizes <= 0) {
    if (rank == 0) fprintf(stderr, "usage: blocking_times [--sizes 64k,256k,1m,4m,16m] [--iterations N] [--json FILE]\n");
    MPI_Finalize();
    return 2;
  }
  size_t largest = 0;
  for (int s = 0; s < nsizes; s++) largest = sizes[s] > largest ? sizes[s] : largest;
  /* Alltoall: `size` bytes per peer; Bcast: `size` bytes. */
  char* send = malloc(largest * (size_t)np);
  char* recv = malloc(largest * (size_t)np);
  memset(send, rank + 1, largest * (size_t)np);
  memset(recv, 0, largest * (size_t)np);
  const int cases = 2 * nsizes;
  double* t = calloc((size_t)cases * (size_t)iterations, sizeof(double));
  for (int it = -1; it < iterations; it++) { /* -1: warm-up */
    for (int k = 0; k < cases; k++) {
      const int which = (k + (it < 0 ? 0 : it)) % cases;
      const size_t bytes = sizes[which / 2];
      const double worst = bench_timed_bcast_or_alltoall(which % 2 == 0, send, recv, bytes);
      if (it >= 0) t[(size_t)which * (size_t)iterations + (size_t)it] = worst;
    }
  }
  bench_json j;
  if (bench_json_open(&j, rank == 0 ? json : NULL, "blocking_times") != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  bench_json_object(&j, "parameters");
  bench_json_int(&j, "np", np);
  bench_json_int(&j, "iterations", iterations);
  bench_json_end(&j);
  bench_json_array(&j, "results");
  if (rank == 0) {
    printf("blocking_times: np=%d, %d iterations (median of the slowest rank's time)\n", np, iterations);
    bench_print_tnbc(stdout);
    printf("  %-9s %12s %12s\n", "kind", "bytes", "median us");
  }
  for (int which = 0; which < cases; which++) {
    const char* kind = which % 2 == 0 ? "bcast" : "alltoall";
    const double med = bench_median_of(t + (size_t)which * (size_t)iterations, iterations);
    if (rank == 0) printf("  %-9s %12zu %12.1f\n", kind, sizes[which / 2], med * 1e6);
    bench_json_object(&j, NULL);
    bench_json_str(&j, "kind", kind);
    bench_json_int(&j, "bytes", (long long)sizes[which / 2]);
    bench_json_num(&j, "median_s", med);
    bench_json_nums(&j, "times_s", t + (size_t)which * (size_t)iterations, iterations);
    bench_json_end(&j);
  }
  bench_json_close(&j);
  free(t);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
