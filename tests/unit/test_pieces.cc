// Finer publication: the body of a sub-message (or of a broadcast segment) cut into pieces of
// at most TNBC_PIECE_BYTES (runtime/schedule.hh: piece_limit, body_cuts, split_points).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <tuple>

#include "runtime/guard.hh"
#include "runtime/coll/builders.hh"
#include "runtime/schedule.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;

// Lengths around every boundary the cuts care about, plus the sizes the benchmarks use.
std::vector<std::size_t> lengths() {
  std::vector<std::size_t> v = {1,
                                kPage - 1,
                                kPage,
                                2 * kPage,
                                2 * kPage + 1,
                                3 * kPage - 1,
                                3 * kPage,
                                3 * kPage + 1,
                                5 * kPage + 17,
                                18 * kPage,
                                18 * kPage + 1,
                                65536,
                                100000,
                                (1u << 20) - 1,
                                1u << 20,
                                (1u << 20) + 3,
                                (4u << 20) + 7};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) v.push_back(1 + rng() % (3u << 20));
  return v;
}

std::vector<PieceSetting> settings() {
  return {std::nullopt,  // auto
          std::uint64_t{0},      std::uint64_t{1},         std::uint64_t{kPage}, std::uint64_t{2 * kPage},
          std::uint64_t{100000}, std::uint64_t{64 * 1024}, std::uint64_t{256 * 1024}, std::uint64_t{1} << 40};
}

std::string describe(std::size_t length, PieceSetting s) {
  return "length " + std::to_string(length) + ", setting " + (s ? std::to_string(*s) : std::string("auto"));
}
}  // namespace

TEST_CASE("piece limit: whole pages, 0 means no cut, auto from the cost model") {
  CHECK(piece_limit(1 << 20, kPage, std::uint64_t{0}) == SIZE_MAX);
  CHECK(piece_limit(1 << 20, kPage, std::uint64_t{1}) == kPage);           // at least one page
  CHECK(piece_limit(1 << 20, kPage, std::uint64_t{kPage + 1}) == kPage);   // rounded down to pages
  CHECK(piece_limit(1 << 20, kPage, std::uint64_t{65536}) == 65536);
  // auto = max(kAutoPieceMinBytes, length / kAutoPiecesPerSub), in whole pages.
  CHECK(piece_limit(1000, kPage, std::nullopt) == kAutoPieceMinBytes);
  CHECK(piece_limit(256 * 1024, kPage, std::nullopt) == 128 * 1024);
  CHECK(piece_limit(1 << 20, kPage, std::nullopt) == 256 * 1024);  // the benchmarks' 1 MiB per peer
  CHECK(piece_limit(4 << 20, kPage, std::nullopt) == 1 << 20);
  CHECK(piece_limit(1000, 65536, std::nullopt) == 2 * 65536);  // 64 KiB pages: whole pages
  CHECK(piece_limit(1000, 3 * kPage, std::nullopt) == 33 * kPage);  // rounded up to a page
  const std::size_t big = std::size_t{64} << 20;
  CHECK(piece_limit(big, kPage, std::nullopt) == big / kAutoPiecesPerSub);
  CHECK(piece_limit(big + 12345, kPage, std::nullopt) == (big + 12345) / kAutoPiecesPerSub / kPage * kPage);
  for (std::size_t len : lengths()) CHECK(piece_limit(len, kPage, std::nullopt) % kPage == 0);
}

