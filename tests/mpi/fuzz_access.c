/* Accesses after a collective returns, and their journal (see fuzz_access.h). */
#define _GNU_SOURCE
#include "fuzz_access.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuzz_check.h"

const char* fuzz_access_name[ACC_KINDS] = {"read-forward", "read-reverse", "read-random-pages", "write-send",
                                           "write-recv", "write(2)", "read(2)-into", "send/recv-neighbour",
                                           "nested"};

enum { J_PATCH, J_SEEN, J_SEEN_SPARSE, J_SENT };

/* What read(2) and pread(2) become in programs built with -D_FORTIFY_SOURCE (glibc). */
extern ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen);
extern ssize_t __pread64_chk(int fd, void* buf, size_t n, off_t off, size_t buflen);

#define PAGE ((size_t)4096)
#define FILE_LEN ((size_t)1 << 20)
#define PIPE_CHUNK ((size_t)32768)
static unsigned char* file_bytes;  /* the known content of file_fd */
static int file_fd = -1;

static void die(const char* what) {
  perror(what);
  fuzz_print_context("ERROR in");
  MPI_Abort(MPI_COMM_WORLD, 4);
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) die("malloc");
  return p;
}

void fuzz_fill(unsigned char* p, size_t n, Rng* r) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng_next(r);
    memcpy(p + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = rng_next(r);
    memcpy(p + i, &v, n - i);
  }
}

void fuzz_access_init(uint64_t seed) {
  char path[] = "/tmp/tnbc-fuzz-read-XXXXXX";
  file_fd = mkstemp(path);
  if (file_fd < 0) die("mkstemp");
  unlink(path);
  file_bytes = xmalloc(FILE_LEN);
  Rng r = rng_derive(seed, 0xF11E, 0, 0);
  fuzz_fill(file_bytes, FILE_LEN, &r);
  if (pwrite(file_fd, file_bytes, FILE_LEN, 0) != (ssize_t)FILE_LEN) die("pwrite");
}

void fuzz_access_finish(void) {
  close(file_fd);
  free(file_bytes);
}

static JournalEntry* add(AccessTarget* t, int kind, size_t off, size_t len, unsigned char* data, int owned) {
  if (t->journal.n == JOURNAL_MAX) {
    fprintf(stderr, "fuzz: internal error: journal full\n");
    abort();
  }
  JournalEntry* e = &t->journal.e[t->journal.n++];
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->off = off;
  e->len = len;
  e->data = data;
  e->owned = owned;
  return e;
}

/* A range inside [lo, hi): often all of it, else a random part (small ones likelier). */
static void pick_range(Rng* r, size_t lo, size_t hi, size_t* off, size_t* len) {
  const size_t n = hi - lo;
  if (n == 0 || rng_chance(r, 400)) {
    *off = lo;
    *len = n;
    return;
  }
  *off = lo + rng_below(r, n);
  const size_t room = hi - *off;
  *len = rng_chance(r, 500) ? 1 + rng_below(r, room < 3 * PAGE ? room : 3 * PAGE) : 1 + rng_below(r, room);
}

static void write_all(int fd, const unsigned char* p, size_t n, int vectored, Rng* r) {
  if (vectored && n > 1) {
    const size_t cut = 1 + rng_below(r, n - 1);
    struct iovec iov[2] = {{(void*)p, cut}, {(void*)(p + cut), n - cut}};
    const ssize_t w = writev(fd, iov, 2);
    if (w < 0) die("writev(2) of a received buffer");
    p += w;
    n -= (size_t)w;
  }
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) die("write(2) of a received buffer");
    p += w;
    n -= (size_t)w;
  }
}

static void read_all(int fd, unsigned char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = read(fd, p, n);
    if (w <= 0) die("read(2) back from a pipe");
    p += w;
    n -= (size_t)w;
  }
}

/* write(2) of a range: to /dev/null (the kernel may not read it: nothing to check), through a
 * pipe in chunks (read back), or to a file (read back). */
