#include "runtime/memory_map.hh"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace tnbc {

namespace {
struct Mapping {
  std::uintptr_t lo, hi;
  bool writable;
};
std::mutex g_mutex;
std::vector<Mapping> g_known;  // private mappings seen (bounded)
constexpr std::size_t kKnownMax = 64;
// Bumped (lock-free: the interposers may run inside an allocator called under g_mutex) whenever
// memory is mapped or unmapped; g_known holds what was seen at g_known_generation.
std::atomic<std::uint64_t> g_generation{0};
std::uint64_t g_known_generation = 0;

bool covered_by_known(std::uintptr_t lo, std::uintptr_t hi, bool writable) {
  for (const auto& m : g_known)
    if (lo >= m.lo && hi <= m.hi && (m.writable || !writable)) return true;
  return false;
}

std::string read_maps() {
  std::string text;
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}
}  // namespace

bool memory_is_private(std::uintptr_t lo, std::uintptr_t hi, bool writable) {
  std::lock_guard lock(g_mutex);
  const std::uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (generation != g_known_generation) {
    g_known.clear();
    g_known_generation = generation;
  }
  if (covered_by_known(lo, hi, writable)) return true;
  const std::string maps = read_maps();
  std::uintptr_t next = lo;  // first byte not yet found in a suitable mapping
  std::vector<Mapping> found;
  std::size_t pos = 0;
  while (pos < maps.size() && next < hi) {
    std::size_t eol = maps.find('\n', pos);
    if (eol == std::string::npos) eol = maps.size();
    const std::string line = maps.substr(pos, eol - pos);
    pos = eol + 1;
    char* end = nullptr;
    const auto a = static_cast<std::uintptr_t>(std::strtoull(line.c_str(), &end, 16));
    if (!end || *end != '-') continue;
    const auto b = static_cast<std::uintptr_t>(std::strtoull(end + 1, &end, 16));
    if (b <= next || a > next) continue;
    // "a-b perms offset dev inode path"
    const char* perms = end + 1;
    const bool priv = std::strlen(perms) >= 4 && perms[3] == 'p';
    const bool huge = line.find("hugepage") != std::string::npos || line.find("hugetlb") != std::string::npos;
    const bool rw = std::strlen(perms) >= 2 && perms[0] == 'r' && perms[1] == 'w';
    if (!priv || huge || (writable && !rw)) return false;
    found.push_back({a, b, rw});
    next = b;
  }
  if (next < hi) return false;
  if (g_generation.load(std::memory_order_acquire) != generation) return true;  // do not remember
  for (const auto& m : found) {
    if (g_known.size() >= kKnownMax) g_known.erase(g_known.begin());
    g_known.push_back(m);
  }
  return true;
}

bool on_this_threads_stack(std::uintptr_t lo, std::uintptr_t hi) {
  thread_local std::uintptr_t stack_lo = 0, stack_hi = 0;
  if (stack_hi == 0) {
    pthread_attr_t attr;
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    stack_lo = reinterpret_cast<std::uintptr_t>(addr);
    stack_hi = stack_lo + size;
    if (stack_hi == 0) stack_hi = 1;  // unknown: nothing is on it
  }
  return lo < stack_hi && hi > stack_lo;
}

void mappings_changed() { g_generation.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace tnbc
