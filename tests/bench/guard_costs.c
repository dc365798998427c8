/* Cost of tnbc's guard machinery on this machine (issue: benchmark suite, "overheads"); the
 * numbers detail what tnbc measures at MPI_Init for TNBC_MIN_BYTES=auto (runtime/threshold.hh). No MPI.
 *   fault round trip   a PROT_NONE page is touched; the SIGSEGV handler mprotects it back and
 *                      the access is retried (minus the mprotect pair measured alone)
 *   mprotect pair      mprotect(PROT_NONE) + mprotect(PROT_READ|PROT_WRITE) of populated pages
 *   /proc/self/mem     publication while the pages are still PROT_NONE (pwrite of the data)
 *   userfaultfd        UFFDIO_REGISTER, MADV_DONTNEED (emptying), UFFDIO_COPY (installing),
 *                      UFFDIO_UNREGISTER per range size; page swapping (UFFDIO_MOVE, Linux >= 6.8):
 *                      the pages moved out to a staging range and back, per range size; and a blocked reader: from its touch
 *                      of an empty page to its wake-up, and from UFFDIO_COPY to its wake-up
 *   memcpy             the reference for the per-MiB costs
 * Every figure is the median of repetitions. Run it without libtnbc.so preloaded (it then
 * only measures the kernel; the system calls go through syscall(2), never a libc interposer).
 * usage: guard_costs [--json FILE] [--max-bytes SIZE (default 16M)]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_common.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static size_t g_page;

/* Repetitions for an operation on `bytes`: many for small ranges, at least 5. */
static int reps_for(size_t bytes) {
  const size_t r = ((size_t)64 << 20) / bytes;
  return r < 5 ? 5 : r > 400 ? 400 : (int)r;
}

static void* map_populated(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    perror("guard_costs: mmap");
    exit(1);
  }
  memset(p, 0x5a, bytes);
  return p;
}

/* ---------------------------------------------------------------- PROT_NONE ---- */

static void restore_page(int sig, siginfo_t* si, void* uc) {
  (void)sig;
  (void)uc;
  void* page = (void*)((uintptr_t)si->si_addr & ~(uintptr_t)(g_page - 1));
  if (mprotect(page, g_page, PROT_READ | PROT_WRITE) != 0) _exit(3);
}

static double mprotect_pair(unsigned char* p, size_t bytes) {
  const double t0 = bench_now();
  mprotect(p, bytes, PROT_NONE);
  mprotect(p, bytes, PROT_READ | PROT_WRITE);
  return bench_now() - t0;
}

/* Median of one protect + fault + handler-unprotect + retry cycle on one page. */
static double fault_cycle(unsigned char* p, int reps) {
  double* t = malloc((size_t)reps * sizeof(double));
  for (int i = 0; i < reps; i++) {
    const double t0 = bench_now();
    mprotect(p, g_page, PROT_NONE);
    *(volatile unsigned char*)p += 1;
    t[i] = bench_now() - t0;
  }
  const double m = bench_median(t, reps);
  free(t);
  return m;
}

static double median_pairs(unsigned char* p, size_t bytes) {
  const int reps = reps_for(bytes);
  double* t = malloc((size_t)reps * sizeof(double));
  for (int i = 0; i < reps; i++) t[i] = mprotect_pair(p, bytes);
  const double m = bench_median(t, reps);
  free(t);
  return m;
}

static double median_publish(int fd, unsigned char* dst, const unsigned char* src, size_t bytes) {
  const int reps = reps_for(bytes);
  double* t = malloc((size_t)reps * sizeof(double));
  mprotect(dst, bytes, PROT_NONE);
  for (int i = 0; i < reps; i++) {
    const double t0 = bench_now();
    const long w = syscall(SYS_pwrite64, fd, src, bytes, (off_t)(uintptr_t)dst);
    t[i] = bench_now() - t0;
    if (w != (long)bytes) {
      perror("guard_costs: pwrite /proc/self/mem");
      t[i] = -1;
    }
  }
  mprotect(dst, bytes, PROT_READ | PROT_WRITE);
  const double m = bench_median(t, reps);
  free(t);
  return m;
}

