/* The program rewrites its send buffer at once after every MPI_Alltoall returns, iteration after
 * iteration, from the same static buffer. With the lazy send copy (runtime/send_copy.hh) each
 * rewrite's first write lands on the buffer's first read-only page just as the progress thread
 * finishes the call (opens the pages, unlists their regions): the fault then finds no region and
 * must be retried, every time it races so, at the same address (runtime/guard.hh, RaceRetry).
 * Under MPICH the second such race was passed on to the previous handler and killed the program
 * in 8 launches of 8 (diff-c-np2-lazy failed so in CI once). Checks every received byte and that
 * the send buffer holds the program's last writes.
 *
 * usage: send_rewrite [--iterations K]
 * Prints "send_rewrite: P passed, F failed"; exit 1 if F > 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBlock = 5 * 4096 + 17, kMaxRanks = 16 };
/* Static: the same addresses every iteration (heap memory could move between calls). */
static unsigned char send_buf[kMaxRanks * kBlock + 4096] __attribute__((aligned(4096)));
static unsigned char recv_buf[kMaxRanks * kBlock] __attribute__((aligned(4096)));

static unsigned char value(int iter, int from, int to, int i) {
  return (unsigned char)(iter * 131 + from * 31 + to * 7 + i * 13 + (i >> 12));
}

int main(int argc, char** argv) {
  int iterations = 2000;
  for (int a = 1; a < argc; a++)
    if (strcmp(argv[a], "--iterations") == 0 && a + 1 < argc) iterations = atoi(argv[++a]);
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np > kMaxRanks) {
    if (rank == 0) fprintf(stderr, "send_rewrite: at most %d ranks\n", kMaxRanks);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  unsigned char* s = send_buf + 8; /* the first page partly outside: the first read-only page is the 2nd */
  long passed = 0, failed = 0;
  for (int p = 0; p < np; p++)
    for (int i = 0; i < kBlock; i++) s[p * kBlock + i] = value(0, rank, p, i);
  for (int it = 0; it < iterations; it++) {
    MPI_Alltoall(s, kBlock, MPI_BYTE, recv_buf, kBlock, MPI_BYTE, MPI_COMM_WORLD);
    /* At once, while the call's sends may still be in flight: the next iteration's contents. */
    for (int p = 0; p < np; p++)
      for (int i = 0; i < kBlock; i++) s[p * kBlock + i] = value(it + 1, rank, p, i);
    long bad = 0;
    for (int p = 0; p < np; p++)
      for (int i = 0; i < kBlock; i++) bad += recv_buf[p * kBlock + i] != value(it, p, rank, i);
    if (bad) {
      if (failed < 5) fprintf(stderr, "rank %d iteration %d: %ld received bytes differ\n", rank, it, bad);
      failed++;
    } else {
      passed++;
    }
  }
  long kept = 0;
  for (int p = 0; p < np; p++)
    for (int i = 0; i < kBlock; i++) kept += s[p * kBlock + i] == value(iterations, rank, p, i);
  if (kept != (long)np * kBlock) {
    fprintf(stderr, "rank %d: the send buffer lost %ld of the program's last writes\n", rank, (long)np * kBlock - kept);
    failed++;
  }
  long totals[2] = {passed, failed}, sums[2];
  MPI_Reduce(totals, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("send_rewrite: %ld passed, %ld failed\n", sums[0], sums[1]);
  MPI_Finalize();
  return rank == 0 && sums[1] > 0 ? 1 : 0;
}
