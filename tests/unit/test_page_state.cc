// runtime/page_state.hh: what a page holds (pagemap), and publication's choice for a page of the
// program's buffer found already there: the staging's data over it, or, when the staging's page
// is empty (its data moved there already), the page kept — never zeros read from an empty page.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "runtime/page_state.hh"

namespace {
using tnbc::PageHolds;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

struct Pages {
  char* base;
  explicit Pages(int n)
      : base(static_cast<char*>(
            ::mmap(nullptr, n * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))),
        n_(n) {
    REQUIRE(base != MAP_FAILED);
  }
  ~Pages() { ::munmap(base, n_ * kPage); }
  char* page(int k) { return base + k * kPage; }

 private:
  int n_;
};
}  // namespace

TEST_CASE("page_holds: untouched, written, read (zero page), emptied", "[page_state]") {
  Pages p(3);
  CHECK(tnbc::page_holds(addr(p.page(0))) == PageHolds::Nothing);
  std::memset(p.page(0), 7, kPage);
  CHECK(tnbc::page_holds(addr(p.page(0))) == PageHolds::Data);
  CHECK(tnbc::page_holds(addr(p.page(0)) + kPage - 1) == PageHolds::Data);
  CHECK(tnbc::page_holds(addr(p.page(1))) == PageHolds::Nothing);  // its neighbour untouched
  volatile char sink = *p.page(2);                                  // a read maps the zero page
  (void)sink;
  CHECK(tnbc::page_holds(addr(p.page(2))) == PageHolds::Data);
  REQUIRE(::madvise(p.page(0), kPage, MADV_DONTNEED) == 0);
  CHECK(tnbc::page_holds(addr(p.page(0))) == PageHolds::Nothing);
}

TEST_CASE("settle_present_page: the staging's data over the page, or the page kept when the staging's is empty",
          "[page_state]") {
  Pages user(1), staging(1);
  bool copied = false;

  SECTION("staging holds the received data: written over what was there") {
    std::memset(user.page(0), 0, kPage);  // e.g. a zero page faulted in
    std::memset(staging.page(0), 0x5a, kPage);
    REQUIRE(tnbc::settle_present_page(addr(user.page(0)), staging.page(0), kPage, copied).ok());
    CHECK(copied);
    CHECK(user.page(0)[0] == 0x5a);
    CHECK(user.page(0)[kPage - 1] == 0x5a);
  }
  SECTION("staging empty (its page moved to the program's already): the received data stays") {
    std::memset(user.page(0), 0x33, kPage);
    std::memset(staging.page(0), 0x5a, kPage);
    REQUIRE(::madvise(staging.page(0), kPage, MADV_DONTNEED) == 0);  // as UFFDIO_MOVE leaves it
    REQUIRE(tnbc::settle_present_page(addr(user.page(0)), staging.page(0), kPage, copied).ok());
    CHECK_FALSE(copied);
    CHECK(user.page(0)[0] == 0x33);
    CHECK(user.page(0)[kPage - 1] == 0x33);
    // Not even read: reading would have mapped the zero page there.
    CHECK(tnbc::page_holds(addr(staging.page(0))) == PageHolds::Nothing);
  }
}
