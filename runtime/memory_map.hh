// Whether an address range is private memory tnbc may protect and publish into: every byte
// mapped privately (heap, stack, anonymous or private file mappings, static data), none of it
// shared (MAP_SHARED, System V or POSIX shared memory) or hugetlbfs. Read from
// /proc/self/maps; mappings already found suitable are remembered, so a buffer used again
// costs no read. Whatever maps or unmaps memory (the mmap/munmap/mremap/shmat interposers)
// must call mappings_changed, or a shared mapping put where a remembered private one was
// would be taken for private.
#pragma once

#include <cstdint>

namespace tnbc {
bool memory_is_private(std::uintptr_t lo, std::uintptr_t hi);
// Forgets every remembered mapping (lock-free, async-signal-safe).
void mappings_changed();
}
