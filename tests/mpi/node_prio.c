/* Node-level priorities under real MPI (tests/mpi/node_priorities.py runs it on emulated nodes,
 * npb-harness/netrun.py --nodes K): MPI_Alltoall and MPI_Alltoallv whose blocks each rank reads
 * in its own order (orders differ between ranks and between iterations), compared byte for
 * byte with PMPI_Alltoall / PMPI_Alltoallv on the same inputs; and an MPI_Bcast from a root that
 * moves, read second half first.
 *
 * usage: node_prio ITERS PAGES_PER_PEER [SLOW_RANK SLOW_MS [STOP_RANK]]
 *   SLOW_RANK computes SLOW_MS (no MPI call) before its reads in iteration 1 and before its call
 *   in iteration 2: the others' sends must not wait for it for long.
 *   STOP_RANK stops itself (SIGSTOP: its progress thread too, its board slot frozen with its keys
 *   outstanding) right after its early return in iteration 1: the others must report the
 *   missing data and end the job within TNBC_TIMEOUT, never hang. With a STOP_RANK the expected
 *   blocks are computed here, not by PMPI_*: the stopped rank's sends may all have gone out
 *   before it stopped (its progress thread ran first), and then the others' next wait for it
 *   would be a reference PMPI_Alltoallv, which no tnbc timeout covers (a hang of the test,
 *   seen once in CI), instead of tnbc's next call.
 * Prints "node_prio: N checks, M failed" on rank 0. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char pattern(int from, int to, int iter, size_t i) {
  return (unsigned char)(from * 37 + to * 11 + iter * 5 + i * 3 + (i >> 12));
}

/* The k-th block rank `me` reads in iteration `it`: orders differ between ranks and iterations
 * (ascending, descending, rotated by the rank, odd ranks swapped in pairs). */
static int read_order(int me, int n, int it, int k) {
  switch ((me + it) % 4) {
    case 0: return k;
    case 1: return n - 1 - k;
    case 2: return (me + k) % n;
    default: return (k ^ 1) < n ? (k ^ 1) : k;
  }
}

static void compute_ms(int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile double x = 1;
  do {
    for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int iters = argc > 1 ? atoi(argv[1]) : 4;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t per = (argc > 2 ? (size_t)atoi(argv[2]) : 64) * page + 123; /* heads and tails in partial pages */
  const int slow_rank = argc > 4 ? atoi(argv[3]) : -1, slow_ms = argc > 4 ? atoi(argv[4]) : 0;
  const int stop_rank = argc > 5 ? atoi(argv[5]) : -1;
  long checks = 0, failed = 0;
  char* send = malloc(per * n);
  char* recv = malloc(per * n);
  char* ref = malloc(per * n);
  int* counts = malloc(sizeof(int) * n);
  int* displs = malloc(sizeof(int) * n);
  int* rcounts = malloc(sizeof(int) * n);
  int* rdispls = malloc(sizeof(int) * n);
  for (int it = 0; it < iters; ++it) {
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < per; ++i) send[p * per + i] = (char)pattern(me, p, it, i);
    /* The blocking reference, on tnbc-free PMPI (computed here where a rank will stop). */
    if (stop_rank >= 0)
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < per; ++i) ref[p * per + i] = (char)pattern(p, me, it, i);
    else
      PMPI_Alltoall(send, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    memset(recv, 0, per * n);
    if (it == 2 && me == slow_rank) compute_ms(slow_ms);
    MPI_Alltoall(send, (int)per, MPI_BYTE, recv, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    if (it == 1 && me == stop_rank) raise(SIGSTOP);
    if (it == 1 && me == slow_rank) compute_ms(slow_ms);
    memset(send, 0x5a, per * n); /* the send buffer is the program's again at once */
    for (int k = 0; k < n; ++k) {
      const int p = read_order(me, n, it, k);
      ++checks;
      if (memcmp(recv + p * per, ref + p * per, per) != 0) {
        ++failed;
        fprintf(stderr, "node_prio: rank %d iteration %d: alltoall block from %d differs\n", me, it, p);
      }
    }
    /* Alltoallv: sizes that differ per pair (a few pages more towards higher ranks). */
    int total = 0, rtotal = 0;
    for (int p = 0; p < n; ++p) {
      counts[p] = (int)(per / 2 + (size_t)((me + p + it) % 3) * page);
      displs[p] = total;
      total += counts[p];
      rcounts[p] = (int)(per / 2 + (size_t)((p + me + it) % 3) * page);
      rdispls[p] = rtotal;
      rtotal += rcounts[p];
    }
    char* vs = malloc((size_t)total);
    char* vr = malloc((size_t)rtotal);
    char* vref = malloc((size_t)rtotal);
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < counts[p]; ++i) vs[displs[p] + i] = (char)pattern(me, p, it + 7, (size_t)i);
    if (stop_rank >= 0)
      for (int p = 0; p < n; ++p)
        for (int i = 0; i < rcounts[p]; ++i) vref[rdispls[p] + i] = (char)pattern(p, me, it + 7, (size_t)i);
    else
      PMPI_Alltoallv(vs, counts, displs, MPI_BYTE, vref, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
    memset(vr, 0, (size_t)rtotal);
    MPI_Alltoallv(vs, counts, displs, MPI_BYTE, vr, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
    for (int k = 0; k < n; ++k) {
      const int p = read_order(me, n, it + 1, k);
      ++checks;
      if (memcmp(vr + rdispls[p], vref + rdispls[p], (size_t)rcounts[p]) != 0) {
        ++failed;
        fprintf(stderr, "node_prio: rank %d iteration %d: alltoallv block from %d differs\n", me, it, p);
      }
    }
    free(vs);
    free(vr);
    free(vref);
    /* Bcast from a root that moves: its segments are forwarded by ranks of both nodes. */
    const int root = it % n;
    char* b = malloc(per * n);
    char* bref = malloc(per * n);
    for (size_t i = 0; i < per * n; ++i) b[i] = me == root ? (char)pattern(root, 0, it + 13, i) : 0;
    if (stop_rank >= 0)
      for (size_t i = 0; i < per * n; ++i) bref[i] = (char)pattern(root, 0, it + 13, i);
    else {
      memcpy(bref, b, per * n);
      PMPI_Bcast(bref, (int)(per * n), MPI_BYTE, root, MPI_COMM_WORLD);
    }
    MPI_Bcast(b, (int)(per * n), MPI_BYTE, root, MPI_COMM_WORLD);
    ++checks;
    if (memcmp(b + per * n / 2, bref + per * n / 2, per * n - per * n / 2) != 0 || memcmp(b, bref, per * n / 2) != 0) {
      ++failed;
      fprintf(stderr, "node_prio: rank %d iteration %d: bcast from %d differs\n", me, it, root);
    }
    free(b);
    free(bref);
  }
  long all[2] = {checks, failed}, sum[2];
  PMPI_Reduce(all, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) printf("node_prio: %ld checks, %ld failed\n", sum[0], sum[1]);
  free(send);
  free(recv);
  free(ref);
  free(counts);
  free(displs);
  free(rcounts);
  free(rdispls);
  MPI_Finalize();
  return 0;
}
