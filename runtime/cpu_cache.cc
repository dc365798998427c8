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

// A level's size and whether the kernel (sysfs) gave it, sysconf's guess otherwise.
struct Found {
  std::size_t bytes = 0;
  bool from_kernel = false;
};

Found look_up(int level) {
  const int cpu = sched_getcpu();
  const std::size_t from_sysfs =
      sysfs_cache_bytes("/sys/devices/system/cpu/cpu" + std::to_string(cpu >= 0 ? cpu : 0), level);
  return from_sysfs > 0 ? Found{from_sysfs, true} : Found{sysconf_cache_bytes(level), false};
}

// Each level read once per process.
const Found& found(int level) {
  static const Found levels[3] = {look_up(1), look_up(2), look_up(3)};
  static const Found none;
  return level >= 1 && level <= 3 ? levels[level - 1] : none;
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

std::size_t cache_bytes(int level) { return found(level).bytes; }

std::size_t last_level_cache_for_sizing(std::size_t reported, bool from_kernel) {
  constexpr std::size_t kUnknown = std::size_t{32} << 20, kGuessMost = std::size_t{128} << 20;
  if (reported == 0) return kUnknown;
  return from_kernel ? reported : std::min(reported, kGuessMost);
}

bool cache_size_from_kernel(int level) { return found(level).from_kernel; }

}  // namespace tnbc