static double median_memcpy(unsigned char* dst, const unsigned char* src, size_t bytes) {
  const int reps = reps_for(bytes);
  double* t = malloc((size_t)reps * sizeof(double));
  for (int i = 0; i < reps; i++) {
    const double t0 = bench_now();
    memcpy(dst, src, bytes);
    __asm__ volatile("" ::"r"(dst) : "memory");
    t[i] = bench_now() - t0;
  }
  const double m = bench_median(t, reps);
  free(t);
  return m;
}

/* ---------------------------------------------------------------- userfaultfd ---- */

typedef struct uffd_sizes {
  double reg, dontneed, copy, unreg;   /* medians, seconds */
} uffd_sizes;

/* UFFDIO_MOVE (Linux 6.8; older headers lack it, the ABI is fixed). */
#define FEATURE_MOVE (1ULL << 16)
struct move_args {
  uint64_t dst, src, len, mode;
  int64_t move;
};
#define IOCTL_MOVE _IOWR(UFFDIO, 0x05, struct move_args)
#define MOVE_DONTWAKE (1ULL << 0)
#define MOVE_ALLOW_SRC_HOLES (1ULL << 1)
static int g_can_move;

static int uffd_move(int fd, void* dst, void* src, size_t bytes, uint64_t mode) {
  struct move_args m = {.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = bytes, .mode = mode};
  return ioctl(fd, IOCTL_MOVE, &m) == 0 && m.move == (int64_t)bytes ? 0 : -1;
}

/* tnbc's page swapping, one cycle per repetition: out = register the buffer, empty and register
 * the staging, move the buffer's pages into it, unregister the staging (in the call); in = move
 * them back, unregister the buffer (publication). Medians, seconds. */
