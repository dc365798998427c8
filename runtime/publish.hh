// Publication's primitives that other modules use (runtime/publish.cc).
#pragma once

#include <cstddef>

#include "runtime/status.hh"

namespace tnbc {

struct InFlight;
struct Region;

// Whether /proc/self/mem can be written (publication under PROT_NONE needs it).
bool publication_available();
// Writes n bytes at dst through /proc/self/mem, whatever dst's protection (the kernel writes the
// page frames, like a debugger). False if the kernel refused.
bool write_through_proc_mem(char* dst, const char* src, std::size_t n);

// Gives region `r` of `f` back to the program through the call's guard backend — once. A
// second opening would find the pages back already (page swapping leaves the staging empty):
// an internal error, said (async-signal-safe: the SIGSEGV handler may open an observed region),
// and nothing done.
Status open_region(InFlight& f, Region& r);

}  // namespace tnbc
