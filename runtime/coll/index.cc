// Kind -> implementation: one case per row of the collective table (runtime/vocabulary.cc).
// The compiler warns (-Wswitch) when a Kind has no case.
#include "runtime/coll/collective.hh"

namespace tnbc {

const Collective& bcast_collective();     // bcast.cc
const Collective& alltoall_collective();  // alltoall.cc (Alltoall, Alltoallv)
const Collective& allgather_collective(); // allgather.cc (Allgather, Allgatherv)

const Collective& collective(Kind k) {
  switch (k) {
    case Kind::Bcast: return bcast_collective();
    case Kind::Alltoall:
    case Kind::Alltoallv: return alltoall_collective();
    case Kind::Allgather:
    case Kind::Allgatherv: return allgather_collective();
  }
  return bcast_collective();  // unreachable: every Kind has a case
}

}  // namespace tnbc
