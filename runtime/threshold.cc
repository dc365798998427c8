#include "runtime/threshold.hh"

#include <algorithm>
#include <cmath>

#include "runtime/config.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

CostLine fit_line(double s1, double t1, double s2, double t2) {
  CostLine l;
  l.per_byte_ns = s2 > s1 ? std::max(0.0, (t2 - t1) / (s2 - s1)) : 0.0;
  l.fixed_ns = std::max(0.0, t1 - l.per_byte_ns * s1);
  return l;
}

std::size_t threshold_from_costs(const MeasuredCosts& c, std::size_t page) {
  const double floor_bytes = static_cast<double>(kMinGuardablePages * page);
  // gain(s) = link(s) - guard(s) - copy(s) = (a - g) + (b - h - c) * s
  const double fixed = c.link.fixed_ns - c.guard.fixed_ns;
  const double slope = c.link.per_byte_ns - c.guard.per_byte_ns - c.copy_per_byte_ns;
  if (fixed + slope * floor_bytes >= 0) return kMinGuardablePages * page;
  if (slope <= 0) return kNeverPays;  // falls further behind as s grows
  const double pages = std::ceil(-fixed / slope / static_cast<double>(page));
  if (pages >= static_cast<double>(kNeverPays / page)) return kNeverPays;
  return std::max<std::size_t>(kMinGuardablePages, static_cast<std::size_t>(pages)) * page;
}

std::string bytes_text(std::size_t bytes) {
  return bytes == kNeverPays ? "never" : format_bytes(static_cast<double>(bytes));
}

}  // namespace tnbc
