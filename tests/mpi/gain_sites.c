/* A program for the blocking-decision test (tests/mpi/gain_sites.py): two MPI_Alltoall call
 * sites with the same sizes,
 *   read_at_once     touches every received block right after the call (no CURC), then
 *                    compares them: nothing to overlap, mode optimize should complete it in the
 *                    call;
 *   compute_first    computes for COMPUTE_MS (touching no collective buffer), then compares:
 *                    the communication can hide behind the computation, it should return early.
 * Every received byte is compared with the blocking PMPI_Alltoall result on the same inputs.
 * usage: gain_sites [ITERATIONS [PAGES_PER_PEER [COMPUTE_MS [PERTURB_RANK]]]]
 * COMPUTE_MS < 0: read_at_once alone (compute_first is not called).
 * PERTURB_RANK >= 0: that rank sets TNBC_EARLY_RETURN_COST_US to 10 s before MPI_Init: it then
 * completes both sites' calls in the call while the other ranks return early from compute_first
 * (the ranks decide differently for the same collectives, which must still match).
 * Prints "gain_sites: N passed, M failed" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "finish_checks.h"

static int rank, np;
static size_t page;
static volatile double sink;

static unsigned char* page_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, page, bytes)) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static void fill(unsigned char* b, size_t n, int salt) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 131 + rank * 17 + salt);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long compare(const unsigned char* got, const unsigned char* ref, size_t per, const char* what) {
  long bad = 0;
  for (int p = 0; p < np; p++)
    if (memcmp(got + (size_t)p * per, ref + (size_t)p * per, per) != 0) {
      fprintf(stderr, "gain_sites[%d]: %s block %d differs from the blocking result\n", rank, what, p);
      bad++;
    }
  return bad;
}

/* noinline, external: each is its own call site with a symbol in the traces. */
__attribute__((noinline)) long read_at_once(unsigned char* s, unsigned char* r, const unsigned char* ref, size_t per) {
  MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD);
  unsigned sum = 0;
  for (int p = 0; p < np; p++) sum += r[(size_t)p * per]; /* first touches, one per block, at once */
  sink = sum;
  return compare(r, ref, per, "read_at_once");
}

__attribute__((noinline)) long compute_first(unsigned char* s, unsigned char* r, const unsigned char* ref, size_t per,
                                             double compute_ms) {
  MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD);
  const double until = now_ms() + compute_ms;
  double x = 1.0;
  while (now_ms() < until)
    for (int k = 0; k < 1000; k++) x = x * 1.0000001 + 1e-9;
  sink = x;
  return compare(r, ref, per, "compute_first");
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 6;
  const int pages = argc > 2 ? atoi(argv[2]) : 256;
  const double compute_ms = argc > 3 ? atof(argv[3]) : 20;
  const int perturb = argc > 4 ? atoi(argv[4]) : -1;
  if (perturb >= 0) {
    const char* r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (r && atoi(r) == perturb) setenv("TNBC_EARLY_RETURN_COST_US", "10000000", 1);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t per = (size_t)pages * page, all = per * (size_t)np;
  unsigned char *s = page_alloc(all), *ra = page_alloc(all), *rb = page_alloc(all), *ref = page_alloc(all);
  long bad = 0, checks = 0;
  for (int it = 0; it < iters; it++) {
    fill(s, all, it);
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    bad += read_at_once(s, ra, ref, per);
    checks += np;
    if (compute_ms < 0) continue;
    fill(s, all, it + 100);
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    bad += compute_first(s, rb, ref, per, compute_ms);
    checks += np;
  }
  return finish_checks("gain_sites", bad, checks);
}
