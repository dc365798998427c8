// Bulk copies in the call: the eager send copy (runtime/send_copy.cc) and the own block's copy
// into place (the collectives' `Services::pack`). At 4 MiB per peer these two copies were 65% of
// the calling thread's CPU in an early return (perf, docs/benchmarks.md "Session 9"), and their
// destinations are cold: staging last read by the kernel's TCP copies, receive pages last
// written a call ago. A copy whose data is larger than this CPU's L2 cache (a machine fact,
// runtime/cpu_cache.hh) therefore writes with non-temporal stores: no read of each destination
// line before it is overwritten, and the call's data does not evict the program's working set.
// Nothing in the call reads the destination back (the progress thread, the kernel or the
// program reads it later, from memory); the copy ends with a store fence, so another thread or
// the kernel sees every byte once the caller publishes the step.
#pragma once

#include <cstddef>

namespace tnbc {

// This CPU's L2 cache in bytes (runtime/cpu_cache.hh), 0 where the system does not say.
std::size_t l2_cache_bytes();

// Whether copies that together move `total` bytes should bypass the cache (bulk_copy's `stream`):
// above this CPU's L2 cache size; false where it is unknown or the CPU has no streaming stores.
bool streams(std::size_t total);

// memcpy(dst, src, n), with non-temporal stores when `stream` (edges unaligned to 16 bytes by
// memcpy); the bytes are globally visible in order with later stores when it returns.
void bulk_copy(void* dst, const void* src, std::size_t n, bool stream);

}  // namespace tnbc
