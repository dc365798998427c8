/* Cost of tnbc on calls it lets through (issue: benchmark suite, "pass-through cost").
 * In one run, interleaved in blocks: 8-byte MPI_Bcast and small MPI_Alltoall through the
 * intercepted entry points (MPI_*) and straight to the library (PMPI_*). With libtnbc.so
 * preloaded the ratio is tnbc's overhead on calls below its threshold; without it, ~1.00.
 * usage: passthrough_overhead [iterations per block (default 2000)] [blocks (default 10)]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const int blocks = argc > 2 ? atoi(argv[2]) : 10;
  double word = 1.0;
  int* s = calloc((size_t)np, 4 * sizeof(int));
  int* r = calloc((size_t)np, 4 * sizeof(int));
  double* ratio_b = calloc((size_t)blocks, sizeof(double));
  double* ratio_a = calloc((size_t)blocks, sizeof(double));
  for (int b = 0; b < blocks; b++) {
    double t[4];
    for (int variant = 0; variant < 4; variant++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < iters; i++) {
        switch (variant) {
          case 0: MPI_Bcast(&word, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
          case 1: PMPI_Bcast(&word, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
          case 2: MPI_Alltoall(s, 4, MPI_INT, r, 4, MPI_INT, MPI_COMM_WORLD); break;
          default: PMPI_Alltoall(s, 4, MPI_INT, r, 4, MPI_INT, MPI_COMM_WORLD); break;
        }
      }
      t[variant] = MPI_Wtime() - t0;
    }
    ratio_b[b] = t[0] / t[1];
    ratio_a[b] = t[2] / t[3];
  }
  qsort(ratio_b, (size_t)blocks, sizeof(double), cmp);
  qsort(ratio_a, (size_t)blocks, sizeof(double), cmp);
  if (rank == 0)
    printf("passthrough_overhead: np=%d, median of %d blocks x %d calls: MPI_Bcast(8 B)/PMPI = %.3f, "
           "MPI_Alltoall(16 B/peer)/PMPI = %.3f\n", np, blocks, iters, ratio_b[blocks / 2], ratio_a[blocks / 2]);
  MPI_Finalize();
  return 0;
}
