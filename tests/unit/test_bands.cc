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
#include "trace/gain.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;
constexpr std::size_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr double kLargest = 1024.0 * kMiB;
constexpr std::size_t kFloor = kMinGuardablePages * kPage;

// A machine whose broadcast balance pays in a band only at np 4 on one node with a CPU per rank
// (kRoomy; with 2 CPUs, kFour, tnbc's threads share them and it pays nowhere): shared memory at
// 5 GB/s under Open MPI 4.1's rules (its linear broadcast below 1 MiB, a chain from there).
model::Machine band_machine() {
  model::Machine m = test::machine(5000, 50, 2, 1);
  m.mpi_library = "Open MPI v4.1.4";
  return m;
}
const model::Topology kFour = model::Topology::block(4, 4, 2, 1);
// The same ranks with a CPU each: tnbc's progress threads do not wait for one another's CPU.
const model::Topology kRoomy = model::Topology::block(4, 4, 4, 1);

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
  const model::SizeBands b = model::early_return_bands(m, kRoomy, Kind::Bcast, {}, kPage);
  REQUIRE_FALSE(b.ranges.empty());
  REQUIRE(b.ranges.back().second != SIZE_MAX);  // a band: above it the balance does not pay
  for (std::size_t s : {64 * kKiB, 256 * kKiB, kMiB, 3 * kMiB / 2, 4 * kMiB, 16 * kMiB})
    CHECK(b.contains(s) == balance_pays(m, kRoomy, s));
  // The band's edges are where the balance turns (to a page).
  for (const auto& [from, to] : b.ranges) {
    CHECK(balance_pays(m, kRoomy, from));
    CHECK_FALSE(balance_pays(m, kRoomy, from - kPage));
    CHECK(balance_pays(m, kRoomy, to - kPage));
    CHECK_FALSE(balance_pays(m, kRoomy, to));
  }
  // threshold_bytes is its smallest size.
  CHECK(model::threshold_bytes(m, kRoomy, Kind::Bcast, {}, kPage) == b.first());
}

TEST_CASE("bands: the policy runs the library's broadcast outside the band, equally on every rank") {
  Settings s;
  s.early_return_margin_shared_node_pct = 0;  // the balance alone (the margins: the next tests)
  auto in = std::make_shared<model::Inputs>();
  in->machine = band_machine();
  in->world = kRoomy;
  auto a = make_policy(s, kPage, nullptr), b = make_policy(s, kPage, nullptr);
  a->start(in, 0, true);
  b->start(in, 0, true);
  const model::SizeBands band = a->early_return_sizes(Kind::Bcast, kRoomy);
  REQUIRE_FALSE(band.ranges.empty());
  const std::size_t inside = band.ranges.front().first, above = band.ranges.front().second;
  REQUIRE(above != SIZE_MAX);
  CHECK(a->route(Kind::Bcast, false, kRoomy, inside) == Reason::None);
  CHECK(a->route(Kind::Bcast, false, kRoomy, above - kPage) == Reason::None);
  CHECK(a->route(Kind::Bcast, false, kRoomy, inside - kPage) == Reason::BelowThreshold);
  CHECK(a->route(Kind::Bcast, false, kRoomy, above) == Reason::BelowThreshold);
  CHECK(a->route(Kind::Bcast, false, kRoomy, 4 * above) == Reason::BelowThreshold);
  CHECK(a->early_return_pays(Kind::Bcast, inside, kRoomy));
  CHECK_FALSE(a->early_return_pays(Kind::Bcast, above, kRoomy));
  CHECK(a->early_return_pays(Kind::Bcast, 0, kRoomy));  // the root: the route let the call through
  CHECK(a->threshold(Kind::Bcast, kRoomy) == inside);
  // Equal inputs (machine, placement, size), equal decisions.
  CHECK(b->early_return_sizes(Kind::Bcast, kRoomy).ranges == band.ranges);
  for (std::size_t bytes = kFloor; bytes < 64 * kMiB; bytes = bytes * 5 / 4 / kPage * kPage + kPage)
    CHECK(a->route(Kind::Bcast, false, kRoomy, bytes) == b->route(Kind::Bcast, false, kRoomy, bytes));
  // TNBC_MIN_BYTES set: every size from it, as before.
  s.min_bytes = 64 * kKiB;
  auto c = make_policy(s, kPage, nullptr);
  c->start(in, 0, true);
  CHECK(c->early_return_sizes(Kind::Bcast, kRoomy).ranges == model::SizeBands::from(64 * kKiB).ranges);
  CHECK(c->route(Kind::Bcast, false, kRoomy, 4 * above) == Reason::None);
  CHECK(c->route(Kind::Bcast, false, kRoomy, 64 * kKiB - 1) == Reason::BelowThreshold);
}

