#include "trace/layout.hh"

#include <algorithm>

namespace tnbc::trace {

namespace {
std::uintptr_t page_down(std::uintptr_t a, std::size_t page) { return a & ~(static_cast<std::uintptr_t>(page) - 1); }
std::uintptr_t page_up(std::uintptr_t a, std::size_t page) { return page_down(a + page - 1, page); }
}  // namespace

std::vector<TraceRegion> plan_trace_regions(const std::vector<Span>& subs, std::uintptr_t buf_lo,
                                            std::uintptr_t buf_hi, std::size_t page) {
  std::vector<TraceRegion> out;
  const std::uintptr_t glo = page_up(buf_lo, page), ghi = page_down(buf_hi, page);
  if (glo >= ghi) return out;
  std::vector<std::uintptr_t> cuts{glo, ghi};
  for (const Span& s : subs) {
    if (s.lo >= s.hi) continue;
    cuts.push_back(std::clamp(page_down(s.lo, page), glo, ghi));
    cuts.push_back(std::clamp(page_up(s.hi, page), glo, ghi));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  // Sub-messages by start, for a sweep.
  std::vector<int> by_start;
  for (std::size_t i = 0; i < subs.size(); ++i)
    if (subs[i].lo < subs[i].hi) by_start.push_back(static_cast<int>(i));
  std::sort(by_start.begin(), by_start.end(), [&](int a, int b) {
    return subs[static_cast<std::size_t>(a)].lo < subs[static_cast<std::size_t>(b)].lo;
  });
  std::size_t first = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const std::uintptr_t lo = cuts[k], hi = cuts[k + 1];
    std::vector<int> in;
    // Receive layouts do not overlap (MPI forbids it), so ends are sorted like starts.
    while (first < by_start.size() && subs[static_cast<std::size_t>(by_start[first])].hi <= lo) ++first;
    for (std::size_t j = first; j < by_start.size(); ++j) {
      const Span& s = subs[static_cast<std::size_t>(by_start[j])];
      if (s.lo >= hi) break;
      if (s.hi <= lo) continue;
      in.push_back(by_start[j]);
    }
    if (in.empty()) continue;
    std::sort(in.begin(), in.end(), [&](int a, int b) {
      return subs[static_cast<std::size_t>(a)].lo < subs[static_cast<std::size_t>(b)].lo;
    });
    if (!out.empty() && out.back().hi == lo && out.back().subs == in) out.back().hi = hi;
    else out.push_back({lo, hi, std::move(in)});
  }
  return out;
}

std::vector<Span> whole_pages_except(std::uintptr_t lo, std::uintptr_t hi, std::size_t page,
                                     const std::vector<Span>& exclude) {
  std::vector<Span> out;
  const std::uintptr_t glo = page_up(lo, page), ghi = page_down(hi, page);
  if (glo >= ghi) return out;
  std::vector<Span> ex = exclude;
  std::sort(ex.begin(), ex.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  std::uintptr_t cur = glo;
  for (const Span& e : ex) {
    if (e.hi <= cur || e.lo >= ghi) continue;
    if (e.lo > cur) out.push_back({cur, std::min(e.lo, ghi)});
    cur = std::max(cur, e.hi);
    if (cur >= ghi) break;
  }
  if (cur < ghi) out.push_back({cur, ghi});
  return out;
}

}  // namespace tnbc::trace
