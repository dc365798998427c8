/* Table 1 micro-benchmark of the T-NBC paper (section 6.2) with MPI_Alltoall: a fixed size per
 * peer, the five scenarios (a)-(e), and side by side in every iteration: blocking PMPI_Alltoall,
 * the hand-written MPI-3 peer (PMPI_Ialltoall, CURC, PMPI_Wait, CRC) and MPI_Alltoall, which
 * tnbc intercepts when libtnbc.so is preloaded. The CRC reads the receive buffer sub-message
 * (one per peer) by sub-message. The machinery is in overlap.c; docs/benchmarks.md explains
 * the columns. Exit status 1 when a result differs from the blocking one. */
#include <mpi.h>
#include <stdlib.h>

#include "overlap.h"

static const char kUsage[] =
    "usage: table1_alltoall [options]\n"
    "  --bytes SIZE        bytes per peer (default 1M; a multiple of 64)\n"
    "  --order ORDER       CRC's order of the sub-messages: seq (0..N-1), reverse, swap\n"
    "                      ({N-1,1,..,N-2,0}, the paper's {3,1,2,0}), self (each rank its own\n"
    "                      block first, then rank+1, ...), or a list like 3,1,2,0\n";

typedef struct alltoall {
  int rank, np;
  size_t per;                    /* bytes per peer */
  unsigned long long* send;
  unsigned char* recv[VAR_COUNT];
} alltoall;

static void prepare(void* ctx, long seed, int variant) {  /* the variants share the send buffer */
  (void)variant;
  alltoall* a = ctx;
  const size_t words = a->per / 8;
  for (int d = 0; d < a->np; d++)
    for (size_t i = 0; i < words; i++) a->send[(size_t)d * words + i] = overlap_word(seed, a->rank, d, i);
}

static void run(void* ctx, int variant, MPI_Request* req) {
  alltoall* a = ctx;
  const int n = (int)a->per;
  switch (variant) {
    case VAR_BLOCKING: PMPI_Alltoall(a->send, n, MPI_BYTE, a->recv[variant], n, MPI_BYTE, MPI_COMM_WORLD); break;
    case VAR_MPI3: PMPI_Ialltoall(a->send, n, MPI_BYTE, a->recv[variant], n, MPI_BYTE, MPI_COMM_WORLD, req); break;
    default: MPI_Alltoall(a->send, n, MPI_BYTE, a->recv[variant], n, MPI_BYTE, MPI_COMM_WORLD); break;
  }
}

static const unsigned char* buffer(void* ctx, int variant) { return ((alltoall*)ctx)->recv[variant]; }

static long check_reference(void* ctx, long seed) {
  const alltoall* a = ctx;
  const size_t words = a->per / 8;
  const unsigned long long* r = (const unsigned long long*)a->recv[VAR_BLOCKING];
  for (int s = 0; s < a->np; s++)
    for (size_t i = 0; i < words; i++)
      if (r[(size_t)s * words + i] != overlap_word(seed, s, a->rank, i)) return (long)(((size_t)s * words + i) * 8);
  return -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  overlap_params p = {.bytes = 1 << 20, .iterations = 10, .calibration = 5, .order = "seq", .scenarios = "abcde",
                      .curc_long = 1.5, .curc_short = 0.5, .rate_slow = 0.5, .rate_fast = 2.0};
  int rc = overlap_parse(argc, argv, &p, 0, kUsage);
  if (rc != 0) {
    MPI_Finalize();
    return rc < 0 ? 2 : 0;
  }
  alltoall a = {.per = p.bytes};
  MPI_Comm_rank(MPI_COMM_WORLD, &a.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &a.np);
  const size_t total = a.per * (size_t)a.np;
  a.send = overlap_alloc(&p, total);
  for (int v = 0; v < VAR_COUNT; v++) a.recv[v] = overlap_alloc(&p, total);
  struct overlap_collective c = {.program = "table1_alltoall", .collective = "alltoall", .dcomm = total,
                                 .nblocks = a.np, .block_bytes = a.per, .ctx = &a, .prepare = prepare, .run = run,
                                 .buffer = buffer, .check_reference = check_reference};
  rc = overlap_run(&p, &c);
  MPI_Finalize();
  return rc;
}
