#include "runtime/model/bands.hh"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/config.hh"

namespace tnbc::model {

namespace {

// Grid sizes per doubling the broadcast's balance is asked at (then each edge to a page).
constexpr int kBandSteps = 4;
// The largest size searched (as threshold_bytes: a transfer this long pays wherever any does).
constexpr double kLargestBand = 1024.0 * 1024.0 * 1024.0;

}  // namespace

bool SizeBands::contains(std::size_t bytes) const {
  for (const auto& [from, to] : ranges)
    if (bytes >= from && bytes < to) return true;
  return false;
}

std::size_t SizeBands::first() const { return ranges.empty() ? SIZE_MAX : ranges.front().first; }

SizeBands SizeBands::from(std::size_t threshold) {
  SizeBands b;
  if (threshold != SIZE_MAX) b.ranges.emplace_back(threshold, SIZE_MAX);
  return b;
}

std::string SizeBands::text() const {
  if (ranges.empty()) return "never";
  std::string out;
  for (const auto& [from, to] : ranges) {
    if (!out.empty()) out += ", ";
    out += to == SIZE_MAX ? "from " + format_bytes(static_cast<double>(from))
                          : format_bytes(static_cast<double>(from)) + "-" + format_bytes(static_cast<double>(to));
  }
  return out;
}

std::string SizeBands::json() const {
  std::string out = "[";
  for (const auto& [from, to] : ranges)
    out += std::string(out.size() > 1 ? ", " : "") + "[" + std::to_string(from) + ", " +
           (to == SIZE_MAX ? std::string("null") : std::to_string(to)) + "]";
  return out + "]";
}

SizeBands scan_bands(FunctionRef<bool(std::size_t)> pays, std::size_t floor, std::size_t page, double largest) {
  SizeBands b;
  page = std::max<std::size_t>(page, 1);
  floor = std::max(floor, page) / page * page;
  // The first size of [lo, hi] with `pays` equal to pays(hi) (pays(lo) differs), to a page.
  auto edge = [&](std::size_t lo, std::size_t hi) {
    const bool at_hi = pays(hi);
    while (hi - lo > page) {
      const std::size_t mid = (lo + hi) / 2 / page * page;
      if (mid <= lo) break;
      (pays(mid) == at_hi ? hi : lo) = mid;
    }
    return hi;
  };
  const double step = std::exp2(1.0 / kBandSteps);
  std::size_t prev = floor;
  bool inside = pays(floor);
  if (inside) b.ranges.emplace_back(floor, SIZE_MAX);
  while (static_cast<double>(prev) < largest) {
    const auto scaled = static_cast<std::size_t>(static_cast<double>(prev) * step) / page * page;
    const std::size_t next = std::max(prev + page, scaled);
    const bool now = pays(next);
    if (now != inside) {
      const std::size_t at = edge(prev, next);
      if (now) b.ranges.emplace_back(at, SIZE_MAX);
      else b.ranges.back().second = at;
      inside = now;
    }
    prev = next;
  }
  return b;
}

SizeBands early_return_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page) {
  if (t.n() <= 1) return SizeBands::from(kMinGuardablePages * page);
  // A size returns early only where a program would at best save more than mode optimize's
  // margin for this placement: no saving reaches Tcomm (Eq. 3), so at a margin of 100 % (ranks
  // sharing a node: early return lost in 79 of 80 measured calls, docs/benchmarks.md "Session
  // 19") none does. Before session 20 the balance alone decided: on shared memory np 4 a band at
  // 908 KiB-1 MiB per peer paid by a few microseconds where every call measured lost 2-7 ms.
  const double margin = margin_of_tcomm(m, t, x);
  if (margin >= 1) return {};
  auto clears = [&](const ReadOnceBalance& b) { return b.pays() && b.gain_ns > margin * b.blocking_ns; };
  if (k == Kind::Bcast)
    return scan_bands([&](std::size_t bytes) {
      const double s = static_cast<double>(bytes);
      return clears(bcast_balance(m, t, x, s, bcast_segments(m, t, s, x, x.bcast_max_segments, page), page));
    }, kMinGuardablePages * page, page, kLargestBand);
  // The exchange family: from the size whose transfer covers what returning early adds, where its
  // read-at-once balance pays.
  const std::size_t floor = exchange_floor(m, t, k, x, page);
  if (floor == SIZE_MAX) return {};
  return scan_bands([&](std::size_t bytes) { return clears(exchange_balance(m, t, k, x, static_cast<double>(bytes), page)); },
                    floor, page, kLargestBand);
}

SizeBands own_call_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page) {
  if (t.n() <= 1 || k == Kind::Bcast) return {};
  const double margin = margin_of_tcomm(m, t, x);
  if (margin >= 1) return {};
  return scan_bands([&](std::size_t bytes) {
    const Coll c = exchange_coll(m, t, k, x, static_cast<double>(bytes), page);
    return own_call_pays(own_call_ns(m, t, c, x), nbc_blocking_ns(m, t, c), margin);
  }, kMinGuardablePages * page, page, kLargestBand);
}

SizeBands unite(const SizeBands& a, const SizeBands& b) {
  std::vector<std::pair<std::size_t, std::size_t>> all = a.ranges;
  all.insert(all.end(), b.ranges.begin(), b.ranges.end());
  std::sort(all.begin(), all.end());
  SizeBands out;
  for (const auto& r : all) {
    if (!out.ranges.empty() && r.first <= out.ranges.back().second)
      out.ranges.back().second = std::max(out.ranges.back().second, r.second);
    else
      out.ranges.push_back(r);
  }
  return out;
}

Kind band_kind(Kind k) {
  return k == Kind::Alltoallv ? Kind::Alltoall : k == Kind::Allgatherv ? Kind::Allgather : k;
}

SizeBands call_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page) {
  return early_return_bands(m, t, band_kind(k), x, page);
}

SizeBands engine_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page) {
  return unite(call_bands(m, t, k, x, page), own_call_bands(m, t, band_kind(k), x, page));
}

bool runs_as_mpi(const SizeBands& sizes, std::optional<std::size_t> unit_bytes) {
  return sizes.ranges.empty() || (unit_bytes && !sizes.contains(*unit_bytes));
}

}  // namespace tnbc::model
