// Fortran (mpif.h) specifics: the MPI_IN_PLACE / MPI_BOTTOM sentinels of the Fortran bindings
// (common-block addresses, not C's values) and the MPI library's own Fortran entry points.
#pragma once

namespace tnbc::shim {

// Maps Fortran's MPI_IN_PLACE / MPI_BOTTOM to C's; any other address is returned unchanged.
void* fortran_buffer(void* p);
inline const void* fortran_buffer(const void* p) { return fortran_buffer(const_cast<void*>(p)); }

// The next definition of a Fortran binding (after libtnbc), by lower-case MPI name
// ("mpi_send"); tries the four manglings. Stops the program with a message if none exists.
void* fortran_next(const char* lower_name);

}  // namespace tnbc::shim
