/* bcast-proxy: a broadcast-heavy pattern (as a panel broadcast of a dense factorisation, or a
 * solver that ships each step's coefficients from one rank), self-verifying.
 *
 * Each iteration: the root (rotating: iteration % np) fills the buffer from the iteration's
 * seed and broadcasts it with MPI_Bcast; every rank first updates its own array without
 * touching the buffer (work the broadcast can overlap: T_CURC), then reads the buffer in order,
 * checking each element against the value it regenerates and folding it into its own array
 * (T_CRC). Verification: no element differed on any rank, and the ranks' checksums agree with
 * one computed from the seeds alone. Output mimics NPB ("Verification = SUCCESSFUL", "Time in
 * seconds"); an untimed warm-up iteration first.
 *
 * usage: bcast-proxy [S|W|A|B] [iterations]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  char name;
  int log2_doubles;  /* elements per broadcast */
  int passes;        /* updates of the own array per iteration, before the buffer is read */
} Class;

/* S 256 KiB, W 2 MiB, A 8 MiB, B 32 MiB per broadcast; the own work about the transfer's time at
 * 1 Gbit/s on one core (8 ns a byte against ~1-2 ns per element and pass). */
static const Class classes[] = {{'S', 15, 8}, {'W', 18, 16}, {'A', 20, 16}, {'B', 22, 16}};

/* The value of element i in iteration it: exact in a double (a 32-bit integer over 2^10). */
static double element(int it, long i) {
  uint64_t x = (uint64_t)it * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return (double)(uint32_t)x / 1024.0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char cls = argc > 1 ? argv[1][0] : 'S';
  const int iters = argc > 2 ? atoi(argv[2]) : 10;
  const Class* c = NULL;
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
    if (classes[i].name == cls) c = &classes[i];
  if (!c || iters < 1) {
    if (rank == 0) fprintf(stderr, "bcast-proxy: unknown class '%c' (S, W, A, B) or iterations < 1\n", cls);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long n = 1L << c->log2_doubles;
  double* buf = malloc(sizeof(double) * (size_t)n);
  double* own = malloc(sizeof(double) * (size_t)n);
  if (!buf || !own) MPI_Abort(MPI_COMM_WORLD, 3);
  for (long i = 0; i < n; i++) own[i] = (double)(i % 7);

  long long bad = 0;
  double sum = 0; /* over the received elements: the same on every rank */
  double t0 = 0, t_comm = 0;
  /* An untimed warm-up iteration first (-1, with iteration 0's data), as NPB does. */
  for (int step = -1; step < iters; step++) {
    if (step == 0) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
    }
    const int it = step < 0 ? 0 : step;
    const int root = it % np;
    if (rank == root)
      for (long i = 0; i < n; i++) buf[i] = element(it, i);
    const double tc = MPI_Wtime();
    MPI_Bcast(buf, (int)n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    if (step >= 0) t_comm += MPI_Wtime() - tc;
    for (int p = 0; p < c->passes; p++)
      for (long i = 0; i < n; i++) own[i] = own[i] * 0.5 + (double)p;
    for (long i = 0; i < n; i++) {
      const double v = buf[i];
      bad += v != element(it, i);
      if (step >= 0) sum += v;
      own[i] += v * 1e-9;
    }
  }
  const double t = MPI_Wtime() - t0;

  double expected = 0;
  for (int it = 0; it < iters; it++)
    for (long i = 0; i < n; i++) expected += element(it, i);
  long long bad_all = 0;
  double sum_min = 0, sum_max = 0, tmax = 0, cmax = 0, keep = 0;
  for (long i = 0; i < n; i++) keep += own[i];
  MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&sum, &sum_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&sum, &sum_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&t_comm, &cmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  /* Same order of additions on every rank and in `expected`: equal to the last bit. */
  const int ok = bad_all == 0 && sum_min == expected && sum_max == expected;
  if (rank == 0) {
    printf(" BCAST proxy Benchmark Completed\n");
    printf(" Class           =                        %c\n", cls);
    printf(" Size            =            %12ld doubles per broadcast\n", n);
    printf(" Iterations      =                   %6d\n", iters);
    printf(" Time in seconds =             %12.4f\n", tmax);
    printf(" Comm time (bcast) =           %12.4f\n", cmax);
    printf(" Mismatches      =             %12lld\n", bad_all);
    printf(" Verification    =               %s\n", ok ? "SUCCESSFUL" : "UNSUCCESSFUL");
    if (keep == 0.123456789) printf("\n"); /* keeps the own work */
  }
  free(buf);
  free(own);
  MPI_Finalize();
  return ok ? 0 : 1;
}
