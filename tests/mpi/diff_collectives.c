/* Differential test of the intercepted collectives (C bindings).
 *
 * Every case runs the intercepted call (MPI_*: tnbc returns early) and the blocking reference
 * (PMPI_*: tnbc never intercepts it) on the same inputs, touches the intercepted call's buffers
 * right after it returns in one of several ways, then compares every byte of the receive buffer
 * (gaps of Alltoallv and Allgatherv included) with the reference. The first mismatch aborts with the case,
 * rank, offset, expected and actual byte.
 *
 * usage: diff_collectives [quick|full|bcast] [seed]
 *   bcast: only broadcasts, 0 B to 32 MiB from every root (32 MiB from the first and last root
 *          only above 4 ranks), and bursts of broadcasts on two
 *          communicators left untouched until the last one returned (TNBC_BCAST_BACKEND=rma-*:
 *          several in flight, slots reused).
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MEM_HEAP, MEM_STATIC, MEM_MMAP, MEM_STACK, MEM_KINDS };
static const char* mem_name[] = {"heap", "static", "mmap", "stack"};
enum { ACC_FORWARD, ACC_REVERSE, ACC_RANDOM, ACC_WRITE_SYSCALL, ACC_READ_SYSCALL, ACC_MPI_SEND,
       ACC_OVERWRITE_SEND, ACC_NONE_THEN_AGAIN, ACC_KINDS };
static const char* acc_name[] = {"read-forward", "read-reverse", "read-random", "write(2)", "read(2)-into",
                                 "MPI_Sendrecv", "overwrite-send", "back-to-back"};

static int rank, np;
static long cases, checked_bytes;
static unsigned long long rng_state;
static char static_send[8 << 20], static_recv[8 << 20];
static volatile long sink;

static unsigned long long rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void fail(const char* what, size_t off, int expected, int got) {
  fprintf(stderr, "MISMATCH rank %d case %ld (%s): offset %zu expected 0x%02x got 0x%02x\n", rank, cases, what, off,
          expected & 0xff, got & 0xff);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

static void compare(const char* what, const unsigned char* got, const unsigned char* ref, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != ref[i]) fail(what, i, ref[i], got[i]);
  checked_bytes += (long)n;
}

/* Memory of a kind; `stack` memory is provided by the caller (alloca in the case function). */
static unsigned char* region(int kind, size_t bytes, size_t offset, int which, void* stack, void** to_unmap,
                             size_t* map_len) {
  *to_unmap = NULL;
  switch (kind) {
    case MEM_STATIC:
      if (bytes + offset <= sizeof static_send) return (unsigned char*)(which ? static_recv : static_send) + offset;
      return (unsigned char*)malloc(bytes + offset + 1) + offset; /* too large for the static pool */
    case MEM_HEAP: return (unsigned char*)malloc(bytes + offset + 1) + offset;
    case MEM_MMAP: {
      *map_len = bytes + offset + 1;
      void* p = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *to_unmap = p;
      return (unsigned char*)p + offset;
    }
    default: return (unsigned char*)stack + offset;
  }
}

static void release(int kind, unsigned char* p, size_t offset, size_t bytes, void* unmap, size_t len) {
  if (unmap) munmap(unmap, len);
  else if (kind == MEM_HEAP || (kind == MEM_STATIC && bytes + offset > sizeof static_send)) free(p - offset);
}

/* Touches `buf` (n bytes) the way `acc` says, right after the collective returned. `send` may be
 * overwritten. Returns with buf unchanged except for ACC_READ_SYSCALL, which overwrites the first
 * `n/3` bytes with bytes from a file: `ref` is patched the same way. */
