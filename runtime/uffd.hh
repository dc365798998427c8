// The userfaultfd guard backend (TNBC_GUARD=uffd, the default where the kernel allows it).
//
//   in the call:   UFFDIO_REGISTER(region, MISSING); madvise(region, MADV_DONTNEED)
//                  -> the region's pages are empty; any access blocks in the kernel
//   a reader:      touches the region -> sleeps in the kernel (no signal); the listener thread
//                  sees the fault and makes the progress thread poll at its fastest
//   publication:   UFFDIO_COPY(region <- staging) installs every page, complete, atomically, and
//                  wakes the readers; UFFDIO_UNREGISTER gives the range back
//
// Page swapping (UFFDIO_MOVE, Linux >= 6.8), used when the kernel has it and the staging is at
// the same offset in its pages as the user's buffer: no page is freed, allocated or copied.
//
//   in the call:   UFFDIO_REGISTER(region); UFFDIO_MOVE(staging <- region)
//                  -> the user's pages (own bytes included) become the staging MPI receives into;
//                     the region is empty, any access blocks as above
//   publication:   UFFDIO_MOVE(region <- staging) puts the same pages back, now holding the
//                  received bytes, and wakes the readers; the staging range is left empty
//
// Measured here (tests/bench/guard_costs): ~20 us per MiB each way, against MADV_DONTNEED
// ~63 us/MiB in the call and UFFDIO_COPY ~232 us/MiB for publication. A page the kernel will
// not move (pinned, shared with a forked child, KSM...) makes the swap fall back to copying.
//
// Compared with PROT_NONE + /proc/self/mem (runtime/publish.cc) this copies at memcpy-like speed
// and lets system calls on a guarded buffer wait instead of failing with EFAULT (when the kernel
// allows kernel-mode faults to be handled: root, or vm.unprivileged_userfaultfd=1).
// Bytes of a region's pages that are not received (other data sharing the pages) are saved to
// the staging copy before the pages are emptied, so the copy puts them back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/status.hh"

namespace tnbc::uffd {

// Opens the userfaultfd and starts the listener thread. An error saying why when the kernel does
// not allow it (old kernel, seccomp, sysctl); the caller then uses PROT_NONE.
Status start();
bool active();
// CPU seconds the listener thread has used (-1 when there is none).
double listener_cpu_seconds();
// True when system calls touching an emptied page wait for it (not only user-mode accesses).
bool kernel_faults_wait();

// Registers the page-aligned range [lo, hi) and empties its pages. False (range untouched and
// unregistered) if the range cannot be handled this way (e.g. mlock'ed memory).
bool arm(std::uintptr_t lo, std::uintptr_t hi);
// Installs the contents of [src, src + hi - lo) as the pages of [lo, hi), wakes readers and
// unregisters the range. An error if the kernel refused (the pages cannot get their data back).
Status fill(std::uintptr_t lo, std::uintptr_t hi, const char* src);

// Page swapping: whether the kernel moves pages (UFFDIO_MOVE).
bool can_swap();
// Registers the page-aligned range [lo, hi) and moves its pages to `staging` (page-aligned,
// private anonymous tnbc memory of the same length, emptied first). False, with both ranges as
// they were and [lo, hi) unregistered, if the kernel would not move every page.
bool arm_swap(std::uintptr_t lo, std::uintptr_t hi, char* staging);
// Moves the pages of [staging, staging + hi - lo) back to [lo, hi) (copying any page the kernel
// will not move), wakes readers and unregisters the range.
Status fill_swapped(std::uintptr_t lo, std::uintptr_t hi, char* staging);

}  // namespace tnbc::uffd