TEST_CASE("split points: every byte once, page head and tail, page-aligned body cuts of at most the limit") {
  for (std::size_t len : lengths()) {
    for (PieceSetting s : settings()) {
      INFO(describe(len, s));
      const std::size_t limit = piece_limit(len, kPage, s);
      const auto cuts = split_points(len, kPage, limit);
      // Cut points from 0 to len, strictly increasing: the pieces tile [0, len), every byte
      // exactly once.
      REQUIRE(cuts.size() >= 2);
      CHECK(cuts.front() == 0);
      CHECK(cuts.back() == len);
      CHECK(std::adjacent_find(cuts.begin(), cuts.end(), std::greater_equal<>()) == cuts.end());
      if (len <= 2 * kPage) {
        CHECK(cuts.size() == 2);
        continue;
      }
      // Head and tail: one page each.
      REQUIRE(cuts.size() >= 4);
      CHECK(cuts[1] == kPage);
      CHECK(cuts[cuts.size() - 2] == len - kPage);
      // The body: cuts on page multiples of the sub-message, pieces of at most the limit (unless
      // the tag budget needs larger ones), all of one length but the last, and not too many.
      const std::size_t body_pieces = cuts.size() - 3;
      CHECK(body_pieces >= 1);
      CHECK(body_pieces <= kMaxBodyPieces);
      for (std::size_t i = 1; i + 1 < cuts.size() - 1; ++i) CHECK(cuts[i] % kPage == 0);
      const std::size_t body = len - 2 * kPage;
      const std::size_t first = cuts[2] - cuts[1];
      for (std::size_t i = 1; i + 1 < cuts.size() - 1; ++i) {
        const std::size_t piece = cuts[i + 1] - cuts[i];
        if (i + 2 < cuts.size() - 1) CHECK(piece == first);  // balanced
        else CHECK(piece <= first);
      }
      if (!s) CHECK(body_pieces <= kAutoPiecesPerSub + 1);  // auto: about kAutoPiecesPerSub, never more than one extra
      if (limit == SIZE_MAX) {
        CHECK(body_pieces == 1);
      } else {
        const std::size_t fitting = (body + kPage - 1) / kPage;  // pages in the body
        const std::size_t needed = (fitting + limit / kPage - 1) / (limit / kPage);
        if (needed <= kMaxBodyPieces) {
          CHECK(first <= limit);
          CHECK(body_pieces == needed);  // no more pieces than the limit asks for
        } else {
          CHECK(body_pieces <= kMaxBodyPieces);
        }
      }
    }
  }
}

TEST_CASE("auto's ramped cut: every byte once, small first and last body pieces, none above the limit") {
  std::vector<PieceRule> rules = {PieceRule(), PieceRule(std::nullopt, 30000.0), PieceRule(std::nullopt, 3e6)};
  for (std::size_t len : lengths()) {
    for (const PieceRule& rule : rules) {
      INFO("length " << len << " scale " << rule.scale_bytes);
      const std::size_t limit = piece_limit(len, kPage, rule);
      const auto cuts = split_points(len, kPage, rule);
      REQUIRE(cuts.size() >= 2);
      CHECK(cuts.front() == 0);
      CHECK(cuts.back() == len);
      CHECK(std::adjacent_find(cuts.begin(), cuts.end(), std::greater_equal<>()) == cuts.end());
      if (len <= 2 * kPage || limit == SIZE_MAX) {
        CHECK(cuts == split_points(len, kPage, limit));  // not cut: as before
        continue;
      }
      CHECK(cuts[1] == kPage);
      CHECK(cuts[cuts.size() - 2] == len - kPage);
      for (std::size_t i = 1; i + 1 < cuts.size() - 1; ++i) CHECK(cuts[i] % kPage == 0);
      std::vector<std::size_t> body;
      for (std::size_t i = 1; i + 2 < cuts.size(); ++i) body.push_back(cuts[i + 1] - cuts[i]);
      CHECK(body.size() <= kMaxBodyPieces);
      for (std::size_t b : body) CHECK(b <= limit);  // the model's limit stays the largest piece
      const auto balanced = split_points(len, kPage, limit);
      if (body.size() == balanced.size() - 3) {
        CHECK(cuts == balanced);  // no ramp fitted: the balanced cut
        continue;
      }
      // A ramp: the first piece is the smallest, each next one of the ramp twice the one before;
      // the last is at most a page longer than the first.
      const std::size_t first = body.front();
      CHECK(2 * first <= limit);
      CHECK(first >= std::min(limit, kAutoPieceMinBytes));
      CHECK(body.back() >= first);
      CHECK(body.back() < first + kPage);
      // No more pieces than the balanced cut plus both ramps.
      CHECK(body.size() <= balanced.size() - 3 + 2 * kRampDoublings);
    }
  }
}

TEST_CASE("auto's ramped cut of the benchmarks' 4 MiB and 1 MiB per peer") {
  // 4 MiB, rule of thumb: limit 1 MiB: 256 KiB, 512 KiB, three middle pieces <= 1 MiB, 512 KiB, 256 KiB.
  const auto four = split_points(4u << 20, kPage, PieceRule());
  REQUIRE(four.size() == 10);
  CHECK(four[2] - four[1] == 256 * 1024);
  CHECK(four[3] - four[2] == 512 * 1024);
  CHECK(four[7] - four[6] == 512 * 1024);
  CHECK(four[8] - four[7] == 256 * 1024);  // ends where the tail page begins
  for (std::size_t i = 3; i < 6; ++i) CHECK(four[i + 1] - four[i] <= (1u << 20));
  // 1 MiB: limit 256 KiB, the ramp starts at kAutoPieceMinBytes: 128 KiB first and last.
  const auto one = split_points(1u << 20, kPage, PieceRule());
  CHECK(one[2] - one[1] == 128 * 1024);
  CHECK(one[one.size() - 2] - one[one.size() - 3] == 128 * 1024);
  // An explicit setting keeps the balanced cut.
  CHECK(split_points(4u << 20, kPage, PieceRule(std::uint64_t{1} << 20)) == split_points(4u << 20, kPage, 1u << 20));
}

