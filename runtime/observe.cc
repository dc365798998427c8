#include "runtime/observe.hh"

#include <algorithm>

namespace tnbc {

bool take_sample(std::uint64_t& counted, std::int64_t timeline_calls) {
  const std::uint64_t n = ++counted;
  if (timeline_calls <= 0 || (n & (n - 1)) != 0) return false;  // 1, 2, 4, 8, ...: a power of two
  int log2 = 0;
  while ((std::uint64_t{1} << log2) < n) ++log2;
  return log2 < timeline_calls;
}

Completion completion_of(const InFlight& f) {
  Completion d;
  const long long t0 = f.times.called;
  d.in_call_ns = f.times.returned.load(std::memory_order_acquire) - t0;
  d.duration_ns = std::max(d.in_call_ns, f.times.last_step.load(std::memory_order_acquire) - t0);
  const WaitLog& w = f.times.waits;
  for (std::size_t i = 0; i < kWaitSourceCount; ++i) {
    d.waited_ns[i] = w.ns[i].load(std::memory_order_relaxed);
    d.waits[i] = w.count[i].load(std::memory_order_relaxed);
  }
  d.observe_ns = w.observe_ns.load(std::memory_order_relaxed);
  d.observe_waits = w.observe_count.load(std::memory_order_relaxed);
  if (!f.observe) return d;
  // Per sub-message: its landing steps' bytes and last completion; the earliest first touch of
  // the regions those steps land in (a page shared by two sub-messages counts for both).
  Timeline t;
  t.call = f.call_index;
  t.in_call_ns = d.in_call_ns;
  t.duration_ns = d.duration_ns;
  int subs = 0;
  for (const Step& s : f.schedule) subs = lands(s.kind) ? std::max(subs, s.sub + 1) : subs;
  if (subs == 0) return d;  // nothing received (a broadcast's root)
  const auto n = static_cast<std::size_t>(subs);
  t.bytes.assign(n, 0);
  t.arrival_ns.assign(n, -1);
  t.first_access_ns.assign(n, -1);
  for (std::size_t i = 0; i < f.schedule.size(); ++i) {
    const Step& s = f.schedule[i];
    if (!lands(s.kind) || s.sub < 0) continue;
    const auto k = static_cast<std::size_t>(s.sub);
    t.bytes[k] += s.length;
    t.arrival_ns[k] = std::max(t.arrival_ns[k], f.done_ns[i] - t0);
    if (i >= f.step_regions.size()) continue;
    for (int r = f.step_regions[i].first; r < f.step_regions[i].second; ++r) {
      const long long touch = f.regions[static_cast<std::size_t>(r)].first_touch_ns.load(std::memory_order_acquire);
      if (touch != 0 && (t.first_access_ns[k] < 0 || touch - t0 < t.first_access_ns[k])) t.first_access_ns[k] = touch - t0;
    }
  }
  d.timeline = std::move(t);
  return d;
}

}  // namespace tnbc
