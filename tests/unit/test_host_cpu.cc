// runtime/host_cpu.hh: /proc/stat's per-CPU lines read as each CPU's idle (idle + iowait) and
// stolen time, at the CPU's number; the total line, other lines and lines with too few fields or
// words are left out rather than read wrong. And this machine's own figures move forward.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>

#include "runtime/host_cpu.hh"

using namespace tnbc;

TEST_CASE("/proc/stat: each CPU's idle (fourth and fifth fields) and steal (eighth), at its number") {
  // user nice system idle iowait irq softirq steal guest guest_nice, ticks of 1/100 s
  const std::vector<CpuTimes> t = parse_proc_stat("cpu  2000 0 500 180000 60 14 800 240 0 0\n"
                                                  "cpu0 1000 50 250 90000 30 7 400 120 0 0\n"
                                                  "cpu2 1000 0 250 90030 30 7 400 120 0 0\n"
                                                  "intr 12345 0 0\nctxt 999\n",
                                                  100);
  REQUIRE(t.size() == 3);
  CHECK(t[0].listed);
  CHECK(t[0].idle_s == Approx(900.3));
  CHECK(t[0].steal_s == Approx(1.2));
  CHECK_FALSE(t[1].listed);  // offline: no line
  CHECK(t[2].idle_s == Approx(900.6));
  CHECK(parse_proc_stat("cpu0 1000 50 250 90000 30 7 400 120", 250)[0].idle_s == Approx(360.12));  // 8 fields, no newline
}

TEST_CASE("/proc/stat: too few fields, a word, the total line only or no tick rate: nothing read") {
  CHECK(parse_proc_stat("cpu0 1000 50 250 90000 30 7 400\n", 100).empty());  // a kernel without steal
  CHECK(parse_proc_stat("cpu0 1000 50 x 90000 30 7 400 120\n", 100).empty());
  CHECK(parse_proc_stat("cpu  1000 50 250 90000 30 7 400 120\n", 100).empty());
  CHECK(parse_proc_stat("", 100).empty());
  CHECK(parse_proc_stat("cpu0 1000 50 250 90000 30 7 400 120\n", 0).empty());
}

TEST_CASE("this machine: /proc/stat and the process's CPU time are read and the kernel named") {
  const std::vector<CpuTimes> before = cpu_times();
  REQUIRE_FALSE(before.empty());
  const double own0 = process_cpu_s();
  volatile double x = 0;
  for (long i = 0; i < 20000000; ++i) x = x + 1e-9 * static_cast<double>(i);
  CHECK(process_cpu_s() > own0);
  const std::vector<CpuTimes> after = cpu_times();
  REQUIRE(after.size() == before.size());
  for (std::size_t k = 0; k < after.size(); ++k) CHECK(after[k].idle_s >= before[k].idle_s);
  CHECK(static_cast<long>(before.size()) >= sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(kernel_id() != 0);
  CHECK(kernel_id() == kernel_id());
}
