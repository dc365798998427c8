// runtime/bulk_copy.hh: the in-call copies, streamed past the cache or not, are memcpy byte for
// byte at every alignment of source and destination, every length around the 64-byte rounds, and
// never touch a byte outside the destination.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <vector>

#include "runtime/bulk_copy.hh"

using namespace tnbc;

namespace {
// A copy of `n` bytes from offset `so` to offset `dso` inside guard bytes on both sides.
void check_copy(std::size_t n, std::size_t so, std::size_t dso, bool stream) {
  constexpr std::size_t kGuard = 64;
  std::vector<unsigned char> src(n + so + kGuard), dst(n + dso + 2 * kGuard, 0xA5);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  bulk_copy(dst.data() + kGuard + dso, src.data() + so, n, stream);
  for (std::size_t i = 0; i < n; ++i)
    if (dst[kGuard + dso + i] != src[so + i]) FAIL("byte " << i << " of " << n << " (src +" << so << ", dst +" << dso << ")");
  for (std::size_t i = 0; i < kGuard + dso; ++i) REQUIRE(dst[i] == 0xA5);
  for (std::size_t i = kGuard + dso + n; i < dst.size(); ++i) REQUIRE(dst[i] == 0xA5);
}
}  // namespace

TEST_CASE("bulk_copy: memcpy's bytes at every alignment and length, streamed or not") {
  for (bool stream : {false, true})
    for (std::size_t n : {0ul, 1ul, 15ul, 16ul, 63ul, 64ul, 127ul, 128ul, 129ul, 191ul, 4096ul, 65536ul + 37})
      for (std::size_t so : {0ul, 1ul, 8ul, 15ul})
        for (std::size_t dso : {0ul, 3ul, 16ul, 33ul}) check_copy(n, so, dso, stream);
}

TEST_CASE("bulk_copy: streams only data larger than the cache") {
  CHECK_FALSE(streams(0));
  CHECK_FALSE(streams(4096));
#if defined(__x86_64__) && defined(_SC_LEVEL2_CACHE_SIZE)
  // Where the system names an L2 size, 1 GiB is beyond it.
  if (sysconf(_SC_LEVEL2_CACHE_SIZE) > 0) CHECK(streams(std::size_t{1} << 30));
#endif
}
