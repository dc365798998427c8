// runtime/cpu_cache.hh: a CPU's cache sizes read from the kernel's description (a sysfs tree
// written here as the kernel lays it out), the data or unified cache of a level, never the
// instruction cache, and 0 where the tree says nothing usable.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "runtime/cpu_cache.hh"
#include "temp_dir.hh"

namespace fs = std::filesystem;

namespace {
// One cache entry, indexK, as sysfs lists it.
void entry(const fs::path& cpu, int k, const char* level, const char* type, const char* size) {
  const fs::path d = cpu / "cache" / ("index" + std::to_string(k));
  fs::create_directories(d);
  std::ofstream(d / "level") << level << "\n";
  std::ofstream(d / "type") << type << "\n";
  std::ofstream(d / "size") << size << "\n";
}
}  // namespace

TEST_CASE("cpu cache: sizes from the kernel's sysfs entries, data or unified caches only") {
  TempDir t;
  const fs::path cpu = t.path / "cpu0";
  // This VM's AMD EPYC as its kernel lists it (glibc's sysconf says 384 MiB for the L3).
  entry(cpu, 0, "1", "Data", "48K");
  entry(cpu, 1, "1", "Instruction", "32K");
  entry(cpu, 2, "2", "Unified", "1024K");
  entry(cpu, 3, "3", "Unified", "32768K");
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 1) == std::size_t{48} << 10);
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 2) == std::size_t{1} << 20);
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 3) == std::size_t{32} << 20);
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 4) == 0);  // no such level
}

TEST_CASE("cpu cache: other units, an instruction-only level, unreadable trees give 0") {
  TempDir t;
  const fs::path cpu = t.path / "cpu3";
  entry(cpu, 0, "1", "Instruction", "64K");
  entry(cpu, 1, "2", "Unified", "2M");
  entry(cpu, 2, "3", "Unified", "lots");
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 1) == 0);  // only an instruction cache at level 1
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 2) == std::size_t{2} << 20);
  CHECK(tnbc::sysfs_cache_bytes(cpu.string(), 3) == 0);  // not a size
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
