// Publication: received bytes go from tnbc's staging into the user's pages while those pages
// are still PROT_NONE, through a write to /proc/self/mem (the kernel writes the page frames
// directly, ignoring the protection, like a debugger's poke). Only when every piece of a region
// is in place does the region become accessible, in one mprotect. There is no moment at which
// the program can read a partly written page, and MPI never writes into a guarded page.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/futex.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"

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

bool publish_piece(InFlight& f, int i) {
  const Piece& p = f.pieces[static_cast<std::size_t>(i)];
  bool ok = true;
  if (f.user_recv && p.length > 0) {
    char* dst = f.user_recv + p.offset;
    const char* src = f.recv_data + p.offset;
    if (f.guarded) ok = poke(dst, src, p.length);
    else std::memcpy(dst, src, p.length);
    if (!ok) log(LogLevel::Error, "publishing %zu received bytes at %p failed: %s", p.length,
                 static_cast<void*>(dst), std::strerror(errno));
  }
  if (f.guarded && static_cast<std::size_t>(i) < f.piece_regions.size()) {
    auto [first, last] = f.piece_regions[static_cast<std::size_t>(i)];
    for (int k = first; k < last; ++k) {
      Region& r = f.regions[static_cast<std::size_t>(k)];
      if (r.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      if (::mprotect(reinterpret_cast<void*>(r.lo), r.hi - r.lo, PROT_READ | PROT_WRITE) != 0)
        log(LogLevel::Error, "mprotect(%p, %zu) failed: %s", reinterpret_cast<void*>(r.lo),
            static_cast<std::size_t>(r.hi - r.lo), std::strerror(errno));
      r.published.store(1, std::memory_order_release);
      f.regions_remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  f.done[static_cast<std::size_t>(i)].store(1, std::memory_order_release);
  if (p.dir == Dir::Recv) f.recv_remaining.fetch_sub(1, std::memory_order_acq_rel);
  publish_word().fetch_add(1, std::memory_order_release);
  futex::wake_all(publish_word());
  return ok;
}

}  // namespace tnbc