namespace {
bool exchange_pays(const model::Machine& m, const model::Topology& t, Kind k, std::size_t bytes) {
  return model::exchange_balance(m, t, k, {}, static_cast<double>(bytes), kPage).pays();
}
}  // namespace

TEST_CASE("bands: the exchange family returns early from its floor where its read-at-once balance pays") {
  for (const model::Machine& m : {band_machine(), test::machine(125), test::machine(1000, 20, 2, 5, 100)})
    for (const model::Topology& t : {kFour, kRoomy, model::Topology::block(2, 1, 2, 1)})
      for (Kind k : {Kind::Alltoall, Kind::Allgather}) {
        const model::SizeBands b = model::early_return_bands(m, t, k, {}, kPage);
        const std::size_t floor = model::exchange_floor(m, t, k, {}, kPage);
        CHECK(model::threshold_bytes(m, t, k, {}, kPage) == b.first());
        if (floor == kNeverPays) {
          CHECK(b.ranges.empty());
          continue;
        }
        CHECK(b.first() >= floor);  // below the floor no program gains
        for (std::size_t s : {64 * kKiB, 256 * kKiB, kMiB, 4 * kMiB, 16 * kMiB})
          CHECK(b.contains(s) == (s >= floor && exchange_pays(m, t, k, s)));
        for (const auto& [from, to] : b.ranges) {
          CHECK(exchange_pays(m, t, k, from));
          if (from > floor) CHECK_FALSE(exchange_pays(m, t, k, from - kPage));
          if (to != SIZE_MAX) CHECK_FALSE(exchange_pays(m, t, k, to));
        }
      }
}

TEST_CASE("bands: read at once, tnbc's threads sharing a node's CPUs cost its early return, the library's call not") {
  // The same four ranks on one node with 2 and with 4 CPUs: tnbc's progress threads share 2.
  const model::Machine m = test::machine(1000, 20, 2, 5, 100);
  const model::Topology crowded = kFour, roomy = kRoomy;
  for (std::size_t s : {256 * kKiB, 4 * kMiB}) {
    const model::ReadOnceBalance a = model::exchange_balance(m, crowded, Kind::Alltoall, {}, static_cast<double>(s), kPage);
    const model::ReadOnceBalance b = model::exchange_balance(m, roomy, Kind::Alltoall, {}, static_cast<double>(s), kPage);
    CHECK(a.read_at_once_ns > b.read_at_once_ns);
    CHECK(a.loss_ns >= b.loss_ns);
    const double bytes = static_cast<double>(s);
    const int seg = model::bcast_segments(m, crowded, bytes, {}, kDefaultBcastMaxSegments, kPage);
    CHECK(model::bcast_balance(m, crowded, {}, bytes, seg, kPage).read_at_once_ns >
          model::bcast_balance(m, roomy, {}, bytes, seg, kPage).read_at_once_ns);
  }
  // Two ranks on two nodes over a slow link: the transfer dwarfs tnbc's costs, the large sizes
  // return early.
  const model::Machine link = test::machine(125);
  const model::Topology two = model::Topology::block(2, 1, 2, 1);
  const model::SizeBands b = model::early_return_bands(link, two, Kind::Alltoall, {}, kPage);
  CHECK(b.contains(kMiB));
  CHECK(b.contains(4 * kMiB));
  CHECK(b.contains(64 * kMiB));
}