TEST_CASE("split points without a limit are the head / body / tail of before") {
  CHECK(split_points(100, kPage) == std::vector<std::size_t>{0, 100});
  CHECK(split_points(3 * kPage + 5, kPage) == std::vector<std::size_t>{0, kPage, 2 * kPage + 5, 3 * kPage + 5});
  // A 1 MiB sub-message at 128 KiB: 254 body pages in 8 pieces of 32 pages, the last one 30.
  const auto cuts = split_points(1 << 20, kPage, 128 * 1024);
  REQUIRE(cuts.size() == 11);
  CHECK(cuts[2] - cuts[1] == 32 * kPage);
  CHECK(cuts[9] - cuts[8] == 30 * kPage);
}

TEST_CASE("alltoallv pieces: the same cuts on both ends of every sub-message, for every setting") {
  const int n = 5;
  std::mt19937_64 rng(11);
  for (PieceSetting setting : settings()) {
    INFO("setting " << (setting ? std::to_string(*setting) : std::string("auto")));
    // bytes[i][j]: what rank i sends to rank j: zeros, small, page-crossing and large sizes.
    std::vector<std::vector<std::size_t>> bytes(n, std::vector<std::size_t>(n));
    for (auto& row : bytes)
      for (auto& b : row) {
        const int kind = static_cast<int>(rng() % 4);
        b = kind == 0 ? 0 : kind == 1 ? rng() % (3 * kPage) : kind == 2 ? rng() % (300000) : rng() % (2u << 20);
      }
    // (from, to, tag) -> (length, offset within the sub-message)
    std::map<std::tuple<int, int, int>, std::pair<std::size_t, std::size_t>> sent, received;
    for (int r = 0; r < n; ++r) {
      std::vector<std::size_t> sb(n), so(n), rb(n), ro(n);
      std::size_t s = 0, q = 0;
      for (int p = 0; p < n; ++p) {
        sb[p] = bytes[r][p];
        so[p] = s;
        s += sb[p] + 3;  // offsets are rank-local and need not be aligned
        rb[p] = bytes[p][r];
        ro[p] = q;
        q += rb[p] + 17;
      }
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);  // priorities only; the messages stay the same
      const auto pieces = build_exchange(r, n, sb, so, rb, ro, kPage, order, setting);
      // Deterministic: the same inputs give the same pieces.
      const auto again = build_exchange(r, n, sb, so, rb, ro, kPage, order, setting);
      REQUIRE(again.size() == pieces.size());
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        CHECK(again[i].offset == pieces[i].offset);
        CHECK(again[i].tag_offset == pieces[i].tag_offset);
        CHECK(again[i].priority == pieces[i].priority);
      }
      std::map<std::pair<int, int>, std::vector<std::pair<std::size_t, std::size_t>>> cover;  // (dir, peer)
      std::map<int, int> last_body_tag;  // send order: per peer, body tags increase
      bool seen_body = false;
      for (const auto& p : pieces) {
        REQUIRE(p.peer != r);
        CHECK(p.tag_offset >= 0);
        CHECK(p.tag_offset < kTagsPerCollective);
        CHECK(p.length > 0);
        const auto up = static_cast<std::size_t>(p.peer);
        const std::size_t base = p.kind == StepKind::Send ? so[up] : ro[up];
        const auto key = std::make_tuple(p.kind == StepKind::Send ? r : p.peer, p.kind == StepKind::Send ? p.peer : r, p.tag_offset);
        auto& table = p.kind == StepKind::Send ? sent : received;
        REQUIRE(table.emplace(key, std::make_pair(p.length, p.offset - base)).second);
        cover[{static_cast<int>(p.kind), p.peer}].emplace_back(p.offset - base, p.length);
        if (p.kind != StepKind::Send) continue;
        if (p.edge) {
          CHECK_FALSE(seen_body);  // heads and tails before any body
        } else {
          seen_body = true;
          auto [it, fresh] = last_body_tag.emplace(p.peer, p.tag_offset);
          if (!fresh) CHECK(p.tag_offset > it->second);  // piece 0 first within a sub-message
          it->second = p.tag_offset;
        }
      }
      // Every byte of every sub-message exactly once, on both sides.
      for (auto& [key, spans] : cover) {
        std::sort(spans.begin(), spans.end());
        std::size_t at = 0;
        for (auto [off, len] : spans) {
          CHECK(off == at);
          at = off + len;
        }
        const int peer = key.second;
        CHECK(at == (key.first == static_cast<int>(StepKind::Send) ? sb[peer] : rb[peer]));
      }
    }
    // What rank i sends to rank j under a tag is what j expects from i under that tag: same
    // length at the same place of the sub-message.
    CHECK(sent == received);
  }
}

