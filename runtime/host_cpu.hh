// What the machine's CPUs did, as its kernel counts them: the idle and stolen CPU time of all its
// CPUs (/proc/stat's first line), this process's own CPU time (every thread), and which kernel
// this is (its boot id: processes with the same one share the CPUs, whatever node MPI calls them).
// `tnbc calibrate` compares them over its run to tell whether other processes or the hypervisor
// took CPU time its measurements needed (runtime/model/calibrate_load.hh).
#pragma once

#include <cstdint>
#include <string_view>

namespace tnbc {

struct HostCpu {
  bool known = false;  // /proc/stat read and parsed
  double idle_s = 0;   // idle + iowait over every CPU, since boot
  double steal_s = 0;  // time a virtual CPU was ready to run while the hypervisor ran something else
};

// /proc/stat's first line ("cpu  user nice system idle iowait irq softirq steal ..."), in ticks of
// `ticks_per_s`. The idle time, not the busy fields: a tickless kernel measures idle periods to
// the microsecond but samples busy time at its ticks (here, over a calibration, user + nice +
// system + irq + softirq summed 1.1 s below the calibrating processes' own CPU time of 21 s).
HostCpu parse_proc_stat(std::string_view first_line, double ticks_per_s);
// This machine's, now.
HostCpu host_cpu();
// The calling process's CPU time so far, every thread (s).
double process_cpu_s();
// A hash of this kernel's boot id (/proc/sys/kernel/random/boot_id); 0 if unknown.
std::uint64_t kernel_id();

}  // namespace tnbc