TEST_CASE("bands: the policy decides the exchange family by its bands, equally on every rank") {
  Settings s;
  s.early_return_margin_shared_node_pct = 0;  // the balance alone (the margins: the next test)
  auto in = std::make_shared<model::Inputs>();
  in->machine = test::machine(1000, 20, 2, 5, 100);
  in->world = kRoomy;
  auto a = make_policy(s, kPage, nullptr), b = make_policy(s, kPage, nullptr);
  a->start(in, 0, true);
  b->start(in, 0, true);
  const model::SizeBands bands = a->early_return_sizes(Kind::Alltoall, kRoomy);
  REQUIRE_FALSE(bands.ranges.empty());
  REQUIRE(bands.first() > kFloor);  // sizes on both sides
  CHECK(bands.ranges == model::early_return_bands(in->machine, kRoomy, Kind::Alltoall, execution(s, 0), kPage).ranges);
  CHECK(a->early_return_sizes(Kind::Alltoallv, kRoomy).ranges == bands.ranges);  // per peer, as Alltoall
  for (std::size_t bytes = kFloor; bytes < 64 * kMiB; bytes = bytes * 5 / 4 / kPage * kPage + kPage) {
    const Reason r = a->route(Kind::Alltoall, false, kRoomy, bytes);
    CHECK(r == b->route(Kind::Alltoall, false, kRoomy, bytes));
    CHECK((r == Reason::None) == bands.contains(bytes));
    // Alltoallv, rank-local: what this rank receives from its 3 peers, per peer.
    CHECK(a->early_return_pays(Kind::Alltoallv, 3 * bytes, kRoomy) == bands.contains(bytes));
    // The same ranks on 2 CPUs: read at once, the early return loses at every size here; the
    // library's call runs.
    CHECK(a->route(Kind::Alltoall, false, kFour, bytes) == Reason::BelowThreshold);
  }
  CHECK(a->early_return_sizes(Kind::Alltoall, kFour).ranges.empty());
  // Sizes that differ between ranks (kNoUnit): where no size returns early the library's call
  // runs on every rank alike, else tnbc's schedule (each rank then asks early_return_pays).
  CHECK(a->route(Kind::Alltoallv, false, kFour, SIZE_MAX) == Reason::BelowThreshold);
  CHECK(a->route(Kind::Allgatherv, false, kFour, SIZE_MAX) == b->route(Kind::Allgatherv, false, kFour, SIZE_MAX));
  CHECK(a->route(Kind::Alltoallv, false, kRoomy, SIZE_MAX) == Reason::None);
  s.min_bytes = 64 * kKiB;  // set: every size from it, whatever the model says
  auto c = make_policy(s, kPage, nullptr);
  c->start(in, 0, true);
  CHECK(c->route(Kind::Alltoallv, false, kFour, SIZE_MAX) == Reason::None);
  CHECK(c->route(Kind::Alltoall, false, kFour, 64 * kKiB) == Reason::None);
}