TEST_CASE("alltoallv send order: body k to every peer before body k + 1") {
  const int n = 4, r = 1;
  const std::size_t per = 1 << 20;
  std::vector<std::size_t> b(n, per), off(n);
  for (int p = 0; p < n; ++p) off[p] = p * per;
  std::vector<int> order{0, 1, 2, 3};
  const auto pieces = build_exchange(r, n, b, off, b, off, kPage, order, PieceSetting{256 * 1024});
  std::vector<std::pair<int, int>> sends;  // (tag, peer) of the bodies, in send order
  for (const auto& p : pieces)
    if (p.kind == StepKind::Send && !p.edge) sends.emplace_back(p.tag_offset, p.peer);
  // 254 body pages in 4 pieces of 64 pages (the last 62), to peers 2, 3, 0 (ring order).
  const std::vector<std::pair<int, int>> expected = {{1, 2}, {1, 3}, {1, 0}, {2, 2}, {2, 3}, {2, 0},
                                                     {3, 2}, {3, 3}, {3, 0}, {4, 2}, {4, 3}, {4, 0}};
  CHECK(sends == expected);
}

TEST_CASE("bcast pieces: segments cut like bodies (auto: not cut), every byte once, both ends agree") {
  for (std::size_t bytes : {std::size_t{1}, 3 * kPage + 1, std::size_t{1 << 20} + 7, std::size_t{4 << 20}}) {
    for (int segs : {1, 5, 64}) {
      for (PieceSetting setting : settings()) {
        INFO("bytes " << bytes << ", segments " << segs << ", setting "
                      << (setting ? std::to_string(*setting) : std::string("auto")));
        const auto chunks = bcast_chunks(bytes, kPage, segs);
        std::vector<int> in_list(chunks.size());
        std::iota(in_list.begin(), in_list.end(), 0);
        auto reordered = in_list;  // a profile's order: edges first, the middle reversed
        if (reordered.size() > 1) std::swap(reordered[1], reordered.back());
        if (reordered.size() > 3) std::reverse(reordered.begin() + 2, reordered.end());
        const int n = 6, root = 2;
        std::map<std::tuple<int, int, int>, std::pair<std::size_t, std::size_t>> sent, received;
        for (int r = 0; r < n; ++r) {
          // Ranks may disagree on the order (one found the call in the profile, another did not).
          const auto pieces = build_bcast(r, n, root, chunks, r % 2 ? reordered : in_list, kPage, setting);
          std::vector<std::pair<std::size_t, std::size_t>> got;
          for (std::size_t i = 0; i < pieces.size(); ++i) {
            const Step& p = pieces[i];
            CHECK(p.tag_offset < kTagsPerCollective);
            const Chunk& c = chunks[static_cast<std::size_t>(p.sub)];
            CHECK(p.offset >= c.offset);
            CHECK(p.offset + p.length <= c.offset + c.length);
            const bool middle = p.sub != 0 && p.sub + 1 != static_cast<int>(chunks.size());
            CHECK(p.edge == !middle);
            if (middle) {
              // Cut on page multiples, and at most the limit unless the tag budget forbids it.
              if (p.offset + p.length < c.offset + c.length) CHECK((p.offset + p.length) % kPage == 0);
              // auto leaves segments whole (like 0).
              const std::size_t limit = piece_limit(c.length, kPage, setting ? setting : PieceSetting{0});
              if (!setting) CHECK(p.length == c.length);
              const std::size_t pages = (c.length + kPage - 1) / kPage;
              const std::size_t needed = limit == SIZE_MAX ? 1 : (pages + limit / kPage - 1) / (limit / kPage);
              if (needed <= kMaxBodyPieces / (chunks.size() - 2)) CHECK(p.length <= limit);
            } else {
              CHECK(p.length == c.length);
            }
            const auto key = std::make_tuple(p.kind == StepKind::Send ? r : p.peer, p.kind == StepKind::Send ? p.peer : r,
                                             p.tag_offset);
            if (p.kind == StepKind::Send) {
              sent[key] = {p.offset, p.length};
              if (r != root) {
                REQUIRE(pieces.after(i).size() == 1);
                CHECK(pieces[static_cast<std::size_t>(pieces.after(i)[0])].tag_offset == p.tag_offset);
              }
            } else {
              received[key] = {p.offset, p.length};
              got.emplace_back(p.offset, p.length);
            }
          }
          if (r == root) continue;
          std::sort(got.begin(), got.end());
          std::size_t at = 0;
          for (auto [off, len] : got) {
            CHECK(off == at);
            at += len;
          }
          CHECK(at == bytes);
        }
        CHECK(sent == received);
      }
    }
  }
}

