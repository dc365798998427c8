// Whether an address range is private memory tnbc may protect and publish into: every byte
// mapped privately (heap, stack, anonymous or private file mappings, static data), none of it
// shared (MAP_SHARED, System V or POSIX shared memory) or hugetlbfs. Read from
// /proc/self/maps; mappings already found suitable are remembered, so a buffer used again
// costs no read. Whatever maps or unmaps memory (the mmap/munmap/mremap/shmat interposers)
// must call forget_mappings, or a shared mapping put where a remembered private one was
// would be taken for private.
#pragma once

#include <cstdint>

namespace tnbc {
bool memory_is_private(std::uintptr_t lo, std::uintptr_t hi);
// Drops every remembered mapping overlapping [lo, hi).
void forget_mappings(std::uintptr_t lo, std::uintptr_t hi);
}
