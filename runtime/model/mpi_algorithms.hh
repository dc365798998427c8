// Which algorithm the MPI library's own blocking collective runs, where the model knows the
// library's rule: Open MPI 4.1's coll/tuned "fixed" decisions (the component that runs on this
// machine's shared memory: `ompi_info`, --mca coll_base_verbose), read from
// ompi/mca/coll/tuned/coll_tuned_decision_fixed.c (v4.1.4). The fixed rules pass segment size 0
// and fan-out 0, so every broadcast algorithm sends the whole message per tree edge (no
// pipeline) and the chain is a single chain (fan-out forced to 1); linear_sync with its default
// max_requests (0) posts all pairs like linear. The estimators (estimate.cc) cost each
// algorithm's rounds with the node's copy rate for the flows that really run at once.
//
// Pure: no MPI (the `tnbc` tool and the unit tests link it).
#pragma once

#include <string_view>

namespace tnbc::model {

enum class MpiExchange {
  Unknown,   // library or size range not covered: the generic all-pairs bound
  Linear,    // every pair posted at once (linear, linear_sync, two_proc at np 2)
  Pairwise,  // n - 1 steps, step s: send to rank + s, receive from rank - s (a shifted ring)
};

enum class MpiBcast {
  Unknown,   // the generic pipelined binomial tree
  Linear,    // the root sends to every rank at once
  Binomial,  // whole message per edge, a parent sends to all its children at once
  Binary,    // bintree: children 2v + 1, 2v + 2
  Chain,     // rank v sends to v + 1, one after another
};

// True for a library string (MPI_Get_library_version's first line) whose rules are below.
bool known_rules(std::string_view mpi_library);

// The algorithm of MPI_Alltoall with `bytes` per peer, and of MPI_Bcast of `bytes`, on a
// communicator of n ranks (Unknown outside the rules' table here: n >= 16). MPI_Alltoallv keeps
// the generic bound (its rule: pairwise below 4 ranks, linear from 4 to 63, by n alone).
MpiExchange mpi_alltoall_algorithm(std::string_view mpi_library, int n, double bytes);
MpiBcast mpi_bcast_algorithm(std::string_view mpi_library, int n, double bytes);

}  // namespace tnbc::model
