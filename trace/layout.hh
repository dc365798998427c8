// Which pages of a receive buffer the trace pass guards, and for which sub-messages: the whole
// pages of the buffer cut into regions, maximal page runs covered by the same set of
// sub-messages. A region with two or more sub-messages holds a page they share: its first touch
// is attributed by the faulting address (and flagged `shared` in the trace).
//
//   buffer:  |partial|  sub 0 ...  |0/1|  sub 1 ...  |partial|
//            not guarded  {0}       {0,1}   {1}       not guarded
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tnbc::trace {

struct Span {
  std::uintptr_t lo = 0, hi = 0;  // [lo, hi); empty when lo >= hi
};

struct TraceRegion {
  std::uintptr_t lo, hi;  // page aligned
  std::vector<int> subs;  // sub-messages with bytes in it, by index
};

// `subs[i]` is sub-message i's byte range; only pages wholly inside [buf_lo, buf_hi) are used.
std::vector<TraceRegion> plan_trace_regions(const std::vector<Span>& subs, std::uintptr_t buf_lo,
                                            std::uintptr_t buf_hi, std::size_t page);

// The whole pages of [lo, hi) that lie in none of `exclude` (page-aligned spans), as runs.
std::vector<Span> whole_pages_except(std::uintptr_t lo, std::uintptr_t hi, std::size_t page,
                                     const std::vector<Span>& exclude);

}  // namespace tnbc::trace
