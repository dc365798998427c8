#include "runtime/host_cpu.hh"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/fnv1a.hh"

namespace tnbc {

namespace {

// One "cpuN f0 f1 ... f7 ..." line into `out` (resized to hold N); false where it is not one.
bool parse_cpu_line(std::string_view line, double ticks_per_s, std::vector<CpuTimes>& out) {
  if (!line.starts_with("cpu") || line.size() < 4 || line[3] < '0' || line[3] > '9') return false;
  const char* p = line.data() + 3;
  const char* end = line.data() + line.size();
  std::size_t cpu = 0;
  auto [after, ec] = std::from_chars(p, end, cpu);
  if (ec != std::errc() || cpu > (1u << 20)) return false;
  p = after;
  // user nice system idle iowait irq softirq steal: kernels since 2.6.11 print at least these.
  std::uint64_t v[8] = {};
  for (auto& f : v) {
    while (p < end && *p == ' ') ++p;
    auto [next, e] = std::from_chars(p, end, f);
    if (e != std::errc() || next == p) return false;
    p = next;
  }
  if (out.size() <= cpu) out.resize(cpu + 1);
  out[cpu] = {true, static_cast<double>(v[3] + v[4]) / ticks_per_s, static_cast<double>(v[7]) / ticks_per_s};
  return true;
}

}  // namespace

std::vector<CpuTimes> parse_proc_stat(std::string_view text, double ticks_per_s) {
  std::vector<CpuTimes> out;
  if (ticks_per_s <= 0) return out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    parse_cpu_line(text.substr(0, nl), ticks_per_s, out);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return out;
}

std::vector<CpuTimes> cpu_times() {
  std::ifstream in("/proc/stat");
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_proc_stat(text.str(), static_cast<double>(sysconf(_SC_CLK_TCK)));
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
  if (!got) return 0;
  return fnv1a64(id, std::strcspn(id, "\n"));
}

}  // namespace tnbc
