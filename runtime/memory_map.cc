#include "runtime/memory_map.hh"

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

// One mapping as the kernel describes it.
struct Vma {
  std::uintptr_t lo = 0, hi = 0;
  bool priv = false, huge = false, rw = false;
};
enum class Lookup { Found, None, Unavailable };

// PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h; Debian 12's kernel headers predate it):
// the one mapping that covers an address, from an ioctl on /proc/self/maps, without the kernel
// writing out every mapping of the process as text. Reading /proc/self/maps took 0.30-0.46 ms in
// an Open MPI process (docs/benchmarks.md, "Session 39"; session 40: 105-160 us median, up to 3.6
// ms, against 1.3-1.5 us a query), paid in the call that found a buffer not remembered.
struct ProcmapQuery {
  std::uint64_t size, query_flags, query_addr;
  std::uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
  std::uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
  std::uint64_t vma_name_addr, build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104, "the kernel's struct procmap_query");
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr std::uint64_t kVmaReadable = 0x01, kVmaWritable = 0x02, kVmaShared = 0x08;

// The query's file, opened once per process (a forked child opens its own: the parent's
// /proc/self is the parent). Under g_mutex.
int g_maps_fd = -1;
pid_t g_maps_pid = 0;
bool g_query_unsupported = false;  // the kernel refused the ioctl once: read the file

Lookup query_vma(std::uintptr_t addr, Vma& out) {
  if (g_query_unsupported) return Lookup::Unavailable;
  const pid_t pid = ::getpid();
  if (g_maps_fd < 0 || g_maps_pid != pid) {
    if (g_maps_fd >= 0) ::close(g_maps_fd);  // inherited from the parent: its maps
    g_maps_fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    g_maps_pid = pid;
    if (g_maps_fd < 0) return Lookup::Unavailable;
  }
  ProcmapQuery q{};
  q.size = sizeof q;
  q.query_addr = addr;
  if (::ioctl(g_maps_fd, kProcmapQuery, &q) != 0) {
    if (errno == ENOENT) return Lookup::None;
    g_query_unsupported = true;  // ENOTTY (kernel before 6.11), EINVAL, ...
    return Lookup::Unavailable;
  }
  out.lo = q.vma_start;
  out.hi = q.vma_end;
  out.priv = (q.vma_flags & kVmaShared) == 0;
  // hugetlbfs (a MAP_HUGETLB mapping, a file on a hugetlbfs mount): its own page size.
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  out.huge = q.vma_page_size > page;
  out.rw = (q.vma_flags & (kVmaReadable | kVmaWritable)) == (kVmaReadable | kVmaWritable);
  return Lookup::Found;
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

// Every mapping of the process, from /proc/self/maps' text ("lo-hi perms offset dev inode path").
std::vector<Vma> maps_from_file() {
  const std::string maps = read_maps();
  std::vector<Vma> all;
  std::size_t pos = 0;
  while (pos < maps.size()) {
    std::size_t eol = maps.find('\n', pos);
    if (eol == std::string::npos) eol = maps.size();
    const std::string line = maps.substr(pos, eol - pos);
    pos = eol + 1;
    char* end = nullptr;
    Vma v;
    v.lo = static_cast<std::uintptr_t>(std::strtoull(line.c_str(), &end, 16));
    if (!end || *end != '-') continue;
    v.hi = static_cast<std::uintptr_t>(std::strtoull(end + 1, &end, 16));
    const char* perms = end + 1;
    v.priv = std::strlen(perms) >= 4 && perms[3] == 'p';
    v.huge = line.find("hugepage") != std::string::npos || line.find("hugetlb") != std::string::npos;
    v.rw = std::strlen(perms) >= 2 && perms[0] == 'r' && perms[1] == 'w';
    all.push_back(v);
  }
  return all;
}

// Whether [lo, hi) is private memory (writable: read-write too), mapping after mapping from
// `covering` (the mapping that holds an address); the mappings it found in `found`.
template <class Covering>
bool scan(std::uintptr_t lo, std::uintptr_t hi, bool writable, Covering&& covering, std::vector<Mapping>& found) {
  std::uintptr_t next = lo;  // first byte not yet found in a suitable mapping
  while (next < hi) {
    Vma v;
    if (!covering(next, v)) return false;  // a gap: not mapped
    if (!v.priv || v.huge || (writable && !v.rw)) return false;
    found.push_back({v.lo, v.hi, v.rw});
    next = v.hi;
  }
  return true;
}

bool from_file(std::uintptr_t lo, std::uintptr_t hi, bool writable, std::vector<Mapping>& found) {
  const std::vector<Vma> all = maps_from_file();
  return scan(lo, hi, writable, [&](std::uintptr_t a, Vma& v) {
    for (const Vma& m : all)
      if (m.lo <= a && a < m.hi) return v = m, true;
    return false;
  }, found);
}

// Through PROCMAP_QUERY where the kernel has it, else the file.
bool look_up(std::uintptr_t lo, std::uintptr_t hi, bool writable, std::vector<Mapping>& found) {
  bool unavailable = false;
  const bool ok = scan(lo, hi, writable, [&](std::uintptr_t a, Vma& v) {
    const Lookup r = query_vma(a, v);
    unavailable = r == Lookup::Unavailable;
    return r == Lookup::Found;
  }, found);
  if (!unavailable) return ok;
  found.clear();
  return from_file(lo, hi, writable, found);
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
  std::vector<Mapping> found;
  if (!look_up(lo, hi, writable, found)) return false;
  if (g_generation.load(std::memory_order_acquire) != generation) return true;  // do not remember
  for (const auto& m : found) {
    if (g_known.size() >= kKnownMax) g_known.erase(g_known.begin());
    g_known.push_back(m);
  }
  return true;
}

bool memory_is_private_uncached(std::uintptr_t lo, std::uintptr_t hi, bool writable, MapsSource source) {
  std::lock_guard lock(g_mutex);
  std::vector<Mapping> found;
  return source == MapsSource::File ? from_file(lo, hi, writable, found) : look_up(lo, hi, writable, found);
}

bool maps_query_works() {
  std::lock_guard lock(g_mutex);
  Vma v;
  return query_vma(reinterpret_cast<std::uintptr_t>(&v), v) == Lookup::Found;
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
