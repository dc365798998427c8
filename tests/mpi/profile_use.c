/* A program for the profile tests (tests/mpi/profile_inputs.py): three call sites whose
 * sub-messages it reads last first, every received byte compared with the blocking PMPI_*
 * result on the same inputs.
 *   MPI_Alltoall   4*SCALE pages per peer (page-aligned buffers)
 *   MPI_Alltoallv  (peer + 1) * SCALE pages + 123 bytes from each peer, blocks packed
 *   MPI_Bcast      root 0, 8*SCALE pages + 17 bytes (six chunks as tnbc cuts it by default)
 * usage: profile_use SCALE [ITERATIONS]   (a trace pass and an optimized pass with the same
 * SCALE see the same sizes; another SCALE gives "other sizes").
 * Prints "profile_use: N passed, M failed" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "finish_checks.h"

static int rank, np;
static size_t page;

static unsigned char* page_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, page, bytes ? bytes : 1)) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static void fill(unsigned char* b, size_t n, int salt) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 131 + rank * 17 + salt);
}

/* Compares the blocks of `got` with `ref`, last block first (the read order the trace sees). */
static long compare_reverse(const unsigned char* got, const unsigned char* ref, const size_t* off, const size_t* len,
                            int blocks, const char* what) {
  long bad = 0;
  for (int b = blocks - 1; b >= 0; b--)
    if (memcmp(got + off[b], ref + off[b], len[b]) != 0) {
      fprintf(stderr, "profile_use[%d]: %s block %d differs from the blocking result\n", rank, what, b);
      bad++;
    }
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  page = (size_t)sysconf(_SC_PAGESIZE);
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  const int iters = argc > 2 ? atoi(argv[2]) : 3;
  long bad = 0, checks = 0;
  const size_t blocks = (size_t)np + 8 * (size_t)scale + 2; /* peers, or pages of the bcast */
  size_t* off = malloc(sizeof(size_t) * blocks);
  size_t* len = malloc(sizeof(size_t) * blocks);

  /* Alltoall */
  const size_t per = 4 * (size_t)scale * page;
  unsigned char *as = page_alloc(per * np), *ar = page_alloc(per * np), *aref = page_alloc(per * np);
  /* Alltoallv */
  int *sc = malloc(sizeof(int) * np), *sd = malloc(sizeof(int) * np), *rc = malloc(sizeof(int) * np),
      *rd = malloc(sizeof(int) * np);
  int st = 0, rt = 0;
  for (int p = 0; p < np; p++) {
    sc[p] = (rank + 1) * scale * (int)page + 123; /* peer p receives (rank+1)... from me */
    rc[p] = (p + 1) * scale * (int)page + 123;
    sd[p] = st;
    rd[p] = rt;
    st += sc[p];
    rt += rc[p];
  }
  unsigned char *vs = page_alloc((size_t)st), *vr = page_alloc((size_t)rt), *vref = page_alloc((size_t)rt);
  /* Bcast */
  const size_t bb = 8 * (size_t)scale * page + 17;
  unsigned char *bc = page_alloc(bb), *bref = page_alloc(bb);

  for (int it = 0; it < iters; it++) {
    fill(as, per * np, it);
    PMPI_Alltoall(as, (int)per, MPI_BYTE, aref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoall(as, (int)per, MPI_BYTE, ar, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    for (int p = 0; p < np; p++) off[p] = (size_t)p * per, len[p] = per;
    bad += compare_reverse(ar, aref, off, len, np, "alltoall");

    fill(vs, (size_t)st, it + 1);
    PMPI_Alltoallv(vs, sc, sd, MPI_BYTE, vref, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoallv(vs, sc, sd, MPI_BYTE, vr, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    for (int p = 0; p < np; p++) off[p] = (size_t)rd[p], len[p] = (size_t)rc[p];
    bad += compare_reverse(vr, vref, off, len, np, "alltoallv");

    if (rank == 0) fill(bref, bb, it + 2);
    PMPI_Bcast(bref, (int)bb, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) memcpy(bc, bref, bb);
    MPI_Bcast(bc, (int)bb, MPI_BYTE, 0, MPI_COMM_WORLD);
    const int pages = (int)((bb + page - 1) / page);
    for (int p = 0; p < pages; p++) off[p] = (size_t)p * page, len[p] = p + 1 < pages ? page : bb - (size_t)p * page;
    bad += compare_reverse(bc, bref, off, len, pages, "bcast");
    checks += 3;
  }
  return finish_checks("profile_use", bad, checks);
}
