// Fences for buffer-taking MPI calls (generated wrappers call these first).
#include "runtime/datatype.hh"
#include "runtime/engine.hh"
#include "runtime/guard.hh"
#include "shim/handlers.hh"

namespace tnbc::shim {

bool fences_active() { return !guards().empty(); }

void fence_buffer(const void* buf, long long count, MPI_Datatype type) {
  if (Engine* e = Engine::current()) e->fence(span_of(buf, count, type), "an MPI call on a guarded buffer");
}

void fence_everything() {
  if (Engine* e = Engine::current()) e->complete_all();
}

}  // namespace tnbc::shim
