#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "runtime/coll/builders.hh"
#include "runtime/schedule.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;
const PieceSetting kWhole = std::uint64_t{0};  // TNBC_PIECE_BYTES=0: bodies not cut
}

TEST_CASE("split points cut heads and tails of long sub-messages") {
  CHECK(split_points(100, kPage) == std::vector<std::size_t>{0, 100});
  CHECK(split_points(2 * kPage, kPage) == std::vector<std::size_t>{0, 2 * kPage});
  CHECK(split_points(2 * kPage + 1, kPage) == std::vector<std::size_t>{0, kPage, kPage + 1, 2 * kPage + 1});
}

TEST_CASE("the lazy own block: partial pages at its ends, whole-page pieces of at most the limit between") {
  const std::uintptr_t base = 1000 * kPage;
  SECTION("a block starting and ending inside pages") {
    const std::uintptr_t at = base + 100;
    const std::size_t len = 20 * kPage + 50, limit = 3 * kPage;
    const auto cuts = lazy_own_cuts(at, len, kPage, limit);
    REQUIRE(cuts.size() >= 4);
    CHECK(cuts.front() == 0);
    CHECK(cuts.back() == len);
    CHECK(cuts[1] == kPage - 100);                                 // up to the first page boundary
    CHECK(cuts[cuts.size() - 2] == (at + len) / kPage * kPage - at);  // from the last one
    for (std::size_t k = 1; k + 1 < cuts.size(); ++k) CHECK((at + cuts[k]) % kPage == 0);
    for (std::size_t k = 1; k + 2 < cuts.size(); ++k) {
      CHECK(cuts[k + 1] > cuts[k]);
      CHECK(cuts[k + 1] - cuts[k] <= limit);
    }
    CHECK(cuts.size() - 3 >= (20 * kPage - kPage) / limit);  // the whole pages are cut, not one step
  }
  SECTION("a page-aligned block: no empty piece at either end") {
    const auto cuts = lazy_own_cuts(base, 8 * kPage, kPage, 2 * kPage);
    CHECK(cuts == std::vector<std::size_t>{0, 2 * kPage, 4 * kPage, 6 * kPage, 8 * kPage});
  }
  SECTION("no whole page: one piece (an edge, copied in the call)") {
    CHECK(lazy_own_cuts(base + 10, kPage, kPage, kPage) == std::vector<std::size_t>{0, kPage});
    CHECK(lazy_own_cuts(base + 10, 100, kPage, kPage) == std::vector<std::size_t>{0, 100});
  }
}

TEST_CASE("alltoallv pieces match between every pair of ranks") {
  const int n = 5;
  // bytes[i][j]: what rank i sends to rank j (varied, including zeros and page-crossing sizes)
  auto bytes = [](int i, int j) -> std::size_t { return (i * 7 + j * 3) % 4 == 0 ? 0 : (i + 1) * 3000 + j * 5000; };
  std::map<std::tuple<int, int, int>, std::size_t> sent, received;  // (from, to, tag) -> length
  for (int r = 0; r < n; ++r) {
    std::vector<std::size_t> sb(n), so(n), rb(n), ro(n);
    std::size_t s = 0, q = 0;
    for (int p = 0; p < n; ++p) {
      sb[p] = bytes(r, p);
      so[p] = s;
      s += sb[p];
      rb[p] = bytes(p, r);
      ro[p] = q;
      q += rb[p] + 17;  // gaps between receive blocks
    }
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    auto pieces = build_exchange(r, n, sb, so, rb, ro, kPage, order, kWhole);
    std::map<int, std::size_t> covered_send, covered_recv;
    for (const auto& p : pieces) {
      REQUIRE(p.peer != r);
      if (p.kind == StepKind::Send) {
        REQUIRE(sent.emplace(std::make_tuple(r, p.peer, p.tag_offset), p.length).second);
        CHECK(p.offset >= so[p.peer]);
        covered_send[p.peer] += p.length;
      } else {
        REQUIRE(received.emplace(std::make_tuple(p.peer, r, p.tag_offset), p.length).second);
        CHECK(p.offset >= ro[p.peer]);
        CHECK(p.offset + p.length <= ro[p.peer] + rb[p.peer]);
        covered_recv[p.peer] += p.length;
      }
    }
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      CHECK(covered_send[p] == sb[p]);
      CHECK(covered_recv[p] == rb[p]);
    }
    // Heads and tails are scheduled before any body.
    bool seen_body = false;
    for (const auto& p : pieces) {
      if (p.kind != StepKind::Send) continue;
      const bool body = !p.edge;
      if (body) seen_body = true;
      else CHECK_FALSE(seen_body);
    }
  }
  CHECK(sent == received);
}

