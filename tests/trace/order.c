/* A program with known access orders for the trace pass (tests/trace/check_trace.py).
 *
 *   order PATTERN [ITER]     PATTERN: a permutation of 0..np-1 written as digits ("3120"),
 *                            "reverse", or "differ" (rank r reads the rotation r, r+1, ...).
 *
 * Each iteration runs three collectives (then as many Allgathers) and reads their sub-messages in the PATTERN order,
 * with a short busy wait between sub-messages, checking every value:
 *   MPI_Alltoall   4 pages per peer, page-aligned buffers; the send buffer is not written.
 *   MPI_Alltoallv  sizes differ per peer, receive blocks start 400 bytes apart from page
 *                  boundaries (pages shared by two sub-messages); the first sub-message is
 *                  first reached through write(2) to /dev/null (a syscall on a guarded buffer,
 *                  must not fail with EFAULT); the send buffer is written right after return.
 *   MPI_Bcast      root 0, 6 pages = 4 chunks (page, 2 pages, 2 pages, page) as tnbc splits
 *                  it with default settings; non-roots read the chunks in PATTERN order.
 *   MPI_Allgather  3 pages per rank, page-aligned; the blocks are read in PATTERN order.
 * Prints "OK" on rank 0 when every value was right. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, np;
static long page;

static void die(const char* what) {
  fprintf(stderr, "order[%d]: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void* page_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, (size_t)page, bytes)) die("posix_memalign");
  return p;
}

/* order[k]: the k-th sub-message this rank reads (n entries). */
static void make_order(const char* pattern, int n, int* order) {
  if (strcmp(pattern, "reverse") == 0) {
    for (int k = 0; k < n; ++k) order[k] = n - 1 - k;
  } else if (strcmp(pattern, "differ") == 0) {
    for (int k = 0; k < n; ++k) order[k] = (rank + k) % n;
  } else {
    if ((int)strlen(pattern) != n) die("pattern length must equal the number of sub-messages");
    for (int k = 0; k < n; ++k) order[k] = pattern[k] - '0';
  }
}

