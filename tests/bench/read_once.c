/* The worst case for an early return: the program reads every received byte right after the call
 * (docs/benchmarks.md, "RMA broadcast", session 13; read_once.py runs it). In mode nbc with
 * TNBC_MIN_BYTES=auto the cost model decides per size whether a call returns early; where it
 * does, the program gains nothing here and pays whatever tnbc's schedule costs more than the MPI
 * library's own call. This times, per kind and size, `--reps` blocks of `--calls` intercepted
 * calls (MPI_*: tnbc) and `--calls` plain ones (PMPI_*: the library's), each call followed by a
 * read of every received byte, the blocks interleaved in rotated order with a barrier before
 * each. Every read checks the data: each page of a block carries the call's stamp in its first
 * word (written by the sender before the call), every other word its sender, receiver and place.
 *
 * usage: read_once [--kinds bcast,alltoall,alltoallv] [--sizes 64k,256k,1M,4M] [--reps N]
 *                  [--calls N] [--json FILE]
 * Sizes are per peer (Alltoall, Alltoallv: each block) or the whole message (Bcast, root 0).
 * Prints per kind and size the median time per call of each (max over ranks), the median over
 * blocks of the per-block ratio MPI_/PMPI_ with its range, and the time inside MPI_ over the time
 * inside PMPI_ (medians of the slowest rank's; whether a call returned early: read_once.py reads
 * the model's sizes from the summaries). Exit 1 on wrong data. */
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_mpi.h"

enum { BCAST, ALLTOALL, ALLTOALLV, KINDS };
static const char* kind_name[KINDS] = {"bcast", "alltoall", "alltoallv"};
enum { WORDS_PER_PAGE = 512 };  /* 4 KiB of 64-bit words: one stamp per page */
static int rank, np;
static long long bad;  /* words read that differ from what was sent */

