// Whether an address range is private memory tnbc may protect and publish into: every byte
// mapped privately (heap, stack, anonymous or private file mappings, static data), none of it
// shared (MAP_SHARED, System V or POSIX shared memory) or hugetlbfs. Read from
// /proc/self/maps; mappings already found suitable are remembered, so a buffer used again
// costs no read.
#pragma once

#include <cstdint>

namespace tnbc {
bool memory_is_private(std::uintptr_t lo, std::uintptr_t hi);
}