static void touch(int acc, unsigned char* buf, size_t n, unsigned char* send, size_t send_n, unsigned char* ref,
                  MPI_Comm comm) {
  long s = 0;
  switch (acc) {
    case ACC_FORWARD:
      for (size_t i = 0; i < n; i++) s += buf[i];
      break;
    case ACC_REVERSE:
      for (size_t i = n; i-- > 0;) s += buf[i];
      break;
    case ACC_RANDOM:
      for (int k = 0; k < 64 && n; k++) s += buf[rng() % n];
      break;
    case ACC_WRITE_SYSCALL: {
      /* The kernel reads the guarded buffer: write(2) must not fail with EFAULT. */
      char path[] = "/tmp/tnbc-diff-XXXXXX";
      int fd = mkstemp(path);
      unlink(path);
      size_t done = 0;
      while (done < n) {
        ssize_t w = write(fd, buf + done, n - done);
        if (w <= 0) { perror("write(2) of a received buffer"); MPI_Abort(MPI_COMM_WORLD, 4); }
        done += (size_t)w;
      }
      unsigned char* back = malloc(n + 1);
      if (pread(fd, back, n, 0) != (ssize_t)n) { perror("pread"); MPI_Abort(MPI_COMM_WORLD, 4); }
      compare("write(2) copy", back, ref, n);
      free(back);
      close(fd);
      break;
    }
    case ACC_READ_SYSCALL: {
      /* The kernel writes into the guarded buffer: read(2) must wait for the data, then win. */
      size_t k = n / 3;
      int fd = open("/dev/urandom", O_RDONLY);
      unsigned char* rnd = malloc(k + 1);
      if (read(fd, rnd, k) != (ssize_t)k) { perror("read"); MPI_Abort(MPI_COMM_WORLD, 4); }
      close(fd);
      char path[] = "/tmp/tnbc-diff-XXXXXX";
      fd = mkstemp(path);
      unlink(path);
      if (write(fd, rnd, k) != (ssize_t)k) { perror("write"); MPI_Abort(MPI_COMM_WORLD, 4); }
      if (k && pread(fd, buf, k, 0) != (ssize_t)k) { perror("read(2) into a received buffer"); MPI_Abort(MPI_COMM_WORLD, 4); }
      memcpy(ref, rnd, k);
      close(fd);
      free(rnd);
      break;
    }
    case ACC_MPI_SEND: {
      /* The receive buffer goes straight into another MPI call (send side), before any touch. */
      int me, size;
      MPI_Comm_rank(comm, &me);
      MPI_Comm_size(comm, &size);
      int right = (me + 1) % size, left = (me + size - 1) % size;
      unsigned long long nn = n, ln = 0;
      PMPI_Sendrecv(&nn, 1, MPI_UNSIGNED_LONG_LONG, right, 7, &ln, 1, MPI_UNSIGNED_LONG_LONG, left, 7, comm,
                    MPI_STATUS_IGNORE);
      unsigned char* got = malloc(ln + 1);
      unsigned char* want = malloc(ln + 1);
      MPI_Sendrecv(buf, (int)n, MPI_BYTE, right, 8, got, (int)ln, MPI_BYTE, left, 8, comm, MPI_STATUS_IGNORE);
      PMPI_Sendrecv(ref, (int)n, MPI_BYTE, right, 9, want, (int)ln, MPI_BYTE, left, 9, comm, MPI_STATUS_IGNORE);
      compare("MPI_Sendrecv of a received buffer", got, want, ln);
      free(got);
      free(want);
      break;
    }
    case ACC_OVERWRITE_SEND:
      memset(send, 0xA5, send_n);
      break;
    default:
      break;
  }
  sink = s;
}

/* Datatype variants: element size in bytes and a constructor. */
enum { T_BYTE, T_INT, T_DOUBLE, T_CONTIG3, T_VECTOR, T_KINDS };
static const char* type_name[] = {"MPI_BYTE", "MPI_INT", "MPI_DOUBLE", "contiguous(3 x int)", "vector(2,1,3 x int)"};
static MPI_Datatype types[T_KINDS];
static MPI_Aint type_extent[T_KINDS];

static void make_types(void) {
  types[T_BYTE] = MPI_BYTE;
  types[T_INT] = MPI_INT;
  types[T_DOUBLE] = MPI_DOUBLE;
  MPI_Type_contiguous(3, MPI_INT, &types[T_CONTIG3]);
  MPI_Type_commit(&types[T_CONTIG3]);
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 3, MPI_INT, &v); /* ints 0 and 3 of a 4-int block: gaps inside */
  MPI_Type_create_resized(v, 0, 4 * sizeof(int), &types[T_VECTOR]);
  MPI_Type_free(&v);
  MPI_Type_commit(&types[T_VECTOR]);
  for (int t = 0; t < T_KINDS; t++) {
    MPI_Aint lb;
    MPI_Type_get_extent(types[t], &lb, &type_extent[t]);
  }
}

