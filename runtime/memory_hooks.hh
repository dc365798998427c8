// Other libraries' memory hooks versus tnbc's munmap fence.
//
// tnbc interposes munmap (shim/libc.cc) so that memory is never unmapped while it may still
// publish into it. UCX (MPICH's ch4:ucx device; Open MPI's ucx components load it too)
// installs memory hooks that overwrite the first instructions of the `munmap` the program
// calls — tnbc's — with a jump to its own code, which then unmaps through a raw system call:
// tnbc's fence is lost silently (Open MPI's own memory patcher may do the same). UCX can also
// rewrite relocations instead (its "reloc" mode), which no byte comparison sees.
//  - If UCX's memory-event API is there (libucm loaded, tnbc built with its header), tnbc
//    registers a handler that runs before every munmap UCX intercepts and fences the range.
//  - The code of the `munmap` the program reaches is compared with its bytes in the library
//    file: if it was patched and no UCX handler covers it, tnbc cannot keep buffers guarded
//    safely and says so.
#pragma once

#include <string>

#include "runtime/status.hh"

namespace tnbc {

// Registers the UCX handler where possible; an error (saying why) when munmap is patched and not
// covered, in which case no buffer may be guarded. Call after PMPI_Init*.
Status munmap_fence_holds();

}  // namespace tnbc
