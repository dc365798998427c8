/* Reliability cases (one per run): threads, fork, a receive buffer unmapped (or purged) right
 * after the early return, a shared mapping put where a private one (already used as a receive buffer) was, a
 * receive buffer on the stack left unread when its function returns, a rank that never calls
 * the collective, a setting that shapes the messages given to one rank only.
 * usage: reliability threads|fork|munmap|madvise|remap-shared|stack-reuse|missing-rank|missing-fence|
 *                    missing-read|missing-finalize|missing-comm|rank-setting
 * rank-setting: rank 1 sets TNBC_PIECE_BYTES=8k in its own environment before MPI_Init (the
 * launcher's rank variable tells it which it is): the ranks would cut sub-messages differently
 * and wait for messages never sent, so tnbc must notice at MPI_Init and run blocking.
 * The missing-* cases: rank 1 (missing-rank: the last rank) never calls the collective; the
 * others must not wait forever wherever they wait (TNBC_TIMEOUT), but say what is missing and
 * end the job (MPI_Abort):
 *   missing-rank      in the call (the bytes of partial pages arrive before it returns)
 *   missing-fence     write(2) of a receive buffer whose data never comes (libc fence)
 *   missing-read      a plain read of it: asleep in the kernel (userfaultfd) or in the SIGSEGV
 *                     handler (TNBC_GUARD=protect)
 *   missing-finalize  a broadcast root whose child never receives: MPI_Finalize drains the sends
 *   missing-comm      the first collective on a new communicator (tnbc's duplicate of it), whose
 *                     ranks MPI_COMM_WORLD numbers otherwise: the roll call names rank 2 of it */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int rank, np;

static long alltoall_check(MPI_Comm comm, size_t per, int salt) {
  int n;
  MPI_Comm_size(comm, &n);
  unsigned char *s = malloc(per * n), *d = malloc(per * n), *ref = malloc(per * n);
  long bad = 0;
  for (int it = 0; it < 10; it++) {
    for (size_t i = 0; i < per * n; i++) s[i] = (unsigned char)(i * 7 + rank + it + salt);
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, comm);
    MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, comm);
    memset(s, 0, per * n);
    if (memcmp(d, ref, per * n) != 0) bad++;
  }
  free(s), free(d), free(ref);
  return bad;
}

static MPI_Comm comms[2];
static long thread_bad[2];
static void* worker(void* arg) {
  const int t = (int)(long)arg;
  thread_bad[t] = alltoall_check(comms[t], (1 << 18) + t * 4096 + 100, t);
  return NULL;
}

/* A receive buffer on the stack, of which only the first byte is read before the function
 * returns: its pages may still be held back when deeper calls put their frames there. */
