/* Table 1 micro-benchmark (T-NBC paper, section 6.2) with a segmented MPI_Bcast: one buffer
 * (default 4 MiB) from a root; the CRC reads it segment by segment (default 8 segments) in the
 * chosen order. Side by side in every iteration: blocking PMPI_Bcast, the hand-written MPI-3
 * peer (PMPI_Ibcast, CURC, PMPI_Wait, CRC) and MPI_Bcast (tnbc when preloaded). The root reads
 * its own buffer too; times are the max over ranks. Machinery in overlap.c, columns in
 * docs/benchmarks.md. Exit status 1 when a result differs from the blocking one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "overlap.h"

static const char kUsage[] =
    "usage: table1_bcast [options]\n"
    "  --bytes SIZE        buffer size (default 4M; a multiple of 64 * segments)\n"
    "  --segments M        sub-messages the CRC reads one after another (default 8)\n"
    "  --root R            broadcasting rank (default 0)\n"
    "  --order ORDER       CRC's order of the segments: seq, reverse, swap ({M-1,1,..,M-2,0}),\n"
    "                      or a list like 3,1,2,0\n";

typedef struct bcast {
  int rank, root;
  size_t bytes;
  unsigned char* buf[VAR_COUNT];   /* the root's data, elsewhere the receive buffer */
} bcast;

static void prepare(void* ctx, long seed, int variant) {
  bcast* b = ctx;
  if (b->rank != b->root) return;
  unsigned long long* w = (unsigned long long*)b->buf[variant];
  for (size_t i = 0; i < b->bytes / 8; i++) w[i] = overlap_word(seed, b->root, 0, i);
}

static void run(void* ctx, int variant, MPI_Request* req) {
  bcast* b = ctx;
  const int n = (int)b->bytes;
  switch (variant) {
    case VAR_BLOCKING: PMPI_Bcast(b->buf[variant], n, MPI_BYTE, b->root, MPI_COMM_WORLD); break;
    case VAR_MPI3: PMPI_Ibcast(b->buf[variant], n, MPI_BYTE, b->root, MPI_COMM_WORLD, req); break;
    default: MPI_Bcast(b->buf[variant], n, MPI_BYTE, b->root, MPI_COMM_WORLD); break;
  }
}

static const unsigned char* buffer(void* ctx, int variant) { return ((bcast*)ctx)->buf[variant]; }

static long check_reference(void* ctx, long seed) {
  const bcast* b = ctx;
  const unsigned long long* w = (const unsigned long long*)b->buf[VAR_BLOCKING];
  for (size_t i = 0; i < b->bytes / 8; i++)
    if (w[i] != overlap_word(seed, b->root, 0, i)) return (long)(i * 8);
  return -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  overlap_params p = {.bytes = 4 << 20, .segments = 8, .iterations = 10, .calibration = 5, .order = "seq",
                      .scenarios = "abcde", .curc_long = 1.5, .curc_short = 0.5, .rate_slow = 0.5, .rate_fast = 2.0};
  int rc = overlap_parse(argc, argv, &p, 1, kUsage);
  bcast b = {.root = p.root, .bytes = p.bytes};
  int np;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (rc == 0 && p.root >= np) {
    if (b.rank == 0) fprintf(stderr, "table1_bcast: --root %d, but there are %d ranks\n", p.root, np);
    rc = -1;
  }
  if (rc != 0) {
    MPI_Finalize();
    return rc < 0 ? 2 : 0;
  }
  for (int v = 0; v < VAR_COUNT; v++) b.buf[v] = overlap_alloc(&p, b.bytes);
  struct overlap_collective c = {.program = "table1_bcast", .collective = "bcast", .dcomm = b.bytes,
                                 .nblocks = p.segments, .block_bytes = b.bytes / (size_t)p.segments, .ctx = &b,
                                 .prepare = prepare, .run = run, .buffer = buffer, .check_reference = check_reference};
  rc = overlap_run(&p, &c);
  MPI_Finalize();
  return rc;
}
