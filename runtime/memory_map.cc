#include "runtime/memory_map.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace tnbc {

namespace {
struct Mapping {
  std::uintptr_t lo, hi;
};
std::mutex g_mutex;
std::vector<Mapping> g_known;  // private mappings seen (bounded)
constexpr std::size_t kKnownMax = 64;

bool covered_by_known(std::uintptr_t lo, std::uintptr_t hi) {
  for (const auto& m : g_known)
    if (lo >= m.lo && hi <= m.hi) return true;
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

bool memory_is_private(std::uintptr_t lo, std::uintptr_t hi) {
  std::lock_guard lock(g_mutex);
  if (covered_by_known(lo, hi)) return true;
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
    if (!priv || huge) return false;
    found.push_back({a, b});
    next = b;
  }
  if (next < hi) return false;
  for (const auto& m : found) {
    if (g_known.size() >= kKnownMax) g_known.erase(g_known.begin());
    g_known.push_back(m);
  }
  return true;
}

void forget_mappings(std::uintptr_t lo, std::uintptr_t hi) {
  std::lock_guard lock(g_mutex);
  std::erase_if(g_known, [&](const Mapping& m) { return m.lo < hi && lo < m.hi; });
}

}  // namespace tnbc
