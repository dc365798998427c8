#pragma once
// FNV-1a, 64 bits: the one hash tnbc uses where ranks or runs compare what they hold (call sites'
// ids, a profile's text, a machine file, a trace's checksum, the vote's key table, cache keys).
// Not a cryptographic hash: inputs come from the program and its own files.

#include <cstddef>
#include <cstdint>

namespace tnbc {

// tnbc's start: FNV's offset basis (14695981039346656037) without its last digit, as tnbc has
// always written it. Kept: traces and profiles name call sites by hashes from it, and a trace's
// checksum starts from it (docs/formats.md); changing it would orphan every profile written.
inline constexpr std::uint64_t kFnv1aBasis = 1469598103934665603ULL;
// FNV's own offset basis, for a hash that must match other tools' FNV-1a.
inline constexpr std::uint64_t kFnv1aStandardBasis = 14695981039346656037ULL;
inline constexpr std::uint64_t kFnv1aPrime = 1099511628211ULL;

// The bytes [data, data + n) folded into h, one at a time (FNV-1a proper).
inline std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t h = kFnv1aBasis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1aPrime;
  return h;
}

// A 64-bit value folded into h in one step: FNV-1a's round on a whole word, for keys that live
// only in memory (cheaper than its bytes; not the byte-wise hash of fnv1a64).
inline std::uint64_t fnv1a_word(std::uint64_t h, std::uint64_t v) { return (h ^ v) * kFnv1aPrime; }

}  // namespace tnbc