static void fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 12));
}

/* ---------------------------------------------------------------- Alltoall */
/* Stack buffers stay below this (the default stack is 8 MiB); larger ones go to the heap. */
#define STACK_MAX (1u << 20)

static void case_alltoall(MPI_Comm comm, long count, int type, int mem, size_t offset, int acc, int in_place) {
  int size;
  MPI_Comm_size(comm, &size);
  const size_t bytes = (size_t)count * (size_t)type_extent[type] * (size_t)size;
  if (mem == MEM_STACK && bytes > STACK_MAX) mem = MEM_HEAP;
  void* stack_s = mem == MEM_STACK ? alloca(bytes + offset + 1) : NULL;
  void* stack_r = mem == MEM_STACK ? alloca(bytes + offset + 3 + 1) : NULL;
  void *us, *ur;
  size_t ls = 0, lr = 0;
  unsigned char* s = region(mem, bytes, offset, 0, stack_s, &us, &ls);
  unsigned char* r = region(mem, bytes, offset + 3, 1, stack_r, &ur, &lr);
  unsigned char* ref = malloc(bytes + 1);
  unsigned char* ref_send = malloc(bytes + 1);
  fill(s, bytes, (unsigned)(rank + 11 * cases));
  memcpy(ref_send, s, bytes);
  memset(r, 0x5C, bytes);
  memset(ref, 0x5C, bytes);
  if (in_place) {
    memcpy(r, s, bytes);
    memcpy(ref, s, bytes);
    PMPI_Alltoall(MPI_IN_PLACE, (int)count, types[type], ref, (int)count, types[type], comm);
    MPI_Alltoall(MPI_IN_PLACE, (int)count, types[type], r, (int)count, types[type], comm);
  } else {
    PMPI_Alltoall(ref_send, (int)count, types[type], ref, (int)count, types[type], comm);
    MPI_Alltoall(s, (int)count, types[type], r, (int)count, types[type], comm);
  }
  touch(acc, r, bytes, s, bytes, ref, comm);
  if (acc == ACC_NONE_THEN_AGAIN && !in_place) {
    /* A second collective on the same buffers before anything touched the first's result. */
    fill(s, bytes, (unsigned)(rank + 5));
    memcpy(ref_send, s, bytes);
    PMPI_Alltoall(ref_send, (int)count, types[type], ref, (int)count, types[type], comm);
    MPI_Alltoall(s, (int)count, types[type], r, (int)count, types[type], comm);
  }
  char what[200];
  snprintf(what, sizeof what, "alltoall%s count=%ld type=%s mem=%s offset=%zu access=%s", in_place ? "(in place)" : "",
           count, type_name[type], mem_name[mem], offset, acc_name[acc]);
  compare(what, r, ref, bytes);
  cases++;
  release(mem, s, offset, bytes, us, ls);
  release(mem, r, offset + 3, bytes, ur, lr);
  free(ref);
  free(ref_send);
}

/* ---------------------------------------------------------------- Alltoallv */
/* Counts agreed on by all ranks: what rank i sends to rank j (elements). */
static int vcount(unsigned seed, int i, int j, long scale) {
  unsigned h = seed * 2654435761u ^ (unsigned)(i * 40503 + j * 9973);
  h ^= h >> 13;
  if (h % 5 == 0) return 0; /* zeros */
  return (int)((h % 7 + 1) * scale / 4 + h % 13);
}