TEST_CASE("bands: one rule says where a call is the library's, for the run, the trace's verdict and predict") {
  // The rule itself: outside the sizes at a known size; without one only where none returns early.
  const model::SizeBands band = model::SizeBands{{{64 * kKiB, kMiB}}};
  CHECK_FALSE(model::runs_as_mpi(band, 64 * kKiB));
  CHECK(model::runs_as_mpi(band, kMiB));
  CHECK(model::runs_as_mpi(band, 4 * kKiB));
  CHECK_FALSE(model::runs_as_mpi(band, std::nullopt));
  CHECK(model::runs_as_mpi(model::SizeBands{}, std::nullopt));
  CHECK(model::runs_as_mpi(model::SizeBands{}, 64 * kKiB));

  // Alltoallv takes Alltoall's sizes. On a machine whose link outruns its memcpy no exchange
  // size returns early (empty), on a slow link some do: the policy's route and the trace's verdict
  // (trace::site_sizes) agree for an Alltoallv site in both.
  for (const double mb_per_s : {100.0, 1e6}) {
    model::Machine m = test::machine(mb_per_s);
    if (mb_per_s > 1e5) m.memcpy_cost = {0, 4e6 / 1048576.0};
    const model::SizeBands a = model::call_bands(m, kRoomy, Kind::Alltoall, {}, kPage);
    CHECK(model::call_bands(m, kRoomy, Kind::Alltoallv, {}, kPage).ranges == a.ranges);
    CHECK(a.ranges.empty() == (mb_per_s > 1e5));
    Settings s;
    s.early_return_margin_shared_node_pct = 0;  // as call_bands above: the balance alone
    auto in = std::make_shared<model::Inputs>();
    in->machine = m;
    in->world = kRoomy;
    auto p = make_policy(s, kPage, nullptr);
    p->start(in, 0, true);
    const bool library = p->route(Kind::Alltoallv, false, kRoomy, SIZE_MAX) == Reason::BelowThreshold;
    CHECK(library == a.ranges.empty());
    trace::ProfileSite site;
    site.kind = "alltoallv";
    site.comm_size = 4;
    trace::ProfileSite::Rank r;
    r.bytes_per_call = 4 * kMiB;
    site.ranks.push_back(r);
    const trace::Judge judge = trace::make_judge(s, in, {});
    CHECK(trace::site_sizes(s, judge, site, Kind::Alltoallv).outside == library);
  }
}

TEST_CASE("bands: a size returns early only where the saving at best clears optimize's margin for the placement") {
  // Mode nbc cannot know the program; mode optimize returns early where the predicted saving
  // exceeds its margin (TNBC_EARLY_RETURN_MARGIN_*_PCT of Tcomm). The sizes of mode nbc take the
  // best program's saving against the same margin: none where the margin is 100 % (no saving
  // reaches Tcomm), fewer the larger it is.
  const model::Machine link = test::machine(125);
  const model::Topology two = model::Topology::block(2, 1, 2, 1);
  model::Execution x;
  const model::SizeBands none = model::early_return_bands(link, two, Kind::Alltoall, x, kPage);
  REQUIRE_FALSE(none.ranges.empty());
  x.margin_one_per_node = 0.6;
  const model::SizeBands some = model::early_return_bands(link, two, Kind::Alltoall, x, kPage);
  REQUIRE_FALSE(some.ranges.empty());
  CHECK(some.first() > none.first());
  const model::ReadOnceBalance at = model::exchange_balance(link, two, Kind::Alltoall, x, static_cast<double>(some.first()), kPage);
  CHECK(at.gain_ns > 0.6 * at.blocking_ns);
  const model::ReadOnceBalance below =
      model::exchange_balance(link, two, Kind::Alltoall, x, static_cast<double>(some.first() - kPage), kPage);
  CHECK((!below.pays() || below.gain_ns <= 0.6 * below.blocking_ns));
  x.margin_one_per_node = 1.0;
  CHECK(model::early_return_bands(link, two, Kind::Alltoall, x, kPage).ranges.empty());
  CHECK(model::early_return_bands(link, two, Kind::Bcast, x, kPage).ranges.empty());
  // The placement picks the margin: ranks sharing a node take the shared node's.
  x.margin_one_per_node = 0;
  x.margin_shared_node = 1.0;
  CHECK_FALSE(model::early_return_bands(link, two, Kind::Alltoall, x, kPage).ranges.empty());
  CHECK(model::early_return_bands(band_machine(), kRoomy, Kind::Bcast, x, kPage).ranges.empty());
  // The policy takes them from the settings (default: 100 % on a shared node).
  Settings s;
  auto in = std::make_shared<model::Inputs>();
  in->machine = band_machine();
  in->world = kRoomy;
  auto p = make_policy(s, kPage, nullptr);
  p->start(in, 0, true);
  CHECK(p->early_return_sizes(Kind::Bcast, kRoomy).ranges.empty());
  CHECK(model::margin_of_tcomm(in->machine, kRoomy, execution(s, 0)) == Approx(1.0));
  CHECK(model::margin_of_tcomm(in->machine, two, execution(s, 0)) == Approx(0.3));
}
