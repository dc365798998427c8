#include "runtime/datatype.hh"

#include <algorithm>

namespace tnbc {

namespace {
bool dense_combiner(MPI_Datatype type, int depth) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
  if (combiner == MPI_COMBINER_NAMED) return true;
  if (depth > 8 || (combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP)) return false;
  if (ni > 1 || na > 0 || nd != 1) return false;
  int ints[1];
  MPI_Aint addrs[1];
  MPI_Datatype inner;
  if (PMPI_Type_get_contents(type, ni, na, nd, ints, addrs, &inner) != MPI_SUCCESS) return false;
  const bool ok = dense_combiner(inner, depth + 1);
  int ni2, na2, nd2, comb2;
  PMPI_Type_get_envelope(inner, &ni2, &na2, &nd2, &comb2);
  if (comb2 != MPI_COMBINER_NAMED) PMPI_Type_free(&inner);
  return ok;
}
}  // namespace

bool is_dense(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return false;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS || PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS)
    return false;
  if (size <= 0 || lb != 0 || tlb != 0 || extent != size || textent != size) return false;
  return dense_combiner(type, 0);
}

std::size_t type_bytes(MPI_Datatype type, long long count) {
  if (type == MPI_DATATYPE_NULL || count <= 0) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::size_t>(size) * static_cast<std::size_t>(count);
}

ByteRange span_of(const void* buf, long long count, MPI_Datatype type) {
  if (buf == MPI_IN_PLACE || type == MPI_DATATYPE_NULL || count <= 0) return {};
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS)
    return {};
  const auto base = reinterpret_cast<std::intptr_t>(buf) + tlb;
  const auto last = base + (count - 1) * extent;
  const std::intptr_t lo = extent >= 0 ? base : last;
  const std::intptr_t hi = (extent >= 0 ? last : base) + textent;
  return {static_cast<std::uintptr_t>(lo), static_cast<std::uintptr_t>(hi)};
}

TypeInfo MpiTypes::type(MPI_Datatype t) {
  TypeInfo i;
  if (t == MPI_DATATYPE_NULL) return i;
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_size(t, &size);
  PMPI_Type_get_extent(t, &lb, &extent);
  i.size = static_cast<std::size_t>(std::max(0, size));
  i.extent = static_cast<std::ptrdiff_t>(extent);
  i.dense = is_dense(t);
  return i;
}

std::size_t MpiTypes::size(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  PMPI_Type_size(t, &size);
  return static_cast<std::size_t>(std::max(0, size));  // as type(t).size
}

ByteRange MpiTypes::span(const void* buf, long long count, MPI_Datatype t) { return span_of(buf, count, t); }

}  // namespace tnbc
