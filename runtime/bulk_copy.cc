#include "runtime/bulk_copy.hh"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2: part of every x86-64 CPU
#endif

#include "runtime/cpu_cache.hh"

namespace tnbc {

std::size_t l2_cache_bytes() { return cache_bytes(2); }

bool streams(std::size_t total) {
#if defined(__x86_64__)
  const std::size_t l2 = l2_cache_bytes();
  return l2 > 0 && total > l2;
#else
  (void)total;  // no streaming stores here
  return false;
#endif
}

void bulk_copy(void* dst, const void* src, std::size_t n, bool stream) {
#if defined(__x86_64__)
  constexpr std::size_t kVector = sizeof(__m128i);
  constexpr std::size_t kUnroll = 4;  // one 64-byte cache line per round
  if (stream && n >= 2 * kUnroll * kVector) {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    // Up to the first 16-byte boundary of the destination with memcpy (streaming stores must be aligned).
    const std::size_t head = (kVector - reinterpret_cast<std::uintptr_t>(d) % kVector) % kVector;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    const std::size_t body = n - n % (kUnroll * kVector);
    for (std::size_t at = 0; at < body; at += kUnroll * kVector) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at + kVector));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at + 2 * kVector));
      const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at + 3 * kVector));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + at), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + at + kVector), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + at + 2 * kVector), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + at + 3 * kVector), e);
    }
    std::memcpy(d + body, s + body, n - body);
    _mm_sfence();  // streaming stores are weakly ordered: visible before whatever the caller stores next
    return;
  }
#else
  (void)stream;
#endif
  std::memcpy(dst, src, n);
}

}  // namespace tnbc
