// Fences for buffer-taking MPI calls (generated wrappers call these first).
#include "runtime/datatype.hh"
#include "runtime/guard.hh"
#include "shim/handlers.hh"

namespace tnbc::shim {

bool fences_active() { return !guards().empty(); }

void fence_buffer(const void* buf, long long count, MPI_Datatype type) {
  const ByteRange r = span_of(buf, count, type);
  fence_range(r.lo, r.hi, Access::MpiCall, "an MPI call on a guarded buffer");
}

void fence_everything() { fence_all("an MPI call that may touch a guarded buffer"); }

}  // namespace tnbc::shim