static void case_alltoallv(MPI_Comm comm, unsigned seed, long scale, int type, int mem, size_t offset, int acc,
                           int reversed, int in_place) {
  int size, me;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &me);
  int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
  int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
  size_t ext = (size_t)type_extent[type];
  long spos = 0, rpos = 0;
  for (int p = 0; p < size; p++) {
    sc[p] = vcount(seed, me, p, scale);
    rc[p] = vcount(seed, p, me, scale);
    /* In place, what i receives from j is replaced in j's buffer too: counts are symmetric. */
    if (in_place) sc[p] = rc[p] = vcount(seed, me < p ? me : p, me < p ? p : me, scale);
  }
  /* Displacements with gaps (a few elements between blocks), in rank order or reversed. */
  for (int k = 0; k < size; k++) {
    int p = reversed ? size - 1 - k : k;
    sd[p] = (int)spos;
    spos += sc[p] + 2;
    rd[p] = (int)rpos;
    rpos += rc[p] + 3;
  }
  if (in_place) memcpy(sd, rd, sizeof(int) * size);
  const size_t sbytes = (size_t)(in_place ? rpos : spos) * ext + 1, rbytes = (size_t)rpos * ext + 1;
  if (mem == MEM_STACK && (sbytes > STACK_MAX || rbytes > STACK_MAX)) mem = MEM_HEAP;
  void* stack_s = mem == MEM_STACK ? alloca(sbytes + offset + 1) : NULL;
  void* stack_r = mem == MEM_STACK ? alloca(rbytes + offset + 5 + 1) : NULL;
  void *us, *ur;
  size_t ls = 0, lr = 0;
  unsigned char* s = region(mem, sbytes, offset, 0, stack_s, &us, &ls);
  unsigned char* r = region(mem, rbytes, offset + 5, 1, stack_r, &ur, &lr);
  unsigned char* ref = malloc(rbytes);
  unsigned char* ref_send = malloc(sbytes);
  fill(s, sbytes, (unsigned)(rank * 3 + seed));
  memcpy(ref_send, s, sbytes);
  memset(r, 0xEE, rbytes); /* the gaps must keep this */
  memset(ref, 0xEE, rbytes);
  if (in_place) {
    fill(r, rbytes, (unsigned)(rank * 3 + seed));
    memcpy(ref, r, rbytes);
    PMPI_Alltoallv(MPI_IN_PLACE, sc, sd, types[type], ref, rc, rd, types[type], comm);
    MPI_Alltoallv(MPI_IN_PLACE, sc, sd, types[type], r, rc, rd, types[type], comm);
  } else {
    PMPI_Alltoallv(ref_send, sc, sd, types[type], ref, rc, rd, types[type], comm);
    MPI_Alltoallv(s, sc, sd, types[type], r, rc, rd, types[type], comm);
  }
  touch(acc, r, rbytes, s, sbytes, ref, comm);
  char what[200];
  snprintf(what, sizeof what, "alltoallv%s seed=%u scale=%ld type=%s mem=%s offset=%zu access=%s%s",
           in_place ? "(in place)" : "", seed, scale, type_name[type], mem_name[mem], offset, acc_name[acc],
           reversed ? " reversed-displacements" : "");
  compare(what, r, ref, rbytes);
  cases++;
  release(mem, s, offset, sbytes, us, ls);
  release(mem, r, offset + 5, rbytes, ur, lr);
  free(ref);
  free(ref_send);
  free(sc), free(sd), free(rc), free(rd);
}

/* ---------------------------------------------------------------- Allgather */
static void case_allgather(MPI_Comm comm, long count, int type, int mem, size_t offset, int acc, int in_place) {
  int size, me;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &me);
  const size_t block = (size_t)count * (size_t)type_extent[type], bytes = block * (size_t)size;
  if (mem == MEM_STACK && bytes > STACK_MAX) mem = MEM_HEAP;
  void* stack_s = mem == MEM_STACK ? alloca(block + offset + 1) : NULL;
  void* stack_r = mem == MEM_STACK ? alloca(bytes + offset + 3 + 1) : NULL;
  void *us, *ur;
  size_t ls = 0, lr = 0;
  unsigned char* s = region(mem, block, offset, 0, stack_s, &us, &ls);
  unsigned char* r = region(mem, bytes, offset + 3, 1, stack_r, &ur, &lr);
  unsigned char* ref = malloc(bytes + 1);
  unsigned char* ref_send = malloc(block + 1);
  fill(s, block, (unsigned)(rank + 13 * cases));
  memcpy(ref_send, s, block);
  memset(r, 0x5C, bytes);
  if (in_place) memcpy(r + (size_t)me * block, s, block); /* the own block, already in place */
  memcpy(ref, r, bytes);
  if (in_place) {
    PMPI_Allgather(MPI_IN_PLACE, (int)count, types[type], ref, (int)count, types[type], comm);
    MPI_Allgather(MPI_IN_PLACE, (int)count, types[type], r, (int)count, types[type], comm);
  } else {
    PMPI_Allgather(ref_send, (int)count, types[type], ref, (int)count, types[type], comm);
    MPI_Allgather(s, (int)count, types[type], r, (int)count, types[type], comm);
  }
  touch(acc, r, bytes, s, block, ref, comm);
  if (acc == ACC_NONE_THEN_AGAIN && !in_place) {
    /* A second collective on the same buffers before anything touched the first's result. */
    fill(s, block, (unsigned)(rank + 9));
    memcpy(ref_send, s, block);
    PMPI_Allgather(ref_send, (int)count, types[type], ref, (int)count, types[type], comm);
    MPI_Allgather(s, (int)count, types[type], r, (int)count, types[type], comm);
  }
  char what[200];
  snprintf(what, sizeof what, "allgather%s count=%ld type=%s mem=%s offset=%zu access=%s", in_place ? "(in place)" : "",
           count, type_name[type], mem_name[mem], offset, acc_name[acc]);
  compare(what, r, ref, bytes);
  cases++;
  release(mem, s, offset, block, us, ls);
  release(mem, r, offset + 3, bytes, ur, lr);
  free(ref);
  free(ref_send);
}

