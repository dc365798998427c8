/* Why `tnbc calibrate`'s node rates ran slow at np 4 on 2 CPUs (docs/benchmarks.md, "Session 10"
 * of "The cost model against measurements"): the node sweep's exchange pattern and MPI's own
 * MPI_Alltoall / MPI_Bcast, a chain of MPI_Send / MPI_Recv, a linear broadcast by hand (the root's
 * MPI_Isend to every rank at once: Open MPI's linear MPI_Bcast), one flow and a 2-rank ring, each
 * under two harnesses, interleaved in one launch (variants and sizes rotated every iteration):
 *   bt   blocking_times' (MPI_Barrier; the call; MPI_Allreduce of the slowest rank's time): ranks
 *        that wait do so in MPI's own (yielding) wait;
 *   cal  calibrate's (runtime/model/calibrate.cc: read 64 MiB to evict the caches, a barrier that
 *        sleeps 20 us between tests, MPI_Barrier; the slowest rank by an allreduce waited for the
 *        same way); "cal-noev": without the eviction.
 * Prints per size the median of N iterations (us) and ns per byte (exchange: per byte received on
 * the node; broadcast and chain: per byte per hop; one flow, ring: per byte moved). A benchmark:
 * run it under tnbc-quiet, e.g. `mpirun -np 4 --oversubscribe node_patterns 9`.
 * EVICT_MIB: the scratch the cal harness reads (64; calibrate reads 2 x sysconf's L3 per rank, 640
 * MiB on this VM); VARIANTS: a comma list of the names below to run only those (default all).
 * usage: node_patterns [ITERATIONS (9)] [EVICT_MIB (64)] [VARIANTS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void wait_asleep(MPI_Request* r) {
  int d = 0;
  for (;;) {
    MPI_Test(r, &d, MPI_STATUS_IGNORE);
    if (d) return;
    struct timespec ts = {0, 20000};
    nanosleep(&ts, 0);
  }
}
static char* evict;
static size_t nevict = 64u << 20;
static volatile unsigned long sink;
static void read_through() {
  unsigned long s = 0;
  for (size_t i = 0; i < nevict; i += 64) s += (unsigned char)evict[i];
  sink = s;
}
static int me, n;
static void pre(int calh) {
  if (calh) {
    if (calh & 2) read_through();
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    wait_asleep(&r);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
static double post(int calh, double mine) {
  double w;
  if (calh) {
    MPI_Request r;
    MPI_Iallreduce(&mine, &w, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &r);
    wait_asleep(&r);
  } else
    MPI_Allreduce(&mine, &w, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return w;
}
static void pattern(char* a, char* b, size_t m, int first) {
  MPI_Request q[16];
  int k = 0;
  if (first) memcpy(b + me * m, a + me * m, m);
  for (int d = 1; d < n; d++) {
    int j = (me + d) % n;
    MPI_Irecv(b + j * m, m, MPI_BYTE, j, 5, MPI_COMM_WORLD, &q[k++]);
  }
  for (int d = 1; d < n; d++) {
    int j = (me + n - d) % n;
    MPI_Isend(a + j * m, m, MPI_BYTE, j, 5, MPI_COMM_WORLD, &q[k++]);
  }
  if (!first) memcpy(b + me * m, a + me * m, m);
  MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
}
static void ring2(char* a, char* b, size_t m) { /* ranks 0,1 ring, others idle */
  if (me < 2) {
    MPI_Request q[2];
    MPI_Irecv(b, m, MPI_BYTE, (me + 1) % 2, 6, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(a + m, m, MPI_BYTE, (me + 1) % 2, 6, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
  }
}
static void chain(char* b, size_t m) {
  if (me > 0) MPI_Recv(b, m, MPI_BYTE, me - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (me + 1 < n) MPI_Send(b, m, MPI_BYTE, me + 1, 7, MPI_COMM_WORLD);
}
static void linear(char* b, size_t m) { /* MPI's linear broadcast by hand: the root sends to all at once */
  if (me == 0) {
    MPI_Request q[8];
    for (int d = 1; d < n; d++) MPI_Isend(b, m, MPI_BYTE, d, 9, MPI_COMM_WORLD, &q[d - 1]);
    MPI_Waitall(n - 1, q, MPI_STATUSES_IGNORE);
  } else
    MPI_Recv(b, m, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
static void one(char* a, char* b, size_t m) { /* 0 -> 1 alone, others idle: T(m)-like single flow */
  if (me == 0)
    MPI_Send(a, m, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
  else if (me == 1)
    MPI_Recv(b, m, MPI_BYTE, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
#define NV 18
static const char* names[NV] = {"A2A/bt",      "A2A/cal",  "pat/bt",    "pat/cal",       "pat/cal-noev",
                                "patfirst/bt", "Bcast/bt", "Bcast/cal", "chain/bt",      "chain/cal",
                                "ring2/cal",   "one/cal",  "one/bt",    "ring2/bt",      "chain/cal-noev",
                                "linear/bt",   "linear/cal", "linear/cal-noev"};
int main(int c, char** v) {
  MPI_Init(&c, &v);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2 || n > 8) {
    if (me == 0) fprintf(stderr, "node_patterns: run it with 2 to 8 ranks\n");
    MPI_Finalize();
    return 2;
  }
  size_t sizes[] = {65536, 262144, 1 << 20, 4 << 20};
  int ns = 4, its = c > 1 ? atoi(v[1]) : 9;
  if (c > 2) nevict = (size_t)atol(v[2]) << 20;
  int on[NV], non = 0;
  for (int vv = 0; vv < NV; vv++) {
    on[vv] = 1;
    if (c > 3) {
      char want[256];
      snprintf(want, sizeof want, ",%s,", v[3]);
      char name[64];
      snprintf(name, sizeof name, ",%s,", names[vv]);
      on[vv] = strstr(want, name) != NULL;
    }
    non += on[vv];
  }
  if (its < 1 || nevict == 0 || non == 0) {
    if (me == 0) fprintf(stderr, "usage: node_patterns [ITERATIONS (9)] [EVICT_MIB (64)] [VARIANTS]\n");
    MPI_Finalize();
    return 2;
  }
  size_t mx = (4u << 20) * n;
  char *a = malloc(mx), *b = malloc(mx), *bb = malloc(mx);
  memset(a, me + 1, mx);
  memset(b, 0, mx);
  memset(bb, 0, mx);
  evict = malloc(nevict);
  memset(evict, 1, nevict);
  double* t = calloc(NV * ns * its, sizeof(double));
  int cases = NV * ns;
  for (int it = -1; it < its; it++)
    for (int kk = 0; kk < cases; kk++) {
      int k = (kk + (it < 0 ? 0 : it * 5)) % cases;
      int vv = k % NV;
      size_t m = sizes[k / NV];
      if (!on[vv]) continue;
      int calh = strstr(names[vv], "cal") ? (strstr(names[vv], "noev") ? 1 : 3) : 0;
      pre(calh);
      double t0 = now();
      switch (vv) {
        case 0:
        case 1:
          MPI_Alltoall(a, m, MPI_BYTE, b, m, MPI_BYTE, MPI_COMM_WORLD);
          break;
        case 2:
        case 3:
        case 4:
          pattern(a, b, m, 0);
          break;
        case 5:
          pattern(a, b, m, 1);
          break;
        case 6:
        case 7:
          MPI_Bcast(bb, m, MPI_BYTE, 0, MPI_COMM_WORLD);
          break;
        case 8:
        case 9:
          chain(bb, m);
          break;
        case 10:
        case 13:
          ring2(a, b, m);
          break;
        case 11:
        case 12:
          one(a, b, m);
          break;
        case 14:
          chain(bb, m);
          break;
        default:
          linear(bb, m);
          break;
      }
      double w = post(calh, now() - t0);
      if (it >= 0) t[k * its + it] = w;
    }
  if (me == 0) {
    printf("np %d, eviction %zu MiB, median of %d (us); rate ns/B: exchange per byte received on node, bcast/chain per hop byte\n", n,
           nevict >> 20, its);
    for (int s = 0; s < ns; s++) {
      printf("%8zu:", sizes[s]);
      for (int vv = 0; vv < NV; vv++) {
        if (!on[vv]) continue;
        double* x = t + (s * NV + vv) * its;
        for (int i = 0; i < its; i++)
          for (int j = i + 1; j < its; j++)
            if (x[j] < x[i]) {
              double y = x[i];
              x[i] = x[j];
              x[j] = y;
            }
        double med = x[its / 2];
        double bytes = vv < 6                   ? (double)n * (n - 1) * sizes[s]
                       : (vv < 10 || vv >= 14)  ? (double)(n - 1) * sizes[s]
                       : (vv == 10 || vv == 13) ? 2.0 * sizes[s]
                                                : sizes[s];
        printf(" %s %.0f (%.3f)", names[vv], med * 1e6, med * 1e9 / bytes);
      }
      printf("\n");
    }
  }
  MPI_Finalize();
}
