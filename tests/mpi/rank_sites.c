/* A program for tests/mpi/rank_sites.py: the ranks reach the same collectives from different
 * call sites depending on their rank, as NPB IS does (the compiler duplicated the call of
 * rank(), so rank 0 calls MPI_Alltoallv with another stack than the other ranks). Per iteration,
 * exchange() makes an MPI_Alltoallv and an MPI_Bcast (root 2), called from
 *   rank 0:        at_once()        reads the data right after each call: nothing to overlap;
 *   other ranks:   compute_first()  computes COMPUTE_MS before it reads the data;
 *   UNSEEN_RANK:   unseen()         (only when given) reads at once, from a caller a trace run
 *                                   without that argument never saw;
 * then every rank calls shared_bcast(): MPI_Bcast from rank 0, read at once, one site for all.
 * MISSING_RANK >= 0: that rank leaves before the last iteration's exchange() (the others must
 * report it after TNBC_TIMEOUT, whether they wait in the call or after an early return); with
 * LATE_MS > 0 it comes late instead: it sleeps LATE_MS before that exchange().
 * The Alltoallv sizes differ per rank and peer (not page multiples, unaligned blocks, gaps in the
 * receive buffer). Every byte of every receive buffer, gaps included, is compared with the
 * blocking PMPI_* result on the same inputs.
 * usage: rank_sites [ITERATIONS [PAGES [COMPUTE_MS [UNSEEN_RANK [MISSING_RANK [LATE_MS]]]]]]   (at least 3 ranks)
 * Prints "rank_sites: N passed, M failed" on rank 0. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "finish_checks.h"

static int rank, np;
static size_t page, pages;
static volatile double sink;

struct exchange {
  unsigned char *send, *recv, *ref, *bcast, *bcast_ref;
  int *scounts, *sdispls, *rcounts, *rdispls;
  size_t recv_bytes, bcast_bytes;
};

/* What rank `from` sends rank `to`: a few pages, not a page multiple, different for every pair. */
static int count_of(int from, int to) { return (int)(pages * page + (size_t)(from * 7 + to * 3) * 211 + 5); }