/* ---------------------------------------------------------------- Allgatherv */
/* Counts agreed on by all ranks: what rank p contributes (elements, some zero). */
static void case_allgatherv(MPI_Comm comm, unsigned seed, long scale, int type, int mem, size_t offset, int acc,
                            int reversed, int in_place) {
  int size, me;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &me);
  int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
  const size_t ext = (size_t)type_extent[type];
  long rpos = 0;
  for (int p = 0; p < size; p++) rc[p] = vcount(seed, p, p + 1, scale);
  /* Displacements with gaps (a few elements between blocks), in rank order or reversed. */
  for (int k = 0; k < size; k++) {
    const int p = reversed ? size - 1 - k : k;
    rd[p] = (int)rpos;
    rpos += rc[p] + 3;
  }
  const size_t sbytes = (size_t)rc[me] * ext + 1, rbytes = (size_t)rpos * ext + 1;
  if (mem == MEM_STACK && (sbytes > STACK_MAX || rbytes > STACK_MAX)) mem = MEM_HEAP;
  void* stack_s = mem == MEM_STACK ? alloca(sbytes + offset + 1) : NULL;
  void* stack_r = mem == MEM_STACK ? alloca(rbytes + offset + 5 + 1) : NULL;
  void *us, *ur;
  size_t ls = 0, lr = 0;
  unsigned char* s = region(mem, sbytes, offset, 0, stack_s, &us, &ls);
  unsigned char* r = region(mem, rbytes, offset + 5, 1, stack_r, &ur, &lr);
  unsigned char* ref = malloc(rbytes);
  unsigned char* ref_send = malloc(sbytes);
  fill(s, sbytes, (unsigned)(rank * 5 + seed));
  memcpy(ref_send, s, sbytes);
  memset(r, 0xEE, rbytes); /* the gaps must keep this */
  if (in_place) memcpy(r + (size_t)rd[me] * ext, s, (size_t)rc[me] * ext);
  memcpy(ref, r, rbytes);
  if (in_place) {
    PMPI_Allgatherv(MPI_IN_PLACE, rc[me], types[type], ref, rc, rd, types[type], comm);
    MPI_Allgatherv(MPI_IN_PLACE, rc[me], types[type], r, rc, rd, types[type], comm);
  } else {
    PMPI_Allgatherv(ref_send, rc[me], types[type], ref, rc, rd, types[type], comm);
    MPI_Allgatherv(s, rc[me], types[type], r, rc, rd, types[type], comm);
  }
  touch(acc, r, rbytes, s, sbytes, ref, comm);
  char what[200];
  snprintf(what, sizeof what, "allgatherv%s seed=%u scale=%ld type=%s mem=%s offset=%zu access=%s%s",
           in_place ? "(in place)" : "", seed, scale, type_name[type], mem_name[mem], offset, acc_name[acc],
           reversed ? " reversed-displacements" : "");
  compare(what, r, ref, rbytes);
  cases++;
  release(mem, s, offset, sbytes, us, ls);
  release(mem, r, offset + 5, rbytes, ur, lr);
  free(ref);
  free(ref_send);
  free(rc), free(rd);
}

