// The size threshold of early return from measured costs (runtime/threshold.hh), and the
// broadcast segment count, which must not depend on it (runtime/schedule.hh: bcast_segments).
#include <catch2/catch.hpp>

#include "runtime/schedule.hh"
#include "runtime/threshold.hh"
#include "runtime/vocabulary.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;
constexpr double kMiB = 1 << 20;

// Costs in microseconds and microseconds per MiB, as the log line prints them.
MeasuredCosts costs(double link_us, double link_us_per_mib, double guard_us, double guard_us_per_mib,
                    double copy_us_per_mib) {
  MeasuredCosts c;
  c.link = {link_us * 1e3, link_us_per_mib * 1e3 / kMiB};
  c.guard = {guard_us * 1e3, guard_us_per_mib * 1e3 / kMiB};
  c.copy_per_byte_ns = copy_us_per_mib * 1e3 / kMiB;
  return c;
}

// The model's gain at s bytes: link(s) - guard(s) - copy(s).
double gain(const MeasuredCosts& c, std::size_t s) {
  const auto b = static_cast<double>(s);
  return c.link.at(b) - c.guard.at(b) - c.copy_per_byte_ns * b;
}
}  // namespace

TEST_CASE("fit_line goes through both points and clamps noise to zero") {
  const CostLine l = fit_line(4096, 10000, 262144, 50000);
  CHECK(l.at(4096) == Approx(10000));
  CHECK(l.at(262144) == Approx(50000));
  // The larger size measured faster (noise): no negative per-byte cost.
  const CostLine flat = fit_line(4096, 20000, 262144, 15000);
  CHECK(flat.per_byte_ns == 0);
  CHECK(flat.fixed_ns == 20000);
  // A steep line through a small first point: no negative fixed cost.
  const CostLine steep = fit_line(4096, 100, 262144, 1000000);
  CHECK(steep.fixed_ns == 0);
  CHECK(steep.per_byte_ns > 0);
}

TEST_CASE("a slow link pays from the floor of three pages") {
  // The emulated 4 Gbit link: ~2 ms/MiB against ~0.1 ms/MiB of tnbc's work.
  CHECK(threshold_from_costs(costs(30, 2000, 20, 60, 30), kPage) == kMinGuardablePages * kPage);
  // Even a latency below the guard's fixed cost is made up by three pages here.
  CHECK(threshold_from_costs(costs(5, 2000, 20, 60, 30), kPage) == kMinGuardablePages * kPage);
}

TEST_CASE("a fast link pays from the smallest size where it catches up, in whole pages") {
  // Measured on shared memory at np 2: link 7 us + 140 us/MiB, guard 19 us + 28 us/MiB, copy 33.
  const MeasuredCosts c = costs(7, 140, 19, 28, 33);
  const std::size_t t = threshold_from_costs(c, kPage);
  CHECK(t % kPage == 0);
  CHECK(t > kMinGuardablePages * kPage);
  CHECK(gain(c, t) >= 0);
  CHECK(gain(c, t - kPage) < 0);  // the smallest such size
  CHECK(t == Approx(160 * 1024).margin(8 * kPage));
}

TEST_CASE("no size pays when the link moves bytes faster than tnbc copies and guards them") {
  CHECK(threshold_from_costs(costs(5, 50, 20, 60, 30), kPage) == kNeverPays);
  // Equal per-byte costs and a latency below the guard's fixed cost: never either.
  CHECK(threshold_from_costs(costs(5, 90, 20, 60, 30), kPage) == kNeverPays);
  // A large latency pays at the floor even when the per-byte costs lose.
  CHECK(threshold_from_costs(costs(200, 50, 20, 60, 30), kPage) == kMinGuardablePages * kPage);
  // Nothing measured (one rank, no link): never; the engine uses the floor there itself.
  CHECK(threshold_from_costs(costs(0, 0, 20, 60, 30), kPage) == kNeverPays);
}

TEST_CASE("bytes_text") {
  CHECK(bytes_text(12288) == "12 KiB");
  CHECK(bytes_text(167936) == "164 KiB");
  CHECK(bytes_text(3 << 20) == "3 MiB");
  CHECK(bytes_text(100) == "100 B");
  CHECK(bytes_text(kNeverPays) == "never");
}
