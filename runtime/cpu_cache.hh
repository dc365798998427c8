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
// Whether cache_bytes(level) is the kernel's figure (sysfs), not sysconf's guess.
bool cache_size_from_kernel(int level);

// The last-level cache a measurement sizes its buffers by (to empty the cache, to copy outside
// it), from the `reported` size (0: unknown) and whether the kernel reported it: 32 MiB where
// nothing says; sysconf's figure at most 128 MiB. A VM that hides the cache topology (no
// /sys/devices/system/cpu/cpuN/cache, CPUID's cache leaves empty: the PVM guest of session 40)
// leaves glibc CPUID 0x80000006, which there reports the socket's L3 over all its dies, 508 MiB
// on an AMD EPYC whose cores each keep their data in a die's 32 MiB: calibrate's cache-emptying
// scratch grew to 1 GiB per rank, read 12 times at every emptying, and a calibration with
// --max-bytes 64k took 93 s, 2.6 GB per rank, and priced the guard's 1 MiB hold at 10 ms (24 s,
// 0.85 GB and 0.14 ms with the bound; docs/benchmarks.md, "Session 40"). 128 MiB is above AMD's
// largest L3 per die (96 MiB with stacked cache), so a scratch of twice it empties those; an
// Intel socket's one shared L3 can be larger (up to 504 MiB), and a VM hiding it then gets
// emptyings that leave part of the data in the cache: calibrate says when it took the bound.
std::size_t last_level_cache_for_sizing(std::size_t reported, bool from_kernel);

}  // namespace tnbc
