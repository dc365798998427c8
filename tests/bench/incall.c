/* tnbc's in-call path against PMPI_* (issue: architecture step, item 8; docs/benchmarks.md,
 * "The in-call path"). Run in mode optimize with a profile that says no call site gains from an
 * early return (incall_bench.py makes it), every intercepted call completes tnbc's own schedule
 * inside the call; this program times it against the library's own collective on the same
 * buffers, interleaved in one run: for each size, `--reps` blocks, each of `--calls` intercepted
 * calls (MPI_*) and `--calls` plain ones (PMPI_*), in rotated order, a barrier before each
 * block. The received data is read after every call (as NPB FT/IS do; it also gives the trace
 * pass the first touches its decision needs). Alltoall also runs, interleaved, the floor of
 * tnbc's messages: the same head/body pieces/tail per peer (runtime/schedule.hh, piece size auto)
 * posted at once through PMPI_Irecv/PMPI_Isend and PMPI_Waitall, which is what any schedule made
 * of those messages costs on this MPI library at least.
 *
 * usage: incall [--kind alltoall|alltoallv|bcast|allgather] [--sizes 64k,256k,1M,4M] [--skew H]
 *               [--reps N] [--calls N] [--json FILE]
 * Sizes are per peer (Alltoall, Allgather: each rank's block) or the whole message (Bcast).
 * Alltoallv: the size is the mean block; with --skew H the ranks of the middle half receive H
 * times the block of the others from every peer (NPB IS's buckets: a few ranks receive most),
 * the mean block unchanged (H = 1: every block alike).
 * Prints per size the median time per call of each (max over ranks), the median over blocks of
 * the per-block ratio MPI_/PMPI_, and its interquartile range. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_mpi.h"

enum { ALLTOALL, BCAST, ALLGATHER, ALLTOALLV };
static int kind = ALLTOALL;
static int rank, np;
static volatile long sink;
static double skew = 1;
/* Alltoallv: the blocks every rank sends to rank j (the same from every peer), their offsets. */
static int *v_counts, *v_displs, *v_rcounts, *v_rdispls;

static int heavy(int j) { return np >= 2 && j >= np / 4 && j < np / 4 + (np + 1) / 2; }

/* The blocks of an Alltoallv of mean block `per`: heavy ranks' weight 2H/(H+1), the others' 2/(H+1)
 * where half the ranks are heavy (their mean 1 then); the bytes received and sent per call. */
static size_t alltoallv_layout(size_t per) {
  int heavies = 0;
  for (int j = 0; j < np; j++) heavies += heavy(j);
  const double w_light = np / (heavies * skew + (np - heavies)), w_heavy = skew * w_light;
  size_t sent = 0;
  for (int j = 0; j < np; j++) {
    v_counts[j] = (int)((heavy(j) ? w_heavy : w_light) * (double)per);
    v_displs[j] = (int)sent;
    sent += (size_t)v_counts[j];
  }
  for (int p = 0; p < np; p++) {
    v_rcounts[p] = v_counts[rank];
    v_rdispls[p] = p * v_counts[rank];
  }
  return sent > (size_t)np * (size_t)v_counts[rank] ? sent : (size_t)np * (size_t)v_counts[rank];
}

static void same_messages(char* s, char* r, size_t per);

