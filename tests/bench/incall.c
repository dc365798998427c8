/* tnbc's in-call path against PMPI_* (issue: architecture step, item 8; docs/benchmarks.md,
 * "The in-call path"). Run in mode optimize with a profile that says no call site gains from an
 * early return (incall_bench.py makes it), every intercepted call completes tnbc's own schedule
 * inside the call; this program times it against the library's own collective on the same
 * buffers, interleaved in one run: for each size, `--reps` blocks, each of `--calls` intercepted
 * calls (MPI_*) and `--calls` plain ones (PMPI_*), in rotated order, a barrier before each
 * block. The received data is read after every call (as NPB FT/IS do; it also gives the trace
 * pass the first touches its decision needs).
 *
 * usage: incall [--kind alltoall|bcast|allgather] [--sizes 64k,256k,1M,4M] [--reps N] [--calls N]
 *               [--json FILE]
 * Sizes are per peer (Alltoall, Allgather: each rank's block) or the whole message (Bcast).
 * Prints per size the median time per call of each (max over ranks), the median over blocks of
 * the per-block ratio MPI_/PMPI_, and its interquartile range. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_mpi.h"

enum { ALLTOALL, BCAST, ALLGATHER };
static int kind = ALLTOALL;
static int rank, np;
static volatile long sink;

static void call(int intercepted, char* s, char* r, size_t per) {
  const int n = (int)per;
  switch (kind) {
    case ALLTOALL:
      (intercepted ? MPI_Alltoall : PMPI_Alltoall)(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case ALLGATHER:
      (intercepted ? MPI_Allgather : PMPI_Allgather)(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
      break;
    default:
      (intercepted ? MPI_Bcast : PMPI_Bcast)(r, n, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
  long x = 0;
  const size_t total = kind == BCAST ? per : per * (size_t)np;
  for (size_t i = 0; i < total; i += 512) x += r[i];
  sink = x;
}

static double quantile(double* v, int n, double q) {
  /* v sorted */
  const double at = q * (n - 1);
  const int lo = (int)at;
  return lo + 1 < n ? v[lo] + (at - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char* sizes = "64k,256k,1M,4M";
  const char* json = NULL;
  int reps = 7, calls = 10, bad = 0;
  static const struct option opts[] = {{"kind", required_argument, 0, 'k'},  {"sizes", required_argument, 0, 's'},
                                       {"reps", required_argument, 0, 'r'},  {"calls", required_argument, 0, 'c'},
                                       {"json", required_argument, 0, 'j'}, {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'k') kind = !strcmp(optarg, "bcast") ? BCAST : !strcmp(optarg, "allgather") ? ALLGATHER : ALLTOALL;
    else if (c == 's') sizes = optarg;
    else if (c == 'r') bad |= (reps = atoi(optarg)) < 1;
    else if (c == 'c') bad |= (calls = atoi(optarg)) < 1;
    else if (c == 'j') json = optarg;
    else bad = 1;
  }
  if (bad || optind < argc) {
    if (rank == 0)
      fprintf(stderr, "usage: incall [--kind alltoall|bcast|allgather] [--sizes LIST] [--reps N] [--calls N] [--json F]\n");
    MPI_Finalize();
    return 2;
  }
  static const char* kind_name[] = {"alltoall", "bcast", "allgather"};
  bench_json j;
  if (bench_json_open(&j, rank == 0 ? json : NULL, "incall") != 0) PMPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  bench_json_object(&j, "parameters");
  bench_json_str(&j, "kind", kind_name[kind]);
  bench_json_int(&j, "np", np);
  bench_json_int(&j, "reps", reps);
  bench_json_int(&j, "calls_per_block", calls);
  bench_json_end(&j);
  if (rank == 0) {
    printf("incall: MPI_%s, np %d, %d blocks of %d calls each way, interleaved; time per call (max over ranks)\n",
           kind_name[kind], np, reps, calls);
    bench_print_tnbc(stdout);
    printf("  %-10s %12s %12s %8s %16s\n", "size", "MPI_ us", "PMPI_ us", "ratio", "ratio IQR");
  }
  bench_json_array(&j, "results");
  char list[256];
  snprintf(list, sizeof list, "%s", sizes);
  for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    const size_t per = bench_parse_bytes(tok);
    const size_t total = kind == BCAST ? per : per * (size_t)np;
    char* s = malloc(kind == ALLGATHER ? per : total);
    char* r = malloc(total);
    memset(s, rank + 1, kind == ALLGATHER ? per : total);
    memset(r, 0, total);
    double* t = calloc((size_t)2 * reps, sizeof(double));  /* t[which * reps + b] */
    call(1, s, r, per);                                     /* warm-up: connections, pages, staging */
    call(0, s, r, per);
    for (int b = 0; b < reps; b++)
      for (int k = 0; k < 2; k++) {
        const int intercepted = (k + b) % 2 == 0;
        PMPI_Barrier(MPI_COMM_WORLD);
        const double t0 = bench_now();
        for (int i = 0; i < calls; i++) call(intercepted, s, r, per);
        t[(intercepted ? 0 : 1) * reps + b] = (bench_now() - t0) / calls;
      }
    bench_max_over_ranks(t, t, 2 * reps);
    double* ratio = malloc(sizeof(double) * (size_t)reps);
    for (int b = 0; b < reps; b++) ratio[b] = t[b] / t[reps + b];
    qsort(ratio, (size_t)reps, sizeof(double), cmp);
    const double us_mpi = bench_median_of(t, reps) * 1e6, us_pmpi = bench_median_of(t + reps, reps) * 1e6;
    const double med = quantile(ratio, reps, 0.5), q1 = quantile(ratio, reps, 0.25), q3 = quantile(ratio, reps, 0.75);
    if (rank == 0) printf("  %-10s %12.1f %12.1f %8.3f %7.3f-%-7.3f\n", tok, us_mpi, us_pmpi, med, q1, q3);
    bench_json_object(&j, NULL);
    bench_json_int(&j, "bytes", (long long)per);
    bench_json_num(&j, "mpi_us_per_call", us_mpi);
    bench_json_num(&j, "pmpi_us_per_call", us_pmpi);
    bench_json_num(&j, "ratio_median", med);
    bench_json_num(&j, "ratio_q1", q1);
    bench_json_num(&j, "ratio_q3", q3);
    bench_json_nums(&j, "mpi_s", t, reps);
    bench_json_nums(&j, "pmpi_s", t + reps, reps);
    bench_json_end(&j);
    free(ratio), free(t), free(s), free(r);
  }
  bench_json_end(&j);
  bench_json_close(&j);
  MPI_Finalize();
  return 0;
}