/* The word at index i of the block `src` sends to `dst` (not a page's first word). */
static uint64_t word(int src, int dst, size_t i) { return ((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ i; }
static uint64_t stamp(int src, uint64_t call) { return (call << 8) | (uint64_t)src; }

/* Fills a block of `words` from `src` to `dst` once; stamps are written before each call. */
static void fill(uint64_t* b, size_t words, int src, int dst) {
  for (size_t i = 0; i < words; i++) b[i] = word(src, dst, i);
}
static void stamp_block(uint64_t* b, size_t words, int src, uint64_t call) {
  for (size_t i = 0; i < words; i += WORDS_PER_PAGE) b[i] = stamp(src, call);
}
/* Reads every word of a received block and counts the ones that differ. */
static void read_block(const uint64_t* b, size_t words, int src, int dst, uint64_t call) {
  long long wrong = 0;
  for (size_t p = 0; p < words; p += WORDS_PER_PAGE) {
    wrong += b[p] != stamp(src, call);
    const size_t end = p + WORDS_PER_PAGE < words ? p + WORDS_PER_PAGE : words;
    for (size_t i = p + 1; i < end; i++) wrong += b[i] != word(src, dst, i);
  }
  bad += wrong;
}

struct buffers {
  uint64_t *s, *r;
  size_t words;  /* per block */
  int *counts, *displs;
};

/* One call (intercepted: MPI_*, else PMPI_*) after the program's stamps, and the read of every
 * received byte; adds the time inside the MPI call to *in_call. */
static void call(int kind, int intercepted, struct buffers* b, uint64_t n, double* in_call) {
  const size_t w = b->words;
  const int bytes = (int)(w * 8);
  if (kind == BCAST && rank == 0) stamp_block(b->r, w, 0, n);
  if (kind != BCAST)
    for (int d = 0; d < np; d++) stamp_block(b->s + (size_t)d * w, w, rank, n);
  const double t0 = bench_now();
  if (kind == BCAST)
    (intercepted ? MPI_Bcast : PMPI_Bcast)(b->r, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  else if (kind == ALLTOALL)
    (intercepted ? MPI_Alltoall : PMPI_Alltoall)(b->s, bytes, MPI_BYTE, b->r, bytes, MPI_BYTE, MPI_COMM_WORLD);
  else
    (intercepted ? MPI_Alltoallv : PMPI_Alltoallv)(b->s, b->counts, b->displs, MPI_BYTE, b->r, b->counts, b->displs,
                                                   MPI_BYTE, MPI_COMM_WORLD);
  *in_call += bench_now() - t0;
  if (kind == BCAST) read_block(b->r, w, 0, 0, n);
  else
    for (int src = 0; src < np; src++) read_block(b->r + (size_t)src * w, w, src, rank, n);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char *sizes = "64k,256k,1M,4M", *kinds = "bcast,alltoall", *json = NULL;
  int reps = 7, calls = 4, usage = 0;
  static const struct option opts[] = {{"kinds", required_argument, 0, 'k'}, {"sizes", required_argument, 0, 's'},
                                       {"reps", required_argument, 0, 'r'},  {"calls", required_argument, 0, 'c'},
                                       {"json", required_argument, 0, 'j'},  {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'k') kinds = optarg;
    else if (c == 's') sizes = optarg;
    else if (c == 'r') usage |= (reps = atoi(optarg)) < 1;
    else if (c == 'c') usage |= (calls = atoi(optarg)) < 1;
    else if (c == 'j') json = optarg;
    else usage = 1;
  }
  int want[KINDS] = {0};
  char klist[128];
  snprintf(klist, sizeof klist, "%s", kinds);
  for (char* tok = strtok(klist, ","); tok && !usage; tok = strtok(NULL, ",")) {
    int k = 0;
    while (k < KINDS && strcmp(tok, kind_name[k])) k++;
    if (k == KINDS) usage = 1;
    else want[k] = 1;
  }
  if (usage || optind < argc) {
    if (rank == 0)
      fprintf(stderr, "usage: read_once [--kinds bcast,alltoall,alltoallv] [--sizes LIST] [--reps N] [--calls N] "
                      "[--json F]\n");
    MPI_Finalize();
    return 2;
  }
  bench_json j;
  if (bench_json_open(&j, rank == 0 ? json : NULL, "read_once") != 0) PMPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  bench_json_object(&j, "parameters");
  bench_json_int(&j, "np", np);
  bench_json_int(&j, "reps", reps);
  bench_json_int(&j, "calls_per_block", calls);
  bench_json_end(&j);
  if (rank == 0) {
    printf("read_once: np %d, %d blocks of %d calls each way, interleaved; every byte read after each call; "
           "time per call (max over ranks)\n", np, reps, calls);
    bench_print_tnbc(stdout);
    printf("  %-10s %-10s %11s %11s %8s %16s %12s\n", "kind", "size", "MPI_ us", "PMPI_ us", "ratio", "ratio min-max",
           "MPI_ in call");
  }
  bench_json_array(&j, "results");
  uint64_t n = 0;  /* calls so far: every rank alike */
  for (int kind = 0; kind < KINDS; kind++) {
    if (!want[kind]) continue;
    char list[256];
    snprintf(list, sizeof list, "%s", sizes);
    char* save = NULL;
    for (char* tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      const size_t per = bench_parse_bytes(tok) / 8 * 8;
      if (per == 0 || per * 8 > (size_t)1 << 31) {
        if (rank == 0) fprintf(stderr, "read_once: bad size '%s'\n", tok);
        PMPI_Abort(MPI_COMM_WORLD, 2);
      }
      struct buffers b = {0};
      b.words = per / 8;
      const size_t blocks = kind == BCAST ? 1 : (size_t)np;
      b.s = malloc(per * blocks);
      b.r = malloc(per * blocks);
      b.counts = malloc(sizeof(int) * (size_t)np);
      b.displs = malloc(sizeof(int) * (size_t)np);
      for (int p = 0; p < np; p++) b.counts[p] = (int)per, b.displs[p] = (int)(per * (size_t)p);
      if (kind == BCAST) fill(b.r, b.words, 0, 0);
      else
        for (int d = 0; d < np; d++) fill(b.s + (size_t)d * b.words, b.words, rank, d);
      memset(kind == BCAST ? b.s : b.r, 0, kind == BCAST ? per : per * blocks);
      double* t = calloc((size_t)4 * reps, sizeof(double));  /* [MPI_ | PMPI_ | MPI_ in call | PMPI_ in call][rep] */
      double ignored = 0;
      for (int w = 0; w < 2; w++) call(kind, w == 0, &b, ++n, &ignored);  /* warm-up */
      for (int rep = 0; rep < reps; rep++)
        for (int k = 0; k < 2; k++) {
          const int w = (k + rep) % 2;  /* 0: MPI_, 1: PMPI_; rotated */
          double in_call = 0;
          PMPI_Barrier(MPI_COMM_WORLD);
          const double t0 = bench_now();
          for (int i = 0; i < calls; i++) call(kind, w == 0, &b, ++n, &in_call);
          t[w * reps + rep] = (bench_now() - t0) / calls;
          t[(2 + w) * reps + rep] = in_call / calls;
        }
      bench_max_over_ranks(t, t, 4 * reps);
      double* ratio = malloc(sizeof(double) * (size_t)reps);
      for (int rep = 0; rep < reps; rep++) ratio[rep] = t[rep] / t[reps + rep];
      const double med = bench_median(ratio, reps);  /* sorts: ratio[0] and ratio[reps - 1] are the range */
      const double us_mpi = bench_median_of(t, reps) * 1e6, us_pmpi = bench_median_of(t + reps, reps) * 1e6;
      const double in_mpi = bench_median_of(t + 2 * reps, reps), in_pmpi = bench_median_of(t + 3 * reps, reps);
      const double in_call_share = in_pmpi > 0 ? in_mpi / in_pmpi : 0;
      if (rank == 0)
        printf("  %-10s %-10s %11.1f %11.1f %8.3f %7.3f-%-8.3f %11.0f%%\n", kind_name[kind], tok, us_mpi, us_pmpi, med,
               ratio[0], ratio[reps - 1], 100 * in_call_share);
      bench_json_object(&j, NULL);
      bench_json_str(&j, "kind", kind_name[kind]);
      bench_json_int(&j, "bytes", (long long)per);
      bench_json_num(&j, "mpi_us_per_call", us_mpi);
      bench_json_num(&j, "pmpi_us_per_call", us_pmpi);
      bench_json_num(&j, "ratio_median", med);
      bench_json_num(&j, "ratio_min", ratio[0]);
      bench_json_num(&j, "ratio_max", ratio[reps - 1]);
      bench_json_num(&j, "mpi_in_call_over_pmpi", in_call_share);
      bench_json_nums(&j, "mpi_s", t, reps);
      bench_json_nums(&j, "pmpi_s", t + reps, reps);
      bench_json_end(&j);
      free(ratio), free(t), free(b.s), free(b.r), free(b.counts), free(b.displs);
    }
  }
  bench_json_end(&j);
  long long all_bad = 0;
  PMPI_Allreduce(&bad, &all_bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("data: %s (%lld wrong words)\n", all_bad ? "WRONG" : "verified", all_bad);
  bench_json_bool(&j, "data_verified", all_bad == 0);
  bench_json_close(&j);
  MPI_Finalize();
  return all_bad ? 1 : 0;
}
