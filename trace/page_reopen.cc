#include "trace/page_reopen.hh"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/futex.hh"

namespace tnbc::trace {

namespace {

// One byte per page, as a program reading the pages in order touches each first.
std::uint64_t read_pages(const volatile unsigned char* p, std::size_t page, int pages) {
  const long long t0 = futex::now_ns();
  unsigned sum = 0;
  for (int i = 0; i < pages; ++i) sum += p[static_cast<std::size_t>(i) * page];
  const long long t1 = futex::now_ns();
  asm volatile("" : : "r"(sum) : "memory");
  return static_cast<std::uint64_t>(t1 - t0);
}

}  // namespace

std::uint64_t measure_page_reopen_ns(std::size_t page, int pages, int rounds) {
  if (page == 0 || pages <= 0 || rounds <= 0) return 0;
  const std::size_t bytes = page * static_cast<std::size_t>(pages);
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 0;
  auto* p = static_cast<unsigned char*>(m);
  std::memset(p, 1, bytes);
  std::vector<double> per_page;
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t warm = read_pages(p, page, pages);
    if (::mprotect(p, bytes, PROT_NONE) != 0 || ::mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) {
      ::munmap(m, bytes);
      return 0;
    }
    const std::uint64_t reopened = read_pages(p, page, pages);
    per_page.push_back((static_cast<double>(reopened) - static_cast<double>(warm)) / pages);
  }
  ::munmap(m, bytes);
  std::nth_element(per_page.begin(), per_page.begin() + static_cast<long>(per_page.size() / 2), per_page.end());
  return static_cast<std::uint64_t>(std::max(0.0, per_page[per_page.size() / 2]));
}

double gap_without_reopen(double gap_ns, std::uint64_t bytes, std::uint64_t page, std::uint64_t reopen_ns) {
  if (page == 0) return gap_ns;
  return std::max(0.0, gap_ns - static_cast<double>(reopened_pages(bytes, page)) * static_cast<double>(reopen_ns));
}

}  // namespace tnbc::trace