static void write_syscall(AccessTarget* t) {
  size_t off, len;
  pick_range(t->local, 0, t->recv_len, &off, &len);
  const unsigned char* p = t->recv + off;
  const int sink = (int)rng_below(t->local, 3);
  if (sink == 0) {
    const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0) die("open /dev/null");
    write_all(fd, p, len, 0, t->local);
    close(fd);
    return;
  }
  unsigned char* seen = xmalloc(len);
  if (sink == 1) {
    int fds[2];
    if (pipe(fds) != 0) die("pipe");
    for (size_t at = 0; at < len; at += PIPE_CHUNK) {
      const size_t n = len - at < PIPE_CHUNK ? len - at : PIPE_CHUNK;
      write_all(fds[1], p + at, n, rng_chance(t->local, 300), t->local);
      read_all(fds[0], seen + at, n);
    }
    close(fds[0]);
    close(fds[1]);
  } else {
    char path[] = "/tmp/tnbc-fuzz-write-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) die("mkstemp");
    unlink(path);
    write_all(fd, p, len, rng_chance(t->local, 500), t->local);
    if (len && pread(fd, seen, len, 0) != (ssize_t)len) die("pread back");
    close(fd);
  }
  add(t, J_SEEN, off, len, seen, 1);
}

/* read(2) of known bytes into a range: the bytes must stay (not be overwritten by late data). */
static void read_syscall(AccessTarget* t) {
  size_t off, len;
  pick_range(t->local, 0, t->recv_len, &off, &len);
  if (len > FILE_LEN) len = FILE_LEN;
  const size_t foff = rng_below(t->local, FILE_LEN - len + 1);
  unsigned char* p = t->recv + off;
  ssize_t got = 0;
  const int how = (int)rng_below(t->local, 6);
  static const char* how_name[] = {"pread(2)", "read(2)", "preadv(2)", "__read_chk", "__pread64_chk", "fread(3)"};
  errno = 0;
  switch (how) {
    case 0: got = pread(file_fd, p, len, (off_t)foff); break;
    case 1:
    case 3:
      if (lseek(file_fd, (off_t)foff, SEEK_SET) < 0) die("lseek");
      got = how == 1 ? read(file_fd, p, len) : __read_chk(file_fd, p, len, len);
      break;
    case 4: got = __pread64_chk(file_fd, p, len, (off_t)foff, len); break;
    case 5: {
      FILE* f = fdopen(dup(file_fd), "r");
      if (!f || fseeko(f, (off_t)foff, SEEK_SET) != 0) die("fdopen/fseeko");
      got = (ssize_t)fread(p, 1, len, f);
      fclose(f);
      break;
    }
    default: {
      const size_t cut = len ? rng_below(t->local, len + 1) : 0;
      struct iovec iov[2] = {{p, cut}, {p + cut, len - cut}};
      got = preadv(file_fd, iov, 2, (off_t)foff);
    }
  }
  if (got != (ssize_t)len) {
    char what[160];
    snprintf(what, sizeof what, "%s of %zu bytes into a received buffer at offset %zu returned %zd", how_name[how], len,
             off, got);
    die(what);
  }
  add(t, J_PATCH, off, len, file_bytes + foff, 0);
}

static void read_forward(AccessTarget* t, int reverse) {
  size_t off, len;
  pick_range(t->local, 0, t->recv_len, &off, &len);
  unsigned char* seen = xmalloc(len);
  const volatile unsigned char* p = t->recv + off;
  if (reverse)
    for (size_t i = len; i-- > 0;) seen[i] = p[i];
  else
    for (size_t i = 0; i < len; i++) seen[i] = p[i];
  add(t, J_SEEN, off, len, seen, 1);
}

