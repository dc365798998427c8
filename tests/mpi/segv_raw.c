/* A SIGSEGV handler installed behind tnbc's back, with the raw rt_sigaction system call (as a
 * library might: UCX's error handler, a sanitizer runtime), after MPI_Init. Run with
 * TNBC_GUARD=protect, so that receive buffers are held back by PROT_NONE pages whose faults only
 * tnbc's handler can resolve. x86_64 Linux only (the handler returns through its own restorer).
 *
 * usage: segv_raw raw|locked
 *   raw     1. an Alltoall returns early (its receive buffer is PROT_NONE);
 *           2. the program installs its handler; like UCX's, it passes faults it does not want to
 *              the handler it replaced (tnbc's): reading that buffer must work through it;
 *           3. more Alltoalls: tnbc must notice, install its handler again and chain to the
 *              program's, so their faults no longer reach the program's handler;
 *           4. a genuine segfault on the last rank must reach the program's handler, which prints
 *              PROGRAM_SEGV_HANDLER_REACHED and exits 42.
 *   locked  the handler is installed, then a seccomp filter forbids changing SIGSEGV's action:
 *           tnbc cannot install its handler again and must complete the collectives in the call
 *           (summary reason signal_handler); results must still be right; normal exit.
 * Every received byte is compared with PMPI_Alltoall; "segv_raw: 0 failed" on rank 0. */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock_sigsegv.h"

#if !defined(__x86_64__)
int main(void) {
  printf("SKIP: segv_raw needs x86_64 (raw rt_sigaction with its own restorer)\n");
  return 77;
}
#else

/* The kernel's struct sigaction on x86_64, and the return path a raw handler needs. */
struct ksigaction {
  void* handler;
  unsigned long flags;
  void (*restorer)(void);
  uint64_t mask;
};
#define K_SA_RESTORER 0x04000000UL
void segv_raw_restorer(void);
__asm__(".text\n.globl segv_raw_restorer\n.type segv_raw_restorer,@function\nsegv_raw_restorer:\n"
        "  mov $15, %rax\n  syscall\n");  /* rt_sigreturn */

static struct ksigaction replaced;           /* what the program's handler replaced (tnbc's) */
static volatile sig_atomic_t passed_on = 0;  /* faults it passed on to that one */

static void program_handler(int sig, siginfo_t* info, void* ctx) {
  if ((uintptr_t)info->si_addr < 4096) {
    static const char msg[] = "PROGRAM_SEGV_HANDLER_REACHED\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
  }
  passed_on++;
  ((void (*)(int, siginfo_t*, void*))replaced.handler)(sig, info, ctx);
}

static void install_raw(void) {
  struct ksigaction k;
  memset(&k, 0, sizeof k);
  k.handler = (void*)program_handler;
  k.flags = SA_SIGINFO | K_SA_RESTORER;
  k.restorer = segv_raw_restorer;
  if (syscall(SYS_rt_sigaction, SIGSEGV, &k, &replaced, sizeof k.mask) != 0) {
    perror("rt_sigaction");
    exit(2);
  }
}

static void lock_sigsegv(void) {
  if (lock_sigsegv_action() != 0) {
    printf("SKIP: seccomp filters are not available here\n");
    exit(77);
  }
}

static int rank, np;
static const size_t per = 1 << 20;
static unsigned char *sbuf, *rbuf, *ref;

/* `late`: the other ranks enter the intercepted call 0.5 s after rank 0 (after the blocking
 * reference, which synchronises everyone). */
static void start_alltoall(int salt, int late) {
  for (size_t i = 0; i < per * np; i++) sbuf[i] = (unsigned char)(i * 13 + rank * 7 + salt);
  PMPI_Alltoall(sbuf, (int)per, MPI_BYTE, ref, (int)per, MPI_BYTE, MPI_COMM_WORLD);
  if (late && rank != 0) usleep(500 * 1000);
  MPI_Alltoall(sbuf, (int)per, MPI_BYTE, rbuf, (int)per, MPI_BYTE, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "raw";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (posix_memalign((void**)&sbuf, 4096, per * np) || posix_memalign((void**)&rbuf, 4096, per * np) ||
      posix_memalign((void**)&ref, 4096, per * np))
    MPI_Abort(MPI_COMM_WORLD, 2);
  long bad = 0;
  /* The other ranks enter the first Alltoall late: rank 0 returns early (page-aligned blocks,
   * nothing to receive in the call) and reads its buffer before the data can be there, so that
   * read faults for sure. */
  if (strcmp(mode, "raw") == 0) {
    start_alltoall(0, 1); /* guarded (PROT_NONE) when it returns */
    install_raw();
    bad += memcmp(rbuf, ref, per * np) != 0; /* faults reach tnbc through the program's handler */
    const int before = passed_on;
    if (rank == 0 && before == 0)
      fprintf(stderr, "segv_raw[0]: no fault of the guarded buffer passed through the program's handler\n"), bad++;
    for (int it = 1; it <= 3; it++) {
      start_alltoall(it, 0); /* tnbc installs its handler again before guarding */
      struct ksigaction now;
      syscall(SYS_rt_sigaction, SIGSEGV, NULL, &now, sizeof now.mask);
      if (now.handler == (void*)program_handler)
        fprintf(stderr, "segv_raw[%d]: the program's handler is still the kernel's after a collective\n", rank), bad++;
      bad += memcmp(rbuf, ref, per * np) != 0;
    }
    if (passed_on != before) fprintf(stderr, "segv_raw[%d]: tnbc's faults still reach the program's handler\n", rank), bad++;
  } else {
    install_raw();
    lock_sigsegv();
    for (int it = 0; it < 3; it++) {
      start_alltoall(it, it == 0);
      bad += memcmp(rbuf, ref, per * np) != 0;
    }
    if (passed_on) fprintf(stderr, "segv_raw[%d]: a buffer was guarded without tnbc's handler\n", rank), bad++;
  }
  long all = 0;
  MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("segv_raw %s: %ld failed\n", mode, all);
  fflush(stdout);
  if (strcmp(mode, "raw") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (all == 0 && rank == np - 1) {
      static volatile uintptr_t nowhere = 16;
      *(volatile int*)nowhere = rbuf[0];
    }
  }
  MPI_Finalize();
  return all != 0;
}
#endif
