// hold_back (runtime/guard_backend.hh): plan, list, then the first backend that can.
#include "runtime/guard_backend.hh"

#include <algorithm>

#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/memory_map.hh"

namespace tnbc {

namespace {

// Unlists and forgets the regions of `f` (nothing holds them back).
void drop_regions(InFlight& f) {
  for (std::size_t j = 0; j < f.region_count; ++j) guards().erase(&f.regions[j]);
  f.regions.reset();
  f.region_count = 0;
  f.step_regions.clear();
  f.regions_remaining.store(0);
}

}  // namespace

Reason hold_back(InFlight& f, const GuardSpan& g, std::span<GuardBackend* const> backends, std::size_t page) {
  RegionPlan plan = plan_regions(g.base, f.schedule.steps(), g.lo, g.hi, page, {});
  f.in_call = plan.in_call;
  if (plan.regions.empty()) return Reason::NotGuardable;
  if (!memory_is_private(plan.regions.front().lo, plan.regions.back().hi)) return Reason::NotGuardable;
  f.region_count = plan.regions.size();
  f.regions = std::make_unique<Region[]>(f.region_count);
  f.step_regions.assign(f.schedule.size(), {0, 0});
  for (std::size_t k = 0; k < f.region_count; ++k) {
    Region& r = f.regions[k];
    r.lo = plan.regions[k].lo;
    r.hi = plan.regions[k].hi;
    r.pending.store(static_cast<int>(plan.regions[k].pieces.size()));
    r.owner = &f;
    r.waits = &f.times.waits;
    r.observe = f.observe;
    for (int i : plan.regions[k].pieces) {
      auto& sr = f.step_regions[static_cast<std::size_t>(i)];
      const int kk = static_cast<int>(k);
      sr = sr.first == sr.second ? std::pair{kk, kk + 1} : std::pair{std::min(sr.first, kk), std::max(sr.second, kk + 1)};
    }
  }
  f.regions_remaining.store(static_cast<int>(f.region_count));
  std::size_t listed = 0;
  while (listed < f.region_count && guards().insert(&f.regions[listed])) ++listed;
  if (listed < f.region_count) {
    // Overlaps a region still in use: another thread's collective on these pages.
    log(LogLevel::Info, "receive buffer overlaps a buffer still guarded: completing in the call");
    f.region_count = listed;  // only those are in the table
    drop_regions(f);
    return Reason::NotGuardable;
  }
  bool handler_lost = false;
  for (GuardBackend* b : backends) {
    const GuardBackend::Hold h = b->hold(f, plan, g);
    if (h == GuardBackend::Hold::Held) {
      f.guard = b;
      return Reason::None;
    }
    handler_lost = handler_lost || h == GuardBackend::Hold::HandlerLost;
  }
  drop_regions(f);
  return handler_lost ? Reason::SignalHandler : Reason::NotGuardable;
}

}  // namespace tnbc
