/* A program that starts processes with MPI_Comm_spawn (tests/report/spawn_test.py): the first world
 * exchanges with MPI_Alltoall, spawns CHILDREN copies of itself, which exchange in their own
 * MPI_COMM_WORLD; both worlds meet once over the intercommunicator and disconnect. Each world's
 * ranks 0..n-1 write tnbc summaries: they must not overwrite each other's (runtime/output_file.hh).
 * usage: spawn_prog [CHILDREN]; each world's rank 0 prints "spawn_prog <world>: N passed, M failed". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long exchange(int iterations, long* checks) {
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const size_t per = 16 * 4096;
  unsigned char *s = NULL, *r = NULL;
  if (posix_memalign((void**)&s, 4096, per * np) || posix_memalign((void**)&r, 4096, per * np)) MPI_Abort(MPI_COMM_WORLD, 2);
  long bad = 0;
  for (int it = 0; it < iterations; it++) {
    for (int p = 0; p < np; p++) memset(s + (size_t)p * per, (rank * 16 + p + it) & 0xff, per);
    MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    for (int p = 0; p < np; p++) bad += r[(size_t)p * per + per / 2] != ((p * 16 + rank + it) & 0xff);
    ++*checks;
  }
  free(s);
  free(r);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent, inter;
  MPI_Comm_get_parent(&parent);
  const int spawned = parent != MPI_COMM_NULL;
  long checks = 0, bad = exchange(spawned ? 5 : 4, &checks);
  if (!spawned) {
    const int children = argc > 1 ? atoi(argv[1]) : 2;
    char* args[] = {"child", NULL};
    int errs[64];
    MPI_Comm_spawn(argv[0], args, children, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
  } else {
    inter = parent;
  }
  MPI_Barrier(inter);
  MPI_Comm_disconnect(&inter);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long all_bad = 0, all = 0;
  MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("spawn_prog %s: %ld passed, %ld failed\n", spawned ? "child" : "parent", all - all_bad, all_bad);
  MPI_Finalize();
  return all_bad != 0;
}
