// runtime/cpu_cache.hh: a CPU's cache sizes read from the kernel's description (a sysfs tree
// written here as the kernel lays it out), the data or unified cache of a level, never the
// instruction cache, and 0 where the tree says nothing usable.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "runtime/cpu_cache.hh"
#include "temp_dir.hh"

namespace fs = std::filesystem;

namespace {
struct Entry {
  const char *level, *type, *size;
};

// A CPU's cache directory as sysfs lays it out (index0, index1, ...), under `dir`.
fs::path cpu_tree(const fs::path& dir, std::initializer_list<Entry> entries) {
  int k = 0;
  for (const Entry& e : entries) {
    const fs::path d = dir / "cache" / ("index" + std::to_string(k++));
    fs::create_directories(d);
    std::ofstream(d / "level") << e.level << "\n";
    std::ofstream(d / "type") << e.type << "\n";
    std::ofstream(d / "size") << e.size << "\n";
  }
  return dir;
}
}  // namespace

TEST_CASE("cpu cache: sizes from the kernel's sysfs entries, data or unified caches only, 0 where none is usable") {
  TempDir t;
  // This VM's AMD EPYC as its kernel lists it (glibc's sysconf says 384 MiB for the L3).
  const std::string epyc = cpu_tree(t.path / "cpu0", {{"1", "Data", "48K"}, {"1", "Instruction", "32K"},
                                                       {"2", "Unified", "1024K"}, {"3", "Unified", "32768K"}}).string();
  // Another unit, a level with an instruction cache only, a size that is not one.
  const std::string odd = cpu_tree(t.path / "cpu3", {{"1", "Instruction", "64K"}, {"2", "Unified", "2M"},
                                                      {"3", "Unified", "lots"}}).string();
  struct Want {
    const std::string& cpu;
    int level;
    std::size_t bytes;
  };
  for (const Want& w : {Want{epyc, 1, std::size_t{48} << 10}, Want{epyc, 2, std::size_t{1} << 20},
                        Want{epyc, 3, std::size_t{32} << 20}, Want{epyc, 4, 0}, Want{odd, 1, 0},
                        Want{odd, 2, std::size_t{2} << 20}, Want{odd, 3, 0}}) {
    INFO(w.cpu << " level " << w.level);
    CHECK(tnbc::sysfs_cache_bytes(w.cpu, w.level) == w.bytes);
  }
  CHECK(tnbc::sysfs_cache_bytes((t.path / "no-such-cpu").string(), 2) == 0);
}

TEST_CASE("cpu cache: this machine's L2 and L3 agree with its sysfs where it has one") {
  const fs::path cpu0 = "/sys/devices/system/cpu/cpu0";
  const std::size_t l2 = tnbc::sysfs_cache_bytes(cpu0.string(), 2), l3 = tnbc::sysfs_cache_bytes(cpu0.string(), 3);
  if (l2 == 0) SUCCEED("no sysfs cache description here");
  // Every CPU of one machine has caches of one size per level (cache_bytes reads the caller's CPU).
  if (l2 > 0) CHECK(tnbc::cache_bytes(2) == l2);
  if (l3 > 0) CHECK(tnbc::cache_bytes(3) == l3);
}

TEST_CASE("cpu cache: the last-level cache calibrate sizes its buffers by: the kernel's figure, sysconf's at most 128 MiB") {
  constexpr std::size_t MiB = std::size_t{1} << 20;
  CHECK(tnbc::last_level_cache_for_sizing(32 * MiB, true) == 32 * MiB);
  CHECK(tnbc::last_level_cache_for_sizing(504 * MiB, true) == 504 * MiB);  // the kernel's: as it says
  CHECK(tnbc::last_level_cache_for_sizing(32 * MiB, false) == 32 * MiB);
  // The PVM guest of session 40: sysconf's 508 MiB, the socket's L3 over all its dies.
  CHECK(tnbc::last_level_cache_for_sizing(508 * MiB, false) == 128 * MiB);
  CHECK(tnbc::last_level_cache_for_sizing(0, false) == 32 * MiB);  // nothing says
  CHECK(tnbc::last_level_cache_for_sizing(0, true) == 32 * MiB);
}
