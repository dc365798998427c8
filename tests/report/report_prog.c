/* A program for the report test on real runs (tests/report/real_run.py), built with -g: three call
 * sites whose `file:line` the report must name (the lines marked SITE below):
 *   exchange   MPI_Alltoall, computes for a while (CURC), then reads the blocks in peer order
 *   broadcast  MPI_Bcast whose root rotates over the ranks (iteration % np), read at once
 *   gather     MPI_Allgather, computes, then reads in reverse order
 * Every received byte is checked against what the blocking call delivers (computed locally).
 * usage: report_prog [ITERATIONS [PAGES_PER_PEER]]; prints "report_prog: N passed, M failed". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute_ms.h"
#include "finish_checks.h"

static int rank, np;

static unsigned char value(int from, int to, size_t i, int it) { return (unsigned char)(from * 31 + to * 7 + i * 13 + it); }


__attribute__((noinline)) static long exchange(unsigned char* s, unsigned char* r, size_t per, int it) {
  for (int p = 0; p < np; p++)
    for (size_t i = 0; i < per; i++) s[(size_t)p * per + i] = value(rank, p, i, it);
  MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD); /* SITE exchange */
  compute_ms(2.0);
  long bad = 0;
  for (int p = 0; p < np; p++)
    for (size_t i = 0; i < per; i += 61) bad += r[(size_t)p * per + i] != value(p, rank, i, it);
  return bad;
}

__attribute__((noinline)) static void fill(unsigned char* b, size_t bytes, int root, int it) {
  if (rank == root)
    for (size_t i = 0; i < bytes; i++) b[i] = value(root, 0, i, it);
}

/* One call of MPI_Bcast for both roles (the fill apart: inline, the compiler may give each role a
 * call of its own, two sites). */
__attribute__((noinline)) static long broadcast(unsigned char* b, size_t bytes, int it) {
  const int root = it % np;
  fill(b, bytes, root, it);
  MPI_Bcast(b, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD); /* SITE broadcast */
  long bad = 0;
  for (size_t i = 0; i < bytes; i += 61) bad += b[i] != value(root, 0, i, it);
  return bad;
}

__attribute__((noinline)) static long gather(unsigned char* s, unsigned char* r, size_t per, int it) {
  for (size_t i = 0; i < per; i++) s[i] = value(rank, 0, i, it);
  MPI_Allgather(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD); /* SITE gather */
  compute_ms(1.0);
  long bad = 0;
  for (int p = np - 1; p >= 0; p--)
    for (size_t i = 0; i < per; i += 61) bad += r[(size_t)p * per + i] != value(p, 0, i, it);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const int iterations = argc > 1 ? atoi(argv[1]) : 12;
  const size_t page = 4096, per = (size_t)(argc > 2 ? atoi(argv[2]) : 32) * page;
  unsigned char *s = NULL, *r = NULL, *b = NULL;
  if (posix_memalign((void**)&s, page, per * np) || posix_memalign((void**)&r, page, per * np) ||
      posix_memalign((void**)&b, page, per * 4))
    MPI_Abort(MPI_COMM_WORLD, 2);
  long bad = 0, checks = 0;
  for (int it = 0; it < iterations; it++) {
    bad += exchange(s, r, per, it) != 0;
    bad += broadcast(b, per * 4, it) != 0;
    bad += gather(s, r, per, it) != 0;
    checks += 3;
  }
  free(s);
  free(r);
  free(b);
  return finish_checks("report_prog", bad, checks);
}
