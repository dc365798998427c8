// Whether an address range is private memory tnbc may protect and publish into: every byte
// mapped privately (heap, stack, anonymous or private file mappings, static data), none of it
// shared (MAP_SHARED, System V or POSIX shared memory) or hugetlbfs. Asked of the kernel one
// mapping at a time (PROCMAP_QUERY, Linux 6.11), or read from /proc/self/maps where the kernel
// lacks that query; mappings already found suitable are remembered, so a buffer used again
// costs no system call. With `writable`, every byte must also be mapped read-write (tnbc makes such
// pages read-only for a while and then read-write again, which must be how it found them).
// Whatever maps or unmaps memory (the mmap/munmap/mremap/shmat interposers)
// must call mappings_changed, or a shared mapping put where a remembered private one was
// would be taken for private.
#pragma once

#include <cstdint>

namespace tnbc {
bool memory_is_private(std::uintptr_t lo, std::uintptr_t hi, bool writable = false);

// Whether [lo, hi) overlaps the calling thread's stack (its bounds are read once per thread).
// Stack pages of a frame that has returned are written again by the next calls: tnbc does not
// leave such pages read-only behind the program's back (runtime/send_copy.hh).
bool on_this_threads_stack(std::uintptr_t lo, std::uintptr_t hi);
// Forgets every remembered mapping (lock-free, async-signal-safe).
void mappings_changed();

// For tests: the same answer as memory_is_private, asked afresh (nothing remembered or
// remembered) of one source: the kernel's query (where it refuses, the file) or the file.
enum class MapsSource { Query, File };
bool memory_is_private_uncached(std::uintptr_t lo, std::uintptr_t hi, bool writable, MapsSource source);
// Whether this kernel answers PROCMAP_QUERY.
bool maps_query_works();
}
