// Publication: received bytes go from tnbc's staging into the user's pages, race-free.
//  - Guard::Protect: while the pages are still PROT_NONE, through a write to /proc/self/mem (the
//    kernel writes the page frames directly, ignoring the protection, like a debugger's poke).
//    Only when every piece of a region is in place does it become accessible, in one mprotect.
//  - Guard::Uffd: the region's pages are empty (runtime/uffd.hh); when its last piece is in,
//    one UFFDIO_MOVE puts back its pages from staging (page swapping), or one UFFDIO_COPY
//    installs copies of them. Bytes of a piece outside any region
//    (partial pages, not guarded) are copied directly.
// There is no moment at which the program can read a partly written page, and MPI never writes
// into a guarded page.
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
#include "runtime/uffd.hh"

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

namespace {
// The bytes of piece `i` that lie outside its regions (in partial pages nobody guards), for the
// userfaultfd backend, where a region's pages are filled whole from staging.
void copy_outside_regions(InFlight& f, int i, char* dst, const char* src, std::size_t n) {
  auto [first, last] = f.piece_regions.empty() ? std::pair{0, 0} : f.piece_regions[static_cast<std::size_t>(i)];
  auto at = reinterpret_cast<std::uintptr_t>(dst);
  const std::uintptr_t end = at + n;
  for (int k = first; k < last && at < end; ++k) {
    const Region& r = f.regions[static_cast<std::size_t>(k)];
    if (r.lo > at) std::memcpy(reinterpret_cast<void*>(at), src + (at - reinterpret_cast<std::uintptr_t>(dst)), std::min(r.lo, end) - at);
    at = std::max(at, r.hi);
  }
  if (at < end) std::memcpy(reinterpret_cast<void*>(at), src + (at - reinterpret_cast<std::uintptr_t>(dst)), end - at);
}

bool open_region(InFlight& f, Region& r) {
  bool ok = true;
  if (f.guard == InFlight::Guard::Uffd) {
    char* src = f.recv_data + (r.lo - reinterpret_cast<std::uintptr_t>(f.user_recv));
    ok = f.swapped ? uffd::fill_swapped(r.lo, r.hi, src) : uffd::fill(r.lo, r.hi, src);
  } else if (::mprotect(reinterpret_cast<void*>(r.lo), r.hi - r.lo, PROT_READ | PROT_WRITE) != 0) {
    log(LogLevel::Error, "mprotect(%p, %zu) failed: %s", reinterpret_cast<void*>(r.lo),
        static_cast<std::size_t>(r.hi - r.lo), std::strerror(errno));
    ok = false;
  }
  r.published.store(1, std::memory_order_release);
  f.regions_remaining.fetch_sub(1, std::memory_order_acq_rel);
  return ok;
}
}  // namespace

bool publish_piece(InFlight& f, int i) {
  const Piece& p = f.pieces[static_cast<std::size_t>(i)];
  bool ok = true;
  if (f.user_recv && f.user_recv != f.recv_data && p.length > 0) {
    char* dst = f.user_recv + p.offset;
    const char* src = f.recv_data + p.offset;
    switch (f.guard) {
      case InFlight::Guard::Protect: ok = poke(dst, src, p.length); break;
      case InFlight::Guard::Uffd: copy_outside_regions(f, i, dst, src, p.length); break;
      case InFlight::Guard::None: std::memcpy(dst, src, p.length); break;
    }
    if (!ok) log(LogLevel::Error, "publishing %zu received bytes at %p failed: %s", p.length,
                 static_cast<void*>(dst), std::strerror(errno));
  }
  if (f.guard != InFlight::Guard::None && static_cast<std::size_t>(i) < f.piece_regions.size()) {
    auto [first, last] = f.piece_regions[static_cast<std::size_t>(i)];
    for (int k = first; k < last; ++k) {
      Region& r = f.regions[static_cast<std::size_t>(k)];
      if (r.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      ok = open_region(f, r) && ok;
    }
  }
  f.done[static_cast<std::size_t>(i)].store(1, std::memory_order_release);
  if (p.dir == Dir::Recv) f.recv_remaining.fetch_sub(1, std::memory_order_acq_rel);
  publish_word().fetch_add(1, std::memory_order_release);
  futex::wake_all(publish_word());
  return ok;
}

}  // namespace tnbc
