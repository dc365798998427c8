#include "runtime/uffd.hh"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/fatal.hh"
#include "runtime/futex.hh"
#include "runtime/guard.hh"
#include "runtime/log.hh"
#include "runtime/page_state.hh"
#include "runtime/stats.hh"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

// UFFDIO_MOVE (Linux 6.8) is missing from older kernel headers (Debian 12 ships 6.1's); the ABI
// is fixed, so declare it here.
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif
#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
struct uffdio_move {
  __u64 dst;
  __u64 src;
  __u64 len;
  __u64 mode;
  __s64 move;  // bytes moved, or a negated error
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
#endif

namespace tnbc::uffd {

namespace {

int g_fd = -1;
bool g_kernel_faults = false;
bool g_thread_ids = false;
bool g_can_move = false;
pthread_t g_listener;

// The listener: a fault means a thread is asleep in the kernel until its page is filled. Make
// the progress thread hurry (and report a timeout) by waiting for the region like a fence.
void* listen(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  uffd_msg msgs[16];
  while (true) {
    pollfd p{g_fd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      log(LogLevel::Error, "userfaultfd poll failed: %s", std::strerror(errno));
      return nullptr;
    }
    const ssize_t n = ::read(g_fd, msgs, sizeof msgs);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      log(LogLevel::Error, "userfaultfd read failed: %s", std::strerror(errno));
      return nullptr;
    }
    // The threads of this batch have been asleep since at least now (the waits below run one
    // after the other; each is counted from here).
    const long long read_ns = futex::now_ns();
    for (ssize_t k = 0; k < n / static_cast<ssize_t>(sizeof(uffd_msg)); ++k) {
      if (msgs[k].event != UFFD_EVENT_PAGEFAULT) continue;
      const auto addr = static_cast<std::uintptr_t>(msgs[k].arg.pagefault.address);
      if (g_thread_ids && static_cast<int>(msgs[k].arg.pagefault.feat.ptid) == progress_thread_tid()) {
        log_raw("internal error: the progress thread touched a guarded page (MPI wrote into a "
                "receive buffer tnbc guards); aborting");
        abort();
      }
      if (Region* r = guards().acquire(addr)) {
        wait_published(r, "an access to a received buffer", WaitSource::Userfault, true, read_ns);
        guards().release(r);
      } else {
        // Filled (and unregistered) between the fault and now: make sure the thread runs.
        const std::uintptr_t page = addr & ~static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE) - 1);
        uffdio_range range{page, static_cast<__u64>(sysconf(_SC_PAGESIZE))};
        ::ioctl(g_fd, UFFDIO_WAKE, &range);
      }
    }
  }
}

// "NAME 0x7f..+4096" for messages.
std::string describe_range(const char* what, std::uintptr_t lo, std::size_t len) {
  char b[96];
  std::snprintf(b, sizeof b, "%s %p+%zu", what, reinterpret_cast<void*>(lo), len);
  return b;
}

int open_uffd(int flags) { return static_cast<int>(syscall(SYS_userfaultfd, flags)); }

// tnbc's own madvise, past its interposer (shim/libc.cc fences purging advice).
int raw_madvise(void* p, std::size_t n, int advice) { return static_cast<int>(syscall(SYS_madvise, p, n, advice)); }

// The optional features this kernel offers (UFFDIO_API may be called once per descriptor, and
// fails when asked for a feature it does not know: ask a throwaway descriptor first).
std::uint64_t available_features(int flags) {
  const int fd = open_uffd(flags);
  if (fd < 0) return 0;
  uffdio_api api{};
  api.api = UFFD_API;
  const bool ok = ::ioctl(fd, UFFDIO_API, &api) == 0;
  ::close(fd);
  return ok ? api.features : 0;
}

}  // namespace