/* intercepted: 1 MPI_* (tnbc), 0 PMPI_*, 2 tnbc's messages through plain MPI (Alltoall). */
static void call(int intercepted, char* s, char* r, size_t per) {
  const int n = (int)per;
  if (intercepted == 2) {
    same_messages(s, r, per);
    return;
  }
  switch (kind) {
    case ALLTOALL:
      (intercepted ? MPI_Alltoall : PMPI_Alltoall)(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case ALLTOALLV:
      (intercepted ? MPI_Alltoallv : PMPI_Alltoallv)(s, v_counts, v_displs, MPI_BYTE, r, v_rcounts, v_rdispls, MPI_BYTE,
                                                     MPI_COMM_WORLD);
      break;
    case ALLGATHER:
      (intercepted ? MPI_Allgather : PMPI_Allgather)(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
      break;
    default:
      (intercepted ? MPI_Bcast : PMPI_Bcast)(r, n, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
  long x = 0;
  const size_t total = kind == BCAST ? per : kind == ALLTOALLV ? (size_t)np * (size_t)v_counts[rank] : per * (size_t)np;
  for (size_t i = 0; i < total; i += 512) x += r[i];
  sink = x;
}

/* A call of the same kind and sizes from a site of its own whose received data is never read: the
 * trace pass sees no first touch there, so mode optimize returns early at it (no estimate). With
 * one site of the kind that returns early, neither the whole program nor the measured site's calls
 * run as the MPI library's own (trace/plain_run.hh, ReadOrderSource::plain): the measured site
 * completes tnbc's schedule in the call, which is what this program times. */
static __attribute__((noinline)) void decoy(char* s, char* unread, size_t per) {
  const int n = (int)per;
  switch (kind) {
    case ALLTOALL: MPI_Alltoall(s, n, MPI_BYTE, unread, n, MPI_BYTE, MPI_COMM_WORLD); break;
    case ALLTOALLV:
      MPI_Alltoallv(s, v_counts, v_displs, MPI_BYTE, unread, v_rcounts, v_rdispls, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case ALLGATHER: MPI_Allgather(s, n, MPI_BYTE, unread, n, MPI_BYTE, MPI_COMM_WORLD); break;
    default: MPI_Bcast(unread, n, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
}

/* tnbc's cut of a sub-message of `len` bytes with TNBC_PIECE_BYTES=auto (split_points, body_cuts,
 * piece_limit: runtime/schedule.cc): returns the number of cut points written to `cuts`. */
static int tnbc_cuts(size_t len, size_t page, size_t* cuts) {
  int n = 0;
  cuts[n++] = 0;
  if (len > 2 * page) {
    cuts[n++] = page;
    size_t limit = len / 4 / page * page;
    if (limit < 128 * 1024) limit = 128 * 1024;
    const size_t pages = (len - 2 * page + page - 1) / page, lp = limit / page;
    size_t count = (pages + lp - 1) / lp;
    if (count < 1) count = 1;
    if (count > 126) count = 126;
    const size_t step = (pages + count - 1) / count * page;
    for (size_t at = page + step; at < len - page; at += step) cuts[n++] = at;
    cuts[n++] = len - page;
  }
  cuts[n++] = len;
  return n;
}

/* tnbc's messages for an Alltoall of `per` bytes per peer, through plain MPI. */
static void same_messages(char* s, char* r, size_t per) {
  size_t cuts[130];
  const int nc = tnbc_cuts(per, 4096, cuts);
  MPI_Request* q = malloc(sizeof(MPI_Request) * (size_t)(2 * np * nc));
  int nq = 0;
  for (int p = 0; p < np; p++)
    for (int i = 0; p != rank && i + 1 < nc; i++)
      PMPI_Irecv(r + (size_t)p * per + cuts[i], (int)(cuts[i + 1] - cuts[i]), MPI_BYTE, p, i, MPI_COMM_WORLD, &q[nq++]);
  for (int p = 0; p < np; p++)
    for (int i = 0; p != rank && i + 1 < nc; i++)
      PMPI_Isend(s + (size_t)p * per + cuts[i], (int)(cuts[i + 1] - cuts[i]), MPI_BYTE, p, i, MPI_COMM_WORLD, &q[nq++]);
  memcpy(r + (size_t)rank * per, s + (size_t)rank * per, per);
  PMPI_Waitall(nq, q, MPI_STATUSES_IGNORE);
  free(q);
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
                                       {"skew", required_argument, 0, 'w'},
                                       {"json", required_argument, 0, 'j'}, {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'k')
      kind = !strcmp(optarg, "bcast")       ? BCAST
             : !strcmp(optarg, "allgather") ? ALLGATHER
             : !strcmp(optarg, "alltoallv") ? ALLTOALLV
                                            : ALLTOALL;
    else if (c == 'w') bad |= (skew = atof(optarg)) < 1;
    else if (c == 's') sizes = optarg;
    else if (c == 'r') bad |= (reps = atoi(optarg)) < 1;
    else if (c == 'c') bad |= (calls = atoi(optarg)) < 1;
    else if (c == 'j') json = optarg;
    else bad = 1;
  }
  if (bad || optind < argc) {
    if (rank == 0)
      fprintf(stderr,
              "usage: incall [--kind alltoall|alltoallv|bcast|allgather] [--sizes LIST] [--skew H] [--reps N] [--calls N] "
              "[--json F]\n");
    MPI_Finalize();
    return 2;
  }
  static const char* kind_name[] = {"alltoall", "bcast", "allgather", "alltoallv"};
  v_counts = calloc((size_t)4 * (size_t)np, sizeof(int));
  v_displs = v_counts + np, v_rcounts = v_counts + 2 * np, v_rdispls = v_counts + 3 * np;
  bench_json j;
  if (bench_json_open(&j, rank == 0 ? json : NULL, "incall") != 0) PMPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  bench_json_object(&j, "parameters");
  bench_json_str(&j, "kind", kind_name[kind]);
  bench_json_int(&j, "np", np);
  if (kind == ALLTOALLV) bench_json_num(&j, "skew", skew);
  bench_json_int(&j, "reps", reps);
  bench_json_int(&j, "calls_per_block", calls);
  bench_json_end(&j);
  if (rank == 0) {
    printf("incall: MPI_%s, np %d, %d blocks of %d calls each way, interleaved; time per call (max over ranks)\n",
           kind_name[kind], np, reps, calls);
    bench_print_tnbc(stdout);
    printf("  %-10s %12s %12s %8s %16s %14s\n", "size", "MPI_ us", "PMPI_ us", "ratio", "ratio IQR",
           kind == ALLTOALL ? "floor of msgs" : "");
  }
  bench_json_array(&j, "results");
  char list[256];
  snprintf(list, sizeof list, "%s", sizes);
  for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    const size_t per = bench_parse_bytes(tok);
    const size_t total = kind == BCAST ? per : kind == ALLTOALLV ? alltoallv_layout(per) : per * (size_t)np;
    char* s = malloc(kind == ALLGATHER ? per : total);
    char* r = malloc(total);
    memset(s, rank + 1, kind == ALLGATHER ? per : total);
    memset(r, 0, total);
    char* unread = malloc(total);
    memset(unread, 0, total);
    decoy(s, unread, per);
    const int cases = kind == ALLTOALL ? 3 : 2;              /* 0 MPI_, 1 PMPI_, 2 the same messages */
    double* t = calloc((size_t)3 * reps, sizeof(double));  /* t[case * reps + b] */
    for (int w = 0; w < cases; w++) call(w == 0 ? 1 : w == 1 ? 0 : 2, s, r, per);  /* warm-up */
    for (int b = 0; b < reps; b++)
      for (int k = 0; k < cases; k++) {
        const int w = (k + b) % cases;  /* rotated: no case always runs first */
        PMPI_Barrier(MPI_COMM_WORLD);
        const double t0 = bench_now();
        for (int i = 0; i < calls; i++) call(w == 0 ? 1 : w == 1 ? 0 : 2, s, r, per);
        t[w * reps + b] = (bench_now() - t0) / calls;
      }
    bench_max_over_ranks(t, t, 3 * reps);
    double* ratio = malloc(sizeof(double) * (size_t)reps);
    double* floor_ratio = malloc(sizeof(double) * (size_t)reps);
    for (int b = 0; b < reps; b++) ratio[b] = t[b] / t[reps + b];
    for (int b = 0; b < reps; b++) floor_ratio[b] = t[2 * reps + b] / t[reps + b];
    const double floor_med = cases == 3 ? bench_median(floor_ratio, reps) : 0;
    qsort(ratio, (size_t)reps, sizeof(double), cmp);
    const double us_mpi = bench_median_of(t, reps) * 1e6, us_pmpi = bench_median_of(t + reps, reps) * 1e6;
    const double med = quantile(ratio, reps, 0.5), q1 = quantile(ratio, reps, 0.25), q3 = quantile(ratio, reps, 0.75);
    if (rank == 0) {
      printf("  %-10s %12.1f %12.1f %8.3f %7.3f-%-7.3f", tok, us_mpi, us_pmpi, med, q1, q3);
      if (cases == 3) printf(" %13.3f", floor_med);
      printf("\n");
    }
    bench_json_object(&j, NULL);
    bench_json_int(&j, "bytes", (long long)per);
    bench_json_num(&j, "mpi_us_per_call", us_mpi);
    bench_json_num(&j, "pmpi_us_per_call", us_pmpi);
    bench_json_num(&j, "ratio_median", med);
    bench_json_num(&j, "ratio_q1", q1);
    bench_json_num(&j, "ratio_q3", q3);
    bench_json_nums(&j, "mpi_s", t, reps);
    bench_json_nums(&j, "pmpi_s", t + reps, reps);
    if (cases == 3) {
      bench_json_num(&j, "same_messages_ratio_median", floor_med);
      bench_json_nums(&j, "same_messages_s", t + 2 * reps, reps);
    }
    bench_json_end(&j);
    free(ratio), free(floor_ratio), free(t), free(s), free(r), free(unread);
  }
  bench_json_end(&j);
  bench_json_close(&j);
  free(v_counts);
  MPI_Finalize();
  return 0;
}