namespace {
// The receive pieces of one sub-message of `len` bytes at offset `at`, cut as build_alltoallv does.
void add_sub(std::vector<Step>& pieces, std::size_t at, std::size_t len, std::size_t limit) {
  const auto cuts = split_points(len, kPage, limit);
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    Step p;
    p.kind = StepKind::Recv;
    p.offset = at + cuts[i];
    p.length = cuts[i + 1] - cuts[i];
    pieces.push_back(p);
  }
}

// Every guardable page in exactly one region, regions in order; each region lists exactly the
// pieces that overlap it.
void check_plan(const RegionPlan& plan, const std::vector<Step>& pieces, std::uintptr_t base, std::uintptr_t lo,
                std::uintptr_t hi) {
  const std::uintptr_t glo = (lo + kPage - 1) / kPage * kPage, ghi = hi / kPage * kPage;
  std::uintptr_t at = glo;
  for (const auto& r : plan.regions) {
    CHECK(r.lo == at);
    CHECK(r.hi > r.lo);
    CHECK(r.lo % kPage == 0);
    CHECK(r.hi % kPage == 0);
    at = r.hi;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const std::uintptr_t s = base + pieces[i].offset, e = s + pieces[i].length;
      const bool listed = std::find(r.pieces.begin(), r.pieces.end(), static_cast<int>(i)) != r.pieces.end();
      CHECK(listed == (s < r.hi && e > r.lo));
    }
  }
  CHECK(at == ghi);
}
}  // namespace

TEST_CASE("regions follow the piece cuts: one per piece in a page-aligned buffer") {
  const std::uintptr_t base = 0x40000000;
  const std::size_t per = 1 << 20, limit = 64 * 1024;
  std::vector<Step> pieces;
  for (int s = 0; s < 3; ++s) add_sub(pieces, s * per, per, limit);
  const auto plan = plan_regions(base, pieces, base, base + 3 * per, kPage, {});
  check_plan(plan, pieces, base, base, base + 3 * per);
  // Aligned: every region is exactly one piece (head, body pieces, tail), none shared.
  CHECK(plan.regions.size() == pieces.size());
  for (const auto& r : plan.regions) {
    REQUIRE(r.pieces.size() == 1);
    const Step& p = pieces[static_cast<std::size_t>(r.pieces[0])];
    CHECK(r.lo == base + p.offset);
    CHECK(r.hi == base + p.offset + p.length);
  }
  for (bool in_call : plan.in_call) CHECK_FALSE(in_call);
}

TEST_CASE("regions follow the piece cuts: a page shared by two pieces waits for both when unaligned") {
  for (std::uintptr_t skew : {std::uintptr_t{16}, std::uintptr_t{3}, std::uintptr_t{kPage - 1}}) {
    INFO("buffer " << skew << " bytes past a page");
    const std::uintptr_t base = 0x40000000 + skew;
    const std::size_t per = (1 << 20) + 5, limit = 2 * kPage;
    std::vector<Step> pieces;
    for (int s = 0; s < 3; ++s) add_sub(pieces, s * per, per, limit);
    const auto plan = plan_regions(base, pieces, base, base + 3 * per, kPage, {});
    check_plan(plan, pieces, base, base, base + 3 * per);
    std::size_t shared = 0;
    for (const auto& r : plan.regions) {
      CHECK(r.pieces.size() <= 2);
      if (r.pieces.size() == 2) {
        ++shared;
        CHECK(r.hi - r.lo == kPage);  // only the page where the two meet
      }
    }
    // Every cut inside the buffer falls inside a page: one shared page per cut.
    CHECK(shared == pieces.size() - 1);
    // Only the first piece (partial first page) and the last (partial last page) complete in the call.
    CHECK(plan.in_call.front());
    CHECK(plan.in_call.back());
    CHECK(std::count(plan.in_call.begin(), plan.in_call.end(), true) == 2);
  }
}
