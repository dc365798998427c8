// runtime/memory_map.hh: which ranges are private memory, asked of the kernel's PROCMAP_QUERY and
// of /proc/self/maps' text with the same answers; a remembered answer forgotten when memory is
// mapped again.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "runtime/memory_map.hh"

namespace {
using tnbc::MapsSource;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Four pages reserved together, then mapped page by page as a case needs (MAP_FIXED inside the
// reservation, so that the mappings are adjacent).
struct Area {
  char* base;
  Area() : base(static_cast<char*>(::mmap(nullptr, 4 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    REQUIRE(base != MAP_FAILED);
  }
  ~Area() { ::munmap(base, 4 * kPage); }
  void map(int page, int prot, int flags) {
    void* p = ::mmap(base + page * kPage, kPage, prot, flags | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    REQUIRE(p == base + page * kPage);
  }
  std::uintptr_t at(int page) const { return addr(base + page * kPage); }
};

// Both sources' answer, which must agree.
bool both(std::uintptr_t lo, std::uintptr_t hi, bool writable) {
  const bool query = tnbc::memory_is_private_uncached(lo, hi, writable, MapsSource::Query);
  const bool file = tnbc::memory_is_private_uncached(lo, hi, writable, MapsSource::File);
  INFO("range " << std::hex << lo << "-" << hi << (writable ? " writable" : ""));
  CHECK(query == file);
  return query && file;
}
}  // namespace

TEST_CASE("memory map: the kernel's query and /proc/self/maps agree on private, shared, read-only and unmapped ranges") {
  // This machine's kernel (6.18) answers the query; a kernel before 6.11 takes the file's path.
  INFO("PROCMAP_QUERY " << (tnbc::maps_query_works() ? "works" : "refused: both sources read the file"));
  Area a;
  a.map(0, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  a.map(1, PROT_READ, MAP_PRIVATE);  // another mapping: other permissions
  a.map(2, PROT_READ | PROT_WRITE, MAP_SHARED);
  ::munmap(a.base + 3 * kPage, kPage);  // a hole at the end

  CHECK(both(a.at(0), a.at(1), false));
  CHECK(both(a.at(0), a.at(1), true));
  CHECK(both(a.at(0) + 100, a.at(0) + 200, true));
  CHECK(both(a.at(0), a.at(2), false));   // two private mappings, adjacent
  CHECK_FALSE(both(a.at(0), a.at(2), true));  // ... one of them read-only
  CHECK_FALSE(both(a.at(1), a.at(3), false));  // ends in shared memory
  CHECK_FALSE(both(a.at(2), a.at(2) + 8, false));
  CHECK_FALSE(both(a.at(3), a.at(4), false));  // unmapped
  CHECK_FALSE(both(a.at(0), a.at(4), false));  // runs into the hole

  // The heap, this thread's stack and the program's data: private and writable.
  std::vector<char> heap(3 * kPage);
  CHECK(both(addr(heap.data()), addr(heap.data() + heap.size()), true));
  int local = 0;
  CHECK(both(addr(&local), addr(&local + 1), true));
  static int data[64];
  CHECK(both(addr(data), addr(data + 64), true));
}

TEST_CASE("memory map: a remembered private range is asked again once memory was mapped over it") {
  Area a;
  a.map(0, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  a.map(1, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  REQUIRE(tnbc::memory_is_private(a.at(0), a.at(2), true));
  REQUIRE(tnbc::memory_is_private(a.at(0), a.at(2), true));  // remembered
  // A shared mapping where the private one was: the interposers say so (mappings_changed), and
  // the next answer must not come from what was remembered.
  a.map(1, PROT_READ | PROT_WRITE, MAP_SHARED);
  tnbc::mappings_changed();
  CHECK_FALSE(tnbc::memory_is_private(a.at(0), a.at(2), true));
  CHECK(tnbc::memory_is_private(a.at(0), a.at(1), true));
}
