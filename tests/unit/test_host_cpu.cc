// runtime/host_cpu.hh: /proc/stat's first line read as the machine's idle (idle + iowait) and
// stolen CPU time; another line, or too few fields, is unknown rather than a wrong figure. And
// this machine's own figures move forward with time.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>

#include "runtime/host_cpu.hh"

using namespace tnbc;

TEST_CASE("/proc/stat: idle is its fourth and fifth fields, steal its eighth, in seconds") {
  // user nice system idle iowait irq softirq steal guest guest_nice, ticks of 1/100 s
  const HostCpu h = parse_proc_stat("cpu  1000 50 250 90000 30 7 400 120 0 0", 100);
  REQUIRE(h.known);
  CHECK(h.idle_s == Approx(900.3));
  CHECK(h.steal_s == Approx(1.2));
  CHECK(parse_proc_stat("cpu 1000 50 250 90000 30 7 400 120", 250).idle_s == Approx(360.12));  // one space, 8 fields
}

TEST_CASE("/proc/stat: another line, too few fields, a word or no tick rate: unknown") {
  CHECK_FALSE(parse_proc_stat("cpu0 1000 50 250 90000 30 7 400 120", 100).known);  // one CPU's line
  CHECK_FALSE(parse_proc_stat("cpu  1000 50 250 90000 30 7 400", 100).known);      // a kernel without steal
  CHECK_FALSE(parse_proc_stat("cpu  1000 50 x 90000 30 7 400 120", 100).known);
  CHECK_FALSE(parse_proc_stat("", 100).known);
  CHECK_FALSE(parse_proc_stat("cpu  1000 50 250 90000 30 7 400 120", 0).known);
}

TEST_CASE("this machine: /proc/stat and the process's CPU time are read and the kernel named") {
  const HostCpu before = host_cpu();
  REQUIRE(before.known);
  const double own0 = process_cpu_s();
  volatile double x = 0;
  for (long i = 0; i < 20000000; ++i) x = x + 1e-9 * static_cast<double>(i);
  CHECK(process_cpu_s() > own0);
  const HostCpu after = host_cpu();
  CHECK(after.idle_s >= before.idle_s);
  CHECK(after.steal_s >= before.steal_s);
  CHECK(kernel_id() != 0);
  CHECK(kernel_id() == kernel_id());
}
