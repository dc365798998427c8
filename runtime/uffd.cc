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
#include <cstdlib>
#include <cstring>

#include "runtime/guard.hh"
#include "runtime/log.hh"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

namespace tnbc::uffd {

namespace {

int g_fd = -1;
bool g_kernel_faults = false;
bool g_thread_ids = false;

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
    for (ssize_t k = 0; k < n / static_cast<ssize_t>(sizeof(uffd_msg)); ++k) {
      if (msgs[k].event != UFFD_EVENT_PAGEFAULT) continue;
      const auto addr = static_cast<std::uintptr_t>(msgs[k].arg.pagefault.address);
      if (g_thread_ids && static_cast<int>(msgs[k].arg.pagefault.feat.ptid) == progress_thread_tid()) {
        log_raw("internal error: the progress thread touched a guarded page (MPI wrote into a "
                "receive buffer tnbc guards); aborting");
        abort();
      }
      if (Region* r = guards().acquire(addr)) {
        wait_published(r, "an access to a received buffer");
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

int open_uffd(int flags) { return static_cast<int>(syscall(SYS_userfaultfd, flags)); }

}  // namespace

bool start(std::string& why) {
  if (g_fd >= 0) return true;
#ifndef SYS_userfaultfd
  why = "this system has no userfaultfd system call";
  return false;
#else
  int fd = open_uffd(O_CLOEXEC | O_NONBLOCK);
  bool kernel_faults = true;
  if (fd < 0 && errno == EPERM) {
    // Unprivileged and vm.unprivileged_userfaultfd=0: user-mode faults only (Linux >= 5.11).
    fd = open_uffd(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    kernel_faults = false;
  }
  if (fd < 0) {
    why = std::string("userfaultfd: ") + std::strerror(errno);
    return false;
  }
  uffdio_api api{};
  api.api = UFFD_API;
#ifdef UFFD_FEATURE_THREAD_ID
  api.features = UFFD_FEATURE_THREAD_ID;
#endif
  if (::ioctl(fd, UFFDIO_API, &api) != 0) {
    // Retry without optional features (older kernels reject unknown ones).
    ::close(fd);
    fd = open_uffd(O_CLOEXEC | O_NONBLOCK | (kernel_faults ? 0 : UFFD_USER_MODE_ONLY));
    api = {};
    api.api = UFFD_API;
    if (fd < 0 || ::ioctl(fd, UFFDIO_API, &api) != 0) {
      why = std::string("UFFDIO_API: ") + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return false;
    }
  } else {
#ifdef UFFD_FEATURE_THREAD_ID
    g_thread_ids = (api.features & UFFD_FEATURE_THREAD_ID) != 0;
#endif
  }
  g_fd = fd;
  g_kernel_faults = kernel_faults;
  pthread_t t;
  if (pthread_create(&t, nullptr, listen, nullptr) != 0) {
    why = "cannot start the userfaultfd listener thread";
    ::close(fd);
    g_fd = -1;
    return false;
  }
  pthread_detach(t);
  return true;
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
      ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) != 0) {
    log(LogLevel::Debug, "cannot empty %p+%zu for userfaultfd: %s", reinterpret_cast<void*>(lo),
        static_cast<std::size_t>(hi - lo), std::strerror(errno));
    ::ioctl(g_fd, UFFDIO_UNREGISTER, &range);
    return false;
  }
  return true;
}

bool fill(std::uintptr_t lo, std::uintptr_t hi, const char* src) {
  std::uintptr_t at = lo;
  bool ok = true;
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
    // A page already present (nothing but tnbc should have filled it): write it directly.
    if (errno == EEXIST || c.copy == -EEXIST) {
      log(LogLevel::Warn, "userfaultfd: page %p was already present; overwriting it", reinterpret_cast<void*>(at));
      std::memcpy(reinterpret_cast<void*>(at), src + (at - lo), page);
      at += page;
      continue;
    }
    // The rest would read as zeros once unregistered: a wrong result is not an option.
    log(LogLevel::Error, "UFFDIO_COPY %p+%zu failed: %s; aborting", reinterpret_cast<void*>(at),
        static_cast<std::size_t>(hi - at), std::strerror(errno));
    abort();
  }
  uffdio_range range{lo, hi - lo};
  if (::ioctl(g_fd, UFFDIO_UNREGISTER, &range) != 0) {
    log(LogLevel::Error, "UFFDIO_UNREGISTER %p+%zu failed: %s", reinterpret_cast<void*>(lo),
        static_cast<std::size_t>(hi - lo), std::strerror(errno));
    ok = false;
  }
  return ok;
}

}  // namespace tnbc::uffd
