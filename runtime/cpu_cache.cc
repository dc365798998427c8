#include "runtime/cpu_cache.hh"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "runtime/config.hh"

namespace tnbc {

namespace {

// The first word of a sysfs file ("" where it cannot be read).
std::string first_word(const std::string& path) {
  std::ifstream in(path);
  std::string w;
  in >> w;
  return w;
}

std::size_t sysconf_cache_bytes(int level) {
  long b = -1;
  switch (level) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
    case 1: b = sysconf(_SC_LEVEL1_DCACHE_SIZE); break;
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    case 2: b = sysconf(_SC_LEVEL2_CACHE_SIZE); break;
#endif
#ifdef _SC_LEVEL3_CACHE_SIZE
    case 3: b = sysconf(_SC_LEVEL3_CACHE_SIZE); break;
#endif
    default: break;
  }
  return b > 0 ? static_cast<std::size_t>(b) : 0;
}

std::size_t kernel_bytes(int level) {
  const int cpu = sched_getcpu();
  return sysfs_cache_bytes("/sys/devices/system/cpu/cpu" + std::to_string(cpu >= 0 ? cpu : 0), level);
}

std::size_t look_up(int level) {
  const std::size_t from_sysfs = kernel_bytes(level);
  return from_sysfs > 0 ? from_sysfs : sysconf_cache_bytes(level);
}

}  // namespace

std::size_t sysfs_cache_bytes(const std::string& cpu_dir, int level) {
  // The kernel numbers a CPU's caches index0, index1, ... without gaps.
  for (int k = 0;; ++k) {
    const std::string dir = cpu_dir + "/cache/index" + std::to_string(k);
    const std::string lv = first_word(dir + "/level");
    if (lv.empty()) return 0;
    if (lv != std::to_string(level)) continue;
    const std::string type = first_word(dir + "/type");
    std::uint64_t bytes = 0;
    if (type == "Data" || type == "Unified") return parse_bytes(first_word(dir + "/size"), bytes) ? bytes : 0;
  }
}

std::size_t cache_bytes(int level) {
  static const std::size_t l1 = look_up(1), l2 = look_up(2), l3 = look_up(3);
  switch (level) {
    case 1: return l1;
    case 2: return l2;
    case 3: return l3;
    default: return 0;
  }
}

std::size_t last_level_cache_for_sizing(std::size_t reported, bool from_kernel) {
  constexpr std::size_t kUnknown = std::size_t{32} << 20, kGuessMost = std::size_t{128} << 20;
  if (reported == 0) return kUnknown;
  return from_kernel ? reported : std::min(reported, kGuessMost);
}

bool cache_size_from_kernel(int level) {
  static const bool known[3] = {kernel_bytes(1) > 0, kernel_bytes(2) > 0, kernel_bytes(3) > 0};
  return level >= 1 && level <= 3 && known[level - 1];
}

}  // namespace tnbc