#define STACK_BUF (256 * 1024)
__attribute__((noinline)) static long stack_receive(void) {
  unsigned char s[STACK_BUF], r[STACK_BUF], ref[STACK_BUF];
  for (size_t i = 0; i < STACK_BUF; i++) s[i] = (unsigned char)(i * 3 + rank);
  PMPI_Alltoall(s, STACK_BUF / np, MPI_BYTE, ref, STACK_BUF / np, MPI_BYTE, MPI_COMM_WORLD);
  MPI_Alltoall(s, STACK_BUF / np, MPI_BYTE, r, STACK_BUF / np, MPI_BYTE, MPI_COMM_WORLD);
  return r[0] != ref[0];
}
/* Small frames, one below the other, through the stack the buffer above occupied. */
__attribute__((noinline)) static long walk_stack(int depth) {
  volatile unsigned char frame[2000];
  frame[0] = (unsigned char)depth;
  frame[sizeof frame - 1] = frame[0];
  return depth == 0 ? frame[0] : walk_stack(depth - 1) + frame[sizeof frame - 1] - (unsigned char)depth;
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "threads";
  if (strcmp(what, "rank-setting") == 0) {
    const char* r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (r && strcmp(r, "1") == 0) setenv("TNBC_PIECE_BYTES", "8k", 1);
  }
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  long bad = 0;
  if (strcmp(what, "threads") == 0) {
    if (provided != MPI_THREAD_MULTIPLE) {
      fprintf(stderr, "MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    pthread_t th[2];
    for (long t = 0; t < 2; t++) pthread_create(&th[t], NULL, worker, (void*)t);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    bad = thread_bad[0] + thread_bad[1];
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
  } else if (strcmp(what, "fork") == 0) {
    /* The child has no progress thread: guarded data must be complete before fork(). */
    const size_t per = 1 << 20;
    unsigned char *s = malloc(per * np), *d = malloc(per * np), *ref = malloc(per * np);
    for (size_t i = 0; i < per * np; i++) s[i] = (unsigned char)(i * 3 + rank);
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    pid_t child = fork();
    if (child == 0) _exit(memcmp(d, ref, per * np) != 0 ? 3 : 0);
    int status = 0;
    waitpid(child, &status, 0);
    bad = !WIFEXITED(status) || WEXITSTATUS(status) != 0 || memcmp(d, ref, per * np) != 0;
    /* A collective into pages a live child still shares (copy-on-write): they cannot be moved
     * (page swapping falls back to copying, after putting back the pages that did move: the
     * own block was written, so its pages are the parent's alone) and the child's copy of
     * the buffer must not change. */
    int go[2];
    if (pipe(go) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    child = fork();
    if (child == 0) {
      char x;
      while (read(go[0], &x, 1) < 0 && errno == EINTR) {
      }
      _exit(memcmp(d, ref, per * np) != 0 ? 3 : 0);
    }
    for (size_t i = 0; i < per * np; i++) s[i] = (unsigned char)(i * 7 + rank + 1);
    PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    bad += memcmp(d, ref, per * np) != 0;
    if (write(go[1], "x", 1) != 1) MPI_Abort(MPI_COMM_WORLD, 2);
    waitpid(child, &status, 0);
    bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  } else if (strcmp(what, "madvise") == 0) {
    /* The receive buffer purged (MADV_DONTNEED, as an allocator does with freed memory) before
     * anything touched it: afterwards it must read as zeros, as after the blocking call; data
     * published late would land in the purged pages. */
    const size_t per = 16 * 4096 + 100, len = per * np;
    unsigned char* s = malloc(len);
    memset(s, 0x11, len);
    for (int it = 0; it < 20; it++) {
      unsigned char* d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      memset(d, 0x22, len);
      MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
      madvise(d, len, MADV_DONTNEED);
      MPI_Barrier(MPI_COMM_WORLD);
      usleep(20000);
      for (size_t i = 0; i < len; i++)
        if (d[i] != 0) {
          bad++;
          break;
        }
      munmap(d, len);
    }
    free(s);
  } else if (strcmp(what, "munmap") == 0) {
    /* The receive buffer is unmapped before anything touched it and the range mapped again: the
     * munmap must wait for the data (also when the MPI library's memory hooks patched munmap,
     * as UCX does), or late data lands in the new mapping or tnbc fails to publish. */
    const size_t per = 16 * 4096 + 100, len = per * np;
    unsigned char* s = malloc(len);
    memset(s, 0x11, len);
    for (int it = 0; it < 20; it++) {
      unsigned char* d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
      munmap(d, len);
      unsigned char* again = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      memset(again, 0xA5, len);
      MPI_Barrier(MPI_COMM_WORLD);
      usleep(20000);
      for (size_t i = 0; i < len; i++)
        if (again[i] != 0xA5) {
          bad++;
          break;
        }
      munmap(again, len);
    }
    free(s);
  } else if (strcmp(what, "remap-shared") == 0) {
    /* A receive buffer in private memory, then MAP_SHARED memory at the same address: tnbc
     * must notice the new mapping (it cannot guard shared memory) and still be right. */
    const size_t per = 5 * 4096 + 100, len = per * (size_t)np + 4096;
    unsigned char *s = malloc(per * np), *ref = malloc(per * np);
    unsigned char* d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int round = 0; round < 2 && d != MAP_FAILED; round++) {
      for (size_t i = 0; i < per * np; i++) s[i] = (unsigned char)(i * 5 + rank + round);
      PMPI_Alltoall(s, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
      MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
      bad += memcmp(d, ref, per * np) != 0;
      munmap(d, len);
      if (round == 0) d = mmap(d, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    }
    bad += d == MAP_FAILED;
    free(s), free(ref);
  } else if (strcmp(what, "stack-reuse") == 0) {
    for (int it = 0; it < 20; it++) {
      bad += stack_receive();
      bad += walk_stack(3 * STACK_BUF / 2000) != 0;
    }
  } else if (strcmp(what, "missing-fence") == 0 || strcmp(what, "missing-read") == 0) {
    /* Page-aligned blocks: nothing lands in a partial page, so the call returns at once. */
    const size_t per = 1 << 20;
    unsigned char *s, *d;
    if (posix_memalign((void**)&s, 4096, per * np) || posix_memalign((void**)&d, 4096, per * np)) return 2;
    memset(s, rank, per * np);
    if (rank != 1) {
      MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
      if (strcmp(what, "missing-fence") == 0) {
        const int fd = open("/dev/null", O_WRONLY);
        bad = write(fd, d + per, per) != (ssize_t)per; /* rank 1's block */
      } else {
        bad = ((volatile unsigned char*)d)[per] != 1;
      }
    } else {
      sleep(60);
    }
  } else if (strcmp(what, "missing-finalize") == 0) {
    const size_t bytes = 1 << 20;
    char* b = calloc(bytes, 1);
    if (rank != 1) {
      MPI_Bcast(b, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD); /* run at np 2: root 0, leaf 1 */
      MPI_Finalize();  /* straight there: the sends to rank 1 are still in flight */
      return 0;
    }
    sleep(60);
  } else if (strcmp(what, "missing-comm") == 0) {
    /* Numbered apart from MPI_COMM_WORLD: world rank r is rank (r + 1) % np of it, so the missing
     * world rank 1 is its rank 2 (the roll call must name it so). */
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % np, &c);
    const size_t per = 1 << 20;
    char *s = calloc(per, np), *d = calloc(per, np);
    if (rank != 1) MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, c);
    else sleep(60);
    bad = d[0] != 0;
  } else if (strcmp(what, "rank-setting") == 0) {
    bad = alltoall_check(MPI_COMM_WORLD, (1 << 18) + 100, 0);
  } else if (strcmp(what, "missing-rank") == 0) {
    /* The last rank never calls the collective. The receive buffer starts 16 bytes into a page,
     * so its last partial page holds bytes of the last rank's block: every other rank waits for
     * them in the call. */
    const size_t per = 1 << 20;
    char *s = calloc(per, np), *base;
    if (posix_memalign((void**)&base, 4096, per * np + 4096)) return 2;
    char* d = base + 16;
    if (rank != np - 1) MPI_Alltoall(s, (int)per, MPI_BYTE, d, (int)per, MPI_BYTE, MPI_COMM_WORLD);
    else sleep(60);
    long sum = 0;
    for (size_t i = 0; i < per * np; i += 4096) sum += d[i];
    bad = sum < 0;
  }
  long all = 0;
  MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("reliability %s: %ld passed, %ld failed\n", what, all ? 0L : 1L, all);
  MPI_Finalize();
  return all != 0;
}
