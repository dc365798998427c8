// How tnbc's progress thread lets a calling thread on its CPU leave its call first
// (Progress::wait_for_returns): woken by the hand-over at the end of an early return (the poke
// after the caller's sends are adopted) before the caller has returned, it looks every
// kReturnLookNs whether the call has returned, and after kReturnWaitNs runs anyway (a caller
// descheduled for another reason must not stall the messages). `tnbc calibrate` times that
// hand-over the same way (runtime/model/measure.hh, handover_ns).
#pragma once

namespace tnbc {

inline constexpr long kReturnLookNs = 10 * 1000;
inline constexpr long long kReturnWaitNs = 1000 * 1000;

}  // namespace tnbc
