// The sizes at which an early return pays (runtime/model/bands.hh): a broadcast's balance per
// size, which may pay in a band only, found on a grid and bisected to a page; the policy deciding
// by it (inside a band: tnbc's early return; outside: the MPI library's call); equal inputs,
// equal decisions.
#include <catch2/catch.hpp>

#include <memory>

#include "machines.hh"
#include "runtime/model/bands.hh"
#include "runtime/model/estimate.hh"
#include "runtime/policy.hh"
#include "runtime/threshold.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;
constexpr std::size_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr double kLargest = 1024.0 * kMiB;
constexpr std::size_t kFloor = kMinGuardablePages * kPage;

// A machine whose broadcast balance pays in a band only at np 4 on one node: shared memory at
// 5 GB/s under Open MPI 4.1's rules (its linear broadcast below 1 MiB, a chain from there).
model::Machine band_machine() {
  model::Machine m = test::machine(5000, 50, 2, 1);
  m.mpi_library = "Open MPI v4.1.4";
  return m;
}
const model::Topology kFour = model::Topology::block(4, 4, 2, 1);

bool balance_pays(const model::Machine& m, const model::Topology& t, std::size_t bytes) {
  const model::Execution x;
  const double s = static_cast<double>(bytes);
  return model::bcast_balance(m, t, x, s, model::bcast_segments(m, t, s, x, x.bcast_max_segments, kPage), kPage).pays();
}
}  // namespace

TEST_CASE("bands: a band is found to the page, with nothing below or above it") {
  const std::size_t from = 200 * kKiB, to = 300 * kKiB;
  int asked = 0;
  const model::SizeBands b = model::scan_bands([&](std::size_t s) {
    ++asked;
    return s >= from && s < to;
  }, kFloor, kPage, kLargest);
  REQUIRE(b.ranges.size() == 1);
  CHECK(b.ranges[0].first == from);
  CHECK(b.ranges[0].second == to);
  CHECK(b.first() == from);
  CHECK(b.contains(256 * kKiB));
  CHECK(b.contains(to - kPage));
  CHECK_FALSE(b.contains(from - kPage));
  CHECK_FALSE(b.contains(to));
  CHECK_FALSE(b.contains(64 * kKiB));
  CHECK_FALSE(b.contains(kMiB));
  CHECK_FALSE(b.contains(4 * kMiB));
  CHECK(asked < 200);  // a grid of a few sizes per doubling, not every page
  CHECK(b.text() == format_bytes(from) + "-" + format_bytes(to));
  CHECK(b.json() == "[[204800, 307200]]");
}

TEST_CASE("bands: a threshold, two bands, never and always") {
  const model::SizeBands up = model::scan_bands([](std::size_t s) { return s >= 100 * kKiB; }, kFloor, kPage, kLargest);
  REQUIRE(up.ranges.size() == 1);
  CHECK(up.ranges[0] == std::make_pair(100 * kKiB, SIZE_MAX));
  CHECK(up.contains(std::size_t{1} << 40));

  const model::SizeBands two = model::scan_bands(
      [](std::size_t s) { return (s >= 64 * kKiB && s < 128 * kKiB) || s >= kMiB; }, kFloor, kPage, kLargest);
  REQUIRE(two.ranges.size() == 2);
  CHECK(two.ranges[0] == std::make_pair(64 * kKiB, 128 * kKiB));
  CHECK(two.ranges[1] == std::make_pair(kMiB, SIZE_MAX));
  CHECK_FALSE(two.contains(512 * kKiB));
  CHECK(two.json() == "[[65536, 131072], [1048576, null]]");

  const model::SizeBands never = model::scan_bands([](std::size_t) { return false; }, kFloor, kPage, kLargest);
  CHECK(never.ranges.empty());
  CHECK(never.first() == kNeverPays);
  CHECK(never.text() == "never");
  const model::SizeBands always = model::scan_bands([](std::size_t) { return true; }, kFloor, kPage, kLargest);
  CHECK(always.ranges == model::SizeBands::from(kFloor).ranges);
  CHECK(model::SizeBands::from(kNeverPays).ranges.empty());
}