/* ---------------------------------------------------------------- Bcast */
static void case_bcast(MPI_Comm comm, long count, int type, int root, int mem, size_t offset, int acc) {
  int me;
  MPI_Comm_rank(comm, &me);
  const size_t bytes = (size_t)count * (size_t)type_extent[type];
  if (mem == MEM_STACK && bytes > STACK_MAX) mem = MEM_HEAP;
  void* stack_b = mem == MEM_STACK ? alloca(bytes + offset + 1) : NULL;
  void* ub;
  size_t lb = 0;
  unsigned char* b = region(mem, bytes, offset, 1, stack_b, &ub, &lb);
  unsigned char* ref = malloc(bytes + 1);
  if (me == root) {
    fill(ref, bytes, (unsigned)(root * 17 + cases));
    memcpy(b, ref, bytes);
  } else {
    memset(b, 0x33, bytes);
    memset(ref, 0x33, bytes);
  }
  /* In vector types the gaps are not transferred: the reference shows what stays. */
  PMPI_Bcast(ref, (int)count, types[type], root, comm);
  MPI_Bcast(b, (int)count, types[type], root, comm);
  /* The root may reuse its buffer at once; others touch theirs. */
  if (me == root) memset(b, 0x77, bytes), memcpy(b, ref, bytes);
  touch(acc == ACC_OVERWRITE_SEND ? ACC_FORWARD : acc, b, bytes, NULL, 0, ref, comm);
  char what[200];
  snprintf(what, sizeof what, "bcast count=%ld type=%s root=%d mem=%s offset=%zu access=%s", count, type_name[type],
           root, mem_name[mem], offset, acc_name[acc]);
  compare(what, b, ref, bytes);
  cases++;
  release(mem, b, offset, bytes, ub, lb);
  free(ref);
}

/* `n` broadcasts from rotating roots, alternating between two communicators, none touched before
 * the last one returned; then every buffer is compared (newest first). */
static void bcast_burst(MPI_Comm c0, MPI_Comm c1, int n, size_t bytes) {
  unsigned char** b = malloc(sizeof(unsigned char*) * (size_t)n);
  unsigned char** ref = malloc(sizeof(unsigned char*) * (size_t)n);
  for (int i = 0; i < n; i++) {
    MPI_Comm c = i % 2 ? c1 : c0;
    int me, size;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &size);
    const int root = (i * 3 + 1) % size;
    const size_t len = bytes + (size_t)i * 4099;
    b[i] = malloc(len), ref[i] = malloc(len);
    fill(ref[i], len, (unsigned)(i * 31 + 7));
    if (me != root) memset(ref[i], 0x5a, len);
    memcpy(b[i], ref[i], len);
    PMPI_Bcast(ref[i], (int)len, MPI_BYTE, root, c);
  }
  for (int i = 0; i < n; i++) {
    MPI_Comm c = i % 2 ? c1 : c0;
    int size;
    MPI_Comm_size(c, &size);
    MPI_Bcast(b[i], (int)(bytes + (size_t)i * 4099), MPI_BYTE, (i * 3 + 1) % size, c);
  }
  for (int i = n - 1; i >= 0; i--) {
    char what[120];
    snprintf(what, sizeof what, "bcast burst %d of %d (%zu bytes)", i, n, bytes + (size_t)i * 4099);
    compare(what, b[i], ref[i], bytes + (size_t)i * 4099);
    cases++;
    free(b[i]), free(ref[i]);
  }
  free(b), free(ref);
}

static void bcast_only(void) {
  const long bsizes[] = {0, 1, 4095, 3 * 4096 + 1, 65537, (1 << 20) + 7, 4 << 20, 32 << 20};
  const size_t offsets[] = {0, 1, 3, 8, 4095, 4113};
  int k = 0;
  for (int si = 0; si < 8; si++)
    for (int root = 0; root < np; root++, k++) {
      /* 32 MiB from the first and the last rank only in worlds wider than 4 ranks (every root
       * there costs ~1 s of the 2 cores per broadcast; the other sizes still come from every root). */
      if (bsizes[si] > (4 << 20) && np > 4 && root != 0 && root != np - 1) continue;
      const int t = bsizes[si] > (4 << 20) ? T_BYTE : (int)(k % T_KINDS);
      const long count = bsizes[si] / (long)type_extent[t] + (bsizes[si] > 0 && t != T_BYTE);
      case_bcast(MPI_COMM_WORLD, count, t, root, k % MEM_KINDS, offsets[k % 6], k % ACC_KINDS);
    }
  /* `most`: every rank but the last, in reverse order (the last one alone: one rank, no windows).
   * Not two disjoint halves: Open MPI 4.1's osc sm names a window's backing file by the
   * communicator's context id, which disjoint split communicators share, so windows created on
   * both at once may collide (tnbc then falls back to p2p, docs/limitations.md). */
  MPI_Comm dup, half;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank == np - 1, np - rank, &half);
  bcast_burst(MPI_COMM_WORLD, dup, 7, 20000);
  bcast_burst(dup, half, 6, 300000);
  bcast_burst(MPI_COMM_WORLD, MPI_COMM_WORLD, 5, 2 << 20);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
}