static void* alloc(size_t bytes) {
  void* p = malloc(bytes); /* malloc'ed: the blocks start inside pages */
  if (!p) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void compute(double ms) {
  const double until = now_ms() + ms;
  double x = 1.0;
  while (now_ms() < until)
    for (int k = 0; k < 1000; k++) x = x * 1.0000001 + 1e-9;
  sink = x;
}

static long compare(const unsigned char* got, const unsigned char* ref, size_t n, const char* what) {
  if (memcmp(got, ref, n) == 0) return 0;
  size_t i = 0;
  while (got[i] == ref[i]) i++;
  fprintf(stderr, "rank_sites[%d]: %s differs from the blocking result at byte %zu (%u, expected %u)\n", rank, what, i,
          got[i], ref[i]);
  return 1;
}

/* Reads right after an Alltoallv, in order, each block (a sub-message, which the program knows):
 * its first byte, the first byte of its first whole page (the trace pass guards whole pages
 * only) and its last byte, the first touch of every sub-message at once. Not every page: where a
 * page's first access after its protection changed costs ~6 us (a PVM guest, session 40), one
 * byte per page made reading the blocks "at once" take 3-4 ms in the trace, as long as the
 * Alltoallv itself. */
static void touch_block(const unsigned char* b, size_t n) {
  const size_t to_page = (page - (size_t)((uintptr_t)b % page)) % page;
  sink = b[0] + (to_page < n ? b[to_page] : 0) + b[n - 1];
}

static void touch_recv(const struct exchange* x) {
  for (int p = 0; p < np; p++) touch_block(x->recv + x->rdispls[p], (size_t)x->rcounts[p]);
}

/* Reads right after a broadcast, in order: its first byte, one byte every BCAST_STRIDE pages, then
 * one byte per page, then its last byte; each at a page's first byte, where the trace attributes a
 * page shared by two sub-messages to the first (its fault's address). The program does not know the
 * broadcast's sub-messages (segments of 75 pages and more here, and a one-page one at either end),
 * but the stride reaches each long one's first page soon after the one before, and the pass over
 * every page the short ones. One byte per page alone (until session 44) let the PVM guest's 4-13
 * us a page after the trace's protection change (ASan's the most) set the time between first
 * touches: 0.5-3 ms, a call's reading as long as the broadcast itself, so that the "read at once"
 * site looked like one that overlaps (the project CI's failure of session 43's submission). */
enum { BCAST_STRIDE = 16 };
static void touch_bcast(const struct exchange* x) {
  const unsigned char* b = x->bcast;
  const size_t n = x->bcast_bytes, first = (page - (size_t)((uintptr_t)b % page)) % page;
  unsigned sum = b[0];
  for (size_t i = first; i < n; i += BCAST_STRIDE * page) sum += b[i];
  for (size_t i = first; i < n; i += page) sum += b[i];
  sink = sum + b[n - 1];
}

/* One function makes the collectives (their return addresses are the same on every rank, as in
 * IS's rank()); who called it makes the call site (the trace's stack of 4 frames). */
__attribute__((noinline)) long exchange(struct exchange* x, double compute_ms, const char* who) {
  char what[64];
  MPI_Alltoallv(x->send, x->scounts, x->sdispls, MPI_BYTE, x->recv, x->rcounts, x->rdispls, MPI_BYTE, MPI_COMM_WORLD);
  if (compute_ms == 0) touch_recv(x);
  MPI_Bcast(x->bcast, (int)x->bcast_bytes, MPI_BYTE, 2, MPI_COMM_WORLD);
  if (compute_ms == 0) touch_bcast(x);
  else compute(compute_ms);
  snprintf(what, sizeof what, "%s alltoallv", who);
  long bad = compare(x->recv, x->ref, x->recv_bytes, what);
  snprintf(what, sizeof what, "%s bcast", who);
  return bad + compare(x->bcast, x->bcast_ref, x->bcast_bytes, what);
}

/* noinline, and no tail call (the barrier after the call): each caller stays on the stack. */
__attribute__((noinline)) long at_once(struct exchange* x) {
  const long bad = exchange(x, 0, "at_once");
  __asm__ volatile("" ::: "memory");
  return bad;
}

__attribute__((noinline)) long compute_first(struct exchange* x, double compute_ms) {
  const long bad = exchange(x, compute_ms, "compute_first");
  __asm__ volatile("" ::: "memory");
  return bad;
}

__attribute__((noinline)) long unseen(struct exchange* x) {
  const long bad = exchange(x, 0, "unseen");
  __asm__ volatile("" ::: "memory");
  return bad;
}

__attribute__((noinline)) long shared_bcast(struct exchange* x) {
  MPI_Bcast(x->bcast, (int)x->bcast_bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  touch_bcast(x);
  return compare(x->bcast, x->bcast_ref, x->bcast_bytes, "shared_bcast");
}

/* New inputs; the receive buffer and its reference set to the same filler, then the blocking
 * result computed into the reference. */
static void prepare_alltoallv(struct exchange* x, int it) {
  size_t sent = 0;
  for (int p = 0; p < np; p++) sent += (size_t)x->scounts[p];
  for (size_t i = 0; i < sent; i++) x->send[i] = (unsigned char)(i * 131 + rank * 17 + it * 7);
  memset(x->recv, 0xEE, x->recv_bytes);
  memset(x->ref, 0xEE, x->recv_bytes);
  PMPI_Alltoallv(x->send, x->scounts, x->sdispls, MPI_BYTE, x->ref, x->rcounts, x->rdispls, MPI_BYTE, MPI_COMM_WORLD);
}

static void prepare_bcast(struct exchange* x, int it, int root) {
  for (size_t i = 0; i < x->bcast_bytes; i++)
    x->bcast[i] = x->bcast_ref[i] = rank == root ? (unsigned char)(i * 29 + it * 3 + root) : 0xDD;
  PMPI_Bcast(x->bcast_ref, (int)x->bcast_bytes, MPI_BYTE, root, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 6;
  pages = argc > 2 ? (size_t)atoi(argv[2]) : 128;
  const double compute_ms = argc > 3 ? atof(argv[3]) : 20;
  const int unseen_rank = argc > 4 ? atoi(argv[4]) : -1;
  const int missing_rank = argc > 5 ? atoi(argv[5]) : -1;
  const int late_ms = argc > 6 ? atoi(argv[6]) : 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np < 3) {
    if (rank == 0) fprintf(stderr, "rank_sites: needs at least 3 ranks (the broadcast root is rank 2)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  page = (size_t)sysconf(_SC_PAGESIZE);
  struct exchange x;
  x.scounts = alloc(sizeof(int) * (size_t)np);
  x.sdispls = alloc(sizeof(int) * (size_t)np);
  x.rcounts = alloc(sizeof(int) * (size_t)np);
  x.rdispls = alloc(sizeof(int) * (size_t)np);
  size_t s = 0, r = 0;
  for (int p = 0; p < np; p++) {
    x.scounts[p] = count_of(rank, p);
    x.sdispls[p] = (int)s;
    s += (size_t)x.scounts[p];
    x.rcounts[p] = count_of(p, rank);
    x.rdispls[p] = (int)r;
    r += (size_t)x.rcounts[p] + 100 + (size_t)p * 13; /* gaps, which must keep their bytes */
  }
  x.recv_bytes = r;
  x.bcast_bytes = 3 * pages * page + 77;
  /* One allocation, the broadcast's buffer between the Alltoallv's send and receive buffers: where
   * a trace that retired a call by the span of its pages lost the compute-first Alltoallv's first
   * touches (the CI failure at the end of session 44, malloc's layout in ~1 process in 12). Each
   * buffer starts 16 bytes into a page, as a malloc'ed one does. */
  const size_t sizes[5] = {s, x.bcast_bytes, r, r, x.bcast_bytes};
  size_t total = 0;
  for (int i = 0; i < 5; i++) total += (sizes[i] + 16 + page - 1) / page * page;
  unsigned char* arena = alloc(total + page);
  unsigned char* at = arena + (page - (size_t)((uintptr_t)arena % page)) % page;
  unsigned char** to[5] = {&x.send, &x.bcast, &x.recv, &x.ref, &x.bcast_ref};
  for (int i = 0; i < 5; i++) {
    *to[i] = at + 16;
    at += (sizes[i] + 16 + page - 1) / page * page;
  }
  long bad = 0, checks = 0;
  for (int it = 0; it < iters; it++) {
    prepare_alltoallv(&x, it);
    prepare_bcast(&x, it, 2);
    if (rank == missing_rank && it == iters - 1) {
      if (late_ms <= 0) break;
      usleep((useconds_t)late_ms * 1000);
    }
    if (rank == unseen_rank) bad += unseen(&x);
    else if (rank == 0) bad += at_once(&x);
    else bad += compute_first(&x, compute_ms);
    prepare_bcast(&x, it + 1000, 0);
    bad += shared_bcast(&x);
    checks += 3;
  }
  return finish_checks("rank_sites", bad, checks);
}
