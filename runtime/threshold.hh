// The size threshold of early return (TNBC_MIN_BYTES=auto), from costs measured at MPI_Init.
//
// Returning before a sub-message has arrived costs work a blocking call does not do: copying
// the bytes to send into staging, holding the received pages back and publishing them with the
// guard backend in use. That only pays when the sub-message takes longer to arrive than the
// work takes (the T-NBC paper: protection costs more than sending below ~256 B on InfiniBand).
// Both sides are measured when the engine starts, on this node and this network:
//
//   link(s)  = a + b*s   one exchange of s bytes with the ring neighbours (PMPI_Sendrecv on
//                        tnbc's duplicate of MPI_COMM_WORLD, every rank at once)
//   guard(s) = g + h*s   hold back and publish a region of s bytes with the backend in use:
//                        UFFDIO_MOVE out and back | UFFDIO_REGISTER + MADV_DONTNEED +
//                        UFFDIO_COPY | mprotect + write through /proc/self/mem + mprotect
//   copy(s)  = c*s       memcpy into staging
//   (medians of a few repetitions at 1 page and at 64 pages; a, b, g, h from the two points)
//
//   min_bytes = the smallest whole number of pages s >= 3 pages with link(s) >= guard(s) + copy(s)
//
// Three pages is the floor: a sub-message needs one whole page to guard between the partial
// first and last pages it may share with its neighbours. When no size pays (the link moves
// bytes faster than tnbc copies and guards them, and its latency does not make up for it)
// every collective runs blocking (reason below_threshold) and rank 0 says so. Each rank derives
// its own value and all use the largest (one reduction), so that all ranks decide alike.
//
// Pure (no MPI): the unit tests link it. The measurement is runtime/cost_probe.hh.
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

struct MeasuredCosts {
  CostLine link;            // a + b*s
  CostLine guard;           // g + h*s
  double copy_per_byte_ns = 0;  // c
  const char* backend = "";     // the guard backend measured (runtime/cost_probe.hh)
};

// The line through two measured points (s1, t1), (s2, t2), s1 < s2; a negative slope or
// intercept (noise) is clamped to 0.
CostLine fit_line(double s1, double t1, double s2, double t2);

// The threshold the measured costs give: a whole number of pages >= 3 pages, or kNeverPays.
std::size_t threshold_from_costs(const MeasuredCosts& c, std::size_t page);

// "12 KiB", "1.5 MiB", or "never" for kNeverPays: for messages.
std::string bytes_text(std::size_t bytes);

}  // namespace tnbc
