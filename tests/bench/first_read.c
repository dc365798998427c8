/* Time until every rank has its first-read sub-message (node-level priorities, issue 19;
 * docs/benchmarks.md): MPI_Alltoall of SIZE bytes per peer, then each rank reads its blocks in
 * one order shared by all ranks (seq: 0..N-1; swap: N-1, 1, .., N-2, 0, the paper's {3,1,2,0}).
 * Per iteration, after a barrier: first = time from the call until the first block in the order
 * has been read through (every page touched: with tnbc, each touch waits for its data), all =
 * until every block has; the maximum over the ranks of each (the time until EVERY rank has it).
 * Prints the medians over the iterations (after one warm-up), and with --json writes them and
 * every iteration's values. Exit status 1 when a byte differs from what the blocking call gives.
 *
 * usage: first_read [--bytes SIZE] [--order seq|swap] [--iterations N] [--json FILE] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(const double* v, int n) {
  double* s = malloc(sizeof(double) * (size_t)n);
  memcpy(s, v, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), cmp);
  const double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  free(s);
  return m;
}

static unsigned char value(int from, int to, int it, size_t i) { return (unsigned char)(from * 29 + to * 7 + it + i); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t per = 1 << 20;
  int iters = 10, swap = 0;
  const char* json = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--bytes") && i + 1 < argc) {
      char* end;
      per = strtoull(argv[++i], &end, 10);
      if (*end == 'k' || *end == 'K') per <<= 10;
      if (*end == 'm' || *end == 'M') per <<= 20;
    } else if (!strcmp(argv[i], "--order") && i + 1 < argc) {
      swap = !strcmp(argv[++i], "swap");
    } else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iters = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else {
      if (me == 0) fprintf(stderr, "usage: first_read [--bytes SIZE] [--order seq|swap] [--iterations N] [--json FILE]\n");
      MPI_Finalize();
      return 2;
    }
  }
  int* order = malloc(sizeof(int) * (size_t)n);
  for (int k = 0; k < n; ++k) order[k] = k;
  if (swap && n > 1) {
    order[0] = n - 1;
    order[n - 1] = 0;
  }
  unsigned char* send = malloc(per * (size_t)n);
  double* first = malloc(sizeof(double) * (size_t)(iters + 1));
  double* all = malloc(sizeof(double) * (size_t)(iters + 1));
  long bad = 0;
  for (int it = 0; it <= iters; ++it) {
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < per; ++i) send[(size_t)p * per + i] = value(me, p, it, i);
    unsigned char* recv = malloc(per * (size_t)n); /* fresh each time: nothing cached in it */
    memset(recv, 0, per * (size_t)n);
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Alltoall(send, (int)per, MPI_BYTE, recv, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    double mine[2] = {0, 0};
    for (int k = 0; k < n; ++k) {
      const int p = order[k];
      const unsigned char* b = recv + (size_t)p * per;
      for (size_t i = 0; i < per; i += 512) bad += b[i] != value(p, me, it, i);
      bad += b[per - 1] != value(p, me, it, per - 1);
      if (k == 0) mine[0] = MPI_Wtime() - t0;
    }
    mine[1] = MPI_Wtime() - t0;
    double worst[2];
    PMPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    first[it] = worst[0] * 1e3;
    all[it] = worst[1] * 1e3;
    free(recv);
  }
  long bad_all = 0;
  PMPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) {
    const double mf = median(first + 1, iters), ma = median(all + 1, iters);
    printf("first_read np %d, %zu bytes per peer, order %s: first-read %.3f ms, all %.3f ms (medians of %d); %ld bytes differ\n",
           n, per, swap ? "swap" : "seq", mf, ma, iters, bad_all);
    if (json) {
      FILE* f = fopen(json, "w");
      if (f) {
        fprintf(f, "{\"np\": %d, \"bytes\": %zu, \"order\": \"%s\", \"first_ms\": %.4f, \"all_ms\": %.4f, \"first\": [", n, per,
                swap ? "swap" : "seq", mf, ma);
        for (int it = 1; it <= iters; ++it) fprintf(f, "%s%.4f", it > 1 ? ", " : "", first[it]);
        fprintf(f, "], \"all\": [");
        for (int it = 1; it <= iters; ++it) fprintf(f, "%s%.4f", it > 1 ? ", " : "", all[it]);
        fprintf(f, "], \"differ\": %ld}\n", bad_all);
        fclose(f);
      }
    }
  }
  free(send);
  free(order);
  free(first);
  free(all);
  MPI_Finalize();
  return bad_all ? 1 : 0;
}
