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

struct TypeInfo {
  std::size_t size = 0;       // bytes of one element's data
  std::ptrdiff_t extent = 0;  // stride between elements
  bool dense = false;         // is_dense (below)
};

// MPI's answers about datatypes, as the collectives (runtime/coll/) ask them: MpiTypes asks MPI,
// unit tests fake it.
class Types {
 public:
  virtual ~Types() = default;
  virtual TypeInfo type(MPI_Datatype t) = 0;
  // The size alone (type(t).size): what every call asks (Collective::size), one question to MPI
  // where type() asks about eight (extent, true extent, the combiners).
  virtual std::size_t size(MPI_Datatype t) { return type(t).size; }
  // The memory `count` elements at `buf` touch (span_of).
  virtual ByteRange span(const void* buf, long long count, MPI_Datatype t) = 0;
};

class MpiTypes final : public Types {
 public:
  TypeInfo type(MPI_Datatype t) override;
  std::size_t size(MPI_Datatype t) override;
  ByteRange span(const void* buf, long long count, MPI_Datatype t) override;
};

// MpiTypes that keeps its answers for the datatypes of one call (no datatype can be freed while
// a call uses it): a collective asks about the same two types several times.
class CallTypes final : public Types {
 public:
  TypeInfo type(MPI_Datatype t) override {
    for (int i = 0; i < used_; ++i)
      if (known_[i].handle == t) return known_[i].info;
    const TypeInfo info = mpi_.type(t);
    if (used_ < kKept) known_[used_++] = {t, info};
    return info;
  }
  std::size_t size(MPI_Datatype t) override {
    for (int i = 0; i < used_; ++i)
      if (known_[i].handle == t) return known_[i].info.size;
    return mpi_.size(t);
  }
  ByteRange span(const void* buf, long long count, MPI_Datatype t) override { return mpi_.span(buf, count, t); }

 private:
  static constexpr int kKept = 4;
  struct Known {
    MPI_Datatype handle;
    TypeInfo info;
  };
  MpiTypes mpi_;
  Known known_[kKept];
  int used_ = 0;
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
