// The shared-memory board of node-level priorities (runtime/node_arbiter.hh) for one
// communicator, made once when tnbc duplicates the communicator (runtime/comm_cache.hh).
//
//   MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)   the ranks of this node (1: no board at all)
//   node rank 0: shm_open + ftruncate + mmap    a name unique on the machine (pid, counter)
//   MPI_Bcast of the name on the node           "" when the leader could not make it
//   the others: shm_open + mmap, MPI_Barrier    then the leader unlinks the name
//
// Every rank of the communicator calls it (collective). A board that cannot be made or opened
// is said once and the rank runs without arbitration: that changes no message, only when this
// rank's sends start, so ranks that arbitrate and ranks that do not still match.
#pragma once

#include <mpi.h>

#include <memory>

#include "runtime/node_arbiter.hh"

namespace tnbc {

// nullptr: one rank of `comm` on this node, or no board (said once at TNBC_LOG=warn).
// `local_on_link`: sends to ranks of this node use the link too (arbitrated like the others).
std::shared_ptr<NodeLink> open_node_link(MPI_Comm comm, long long hold_ns, bool local_on_link);

// The kernel's TCP send-buffer limit in bytes: the maximum of net.ipv4.tcp_wmem (what its
// autotuning may grow one socket's buffer to), read from /proc once; -1 if not readable
// (runtime/node_turn.hh: the buffered-send size where the machine file has none).
double kernel_send_buffer_bytes();

}  // namespace tnbc
