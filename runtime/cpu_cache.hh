// The cache sizes of the CPU a thread runs on, as the kernel describes them
// (/sys/devices/system/cpu/cpuN/cache/indexK: `level`, `type`, `size`), sysconf's figure where
// sysfs says nothing. The kernel's figure first: glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) on this
// VM's AMD EPYC says 384 MiB where the L3 this CPU's data can stay in is 32 MiB (sysfs: shared
// by CPUs 0-1; a copy's rate drops between 16 and 48 MiB of working set, docs/benchmarks.md,
// "Session 29"), and `tnbc calibrate` sized its cache-emptying buffers from it: 3.2 GiB per rank at np 2.
#pragma once

#include <cstddef>
#include <string>

namespace tnbc {

// The size in bytes of the data or unified cache of `level` (1, 2, 3) that `cpu_dir` (a
// directory like /sys/devices/system/cpu/cpu0) lists, 0 where it lists none or cannot be read.
std::size_t sysfs_cache_bytes(const std::string& cpu_dir, int level);

// This CPU's cache of `level` (the CPU the caller runs on; the first one where the kernel does
// not say): sysfs, else sysconf, else 0 (unknown). Read once per level and process.
std::size_t cache_bytes(int level);

}  // namespace tnbc
