// What the machine's CPUs did, as its kernel counts them: each CPU's idle and stolen time
// (/proc/stat's per-CPU lines), this process's own CPU time (every thread), and which kernel this
// is (its boot id: processes with the same one share the CPUs, whatever node MPI calls them).
// `tnbc calibrate` compares them over its run, on the CPUs its ranks may use, to tell whether
// other processes or the hypervisor took CPU time its measurements needed
// (runtime/model/calibrate_load.hh).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tnbc {

struct CpuTimes {
  bool listed = false;  // the file has this CPU's line (an offline CPU has none)
  double idle_s = 0;    // idle + iowait, since boot
  double steal_s = 0;   // time the virtual CPU was ready to run while the hypervisor ran something else
};

// /proc/stat's text: per CPU N its line "cpuN user nice system idle iowait irq softirq steal ...",
// in ticks of `ticks_per_s`, at index N; lines with fewer fields (kernels before 2.6.11) or not
// numbers are left out. The idle time, not the busy fields: a tickless kernel measures idle
// periods to the microsecond but samples busy time at its ticks (here, over a calibration, user
// + nice + system + irq + softirq summed 1.1 s below the calibrating processes' own 21 s).
std::vector<CpuTimes> parse_proc_stat(std::string_view text, double ticks_per_s);
// This machine's, now; empty where /proc/stat cannot be read.
std::vector<CpuTimes> cpu_times();
// The calling process's CPU time so far, every thread (s).
double process_cpu_s();
// A hash of this kernel's boot id (/proc/sys/kernel/random/boot_id); 0 if unknown.
std::uint64_t kernel_id();

}  // namespace tnbc
