// Publication: received bytes go from tnbc's staging into the program's pages, race-free. Each
// landing step's bytes are written by the call's guard backend (runtime/guard_backend.hh: through
// /proc/self/mem under PROT_NONE; only the bytes outside held-back pages under userfaultfd), or
// copied when nothing is guarded; a region opens (one mprotect, UFFDIO_MOVE or UFFDIO_COPY) when
// its last step is in. There is no moment at which the program can read a partly written page,
// and MPI never writes into a guarded page.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/futex.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/publish.hh"
#include "runtime/guard_backend.hh"

namespace tnbc {

namespace {
int proc_mem_fd() {
  static const int fd = ::open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  return fd;
}

bool poke(char* dst, const char* src, std::size_t n) {
  const int fd = proc_mem_fd();
  while (n > 0) {
    ssize_t w = ::pwrite(fd, src, n, static_cast<off_t>(reinterpret_cast<std::uintptr_t>(dst)));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    dst += w;
    src += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}
}  // namespace

bool publication_available() { return proc_mem_fd() >= 0; }
bool write_through_proc_mem(char* dst, const char* src, std::size_t n) { return poke(dst, src, n); }

Status open_region(InFlight& f, Region& r) {
  if (r.given_back.exchange(1, std::memory_order_acq_rel) != 0) {
    log_raw("internal error: a region of received data was given back to the program twice; the second time "
            "was skipped");
    return {};
  }
  return f.guard->open(f, r);
}

Status publish_step(InFlight& f, int i, long long now_ns) {
  const Step& p = f.schedule[static_cast<std::size_t>(i)];
  Status error;
  if (f.user_recv && f.user_recv != f.recv_data && p.length > 0) {
    char* dst = f.user_recv + p.offset;
    const char* src = f.recv_data + p.offset;
    if (f.guard) error = f.guard->write(f, i, dst, src, p.length);
    else std::memcpy(dst, src, p.length);
  }
  if (f.guard && static_cast<std::size_t>(i) < f.step_regions.size()) {
    auto [first, last] = f.step_regions[static_cast<std::size_t>(i)];
    for (int k = first; k < last; ++k) {
      Region& r = f.regions[static_cast<std::size_t>(k)];
      if (r.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      if (r.observe) {  // held back until its first touch, which opens it (open_observed)
        r.arrived_ns.store(now_ns, std::memory_order_release);
        continue;
      }
      if (Status st = open_region(f, r); !st.ok() && error.ok()) error = std::move(st);
      r.published.store(1, std::memory_order_seq_cst);
      f.regions_remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  step_done(f, i, now_ns);
  // A wake-up only when some thread waits (wait_published): one system call less per step.
  publish_word().fetch_add(1, std::memory_order_seq_cst);
  if (urgency().waiting.load(std::memory_order_seq_cst) > 0) futex::wake_all(publish_word());
  return error;
}

}  // namespace tnbc