static void on_mpi_error(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(*code, text, &len);
  fprintf(stderr, "MPI ERROR rank %d case %ld: %s\n", rank, cases, text);
  MPI_Abort(MPI_COMM_WORLD, 5);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(on_mpi_error, &handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const int full = argc > 1 && strcmp(argv[1], "full") == 0;
  const int bcast = argc > 1 && strcmp(argv[1], "bcast") == 0;
  rng_state = (argc > 2 ? strtoull(argv[2], NULL, 0) : 12345) * 2 + 1;
  make_types();
  if (bcast) {
    bcast_only();
    goto done;
  }
  const size_t offsets[] = {0, 1, 3, 8, 4095, 4113};
  const long sizes[] = {0, 1, 100, 4096, 3 * 4096 + 5, 65536, (1 << 20) + 3};
  const int nsizes = full ? 7 : 7;
  int k = 0;

  /* Alltoall over MPI_COMM_WORLD: every size, rotating type, memory, offset and access. */
  for (int si = 0; si < nsizes; si++)
    for (int t = 0; t < T_KINDS; t++, k++) {
      long count = sizes[si] / (long)type_extent[t] + (sizes[si] > 0);
      if (count * type_extent[t] * np > (6 << 20)) count = (6 << 20) / (type_extent[t] * np);
      case_alltoall(MPI_COMM_WORLD, count, t, k % MEM_KINDS, offsets[k % 6], k % ACC_KINDS, 0);
    }
  /* Every access pattern on every memory kind at a size that returns early. */
  for (int m = 0; m < MEM_KINDS; m++)
    for (int a = 0; a < ACC_KINDS; a++, k++)
      case_alltoall(MPI_COMM_WORLD, 5 * 4096 + 17, T_BYTE, m, offsets[k % 6], a, 0);
  /* In place. */
  for (int t = 0; t < 3; t++) case_alltoall(MPI_COMM_WORLD, 70000 / (long)type_extent[t], t, t % MEM_KINDS, 8, t, 1);

  /* Alltoallv: zeros, gaps, reversed displacements, in place. */
  for (int i = 0; i < (full ? 24 : 10); i++, k++) {
    const long scale = (i % 3 == 0) ? 10 : (i % 3 == 1) ? 5000 : 200000;
    const int t = i % 3 == 2 ? (int)(k % 3) : (int)(k % T_KINDS);
    case_alltoallv(MPI_COMM_WORLD, 100u + (unsigned)i, scale / (long)type_extent[t], t, k % MEM_KINDS,
                   offsets[k % 6], k % ACC_KINDS, i % 2, 0);
  }
  case_alltoallv(MPI_COMM_WORLD, 7, 30000, T_INT, MEM_HEAP, 4, ACC_FORWARD, 0, 1);
  case_alltoallv(MPI_COMM_WORLD, 8, 30000, T_DOUBLE, MEM_MMAP, 0, ACC_RANDOM, 1, 1);

  /* Allgather: every size, rotating type, memory, offset and access; every access on every memory
   * kind at a size that returns early; in place. */
  for (int si = 0; si < nsizes; si++)
    for (int t = 0; t < T_KINDS; t++, k++) {
      long count = sizes[si] / (long)type_extent[t] + (sizes[si] > 0);
      if (count * type_extent[t] * np > (6 << 20)) count = (6 << 20) / (type_extent[t] * np);
      case_allgather(MPI_COMM_WORLD, count, t, k % MEM_KINDS, offsets[k % 6], k % ACC_KINDS, 0);
    }
  for (int m = 0; m < MEM_KINDS; m++)
    for (int a = 0; a < ACC_KINDS; a++, k++)
      case_allgather(MPI_COMM_WORLD, 5 * 4096 + 17, T_BYTE, m, offsets[k % 6], a, 0);
  for (int t = 0; t < T_KINDS; t++) case_allgather(MPI_COMM_WORLD, 70000 / (long)type_extent[t], t, t % MEM_KINDS, 8, t, 1);

  /* Allgatherv: zeros, gaps (untouched), reversed displacements, non-dense types, in place. */
  for (int i = 0; i < (full ? 24 : 10); i++, k++) {
    const long scale = (i % 3 == 0) ? 10 : (i % 3 == 1) ? 5000 : 200000;
    const int t = i % 3 == 2 ? (int)(k % 3) : (int)(k % T_KINDS);
    case_allgatherv(MPI_COMM_WORLD, 200u + (unsigned)i, scale / (long)type_extent[t], t, k % MEM_KINDS,
                    offsets[k % 6], k % ACC_KINDS, i % 2, 0);
  }
  case_allgatherv(MPI_COMM_WORLD, 9, 30000, T_INT, MEM_HEAP, 4, ACC_FORWARD, 0, 1);
  case_allgatherv(MPI_COMM_WORLD, 10, 30000, T_VECTOR, MEM_MMAP, 0, ACC_REVERSE, 1, 1);

  /* Bcast from every root. */
  const long bsizes[] = {1, 3 * 4096 + 1, (1 << 20) + 7};
  for (int root = 0; root < np; root++)
    for (int si = 0; si < 3; si++, k++) {
      const int t = (int)(k % T_KINDS);
      case_bcast(MPI_COMM_WORLD, bsizes[si] / (long)type_extent[t] + 1, t, root, k % MEM_KINDS, offsets[k % 6],
                 k % ACC_KINDS);
    }

  /* Sub-communicators and duplicates, with a pending collective on another communicator. */
  MPI_Comm half, dup;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int i = 0; i < 4; i++, k++) {
    case_alltoall(half, 20000 + i * 1000, T_INT, k % MEM_KINDS, offsets[k % 6], k % ACC_KINDS, 0);
    case_bcast(dup, 300000 + i, T_BYTE, i % np, MEM_HEAP, 1, ACC_REVERSE);
    case_alltoallv(half, 300u + (unsigned)i, 40000, T_BYTE, MEM_MMAP, 0, ACC_RANDOM, i % 2, 0);
    case_allgather(dup, 30000 + i, T_BYTE, k % MEM_KINDS, offsets[(k + 1) % 6], ACC_REVERSE, i % 2);
    case_allgatherv(half, 400u + (unsigned)i, 30000, T_INT, MEM_HEAP, 8, ACC_OVERWRITE_SEND, i % 2, 0);
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);

  /* Chained: the receive buffer of one Alltoall is the send buffer of the next, untouched. */
  {
    const size_t per = 200000, bytes = per * (size_t)np;
    unsigned char *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    unsigned char *ra = malloc(bytes), *rb = malloc(bytes), *rc = malloc(bytes);
    fill(a, bytes, (unsigned)rank);
    memcpy(ra, a, bytes);
    PMPI_Alltoall(ra, (int)per, MPI_BYTE, rb, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    PMPI_Alltoall(rb, (int)per, MPI_BYTE, rc, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoall(a, (int)per, MPI_BYTE, b, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoall(b, (int)per, MPI_BYTE, c, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    compare("chained alltoall (second)", c, rc, bytes);
    compare("chained alltoall (first)", b, rb, bytes);
    cases++;
    free(a), free(b), free(c), free(ra), free(rb), free(rc);
  }

done:;
  long all_cases = 0, all_bytes = 0;
  MPI_Reduce(&cases, &all_cases, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checked_bytes, &all_bytes, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("diff_collectives: np=%d, %ld cases over all ranks, %ld bytes compared\n", np, all_cases, all_bytes);
    printf("diff_collectives: %ld passed, 0 failed\n", all_cases);
  }
  MPI_Type_free(&types[T_CONTIG3]);
  MPI_Type_free(&types[T_VECTOR]);
  MPI_Finalize();
  return 0;
}