static int value(int src, int dst, int i) { return src * 1000003 + dst * 10007 + i; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  page = sysconf(_SC_PAGESIZE);
  if (argc < 2) die("usage: order PATTERN [ITER]");
  const int iters = argc > 2 ? atoi(argv[2]) : 3;
  int* order = malloc(sizeof(int) * (size_t)np);
  make_order(argv[1], np, order);
  const int devnull = open("/dev/null", O_WRONLY);
  long long checksum = 0;

  /* Alltoall buffers. */
  const int per = (int)(4 * page / sizeof(int));
  int* a_send = page_alloc((size_t)per * np * sizeof(int));
  int* a_recv = page_alloc((size_t)per * np * sizeof(int));
  /* Alltoallv: c(src, dst) ints from src to dst; receive blocks 100 ints apart. */
  int *scnt = malloc(sizeof(int) * np), *sdsp = malloc(sizeof(int) * np);
  int *rcnt = malloc(sizeof(int) * np), *rdsp = malloc(sizeof(int) * np);
  int stot = 0, rtot = 0;
  for (int p = 0; p < np; ++p) {
    scnt[p] = (rank + p + 2) * (int)(page / sizeof(int));
    rcnt[p] = (p + rank + 2) * (int)(page / sizeof(int));
    sdsp[p] = stot;
    stot += scnt[p];
    rdsp[p] = rtot + 100 * (p + 1);
    rtot = rdsp[p] + rcnt[p];
  }
  int* v_send = page_alloc((size_t)stot * sizeof(int));
  int* v_recv = page_alloc((size_t)rtot * sizeof(int) + (size_t)page);
  /* Bcast: 6 pages, 4 chunks. */
  const int bints = (int)(6 * page / sizeof(int));
  int* b_buf = page_alloc((size_t)bints * sizeof(int));
  const int chunk_lo[4] = {0, 1, 3, 5}, chunk_hi[4] = {1, 3, 5, 6};  /* in pages */
  int border[4];
  if (strcmp(argv[1], "reverse") == 0 || strcmp(argv[1], "differ") == 0 || strlen(argv[1]) == 4) make_order(argv[1], 4, border);
  else die("bcast needs a 4-element pattern");
  if (strcmp(argv[1], "differ") == 0)
    for (int k = 0; k < 4; ++k) border[k] = (rank + k) % 4;

  /* Allgather: 3 pages from every rank. */
  const int gper = (int)(3 * page / sizeof(int));
  int* g_send = page_alloc((size_t)gper * sizeof(int));
  int* g_recv = page_alloc((size_t)gper * np * sizeof(int));

  for (int p = 0; p < np; ++p) /* written once: the trace must show it unwritten after the calls */
    for (int i = 0; i < per; ++i) a_send[p * per + i] = value(rank, p, i);
  for (int it = 0; it < iters; ++it) {
    /* ---- alltoall */
    memset(a_recv, 0, (size_t)per * np * sizeof(int));
    MPI_Alltoall(a_send, per, MPI_INT, a_recv, per, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < np; ++k) {
      const int p = order[k];
      for (int i = 0; i < per; ++i) {
        if (a_recv[p * per + i] != value(p, rank, i)) die("alltoall: wrong value");
        checksum += a_recv[p * per + i];
      }
      spin_us(300);
    }
    /* ---- alltoallv */
    for (int p = 0; p < np; ++p)
      for (int i = 0; i < scnt[p]; ++i) v_send[sdsp[p] + i] = value(rank, p, i) - it;
    memset(v_recv, 0, (size_t)rtot * sizeof(int));
    MPI_Alltoallv(v_send, scnt, sdsp, MPI_INT, v_recv, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD);
    v_send[stot - 1] = -1; /* the send buffer is written at once (after the last block's start page) */
    for (int k = 0; k < np; ++k) {
      const int p = order[k];
      if (k == 0) {
        /* first touch through a system call: must succeed on a guarded buffer */
        const ssize_t w = write(devnull, v_recv + rdsp[p] + rcnt[p] / 2, (size_t)page);
        if (w != page) die("write(2) of a guarded receive buffer failed");
        spin_us(300);
      }
      for (int i = 0; i < rcnt[p]; ++i) {
        if (v_recv[rdsp[p] + i] != value(p, rank, i) - it) die("alltoallv: wrong value");
        checksum += v_recv[rdsp[p] + i];
      }
      spin_us(300);
    }
    /* ---- bcast */
    for (int i = 0; i < bints; ++i) b_buf[i] = rank == 0 ? value(0, 99, i) + it : 0;
    MPI_Bcast(b_buf, bints, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank != 0) {
      for (int k = 0; k < 4; ++k) {
        const int c = border[k];
        const int lo = (int)(chunk_lo[c] * page / sizeof(int)), hi = (int)(chunk_hi[c] * page / sizeof(int));
        for (int i = lo; i < hi; ++i) {
          if (b_buf[i] != value(0, 99, i) + it) die("bcast: wrong value");
          checksum += b_buf[i];
        }
        spin_us(300);
      }
    }
  }
  for (int it = 0; it < iters; ++it) {
    /* ---- allgather */
    for (int i = 0; i < gper; ++i) g_send[i] = value(rank, 77, i) + it;
    memset(g_recv, 0, (size_t)gper * np * sizeof(int));
    MPI_Allgather(g_send, gper, MPI_INT, g_recv, gper, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < np; ++k) {
      const int p = order[k];
      for (int i = 0; i < gper; ++i) {
        if (g_recv[p * gper + i] != value(p, 77, i) + it) die("allgather: wrong value");
        checksum += g_recv[p * gper + i];
      }
      spin_us(300);
    }
  }
  long long total = 0;
  MPI_Reduce(&checksum, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("OK %lld\n", total);
  close(devnull);
  MPI_Finalize();
  return 0;
}