static int uffd_swap(int fd, unsigned char* p, unsigned char* staging, size_t bytes, double* out, double* in) {
  const int reps = reps_for(bytes);
  double* t = malloc(2 * (size_t)reps * sizeof(double));
  int rc = 0;
  for (int i = 0; i < reps && rc == 0; i++) {
    struct uffdio_register reg = {.range = {.start = (uintptr_t)p, .len = bytes}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    struct uffdio_register sreg = {.range = {.start = (uintptr_t)staging, .len = bytes},
                                   .mode = UFFDIO_REGISTER_MODE_MISSING};
    struct uffdio_range range = {.start = (uintptr_t)p, .len = bytes}, srange = sreg.range;
    double t0 = bench_now();
    rc |= ioctl(fd, UFFDIO_REGISTER, &reg);
    rc |= madvise(staging, bytes, MADV_DONTNEED);
    rc |= ioctl(fd, UFFDIO_REGISTER, &sreg);
    rc |= uffd_move(fd, staging, p, bytes, MOVE_ALLOW_SRC_HOLES | MOVE_DONTWAKE);
    rc |= ioctl(fd, UFFDIO_UNREGISTER, &srange);
    double t1 = bench_now();
    rc |= uffd_move(fd, p, staging, bytes, 0);
    rc |= ioctl(fd, UFFDIO_UNREGISTER, &range);
    double t2 = bench_now();
    t[i] = t1 - t0;
    t[reps + i] = t2 - t1;
  }
  if (rc != 0) perror("guard_costs: page swapping cycle");
  *out = bench_median(t, reps);
  *in = bench_median(t + reps, reps);
  free(t);
  return rc;
}

/* Opens and enables a userfaultfd; -1 with the reason in `why` when the kernel refuses. */
static int uffd_open(char* why, size_t len, int* user_only) {
  *user_only = 0;
  int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && (errno == EPERM || errno == EACCES)) {
    fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    *user_only = fd >= 0;
  }
  if (fd < 0) {
    snprintf(why, len, "userfaultfd: %s", strerror(errno));
    return -1;
  }
  /* UFFDIO_MOVE if the kernel has it (asked on a throwaway descriptor: UFFDIO_API fails on an
   * unknown feature and may be called once). */
  struct uffdio_api probe = {.api = UFFD_API};
  int pfd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | (*user_only ? UFFD_USER_MODE_ONLY : 0));
  const int can_move = pfd >= 0 && ioctl(pfd, UFFDIO_API, &probe) == 0 && (probe.features & FEATURE_MOVE);
  if (pfd >= 0) close(pfd);
  struct uffdio_api api = {.api = UFFD_API, .features = can_move ? FEATURE_MOVE : 0};
  g_can_move = can_move;
  if (ioctl(fd, UFFDIO_API, &api) != 0) {
    snprintf(why, len, "UFFDIO_API: %s", strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

static int uffd_copy(int fd, void* dst, const void* src, size_t bytes) {
  struct uffdio_copy c = {.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = bytes};
  return ioctl(fd, UFFDIO_COPY, &c);
}

/* One cycle per repetition, each phase timed: register, MADV_DONTNEED, UFFDIO_COPY of the
 * whole range (installs the pages again), unregister. */
static int uffd_phases(int fd, unsigned char* p, const unsigned char* src, size_t bytes, uffd_sizes* out) {
  const int reps = reps_for(bytes);
  double* t = malloc(4 * (size_t)reps * sizeof(double));
  int rc = 0;
  for (int i = 0; i < reps && rc == 0; i++) {
    struct uffdio_register reg = {.range = {.start = (uintptr_t)p, .len = bytes}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    struct uffdio_range range = {.start = (uintptr_t)p, .len = bytes};
    double t0 = bench_now();
    rc |= ioctl(fd, UFFDIO_REGISTER, &reg);
    double t1 = bench_now();
    rc |= madvise(p, bytes, MADV_DONTNEED);
    double t2 = bench_now();
    rc |= uffd_copy(fd, p, src, bytes);
    double t3 = bench_now();
    rc |= ioctl(fd, UFFDIO_UNREGISTER, &range);
    double t4 = bench_now();
    t[i] = t1 - t0;
    t[reps + i] = t2 - t1;
    t[2 * reps + i] = t3 - t2;
    t[3 * reps + i] = t4 - t3;
  }
  if (rc != 0) perror("guard_costs: userfaultfd cycle");
  out->reg = bench_median(t, reps);
  out->dontneed = bench_median(t + reps, reps);
  out->copy = bench_median(t + 2 * reps, reps);
  out->unreg = bench_median(t + 3 * reps, reps);
  free(t);
  return rc;
}

typedef struct reader {
  unsigned char* p;
  int pages;
  double *touch, *woken;
} reader;

static void* reader_main(void* arg) {
  reader* r = arg;
  for (int i = 0; i < r->pages; i++) {
    r->touch[i] = bench_now();
    (void)*(volatile unsigned char*)(r->p + (size_t)i * g_page);   /* sleeps until installed */
    r->woken[i] = bench_now();
  }
  return NULL;
}

/* A thread reads `pages` empty pages one after another; this thread serves each fault with
 * UFFDIO_COPY. Medians: touch -> woken (round trip) and copy start -> woken (wake latency). */
static int uffd_blocked_reader(int fd, int pages, double* round_trip, double* wake) {
  const size_t bytes = (size_t)pages * g_page;
  unsigned char* p = map_populated(bytes);
  unsigned char* src = map_populated(g_page);
  struct uffdio_register reg = {.range = {.start = (uintptr_t)p, .len = bytes}, .mode = UFFDIO_REGISTER_MODE_MISSING};
  if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0 || madvise(p, bytes, MADV_DONTNEED) != 0) {
    perror("guard_costs: blocked reader set-up");
    return -1;
  }
  double* t = calloc(3 * (size_t)pages, sizeof(double));
  reader r = {.p = p, .pages = pages, .touch = t, .woken = t + pages};
  double* copy = t + 2 * pages;
  pthread_t th;
  pthread_create(&th, NULL, reader_main, &r);
  int served = 0, rc = 0;
  while (served < pages && rc == 0) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, 5000) != 1) {
      fprintf(stderr, "guard_costs: no userfaultfd event within 5 s\n");
      rc = -1;
      break;
    }
    struct uffd_msg msg;
    if (read(fd, &msg, sizeof msg) != (ssize_t)sizeof msg || msg.event != UFFD_EVENT_PAGEFAULT) continue;
    const uintptr_t page = (uintptr_t)msg.arg.pagefault.address & ~(uintptr_t)(g_page - 1);
    copy[served] = bench_now();
    if (uffd_copy(fd, (void*)page, src, g_page) != 0 && errno != EEXIST) rc = -1;
    served++;
  }
  if (rc != 0) {
    /* Let the reader finish (unregistering wakes it; the pages then read as zeros). */
    struct uffdio_range range = {.start = (uintptr_t)p, .len = bytes};
    ioctl(fd, UFFDIO_UNREGISTER, &range);
  }
  pthread_join(th, NULL);
  double* d = malloc(2 * (size_t)pages * sizeof(double));
  for (int i = 0; i < pages; i++) {
    d[i] = r.woken[i] - r.touch[i];
    d[pages + i] = r.woken[i] - copy[i];
  }
  *round_trip = bench_median(d, pages);
  *wake = bench_median(d + pages, pages);
  free(d);
  free(t);
  munmap(p, bytes);
  munmap(src, g_page);
  return rc;
}

