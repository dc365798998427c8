#include "runtime/page_state.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace tnbc {

namespace {
// pagemap's entry bits (Documentation/admin-guide/mm/pagemap.rst).
constexpr unsigned kPresentBit = 63;
constexpr unsigned kSwappedBit = 62;

int pagemap_fd() {
  static const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  return fd;
}
}  // namespace

PageHolds page_holds(std::uintptr_t addr) {
  const int fd = pagemap_fd();
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::uint64_t entry = 0;
  if (fd < 0 || ::pread(fd, &entry, sizeof entry, static_cast<off_t>(addr / page * sizeof entry)) != sizeof entry)
    return PageHolds::Unknown;
  const bool held = ((entry >> kPresentBit) & 1) != 0 || ((entry >> kSwappedBit) & 1) != 0;
  return held ? PageHolds::Data : PageHolds::Nothing;
}

Status settle_present_page(std::uintptr_t dst, const char* src, std::size_t page, bool& copied) {
  copied = false;
  // The staging is at the program's offset in its pages: `src` is one page of it.
  const PageHolds holds = page_holds(reinterpret_cast<std::uintptr_t>(src));
  if (holds == PageHolds::Unknown) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "page %p was already there and /proc/self/pagemap cannot say where its data is",
                  reinterpret_cast<void*>(dst));
    return Status::error(msg);
  }
  if (holds == PageHolds::Nothing) return {};  // moved there already
  std::memcpy(reinterpret_cast<void*>(dst), src, page);
  copied = true;
  return {};
}

}  // namespace tnbc
