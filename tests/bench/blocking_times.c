/* The blocking collectives' times the cost model predicts (docs/benchmarks.md, "The cost model
 * against measurements"): MPI_Bcast and MPI_Alltoall at each size, the sizes and kinds
 * interleaved within every iteration, each call after a barrier, timed on every rank; per call
 * the slowest rank's time, then the median over the iterations. Run it without tnbc (the calls
 * are the MPI library's own); the model's prediction for the same run: `tnbc model`
 * (tests/bench/model_validation.py compares them).
 *
 * The order of the cases within an iteration (--order): a case's time depends on the call before
 * it (a 64 KiB MPI_Bcast right after a 16 MiB MPI_Alltoall finds cold caches and takes 3-5x its
 * time after a small call; docs/benchmarks.md, session 15), so
 *   permuted (default)  every iteration runs its cases in a fresh order, a permutation drawn from
 *                       --seed (splitmix64, Fisher-Yates; rank 0's seed, broadcast, so every
 *                       rank calls the same collective at the same step): every case follows
 *                       random predecessors and the median mixes their states;
 *   cyclic              the cases in their fixed cyclic order (Bcast s, Alltoall s, Bcast s+1,
 *                       ...), rotated by one per iteration: every case always follows the same
 *                       one (the order before session 15; reproduces earlier figures).
 * A first, untimed round runs the cases in the cyclic order (no rotation) in both.
 * usage: blocking_times [--sizes 64k,256k,1m,4m,16m] [--iterations N (default 9)]
 *                       [--order permuted|cyclic] [--seed N (default 1)] [--json FILE]
 */
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_mpi.h"

#define MAX_SIZES 16
#define USAGE                                                                                   \
  "usage: blocking_times [--sizes 64k,256k,1m,4m,16m] [--iterations N] [--order permuted|cyclic] " \
  "[--seed N] [--json FILE]\n"

/* splitmix64: a small PRNG whose sequence depends only on the seed (equal on every rank). */
static uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A decimal seed (no sign) into *seed: 0, or 1 when `text` is not one. */
static int parse_seed(const char* text, unsigned long long* seed) {
  char* end = NULL;
  *seed = strtoull(text, &end, 10);
  return end == text || *end != '\0' || text[0] == '-';
}

/* The order of one iteration's cases into order[0..cases): iteration -1 (the untimed first
 * round) and every cyclic one the cases from `it` on cyclically; a permuted one a fresh
 * Fisher-Yates shuffle drawn from `state`. */
static void iteration_order(int* order, int cases, int it, int permuted, uint64_t* state) {
  for (int k = 0; k < cases; k++) order[k] = (k + (it < 0 ? 0 : it)) % cases;
  if (!permuted || it < 0) return;
  for (int k = cases - 1; k > 0; k--) {
    const int other = (int)(next_random(state) % (uint64_t)(k + 1));
    const int keep = order[k];
    order[k] = order[other];
    order[other] = keep;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  size_t sizes[MAX_SIZES];
  int nsizes = 0, iterations = 9, bad = 0;
  const char* json = NULL;
  char list[256] = "64k,256k,1m,4m,16m";
  int permuted = 1;
  unsigned long long seed = 1;
  static const struct option opts[] = {{"sizes", required_argument, 0, 's'}, {"iterations", required_argument, 0, 'i'},
                                       {"order", required_argument, 0, 'o'},  {"seed", required_argument, 0, 'r'},
                                       {"json", required_argument, 0, 'j'},   {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 's') snprintf(list, sizeof list, "%s", optarg);
    else if (c == 'i') bad |= (iterations = atoi(optarg)) < 1;
    else if (c == 'j') json = optarg;
    else if (c == 'o' && strcmp(optarg, "permuted") == 0) permuted = 1;
    else if (c == 'o' && strcmp(optarg, "cyclic") == 0) permuted = 0;
    else if (c == 'r') bad |= parse_seed(optarg, &seed);
    else bad = 1;
  }
  nsizes = bench_parse_sizes(list, sizes, MAX_SIZES);
  if (bad || nsizes <= 0) {
    if (rank == 0) fprintf(stderr, USAGE);
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
  /* Rank 0's seed on every rank: the ranks must call the same collective at every step. */
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  uint64_t state = (uint64_t)seed;
  const int cases = 2 * nsizes;
  double* t = calloc((size_t)cases * (size_t)iterations, sizeof(double));
  int* orders = calloc((size_t)cases * (size_t)iterations, sizeof(int)); /* per timed iteration */
  int order[2 * MAX_SIZES];
  for (int it = -1; it < iterations; it++) { /* -1: warm-up */
    iteration_order(order, cases, it, permuted, &state);
    if (it >= 0) memcpy(orders + (size_t)it * (size_t)cases, order, (size_t)cases * sizeof(int));
    for (int k = 0; k < cases; k++) {
      const int which = order[k];
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
  bench_json_str(&j, "order", permuted ? "permuted" : "cyclic");
  bench_json_int(&j, "seed", (long long)seed);
  bench_json_end(&j);
  /* Per timed iteration the cases in the order they ran (case 2 s: Bcast of the s-th size,
   * 2 s + 1: its Alltoall), so that a case's predecessors can be read back. */
  bench_json_array(&j, "orders");
  for (int it = 0; it < iterations; it++) {
    bench_json_array(&j, NULL);
    for (int k = 0; k < cases; k++) bench_json_int(&j, NULL, orders[(size_t)it * (size_t)cases + (size_t)k]);
    bench_json_end(&j);
  }
  bench_json_end(&j);
  bench_json_array(&j, "results");
  if (rank == 0) {
    printf("blocking_times: np=%d, %d iterations, order %s", np, iterations, permuted ? "permuted" : "cyclic");
    if (permuted) printf(" (seed %llu)", seed);
    printf(" (median of the slowest rank's time)\n");
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
  free(orders);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
