// Fortran specifics: the MPI_IN_PLACE / MPI_BOTTOM sentinels of the Fortran bindings (common-block
// addresses, not C's values), the MPI library's own Fortran entry points, and the caller of
// MPICH's `use mpi_f08` bindings, which end in the C MPI_* functions (shim/gen_wrappers.py).
#pragma once

#include "runtime/stats.hh"

namespace tnbc::shim {

// Maps Fortran's MPI_IN_PLACE / MPI_BOTTOM (mpif.h, `use mpi`, and Open MPI's `use mpi_f08`) to
// C's; any other address is returned unchanged.
void* fortran_buffer(void* p);
inline const void* fortran_buffer(const void* p) { return fortran_buffer(const_cast<void*>(p)); }

// The next definition of a Fortran binding (after libtnbc), by lower-case MPI name
// ("mpi_send"); tries the four manglings. Stops the program with a message if none exists.
void* fortran_next(const char* lower_name);
// The same for one exact symbol ("mpi_send_f08_").
void* fortran_next_symbol(const char* symbol);

// While it lives, the intercepted C call this thread makes next is attributed to `return_address`
// as a Fortran call: MPICH's mpi_x_f08ts_ bindings (array descriptors) end in the C MPI_X.
class FortranCaller {
 public:
  explicit FortranCaller(const void* return_address);
  ~FortranCaller();
  FortranCaller(const FortranCaller&) = delete;
  FortranCaller& operator=(const FortranCaller&) = delete;
};

// The call site of an intercepted C entry point: its caller's `return_address`, or the
// Fortran caller a FortranCaller recorded (taken once).
CallSite c_call_site(const void* return_address);

}  // namespace tnbc::shim
