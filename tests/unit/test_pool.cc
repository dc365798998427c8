// The staging pool (runtime/pool.hh): blocks come back by size class; reuse() hands out only
// what the pool holds (the engine's staging() waits for the progress thread's round before it
// lets acquire() map fresh pages).
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "runtime/pool.hh"

using namespace tnbc;

namespace {

// Whether the kernel lets the mapping at `p` use transparent huge pages (its smaps entry's
// THPeligible); nullopt where smaps does not say or the kernel's THP are off.
std::optional<bool> thp_eligible(const void* p) {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(mode, modes);
  if (modes.find("[never]") != std::string::npos || modes.empty()) return std::nullopt;
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    if (std::istringstream(line) >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return line.find('1') != std::string::npos;
    }
  }
  return std::nullopt;
}

// The kernel gives every large anonymous mapping huge pages, advised or not.
bool thp_always() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(mode, modes);
  return modes.find("[always]") != std::string::npos;
}

}  // namespace

TEST_CASE("pool: staging of whole huge pages starts on a huge-page boundary; smaller blocks on a page") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t huge = staging_huge_page_bytes();
  CHECK_FALSE(staging_in_huge_pages(page));
  for (std::size_t bytes : {page, 4 * page, huge, 4 * huge}) {
    if (bytes == 0) continue;  // no huge pages on this kernel
    char* p = map_staging(bytes);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % page == 0);
    if (staging_in_huge_pages(bytes)) {
      CHECK(reinterpret_cast<std::uintptr_t>(p) % huge == 0);
      // advised to use them (where THP are "madvise", Debian's default, only advice makes them eligible)
      if (const std::optional<bool> eligible = thp_eligible(p)) CHECK(*eligible);
    }
    p[0] = 1;
    p[bytes - 1] = 2;  // writable to its end
    CHECK(munmap(p, bytes) == 0);
  }
  if (huge > 0) {
    CHECK(staging_in_huge_pages(huge));
    CHECK(staging_in_huge_pages(8 * huge));
    CHECK_FALSE(staging_in_huge_pages(huge / 2));
    CHECK_FALSE(staging_in_huge_pages(huge + page));
    // The pool's blocks of whole huge pages come from map_staging: aligned so.
    Pool pool;
    const Block b = pool.acquire(huge + page);  // its size class: 2 huge pages
    REQUIRE(b.data != nullptr);
    CHECK(b.capacity == 2 * huge);
    CHECK(reinterpret_cast<std::uintptr_t>(b.data) % huge == 0);
    pool.release(b);
    // TNBC_STAGING_HUGE_PAGES=off: small pages at every size (not advised).
    Pool small(false);
    const Block c = small.acquire(2 * huge);
    REQUIRE(c.data != nullptr);
    c.data[0] = 1;
    if (const std::optional<bool> eligible = thp_eligible(c.data); eligible && !thp_always())
      CHECK_FALSE(*eligible);
    small.release(c);
  }
}

TEST_CASE("pool: reuse hands out only released blocks of the size class, acquire maps when none is free") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  Pool pool;
  CHECK(pool.reuse(3 * page).data == nullptr);  // nothing released yet: no block, nothing mapped
  CHECK(pool.cached_bytes() == 0);
  Block a = pool.acquire(3 * page);
  REQUIRE(a.data != nullptr);
  CHECK(a.capacity == 4 * page);  // a power of two
  a.data[a.capacity - 1] = 1;     // writable to its end
  pool.release(a);
  CHECK(pool.cached_bytes() == 4 * page);
  CHECK(pool.reuse(5 * page).data == nullptr);  // another class: not this block
  const Block b = pool.reuse(4 * page);
  CHECK(b.data == a.data);
  CHECK(b.capacity == a.capacity);
  CHECK(pool.cached_bytes() == 0);
  CHECK(pool.reuse(3 * page).data == nullptr);  // handed out once
  const Block c = pool.acquire(3 * page);       // none free: a fresh one
  REQUIRE(c.data != nullptr);
  CHECK(c.data != b.data);
  pool.release(b);
  pool.release(c);
  CHECK(pool.cached_bytes() == 8 * page);
}