static void read_random_pages(AccessTarget* t) {
  if (t->recv_len == 0) return;
  const uintptr_t first = (uintptr_t)t->recv / PAGE, last = ((uintptr_t)t->recv + t->recv_len - 1) / PAGE;
  const size_t pages = last - first + 1;
  size_t* order = xmalloc(pages * sizeof *order);
  for (size_t i = 0; i < pages; i++) order[i] = i;
  for (size_t i = pages; i > 1; i--) {
    const size_t j = rng_below(t->local, i), x = order[i - 1];
    order[i - 1] = order[j];
    order[j] = x;
  }
  unsigned char* seen = xmalloc(pages);
  for (size_t i = 0; i < pages; i++) {
    /* a byte of the buffer on that page */
    const uintptr_t lo_addr = (first + order[i]) * PAGE, hi_addr = lo_addr + PAGE;
    const size_t lo = lo_addr < (uintptr_t)t->recv ? 0 : lo_addr - (uintptr_t)t->recv;
    const size_t hi = hi_addr - (uintptr_t)t->recv > t->recv_len ? t->recv_len : hi_addr - (uintptr_t)t->recv;
    order[i] = lo + rng_below(t->local, hi - lo);
    seen[i] = ((const volatile unsigned char*)t->recv)[order[i]];
  }
  add(t, J_SEEN_SPARSE, 0, pages, seen, 1)->offsets = order;
}

static void write_recv(AccessTarget* t) {
  size_t off, len;
  pick_range(t->local, 0, t->recv_len, &off, &len);
  unsigned char* data = xmalloc(len);
  fuzz_fill(data, len, t->local);
  volatile unsigned char* p = t->recv + off;
  for (size_t i = len; i-- > 0;) p[i] = data[i];
  add(t, J_PATCH, off, len, data, 1);
}

static void write_send(AccessTarget* t) {
  if (!t->send) {
    write_recv(t);
    return;
  }
  size_t off, len;
  pick_range(t->local, 0, t->send_len, &off, &len);
  fuzz_fill(t->send + off, len, t->local);
  t->send_written = 1;
}

/* Part A of the receive buffer (first half) goes to the next rank, which receives it into a
 * plain buffer; known bytes from the previous rank are received into part B (second half). */
