#include "runtime/host_cpu.hh"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <ctime>

namespace tnbc {

HostCpu parse_proc_stat(std::string_view line, double ticks_per_s) {
  HostCpu h;
  if (!line.starts_with("cpu ") || ticks_per_s <= 0) return h;
  // user nice system idle iowait irq softirq steal: kernels since 2.6.11 print at least these.
  constexpr int kFields = 8;
  std::uint64_t v[kFields] = {};
  const char* p = line.data() + 3;
  const char* end = line.data() + line.size();
  for (auto& f : v) {
    while (p < end && *p == ' ') ++p;
    auto [next, ec] = std::from_chars(p, end, f);
    if (ec != std::errc() || next == p) return h;
    p = next;
  }
  h.known = true;
  h.idle_s = static_cast<double>(v[3] + v[4]) / ticks_per_s;
  h.steal_s = static_cast<double>(v[7]) / ticks_per_s;
  return h;
}

HostCpu host_cpu() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return {};
  char line[512] = {0};
  const bool got = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  if (!got) return {};
  std::string_view s(line);
  if (s.ends_with('\n')) s.remove_suffix(1);
  return parse_proc_stat(s, static_cast<double>(sysconf(_SC_CLK_TCK)));
}

double process_cpu_s() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

std::uint64_t kernel_id() {
  std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r");
  if (!f) return 0;
  char id[64] = {0};
  const bool got = std::fgets(id, sizeof id, f) != nullptr;
  std::fclose(f);
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const char* c = id; got && *c && *c != '\n'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
  return got ? h : 0;
}

}  // namespace tnbc
