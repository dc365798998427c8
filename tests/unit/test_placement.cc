// The CPU list of a rank's placement (runtime/placement.hh), as the summary writes it.
#include <catch2/catch.hpp>

#include "runtime/placement.hh"

namespace {
cpu_set_t cpus(std::initializer_list<int> list) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c : list) CPU_SET(c, &s);
  return s;
}
}  // namespace

TEST_CASE("cpu_list writes ranges and single CPUs like the kernel's cpulist") {
  CHECK(tnbc::cpu_list(cpus({})) == "");
  CHECK(tnbc::cpu_list(cpus({0})) == "0");
  CHECK(tnbc::cpu_list(cpus({0, 1})) == "0-1");
  CHECK(tnbc::cpu_list(cpus({0, 1, 2, 3, 8})) == "0-3,8");
  CHECK(tnbc::cpu_list(cpus({1, 3, 5, 6, 7, CPU_SETSIZE - 1})) == "1,3,5-7," + std::to_string(CPU_SETSIZE - 1));
}

TEST_CASE("measure_placement names this host and this process's CPUs") {
  const tnbc::Placement p = tnbc::measure_placement();
  CHECK_FALSE(p.host.empty());
  cpu_set_t mine;
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  CHECK(p.cpu_count == CPU_COUNT(&mine));
  CHECK(p.cpus == tnbc::cpu_list(mine));
}
