// Publication's primitives that other modules use (runtime/publish.cc).
#pragma once

#include <cstddef>

namespace tnbc {

// Whether /proc/self/mem can be written (publication under PROT_NONE needs it).
bool publication_available();
// Writes n bytes at dst through /proc/self/mem, whatever dst's protection (the kernel writes the
// page frames, like a debugger). False if the kernel refused.
bool write_through_proc_mem(char* dst, const char* src, std::size_t n);

}  // namespace tnbc
