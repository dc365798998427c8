/* Overlap benchmark for the core engine (issue: core engine).
 *
 * Alltoall with B bytes per peer, followed by computation that does not touch the buffers
 * (CURC) for about Tcomm, then a read of the whole receive buffer. In one run, interleaved:
 *   blocking:  PMPI_Alltoall (tnbc does not intercept PMPI_*), then CURC, then the read
 *   tnbc:      MPI_Alltoall  (intercepted when libtnbc.so is preloaded), CURC, the read
 * Printed (rank 0, medians over the iterations):
 *   Tinit/Tblocking   time inside MPI_Alltoall relative to the blocking collective
 *   hidden            (T_blocking_total - T_tnbc_total) / Tcomm: share of Tcomm overlapped
 * Results are ratios measured side by side; absolute times on a shared VM mean little.
 * usage: overlap_alltoall [bytes_per_peer (default 1 MiB)] [iterations (default 10)]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

/* Computation that touches no collective buffer: `units` rounds of arithmetic. */
static void curc(long units) {
  double x = 1.0;
  for (long i = 0; i < units; i++) x = x * 1.0000001 + 1e-9;
  sink = x;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

static long checksum(const unsigned char* p, size_t n) {
  long s = 0;
  for (size_t i = 0; i < n; i += 64) s += p[i];
  return s;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const size_t per = argc > 1 ? strtoul(argv[1], NULL, 0) : (1u << 20);
  const int iters = argc > 2 ? atoi(argv[2]) : 10;
  unsigned char* s = malloc(per * (size_t)np);
  unsigned char* r = malloc(per * (size_t)np);
  unsigned char* ref = malloc(per * (size_t)np);
  for (size_t i = 0; i < per * (size_t)np; i++) s[i] = (unsigned char)(rank * 31 + i * 7);

  /* Tcomm (blocking) and the CURC rate, measured first; every rank uses rank 0's numbers. */
  double tb = 0;
  for (int w = 0; w < 3; w++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    tb = MPI_Wtime() - t0;
  }
  double t0 = MPI_Wtime();
  curc(10000000);
  const double per_unit = (MPI_Wtime() - t0) / 1e7;
  long units = (long)(tb / per_unit);
  MPI_Bcast(&units, 1, MPI_LONG, 0, MPI_COMM_WORLD);

  double* tblock = calloc((size_t)iters, sizeof(double));
  double* tnbc = calloc((size_t)iters, sizeof(double));
  double* tinit = calloc((size_t)iters, sizeof(double));
  double* tcomm = calloc((size_t)iters, sizeof(double));
  long bad = 0;
  for (int it = 0; it < iters; it++) {
    /* blocking */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    curc(units);
    long c1 = checksum(ref, per * (size_t)np);
    tblock[it] = MPI_Wtime() - t0;
    tcomm[it] = t1 - t0;
    /* tnbc */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    curc(units);
    long c2 = checksum(r, per * (size_t)np);
    tnbc[it] = MPI_Wtime() - t0;
    tinit[it] = t1 - t0;
    if (c1 != c2 || memcmp(r, ref, per * (size_t)np) != 0) bad++;
  }
  double m[4] = {median(tblock, iters), median(tnbc, iters), median(tinit, iters), median(tcomm, iters)};
  double all[4];
  MPI_Reduce(m, all, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  long allbad = 0;
  MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("overlap_alltoall: np=%d bytes/peer=%zu iterations=%d (medians, max over ranks)\n", np, per, iters);
    printf("  Tinit/Tblocking = %.3f\n", all[2] / all[3]);
    printf("  hidden          = %.1f%% of Tcomm  (blocking+CURC %.1f ms, tnbc+CURC %.1f ms, Tcomm %.1f ms)\n",
           100.0 * (all[0] - all[1]) / all[3], all[0] * 1e3, all[1] * 1e3, all[3] * 1e3);
    printf("  mismatches      = %ld\n", allbad);
  }
  MPI_Finalize();
  return allbad != 0;
}
