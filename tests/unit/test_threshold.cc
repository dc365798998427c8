// The size threshold of early return from the cost model (runtime/model/estimate.hh,
// threshold_bytes): at least three pages, the smallest whole number of pages whose transfer
// takes what returning early adds, never when nothing pays; and bytes_text (runtime/threshold.hh).
#include <catch2/catch.hpp>

#include "machines.hh"
#include "runtime/model/estimate.hh"
#include "runtime/threshold.hh"
#include "runtime/vocabulary.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;
const model::Topology kFour = model::Topology::block(4, 4, 2, 1);
}  // namespace

TEST_CASE("threshold: a slow link pays from the floor of three pages") {
  const model::Machine m = test::machine(125);  // 1 Gbit/s shared by the node's ranks
  // The exchange's floor (its read-at-once balance decides above it: test_bands.cc).
  CHECK(model::exchange_floor(m, kFour, Kind::Alltoall, {}, kPage) == kMinGuardablePages * kPage);
  // A broadcast weighs its loss read at once too (bcast_balance): more pages, below 1 MiB. (Its
  // root here starts every send in its call, so a reader reading at once gets every piece at the
  // end: since session 20 the balance pays from ~740 KiB, where it paid from a few pages.)
  const std::size_t b = model::threshold_bytes(m, kFour, Kind::Bcast, {}, kPage);
  CHECK(b >= kMinGuardablePages * kPage);
  CHECK(b < 256 * kPage);
}

TEST_CASE("threshold: the exchange's floor on a fast link is a larger size, in whole pages, never below three pages") {
  const model::Machine m = test::machine(20000, 2, 2, 1, 50);  // shared memory: 20 GB/s, 2 us, little CPU
  const std::size_t t = model::exchange_floor(m, kFour, Kind::Alltoall, {}, kPage);
  CHECK(t % kPage == 0);
  CHECK(t > kMinGuardablePages * kPage);
  model::Coll c;
  c.kind = Kind::Alltoall;
  c.bytes = static_cast<double>(t);
  const model::Timeline at = model::tnbc_timeline(m, kFour, c, {}, true);
  CHECK(model::mpi_blocking_ns(m, kFour, c) >= at.in_call_work_ns + at.publish_ns + m.guard[0].fault_ns);
  c.bytes = static_cast<double>(t - kPage);
  const model::Timeline below = model::tnbc_timeline(m, kFour, c, {}, true);
  CHECK(model::mpi_blocking_ns(m, kFour, c) < below.in_call_work_ns + below.publish_ns + m.guard[0].fault_ns);
}

TEST_CASE("threshold: no size pays when tnbc's own work per byte outruns the link") {
  const model::Machine m = test::machine(1e6, 0.5, 2, 0.1, 0);  // 1 TB/s: nothing is slower than a memcpy
  CHECK(model::threshold_bytes(m, kFour, Kind::Alltoall, {}, kPage) == kNeverPays);
}

TEST_CASE("threshold: a broadcast returns early from the size whose best gain outweighs its loss read at once") {
  const model::Machine m = test::machine(1000, 2, 2, 1, 50);  // 1 GB/s, 2 us, little CPU
  const model::Topology two = model::Topology::block(2, 2, 2, 1);
  model::Execution x;
  const std::size_t t = model::threshold_bytes(m, two, Kind::Bcast, x, kPage);
  REQUIRE(t != kNeverPays);
  CHECK(t % kPage == 0);
  const auto balance = [&](std::size_t bytes) {
    const double s = static_cast<double>(bytes);
    return model::bcast_balance(m, two, x, s, model::bcast_segments(m, two, s, x, x.bcast_max_segments, kPage), kPage);
  };
  const model::ReadOnceBalance at = balance(t);
  CHECK(at.pays());
  CHECK(at.gain_ns >= at.loss_ns);
  CHECK(at.read_at_once_ns > at.blocking_ns);  // read at once, an early return is never free
  if (t > kMinGuardablePages * kPage) CHECK_FALSE(balance(t - kPage).pays());
  // The read-at-once loss holds the reader's wake-ups: one per region it waits for.
  CHECK(at.loss_ns >= m.guard[0].fault_ns);
}

TEST_CASE("threshold: read at once, a broadcast whose pieces all arrive inside the call still waits for one region") {
  // A fast node: tnbc's tree moves the pieces before the receiver's call ends (the guard's
  // set-up); its progress thread publishes them after the return, so the reader meets a region
  // held back. Under a machine whose wake-up costs 1000 s no size may pay (the MPICH build's
  // threshold-never once found a 3-page broadcast that did: the timeline had them in inside the
  // call).
  model::Machine m = test::machine(20000, 2, 2, 1, 50);
  m.guard[0].hold = {300e3, 0};  // holding the pages back takes 0.3 ms
  m.sleep_ns = 1e3;
  const model::Topology two = model::Topology::block(2, 2, 2, 1);
  model::Coll c;
  c.kind = Kind::Bcast;
  c.bytes = 3.0 * kPage;
  c.page = kPage;
  const model::Timeline tl = model::tnbc_timeline(m, two, c, {}, true);
  REQUIRE(tl.regions > 0);
  // The last piece is in after the call by its publication, not before.
  CHECK(tl.total_ns >= tl.in_call_ns + m.guard[0].publish.at(kPage));
  const model::Overlap at_once = model::overlap(m, two, c, {}, model::Program{0, 0});
  CHECK(at_once.early_total_ns >= tl.in_call_ns + m.guard[0].fault_ns);
  for (int b : {0, 1, 2}) m.guard[b].fault_ns = 1e12;
  CHECK(model::threshold_bytes(m, two, Kind::Bcast, {}, kPage) == kNeverPays);
}

TEST_CASE("threshold: a broadcast never returns early where tnbc's own costs outgrow what it can hide") {
  model::Machine m = test::machine(20000, 2, 2, 1, 50);
  // Publication as slow as a copy at 1 GB/s and a 200 us wake-up per region: more than the
  // library's whole call at every size.
  for (int b : {0, 1, 2}) {
    m.guard_measured[b] = true;
    m.guard[b] = {{10e3, 20e3 / 1048576.0}, {4e3, 1e6 / 1048576.0}, 200e3, {}, {}};
  }
  const model::Topology two = model::Topology::block(2, 2, 2, 1);
  CHECK(model::threshold_bytes(m, two, Kind::Bcast, {}, kPage) == kNeverPays);
  // The same costs on a slow link: the transfer hides them, the broadcast returns early.
  model::Machine slow = test::machine(125);
  for (int b : {0, 1, 2}) slow.guard[b] = m.guard[b], slow.guard_measured[b] = true;
  CHECK(model::threshold_bytes(slow, two, Kind::Bcast, {}, kPage) < kNeverPays);
}

TEST_CASE("threshold: one rank has nothing to exchange") {
  CHECK(model::threshold_bytes(test::machine(125), model::Topology::block(1, 1, 1, 1), Kind::Alltoall, {}, kPage) ==
        kMinGuardablePages * kPage);
}

TEST_CASE("bytes_text") {
  CHECK(bytes_text(12288) == "12 KiB");
  CHECK(bytes_text(167936) == "164 KiB");
  CHECK(bytes_text(3 << 20) == "3 MiB");
  CHECK(bytes_text(100) == "100 B");
  CHECK(bytes_text(kNeverPays) == "never");
}
