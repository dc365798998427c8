// What tnbc needs to know about an MPI datatype: its size, whether `count` elements form one
// dense byte range (then staging holds the user's layout byte for byte), and the address range
// `count` elements span (for fences).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace tnbc {

struct ByteRange {
  std::uintptr_t lo = 0, hi = 0;  // [lo, hi); empty when lo == hi
  bool empty() const { return lo >= hi; }
};

// True when the datatype's elements are dense bytes starting at the buffer address:
// named, contiguous or dup combiners only, size == extent == true extent, lb == true lb == 0.
bool is_dense(MPI_Datatype type);

// Size in bytes of `count` elements (MPI_Type_size * count).
std::size_t type_bytes(MPI_Datatype type, long long count);

// Memory touched by `count` elements at `buf` (true lb / true extent); empty for
// MPI_IN_PLACE, a null datatype or count <= 0.
ByteRange span_of(const void* buf, long long count, MPI_Datatype type);

}  // namespace tnbc