static void neighbour(AccessTarget* t) {
  int n, me;
  MPI_Comm_size(t->comm, &n);
  MPI_Comm_rank(t->comm, &me);
  if (n == 1) return;
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  size_t a_off, a_len, b_off, b_len;
  pick_range(t->local, 0, t->recv_len / 2, &a_off, &a_len);
  pick_range(t->local, t->recv_len / 2, t->recv_len, &b_off, &b_len);
  unsigned long long mine_a = a_len, mine_b = b_len, left_a = 0, right_b = 0;
  PMPI_Sendrecv(&mine_b, 1, MPI_UNSIGNED_LONG_LONG, left, 70, &right_b, 1, MPI_UNSIGNED_LONG_LONG, right, 70, t->comm,
                MPI_STATUS_IGNORE);
  PMPI_Sendrecv(&mine_a, 1, MPI_UNSIGNED_LONG_LONG, right, 70, &left_a, 1, MPI_UNSIGNED_LONG_LONG, left, 70, t->comm,
                MPI_STATUS_IGNORE);
  unsigned char* got = xmalloc(left_a);
  unsigned char* out = xmalloc(right_b);
  unsigned char* in = xmalloc(b_len);
  Rng ro = rng_derive(t->pattern, (uint64_t)right, 0x4E, 0), ri = rng_derive(t->pattern, (uint64_t)me, 0x4E, 0);
  fuzz_fill(out, right_b, &ro);
  fuzz_fill(in, b_len, &ri); /* what the previous rank sends */
  unsigned char* a = t->recv + a_off;
  unsigned char* b = t->recv + b_off;
  if (rng_chance(t->shared, 250)) { /* MPI_Sendrecv on every rank, or Send/Recv ordered by parity */
    MPI_Sendrecv(a, (int)a_len, MPI_BYTE, right, 71, got, (int)left_a, MPI_BYTE, left, 71, t->comm, MPI_STATUS_IGNORE);
    MPI_Sendrecv(out, (int)right_b, MPI_BYTE, right, 72, b, (int)b_len, MPI_BYTE, left, 72, t->comm, MPI_STATUS_IGNORE);
  } else if (me % 2 == 0) {
    MPI_Send(a, (int)a_len, MPI_BYTE, right, 71, t->comm);
    MPI_Send(out, (int)right_b, MPI_BYTE, right, 72, t->comm);
    MPI_Recv(got, (int)left_a, MPI_BYTE, left, 71, t->comm, MPI_STATUS_IGNORE);
    MPI_Recv(b, (int)b_len, MPI_BYTE, left, 72, t->comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(got, (int)left_a, MPI_BYTE, left, 71, t->comm, MPI_STATUS_IGNORE);
    MPI_Recv(b, (int)b_len, MPI_BYTE, left, 72, t->comm, MPI_STATUS_IGNORE);
    MPI_Send(a, (int)a_len, MPI_BYTE, right, 71, t->comm);
    MPI_Send(out, (int)right_b, MPI_BYTE, right, 72, t->comm);
  }
  free(out);
  JournalEntry* e = add(t, J_SENT, a_off, a_len, NULL, 1);
  e->got = got;
  e->got_len = left_a;
  add(t, J_PATCH, b_off, b_len, in, 1);
}

void fuzz_access_run(int kind, AccessTarget* t) {
  switch (kind) {
    case ACC_READ_FORWARD: read_forward(t, 0); break;
    case ACC_READ_REVERSE: read_forward(t, 1); break;
    case ACC_READ_RANDOM: read_random_pages(t); break;
    case ACC_WRITE_SEND: write_send(t); break;
    case ACC_WRITE_RECV: write_recv(t); break;
    case ACC_WRITE_SYSCALL: write_syscall(t); break;
    case ACC_READ_SYSCALL: read_syscall(t); break;
    case ACC_NEIGHBOUR: neighbour(t); break;
    default: break;
  }
}

void fuzz_access_replay(AccessTarget* t, unsigned char* ref) {
  for (int i = 0; i < t->journal.n; i++) {
    JournalEntry* e = &t->journal.e[i];
    switch (e->kind) {
      case J_PATCH: memcpy(ref + e->off, e->data, e->len); break;
      case J_SEEN: fuzz_compare("bytes read after return (or by write(2))", e->data, ref + e->off, e->len, e->off); break;
      case J_SEEN_SPARSE:
        for (size_t k = 0; k < e->len; k++)
          if (fuzz_compare("a byte read on a page visited in random order", e->data + k, ref + e->offsets[k], 1,
                           e->offsets[k]))
            break;
        break;
      case J_SENT:
        e->data = xmalloc(e->len);
        memcpy(e->data, ref + e->off, e->len);
        break;
    }
  }
  int n, me;
  MPI_Comm_size(t->comm, &n);
  MPI_Comm_rank(t->comm, &me);
  for (int i = 0; i < t->journal.n; i++) {
    JournalEntry* e = &t->journal.e[i];
    if (e->kind != J_SENT) continue;
    unsigned char* want = xmalloc(e->got_len);
    PMPI_Sendrecv(e->data, (int)e->len, MPI_BYTE, (me + 1) % n, 73, want, (int)e->got_len, MPI_BYTE, (me + n - 1) % n,
                  73, t->comm, MPI_STATUS_IGNORE);
    fuzz_compare("bytes the previous rank sent from its receive buffer (MPI_Send)", e->got, want, e->got_len, 0);
    free(want);
  }
}

void fuzz_access_free(AccessTarget* t) {
  for (int i = 0; i < t->journal.n; i++) {
    JournalEntry* e = &t->journal.e[i];
    if (e->owned) free(e->data);
    free(e->offsets);
    free(e->got);
  }
  t->journal.n = 0;
}