Status start() {
  if (g_fd >= 0) return {};
#ifndef SYS_userfaultfd
  return Status::error("this system has no userfaultfd system call");
#else
  int fd = open_uffd(O_CLOEXEC | O_NONBLOCK);
  bool kernel_faults = true;
  if (fd < 0 && errno == EPERM) {
    // Unprivileged and vm.unprivileged_userfaultfd=0: user-mode faults only (Linux >= 5.11).
    fd = open_uffd(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    kernel_faults = false;
  }
  if (fd < 0) {
    return Status::error(std::string("userfaultfd: ") + std::strerror(errno));
  }
  const int mode = kernel_faults ? 0 : UFFD_USER_MODE_ONLY;
  std::uint64_t wanted = UFFD_FEATURE_MOVE;
#ifdef UFFD_FEATURE_THREAD_ID
  wanted |= UFFD_FEATURE_THREAD_ID;
#endif
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = wanted & available_features(O_CLOEXEC | O_NONBLOCK | mode);
  if (::ioctl(fd, UFFDIO_API, &api) != 0) {
    // Retry without optional features (older kernels reject unknown ones).
    ::close(fd);
    fd = open_uffd(O_CLOEXEC | O_NONBLOCK | mode);
    api = {};
    api.api = UFFD_API;
    if (fd < 0 || ::ioctl(fd, UFFDIO_API, &api) != 0) {
      const Status st = Status::error(std::string("UFFDIO_API: ") + std::strerror(errno));
      if (fd >= 0) ::close(fd);
      return st;
    }
  } else {
#ifdef UFFD_FEATURE_THREAD_ID
    g_thread_ids = (api.features & UFFD_FEATURE_THREAD_ID) != 0;
#endif
    g_can_move = (api.features & UFFD_FEATURE_MOVE) != 0;
  }
  g_fd = fd;
  g_kernel_faults = kernel_faults;
  pthread_t t;
  if (pthread_create(&t, nullptr, listen, nullptr) != 0) {
    ::close(fd);
    g_fd = -1;
    return Status::error("cannot start the userfaultfd listener thread");
  }
  pthread_detach(t);
  pthread_setname_np(t, "tnbc-uffd");
  g_listener = t;
  return {};
#endif
}

bool active() { return g_fd >= 0; }
bool kernel_faults_wait() { return g_kernel_faults; }

bool arm(std::uintptr_t lo, std::uintptr_t hi) {
  uffdio_register reg{};
  reg.range = {lo, hi - lo};
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (::ioctl(g_fd, UFFDIO_REGISTER, &reg) != 0) {
    log(LogLevel::Debug, "UFFDIO_REGISTER %p+%zu: %s", reinterpret_cast<void*>(lo), static_cast<std::size_t>(hi - lo),
        std::strerror(errno));
    return false;
  }
  uffdio_range range{lo, hi - lo};
  if ((reg.ioctls & (1ULL << _UFFDIO_COPY)) == 0 ||
      raw_madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) != 0) {
    log(LogLevel::Debug, "cannot empty %p+%zu for userfaultfd: %s", reinterpret_cast<void*>(lo),
        static_cast<std::size_t>(hi - lo), std::strerror(errno));
    ::ioctl(g_fd, UFFDIO_UNREGISTER, &range);
    return false;
  }
  return true;
}

Status fill(std::uintptr_t lo, std::uintptr_t hi, const char* src) {
  std::uintptr_t at = lo;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  while (at < hi) {
    uffdio_copy c{};
    c.dst = at;
    c.src = reinterpret_cast<std::uintptr_t>(src + (at - lo));
    c.len = hi - at;
    c.mode = 0;
    if (::ioctl(g_fd, UFFDIO_COPY, &c) == 0) break;
    if (c.copy > 0) at += static_cast<std::uintptr_t>(c.copy);
    if (errno == EAGAIN || c.copy == -EAGAIN) continue;
    // A page already there (only publication should fill it): its data is in the staging's
    // page, or already in this one when the staging's is empty (runtime/page_state.hh).
    if (errno == EEXIST || c.copy == -EEXIST) {
      bool copied = false;
      if (Status st = settle_present_page(at, src + (at - lo), page, copied); !st.ok()) return st;
      log(LogLevel::Warn, "userfaultfd: page %p was already there; %s", reinterpret_cast<void*>(at),
          copied ? "wrote the received data over it"
                 : "its staging copy was empty: kept it (its data had moved there)");
      at += page;
      continue;
    }
    // The rest would read as zeros once unregistered: a wrong result is not an option.
    return Status::error(describe_range("UFFDIO_COPY", at, hi - at) + " failed: " + std::strerror(errno) +
                         " (the pages cannot be given back their data)");
  }
  uffdio_range range{lo, hi - lo};
  if (::ioctl(g_fd, UFFDIO_UNREGISTER, &range) != 0)
    return Status::error(describe_range("UFFDIO_UNREGISTER", lo, hi - lo) + " failed: " + std::strerror(errno));
  return {};
}

bool can_swap() { return g_can_move; }

double listener_cpu_seconds() { return g_fd >= 0 ? thread_cpu_seconds(g_listener) : -1; }

