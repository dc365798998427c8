// tnbc's private duplicate of each user communicator, cached on the user communicator as an
// attribute (freed with it). Shim traffic uses the duplicate and its own tags, so it can never
// match the application's messages. A per-communicator sequence number separates the tags of
// successive collectives (collectives start in the same order on every rank).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/node_arbiter.hh"
#include "runtime/call_vote.hh"
#include "runtime/roll_call.hh"

#include "runtime/model/probe.hh"
#include "runtime/model/topology.hh"

namespace tnbc {

class RmaComm;

struct PrivateComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0;
  int tag_ub = 32767;
  std::uint64_t next_sequence = 0;
  RmaComm* rma = nullptr;  // the RMA broadcast's windows, once used (runtime/rma_transport.hh)
  std::shared_ptr<NodeLink> node;  // node-level priorities' board (nullptr: none)
  CallVote agreement;        // the calls every rank agreed to run as the library's own
  std::optional<RollCall> roll;  // who reached a vote, asked when its wait times out (made with the duplicate)
};

// A roll call a wait answers, and holds when it times out (runtime/roll_call.hh).
struct RollCallAt {
  RollCall* roll = nullptr;
  std::uint64_t call = 0;    // the collective's number, the same on every rank asked
  std::vector<int> members;  // the ranks asked, of the roll's duplicate, by their rank in the
                             // communicator waited on; empty: all, numbered alike (its own duplicate)
};

// Waits for `req`, a collective tnbc started on `user`'s duplicate in the collective `what` (`role`:
// which of tnbc's collectives that is; `step`: what it started, for the message); after
// `timeout_ns` without it, says that some rank of `user` never called `what` and ends the job
// instead of waiting forever inside MPI. With `at` the wait answers other ranks' roll calls, and
// its own timeout names the ranks of `user` that did not answer within a tenth of the timeout;
// where every rank answered (the missing one came late, and is in the collective now), or the
// collective completed meanwhile, it says so and waits once more as long, ending the job only if
// that wait times out too.
void wait_collective(MPI_Request& req, MPI_Comm user, long long timeout_ns, const char* what, const char* role,
                     const char* step, RollCallAt* at = nullptr);

class CommCache {
 public:
  CommCache();
  // The private duplicate of `user` (created collectively on first use: every rank of `user`
  // reaches this point for the same collective, since the decision is made on inputs that are
  // identical on all ranks). The duplication is nonblocking (MPI_Comm_idup): when some rank
  // has not joined after `timeout_ns`, tnbc says so (naming `what`, the collective) and ends
  // the job with MPI_Abort instead of waiting forever inside MPI.
  PrivateComm& get(MPI_Comm user, long long timeout_ns, const char* what);
  // Where the ranks of `user` run (the cost model's topology): computed from the world's
  // placement on first use, without communication, and cached on `user` like its duplicate.
  const model::Topology& topology(MPI_Comm user, const model::Topology& world);

  // Called (collectively) on each new duplicate to make its node link (runtime/node_segment.hh);
  // unset: no node links.
  void set_node_links(std::function<std::shared_ptr<NodeLink>(MPI_Comm)> make) { node_links_ = std::move(make); }

 private:
  // The roll call of `user`'s first collective: on MPI_COMM_WORLD's duplicate (made at MPI_Init),
  // asking `user`'s members; none (roll nullptr) before that duplicate exists, for
  // MPI_COMM_WORLD itself, an intercommunicator, or members outside MPI_COMM_WORLD.
  RollCallAt world_roll_call(MPI_Comm user) const;
  // Its numbers have the top bit set: a vote's count (CallVote::calls) never does.
  static constexpr std::uint64_t kFirstCollectiveCall = std::uint64_t{1} << 63;

  int keyval_ = MPI_KEYVAL_INVALID;
  int topology_keyval_ = MPI_KEYVAL_INVALID;
  std::function<std::shared_ptr<NodeLink>(MPI_Comm)> node_links_;
};

}  // namespace tnbc
