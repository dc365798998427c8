// tnbc's private duplicate of each user communicator, cached on the user communicator as an
// attribute (freed with it). Shim traffic uses the duplicate and its own tags, so it can never
// match the application's messages. A per-communicator sequence number separates the tags of
// successive collectives (collectives start in the same order on every rank).
#pragma once

#include <mpi.h>

#include <cstdint>

namespace tnbc {

struct PrivateComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0;
  int tag_ub = 32767;
  std::uint64_t next_sequence = 0;
};

class CommCache {
 public:
  CommCache();
  // The private duplicate of `user` (created collectively on first use: every rank of `user`
  // reaches this point for the same collective, since the decision is made on inputs that are
  // identical on all ranks).
  PrivateComm& get(MPI_Comm user);

 private:
  int keyval_ = MPI_KEYVAL_INVALID;
};

}  // namespace tnbc
