// The size threshold of early return (TNBC_MIN_BYTES=auto) as the summary reports it: the value
// the cost model gives (runtime/model/estimate.hh, threshold_bytes: the smallest whole number of
// pages, at least three, whose transfer takes at least what returning early adds), and the
// costs behind it, read off the model's machine (runtime/model/machine.hh) for people.
//
// Pure (no MPI).
#pragma once

#include <cstddef>
#include <limits>
#include <string>

namespace tnbc {

inline constexpr std::size_t kNeverPays = std::numeric_limits<std::size_t>::max();

// A cost line t(s) = fixed + per_byte * s, in nanoseconds.
struct CostLine {
  double fixed_ns = 0;
  double per_byte_ns = 0;
  double at(double bytes) const { return fixed_ns + per_byte_ns * bytes; }
};

// The machine's costs the threshold weighs, for the summary: one message at the level the
// run's collectives cross (link), the guard backend in use (hold back + publish) and memcpy.
struct MeasuredCosts {
  CostLine link;
  CostLine guard;
  double copy_per_byte_ns = 0;
  const char* backend = "";  // the guard backend (runtime/model/machine.hh, kGuardNames)
};

// "12 KiB", "1.5 MiB", or "never" for kNeverPays: for messages.
std::string bytes_text(std::size_t bytes);

}  // namespace tnbc