namespace {
// Registers [lo, lo + len) for missing-page faults; false (and left unregistered) unless the
// range also accepts UFFDIO_MOVE.
bool register_movable(std::uintptr_t lo, std::size_t len) {
  uffdio_register reg{};
  reg.range = {lo, len};
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (::ioctl(g_fd, UFFDIO_REGISTER, &reg) != 0) return false;
  const std::uint64_t need = (1ULL << _UFFDIO_MOVE) | (1ULL << _UFFDIO_COPY);
  if ((reg.ioctls & need) == need) return true;
  uffdio_range range{lo, len};
  ::ioctl(g_fd, UFFDIO_UNREGISTER, &range);
  return false;
}

void unregister(std::uintptr_t lo, std::size_t len) {
  if (len == 0) return;
  uffdio_range range{lo, len};
  ::ioctl(g_fd, UFFDIO_UNREGISTER, &range);
}

// Whether the page at `dst` holds what was the page at `src`, moved there uncounted: Linux
// 6.17-6.18's UFFDIO_MOVE (pages moved in batches) keeps its internal EAGAIN after a retry, so
// the batch moved next is neither counted nor stepped over, and the move then stops on it with
// EEXIST (mm/userfaultfd.c, move_pages(); later kernels reset the error). Such a page is there
// at the destination and gone from the source; any other EEXIST is a page that was not moved.
bool moved_uncounted(std::uintptr_t dst, std::uintptr_t src) {
  return page_holds(src) == PageHolds::Nothing && page_holds(dst) == PageHolds::Data;
}

// Moves [src, src + len) to [dst, ...) (dst registered, its pages empty). Returns the bytes
// moved before the kernel refused a page (len when all went); `refused`, the kernel's errno then.
std::size_t move_pages(std::uintptr_t dst, std::uintptr_t src, std::size_t len, std::uint64_t mode,
                       int* refused = nullptr) {
  static std::atomic<bool> said{false};
  std::size_t done = 0;
  while (done < len) {
    uffdio_move m{};
    m.dst = dst + done;
    m.src = src + done;
    m.len = len - done;
    m.mode = mode;
    const int rc = ::ioctl(g_fd, UFFDIO_MOVE, &m);
    const int err = errno;
    if (m.move > 0) done += static_cast<std::size_t>(m.move);
    if (rc == 0) return len;
    if (err == EAGAIN || m.move == -EAGAIN) continue;
    if (err == EEXIST && moved_uncounted(dst + done, src + done)) {
      if (!said.exchange(true))
        log(LogLevel::Warn, "userfaultfd: the kernel moved pages without counting them (UFFDIO_MOVE after a retry, "
                            "Linux 6.17-6.18); counting them here");
      done += static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
      continue;
    }
    log(LogLevel::Debug, "UFFDIO_MOVE %p <- %p+%zu: %s", reinterpret_cast<void*>(m.dst), reinterpret_cast<void*>(m.src),
        static_cast<std::size_t>(m.len), std::strerror(err));
    if (refused) *refused = err;
    return done;
  }
  return done;
}
}  // namespace

bool arm_swap(std::uintptr_t lo, std::uintptr_t hi, char* staging) {
  const auto s = reinterpret_cast<std::uintptr_t>(staging);
  const std::size_t len = hi - lo;
  if (!g_can_move || !register_movable(lo, len)) return false;
  // The staging pages must be empty to take the user's (a previous call may have left pages
  // there); it is registered only while the pages move (UFFDIO_MOVE's destination must be).
  std::size_t moved = 0;
  bool ok = raw_madvise(staging, len, MADV_DONTNEED) == 0 && register_movable(s, len);
  if (ok) {
    moved = move_pages(s, lo, len, UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | UFFDIO_MOVE_MODE_DONTWAKE);
    unregister(s, len);
    ok = moved == len;
  }
  if (ok) return true;
  // Put back what went (the user's range is still registered, so it can take moved pages).
  const std::size_t back = moved > 0 ? move_pages(lo, s, moved, UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES) : 0;
  if (back < moved)  // copies the rest back, unregisters it; the program's bytes must come back
    if (Status st = fill(lo + back, lo + moved, staging + back); !st.ok()) {
      log(LogLevel::Error, "putting back pages that would not move: %s", st.message().c_str());
      end_job();
    }
  unregister(lo, back);
  if (moved < len) unregister(lo + moved, len - moved);
  return false;
}

Status fill_swapped(std::uintptr_t lo, std::uintptr_t hi, char* staging) {
  int refused = 0;
  const std::size_t moved = move_pages(lo, reinterpret_cast<std::uintptr_t>(staging), hi - lo, 0, &refused);
  // A page of the program's already there stops the move (EEXIST): never expected (the region's
  // pages were emptied); said with where, for the settlement of that page (fill) to be read by.
  if (refused == EEXIST)
    log(LogLevel::Warn, "userfaultfd: putting pages back into %p+%zu stopped at +%zu: a page was already there",
        reinterpret_cast<void*>(lo), static_cast<std::size_t>(hi - lo), moved);
  if (moved == hi - lo) {
    uffdio_range range{lo, hi - lo};
    if (::ioctl(g_fd, UFFDIO_UNREGISTER, &range) == 0) return {};
    return Status::error(describe_range("UFFDIO_UNREGISTER", lo, hi - lo) + " failed: " + std::strerror(errno));
  }
  // A page the kernel will not move: copy the rest (fill also unregisters the whole range).
  if (moved > 0) unregister(lo, moved);
  return fill(lo + moved, hi, staging + moved);
}

}  // namespace tnbc::uffd
