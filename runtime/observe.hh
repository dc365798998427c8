// Sub-message timelines of sampled calls (docs/reports.md, "Arrival and first access").
//
// For every call that returns early the summary gets its duration and every wait after the
// return (runtime/inflight.hh: CallTimes). A region the program touches while its data is still
// missing faults (or sleeps in userfaultfd) and shows when it was first needed; one published
// before the program gets there raises nothing, so its first access is not seen. A few calls per
// site are therefore *observed*: their regions are not opened when their data is in, only
// marked (Region::arrived_ns), and the first touch opens them (open_observed, publish.cc) — the
// trace pass's way of seeing first touches, on an early return. Their timeline (per sub-message:
// bytes, arrival, first access) goes into the summary.
//
// Which calls: the 1st, 2nd, 4th, 8th, ... early return at each site on each rank (the trace
// pass: traced call), TNBC_TIMELINE_CALLS of them (the same calls on every rank of an SPMD
// program), but not a call of mode nbc's trial (runtime/site_trial.hh: it times them), while
// fewer than kMaxParkedCalls observed calls are still waiting for their first touches. What it
// costs: one fault (or userfaultfd wake-up) per region of an observed call whose data came first,
// and the region's opening done by the touching thread instead of the progress thread; counted
// apart (`observation`), never as blocked time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/inflight.hh"
#include "runtime/stats.hh"

namespace tnbc {

// Observed calls whose data is in but whose regions wait for their first touch, at most.
inline constexpr std::size_t kMaxParkedCalls = 2;

// Whether the next call a site's timelines sample from (`counted` of them so far: the 1st, 2nd,
// 4th, ... is sampled) is sampled, with `timeline_calls` per site (TNBC_TIMELINE_CALLS); counts it.
bool take_sample(std::uint64_t& counted, std::int64_t timeline_calls);

// The record of an early return whose collective has finished (every region open, every wait
// added): duration, waits per source and, for an observed call, its timeline.
Completion completion_of(const InFlight& f);

}  // namespace tnbc
