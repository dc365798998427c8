/* A program for tests/mpi/root_sites.py: an MPI_Bcast whose root rotates over the ranks
 * (iteration % np), called from two sites as a compiler makes of a root's path with its fill
 * inlined (report_prog's broadcast did, tests/report): the root calls it at root_call(), every
 * other rank at receive_call() and reads the whole message, at once (nothing to overlap) or after
 * computing COMPUTE_MS. No rank receives at root_call()'s site: the trace has no estimate of its
 * own there. Every received byte is compared with the message the root filled (the blocking result).
 * usage: root_sites [ITERATIONS [PAGES [COMPUTE_MS]]]; prints "root_sites: N passed, M failed" on rank 0. */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include "compute_ms.h"
#include "finish_checks.h"

static int rank, np;
static double compute_for;  /* the receivers' computation before they read, ms */
static volatile unsigned char sink;

static unsigned char value(int root, size_t i, int it) { return (unsigned char)(root * 29 + i * 7 + it * 3); }

__attribute__((noinline)) static void root_call(unsigned char* b, size_t bytes, int it) {
  for (size_t i = 0; i < bytes; i++) b[i] = value(rank, i, it);
  MPI_Bcast(b, (int)bytes, MPI_BYTE, rank, MPI_COMM_WORLD);
  sink = b[0];  /* no tail call: the site is root_call's own */
}

__attribute__((noinline)) static long receive_call(unsigned char* b, size_t bytes, int root, int it) {
  MPI_Bcast(b, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
  if (compute_for > 0) compute_ms(compute_for);
  long bad = 0;
  for (size_t i = 0; i < bytes; i++) bad += b[i] != value(root, i, it);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const int iterations = argc > 1 ? atoi(argv[1]) : 12;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 64) * page + 100;
  compute_for = argc > 3 ? atof(argv[3]) : 0;
  unsigned char* b = NULL;
  if (posix_memalign((void**)&b, page, bytes)) MPI_Abort(MPI_COMM_WORLD, 2);
  long bad = 0, checks = 0;
  for (int it = 0; it < iterations; it++) {
    const int root = it % np;
    if (rank == root) {
      root_call(b, bytes, it);
    } else {
      bad += receive_call(b, bytes, root, it) != 0;
      checks++;
    }
  }
  free(b);
  return finish_checks("root_sites", bad, checks);
}
