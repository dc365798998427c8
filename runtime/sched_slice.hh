// The progress thread's time slice: it asks the scheduler for the shortest one (EEVDF, Linux >=
// 6.12, unprivileged), so that when it wakes it preempts a computing thread sooner instead of
// waiting out that thread's slice. `tnbc calibrate` asks the same for the thread whose wake-up
// it measures on a busy CPU (runtime/model/measure.hh, loaded_wake_ns).
#pragma once

namespace tnbc {

// The shortest time slice EEVDF accepts (it clamps requests to 0.1-100 ms).
inline constexpr long long kShortSliceNs = 100 * 1000;

// Asks for a slice of `slice_ns` for the calling thread. Ignored where the kernel does not
// support it. Only the slice changes: a thread of a program started with `nice` (or
// SCHED_BATCH/IDLE) keeps its nice value and policy (sched_setattr would otherwise reset nice to 0).
void request_short_slice(long long slice_ns);

}  // namespace tnbc