/* ---------------------------------------------------------------- main ---- */

static void row(bench_json* j, size_t bytes, double s) {
  bench_json_object(j, NULL);
  bench_json_int(j, "bytes", (long long)bytes);
  bench_json_num(j, "us", s * 1e6);
  bench_json_num(j, "us_per_mib", s * 1e6 / ((double)bytes / (1 << 20)));
  bench_json_end(j);
}

int main(int argc, char** argv) {
  const char* json = NULL;
  size_t max_bytes = 16 << 20;
  static const struct option opts[] = {{"json", required_argument, 0, 'j'}, {"max-bytes", required_argument, 0, 'm'},
                                       {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'j') json = optarg;
    else if (c == 'm' && (max_bytes = bench_parse_bytes(optarg)) >= 4096) continue;
    else {
      fprintf(stderr, "usage: guard_costs [--json FILE] [--max-bytes SIZE >= 4K]\n");
      return 2;
    }
  }
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  size_t sizes[16];
  int nsizes = 0;
  for (size_t b = g_page; b <= max_bytes && nsizes < 16; b *= 4) sizes[nsizes++] = b;

  bench_json j;
  if (bench_json_open(&j, json, "guard_costs") != 0) return 2;
  bench_json_machine(&j, NULL);
  bench_json_tnbc(&j);
  bench_json_int(&j, "page_bytes", (long long)g_page);
  printf("guard_costs: page %zu B, %ld CPUs; medians of repetitions\n", g_page, sysconf(_SC_NPROCESSORS_ONLN));
  if (bench_tnbc_status())
    printf("note: libtnbc.so is preloaded; run without it (the figures are the kernel's)\n");

  unsigned char* a = map_populated(max_bytes);
  unsigned char* b = map_populated(max_bytes);

  struct sigaction sa = {0}, old;
  sa.sa_sigaction = restore_page;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old);
  const double cycle = fault_cycle(a, 2000);
  sigaction(SIGSEGV, &old, NULL);
  const double pair1 = median_pairs(a, g_page);
  printf("fault round trip (SIGSEGV -> handler mprotects back -> retry): %.2f us "
         "(whole protect/fault/unprotect cycle %.2f us, mprotect pair %.2f us)\n",
         (cycle - pair1) * 1e6, cycle * 1e6, pair1 * 1e6);
  bench_json_object(&j, "fault");
  bench_json_num(&j, "round_trip_us", (cycle - pair1) * 1e6);
  bench_json_num(&j, "cycle_us", cycle * 1e6);
  bench_json_end(&j);

  printf("\n%-10s %12s %12s %14s %14s %12s\n", "bytes", "mprotect", "(us/MiB)", "/proc/self/mem", "(us/MiB)",
         "memcpy us/MiB");
  const int memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (memfd < 0) perror("guard_costs: /proc/self/mem (publication not measured)");
  double pairs[16], pub[16], cpy[16];
  for (int i = 0; i < nsizes; i++) {
    const double mib = (double)sizes[i] / (1 << 20);
    pairs[i] = median_pairs(a, sizes[i]);
    pub[i] = memfd >= 0 ? median_publish(memfd, a, b, sizes[i]) : -1;
    cpy[i] = median_memcpy(a, b, sizes[i]);
    printf("%-10zu %10.2f us %12.1f %11.1f us %14.1f %12.1f\n", sizes[i], pairs[i] * 1e6, pairs[i] * 1e6 / mib,
           pub[i] * 1e6, pub[i] * 1e6 / mib, cpy[i] * 1e6 / mib);
  }
  bench_json_array(&j, "mprotect_pair");
  for (int i = 0; i < nsizes; i++) row(&j, sizes[i], pairs[i]);
  bench_json_end(&j);
  bench_json_array(&j, "proc_mem_publish");
  for (int i = 0; i < nsizes && memfd >= 0; i++) row(&j, sizes[i], pub[i]);
  bench_json_end(&j);
  bench_json_array(&j, "memcpy");
  for (int i = 0; i < nsizes; i++) row(&j, sizes[i], cpy[i]);
  bench_json_end(&j);
  if (memfd >= 0) close(memfd);

  char why[256] = "";
  int user_only = 0;
  const int fd = uffd_open(why, sizeof why, &user_only);
  bench_json_object(&j, "userfaultfd");
  bench_json_bool(&j, "available", fd >= 0);
  if (fd < 0) {
    printf("\nuserfaultfd: not available here (%s)\n", why);
    bench_json_str(&j, "reason", why);
  } else {
    bench_json_bool(&j, "user_mode_only", user_only);
    printf("\nuserfaultfd%s:\n%-10s %12s %14s %12s %12s %14s\n", user_only ? " (user-mode faults only)" : "", "bytes",
           "register us", "DONTNEED us", "COPY us", "(us/MiB)", "unregister us");
    bench_json_array(&j, "sizes");
    for (int i = 0; i < nsizes; i++) {
      uffd_sizes u;
      if (uffd_phases(fd, a, b, sizes[i], &u) != 0) break;
      const double mib = (double)sizes[i] / (1 << 20);
      printf("%-10zu %12.2f %14.2f %12.1f %12.1f %14.2f\n", sizes[i], u.reg * 1e6, u.dontneed * 1e6, u.copy * 1e6,
             u.copy * 1e6 / mib, u.unreg * 1e6);
      bench_json_object(&j, NULL);
      bench_json_int(&j, "bytes", (long long)sizes[i]);
      bench_json_num(&j, "register_us", u.reg * 1e6);
      bench_json_num(&j, "dontneed_us", u.dontneed * 1e6);
      bench_json_num(&j, "copy_us", u.copy * 1e6);
      bench_json_num(&j, "copy_us_per_mib", u.copy * 1e6 / mib);
      bench_json_num(&j, "unregister_us", u.unreg * 1e6);
      bench_json_end(&j);
    }
    bench_json_end(&j);
    bench_json_bool(&j, "page_swapping", g_can_move);
    if (g_can_move) {
      unsigned char* staging = map_populated(max_bytes);
      printf("page swapping (UFFDIO_MOVE):\n%-10s %12s %12s %12s %12s\n", "bytes", "out us", "(us/MiB)", "back us",
             "(us/MiB)");
      bench_json_array(&j, "swap");
      for (int i = 0; i < nsizes && staging; i++) {
        double out = 0, in = 0;
        if (uffd_swap(fd, a, staging, sizes[i], &out, &in) != 0) break;
        const double mib = (double)sizes[i] / (1 << 20);
        printf("%-10zu %12.2f %12.1f %12.2f %12.1f\n", sizes[i], out * 1e6, out * 1e6 / mib, in * 1e6, in * 1e6 / mib);
        bench_json_object(&j, NULL);
        bench_json_int(&j, "bytes", (long long)sizes[i]);
        bench_json_num(&j, "out_us", out * 1e6);
        bench_json_num(&j, "out_us_per_mib", out * 1e6 / mib);
        bench_json_num(&j, "back_us", in * 1e6);
        bench_json_num(&j, "back_us_per_mib", in * 1e6 / mib);
        bench_json_end(&j);
      }
      bench_json_end(&j);
      if (staging) munmap(staging, max_bytes);
    } else {
      printf("page swapping (UFFDIO_MOVE): not available on this kernel\n");
    }
    double round_trip = 0, wake = 0;
    if (uffd_blocked_reader(fd, 200, &round_trip, &wake) == 0) {
      printf("blocked reader: touch of an empty page -> woken %.2f us (served by another thread); "
             "UFFDIO_COPY -> woken %.2f us\n",
             round_trip * 1e6, wake * 1e6);
      bench_json_num(&j, "blocked_reader_round_trip_us", round_trip * 1e6);
      bench_json_num(&j, "blocked_reader_wake_us", wake * 1e6);
    }
    close(fd);
  }
  bench_json_end(&j);
  bench_json_close(&j);
  munmap(a, max_bytes);
  munmap(b, max_bytes);
  return 0;
}
