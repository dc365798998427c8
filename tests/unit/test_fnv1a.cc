// runtime/fnv1a.hh: FNV-1a's published 64-bit values from FNV's own basis, and tnbc's own start,
// which names every call site in traces and profiles, unchanged.
#include <catch2/catch.hpp>

#include <string_view>

#include "runtime/fnv1a.hh"

using namespace tnbc;

TEST_CASE("fnv1a64 gives the published FNV-1a 64-bit values", "[fnv1a]") {
  // The reference's test vectors (http://www.isthe.com/chongo/tech/comp/fnv/).
  CHECK(fnv1a64("", 0, kFnv1aStandardBasis) == 0xcbf29ce484222325ULL);
  CHECK(fnv1a64("a", 1, kFnv1aStandardBasis) == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("foobar", 6, kFnv1aStandardBasis) == 0x85944171f73967e8ULL);
}

TEST_CASE("fnv1a64's default start is tnbc's: the hashes traces and profiles hold stay put", "[fnv1a]") {
  CHECK(kFnv1aBasis == 1469598103934665603ULL);
  CHECK(fnv1a64("", 0) == kFnv1aBasis);
  CHECK(fnv1a64("a", 1) == 0x44bd8ad473cd9906ULL);  // as tnbc before runtime/fnv1a.hh computed it
}

TEST_CASE("fnv1a64 continues from a hash: pieces hash as their concatenation", "[fnv1a]") {
  constexpr std::string_view text = "TNBC-TRACE 1";
  const std::uint64_t whole = fnv1a64(text.data(), text.size());
  const std::uint64_t head = fnv1a64(text.data(), 4);
  CHECK(fnv1a64(text.data() + 4, text.size() - 4, head) == whole);
}

TEST_CASE("fnv1a_word folds a word in one round: a byte's value equals fnv1a64's round", "[fnv1a]") {
  const unsigned char b = 'a';
  CHECK(fnv1a_word(kFnv1aBasis, b) == fnv1a64(&b, 1));
  // A whole word differs from its bytes' hash (it is a different mix, documented as such).
  const std::uint64_t v = 0x0102030405060708ULL;
  CHECK(fnv1a_word(kFnv1aBasis, v) != fnv1a64(&v, sizeof v));
}
