#include <catch2/catch.hpp>

#include "runtime/guard.hh"
#include "runtime/schedule.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;
Step recv(std::size_t off, std::size_t len) {
  Step p;
  p.kind = StepKind::Recv;
  p.offset = off;
  p.length = len;
  return p;
}
}  // namespace

TEST_CASE("regions: whole pages only, straddling pages depend on both pieces") {
  const std::uintptr_t base = 0x100000 + 16;  // like malloc: 16 bytes past a page boundary
  // Two sub-messages of 3 pages each, each split head/body/tail.
  std::vector<Step> pieces;
  for (int s = 0; s < 2; ++s) {
    const std::size_t o = s * 3 * kPage;
    pieces.push_back(recv(o, kPage));
    pieces.push_back(recv(o + kPage, kPage));
    pieces.push_back(recv(o + 2 * kPage, kPage));
  }
  const std::uintptr_t lo = base, hi = base + 6 * kPage;
  auto plan = plan_regions(base, pieces, lo, hi, kPage, {});
  // Guardable pages: [0x101000, 0x106000) = 5 pages.
  REQUIRE_FALSE(plan.regions.empty());
  CHECK(plan.regions.front().lo == 0x101000);
  CHECK(plan.regions.back().hi == 0x106000);
  for (std::size_t k = 0; k + 1 < plan.regions.size(); ++k) CHECK(plan.regions[k].hi <= plan.regions[k + 1].lo);
  // First piece (head of sub 0) touches the partial first page, last piece the partial last page.
  CHECK(plan.in_call[0]);
  CHECK(plan.in_call[5]);
  CHECK_FALSE(plan.in_call[1]);
  CHECK_FALSE(plan.in_call[4]);
  // Every region lists exactly the pieces that overlap it.
  for (const auto& r : plan.regions) {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const std::uintptr_t s = base + pieces[i].offset, e = s + pieces[i].length;
      const bool overlaps = s < r.hi && e > r.lo;
      const bool listed = std::find(r.pieces.begin(), r.pieces.end(), static_cast<int>(i)) != r.pieces.end();
      CHECK(overlaps == listed);
    }
  }
}

TEST_CASE("regions: gaps with no piece are not guarded, small buffers have none") {
  const std::uintptr_t base = 0x200000;
  std::vector<Step> pieces = {recv(0, kPage), recv(10 * kPage, 3 * kPage)};
  auto plan = plan_regions(base, pieces, base, base + 13 * kPage, kPage, {});
  for (const auto& r : plan.regions) {
    // The gap [1, 10) pages has no piece: no region may cover any of it.
    CHECK((r.hi <= base + kPage || r.lo >= base + 10 * kPage));
    CHECK_FALSE(r.pieces.empty());
  }
  REQUIRE(plan.regions.size() >= 2);
  CHECK(plan.regions.front().lo == base);
  const std::vector<Step> one{recv(0, kPage)};
  auto none = plan_regions(base + 8, one, base + 8, base + 8 + kPage, kPage, {});
  CHECK(none.regions.empty());
  CHECK(none.in_call[0]);
}

TEST_CASE("regions: forced in-call pieces do not make a region guarded on their own") {
  const std::uintptr_t base = 0x300000;
  std::vector<Step> pieces = {recv(0, 4 * kPage), recv(4 * kPage, 4 * kPage)};
  auto plan = plan_regions(base, pieces, base, base + 8 * kPage, kPage, {true, false});
  for (const auto& r : plan.regions) CHECK(r.lo >= base + 4 * kPage);
  CHECK(plan.in_call[0]);
}