TEST_CASE("alltoallv pieces: offsets are rank-local, the messages do not depend on them") {
  // Mode optimize sends a call with no overlap to gain straight from the program's buffer (its
  // displacements) instead of the packed send staging (engine.cc, all_to_all), and receives into
  // the program's buffer: the other ranks, which may return early from the same collective, must
  // see exactly the same messages (peer, length, tag) in the same order.
  const int n = 4, r = 2;
  const std::vector<std::size_t> sb{300000, 0, 5 * kPage + 17, kPage - 1}, rb{2 * kPage + 1, 70000, 9, 0};
  std::vector<std::size_t> packed(n), user(n), ro(n), ro_user(n);
  std::size_t s = 0, q = 0;
  for (int p = 0; p < n; ++p) {
    packed[p] = s, s += sb[p];
    ro[p] = q, q += rb[p];
    user[p] = (n - 1 - p) * 400000 + 33;  // blocks in reverse order, gaps, unaligned
    ro_user[p] = p * 300000 + 5;
  }
  std::vector<int> order{3, 1, 0, 2};
  for (PieceSetting setting : {PieceSetting{}, PieceSetting{0}, PieceSetting{64 * 1024}}) {
    const auto a = build_exchange(r, n, sb, packed, rb, ro, kPage, order, setting);
    const auto b = build_exchange(r, n, sb, user, rb, ro_user, kPage, order, setting);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(std::tie(a[i].kind, a[i].peer, a[i].length, a[i].tag_offset, a[i].priority, a[i].sub, a[i].edge) ==
            std::tie(b[i].kind, b[i].peer, b[i].length, b[i].tag_offset, b[i].priority, b[i].sub, b[i].edge));
      CHECK(a.after(i).size() == b.after(i).size());
      const auto p = static_cast<std::size_t>(a[i].peer);
      if (a[i].kind == StepKind::Send) CHECK(b[i].offset - user[p] == a[i].offset - packed[p]);
      else CHECK(b[i].offset - ro_user[p] == a[i].offset - ro[p]);
    }
  }
}

TEST_CASE("bcast chunks cover the buffer with page-sized ends") {
  for (std::size_t bytes : {std::size_t{1}, kPage, 2 * kPage, 2 * kPage + 1, 1000000ul, 5 * kPage + 3}) {
    for (int segs : {1, 3, 5}) {
      auto chunks = bcast_chunks(bytes, kPage, segs);
      std::size_t off = 0;
      for (const auto& c : chunks) {
        CHECK(c.offset == off);
        CHECK(c.length > 0);
        off += c.length;
      }
      CHECK(off == bytes);
      if (bytes > 2 * kPage) {
        CHECK(chunks.front().length == kPage);
        CHECK(chunks.back().length == kPage);
        CHECK(chunks.size() <= static_cast<std::size_t>(segs) + 2);
      }
    }
  }
}

TEST_CASE("binomial tree: every non-root has one parent that lists it as a child") {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 13}) {
    for (int root = 0; root < n; ++root) {
      std::multiset<int> children_seen;
      for (int r = 0; r < n; ++r) {
        for (int c : bcast_children(r, n, root)) {
          children_seen.insert(c);
          CHECK(bcast_parent(c, n, root) == r);
        }
      }
      CHECK(static_cast<int>(children_seen.size()) == n - 1);
      CHECK(children_seen.count(root) == 0);
      CHECK(bcast_parent(root, n, root) == -1);
    }
  }
}

TEST_CASE("bcast pieces: forwards wait for the receive of the same chunk") {
  auto chunks = bcast_chunks(1 << 20, kPage, 5);
  std::vector<int> order(chunks.size());
  std::iota(order.begin(), order.end(), 0);
  const int n = 8, root = 3;
  std::map<std::tuple<int, int, int>, std::size_t> sent, received;
  for (int r = 0; r < n; ++r) {
    auto pieces = build_bcast(r, n, root, chunks, order, kPage, kWhole);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const Step& p = pieces[i];
      if (p.kind == StepKind::Send) {
        sent[std::make_tuple(r, p.peer, p.tag_offset)] = p.length;
        if (r != root) {
          REQUIRE(pieces.after(i).size() == 1);
          CHECK(pieces[static_cast<std::size_t>(pieces.after(i)[0])].kind == StepKind::Recv);
          CHECK(pieces[static_cast<std::size_t>(pieces.after(i)[0])].tag_offset == p.tag_offset);
        } else {
          CHECK(pieces.after(i).empty());
        }
      } else {
        received[std::make_tuple(p.peer, r, p.tag_offset)] = p.length;
      }
    }
  }
  CHECK(sent == received);
  CHECK(received.size() == (n - 1) * chunks.size());
}