TEST_CASE("bands: a broadcast returns early where its balance pays at the call's size, and only there") {
  const model::Machine m = band_machine();
  const model::SizeBands b = model::early_return_bands(m, kFour, Kind::Bcast, {}, kPage);
  REQUIRE_FALSE(b.ranges.empty());
  REQUIRE(b.ranges.back().second != SIZE_MAX);  // a band: above it the balance does not pay
  for (std::size_t s : {64 * kKiB, 256 * kKiB, kMiB, 3 * kMiB / 2, 4 * kMiB, 16 * kMiB})
    CHECK(b.contains(s) == balance_pays(m, kFour, s));
  // The band's edges are where the balance turns (to a page).
  for (const auto& [from, to] : b.ranges) {
    CHECK(balance_pays(m, kFour, from));
    CHECK_FALSE(balance_pays(m, kFour, from - kPage));
    CHECK(balance_pays(m, kFour, to - kPage));
    CHECK_FALSE(balance_pays(m, kFour, to));
  }
  // threshold_bytes is its smallest size; the exchange family keeps one threshold.
  CHECK(model::threshold_bytes(m, kFour, Kind::Bcast, {}, kPage) == b.first());
  const model::SizeBands a = model::early_return_bands(m, kFour, Kind::Alltoall, {}, kPage);
  CHECK(a.ranges == model::SizeBands::from(model::threshold_bytes(m, kFour, Kind::Alltoall, {}, kPage)).ranges);
}

TEST_CASE("bands: the policy runs the library's broadcast outside the band, equally on every rank") {
  Settings s;
  auto in = std::make_shared<model::Inputs>();
  in->machine = band_machine();
  in->world = kFour;
  auto a = make_policy(s, kPage, nullptr), b = make_policy(s, kPage, nullptr);
  a->start(in, 0, true);
  b->start(in, 0, true);
  const model::SizeBands band = a->early_return_sizes(Kind::Bcast, kFour);
  REQUIRE_FALSE(band.ranges.empty());
  const std::size_t inside = band.ranges.front().first, above = band.ranges.front().second;
  REQUIRE(above != SIZE_MAX);
  CHECK(a->route(Kind::Bcast, false, kFour, inside) == Reason::None);
  CHECK(a->route(Kind::Bcast, false, kFour, above - kPage) == Reason::None);
  CHECK(a->route(Kind::Bcast, false, kFour, inside - kPage) == Reason::BelowThreshold);
  CHECK(a->route(Kind::Bcast, false, kFour, above) == Reason::BelowThreshold);
  CHECK(a->route(Kind::Bcast, false, kFour, 4 * above) == Reason::BelowThreshold);
  CHECK(a->early_return_pays(Kind::Bcast, inside, kFour));
  CHECK_FALSE(a->early_return_pays(Kind::Bcast, above, kFour));
  CHECK(a->early_return_pays(Kind::Bcast, 0, kFour));  // the root: the route let the call through
  CHECK(a->threshold(Kind::Bcast, kFour) == inside);
  // Equal inputs (machine, placement, size), equal decisions.
  CHECK(b->early_return_sizes(Kind::Bcast, kFour).ranges == band.ranges);
  for (std::size_t bytes = kFloor; bytes < 64 * kMiB; bytes = bytes * 5 / 4 / kPage * kPage + kPage)
    CHECK(a->route(Kind::Bcast, false, kFour, bytes) == b->route(Kind::Bcast, false, kFour, bytes));
  // TNBC_MIN_BYTES set: every size from it, as before.
  s.min_bytes = 64 * kKiB;
  auto c = make_policy(s, kPage, nullptr);
  c->start(in, 0, true);
  CHECK(c->early_return_sizes(Kind::Bcast, kFour).ranges == model::SizeBands::from(64 * kKiB).ranges);
  CHECK(c->route(Kind::Bcast, false, kFour, 4 * above) == Reason::None);
  CHECK(c->route(Kind::Bcast, false, kFour, 64 * kKiB - 1) == Reason::BelowThreshold);
}
