// Where the engine learns in which order receivers read a collective's sub-messages, to give
// its pieces priorities (runtime/schedule.hh: `order` of build_alltoallv, the chunk order of
// build_bcast). Mode optimize supplies the orders of a profile (trace/profile_orders.hh);
// without a source every call uses the default order.
//
// An order only changes the order in which a rank posts its sends and receives: never which
// messages exist, their sizes or their tags. Ranks that use different orders (one found the
// call in the profile, another did not) still match every message; all receives are posted
// and sends are nonblocking, so no order can deadlock. The same holds for run_blocking below:
// nothing a source answers is required to agree between ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/vocabulary.hh"

namespace tnbc {

// What identifies one call for the look-up: the same inputs the trace pass recorded.
struct CallShape {
  Kind kind = Kind::Alltoall;
  CallSite site;
  int comm_size = 0;
  int root = -1;                              // bcast only
  std::vector<std::uint64_t> recv_bytes;      // per sub-message (peer, or bcast chunk)
  std::vector<std::uint64_t> send_bytes;      // per peer (all-to-all, not in place), else empty or zeros
};

class ReadOrderSource {
 public:
  virtual ~ReadOrderSource() = default;
  // A permutation of the call's sub-messages 0..n-1 (n = recv_bytes.size()), read first
  // first; empty for the default order.
  virtual std::vector<int> order(const CallShape& call) = 0;
  // True when the call is to complete inside it (summary: completed_in_call, reason
  // no_overlap_to_gain) because the profile shows no overlap to gain at its site
  // (trace/gain.hh). Like an order, this changes no message: the call runs the same schedule
  // as an early return (same pieces, tags and private communicator), only waits for it before
  // returning and needs no guard. So ranks may answer differently for the same collective (they
  // reach it from different call sites, read different profiles or settings) and still match.
  // Called before order() for the same call, which always follows.
  virtual bool run_blocking(const CallShape& call) {
    (void)call;
    return false;
  }
};

}  // namespace tnbc
