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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/model/estimate.hh"
#include "runtime/model/inputs.hh"

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

// What the program does after a call at one site (the trace pass's medians over its ranks):
// T_CURC and T_CRC, and the blocking call's time there (Tcomm), all measured wall times.
struct SiteProgram {
  model::Program program;
  double blocking_ns = 0;
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
  // Whether the run_blocking() this thread was just answered for its call rested on the profile's
  // evidence at the call's site: false where the site is not in the profile, its sizes were not
  // recorded or it has no estimate. Such calls return early on no evidence, so mode nbc's trial
  // (runtime/site_trial.hh) may try them. Rank-local.
  virtual bool judged_last() const { return true; }
  // Whether that call's site is on trial where the model priced its early return at a loss
  // (mode optimize's within_margin with a predicted saving <= 0): a trial that cannot tell
  // completes its later calls in the call (TrialRule::lean_in_call). Rank-local.
  virtual bool leans_in_call_last() const { return false; }
  // True when every rank will run this call as the MPI library's own call: a global answer
  // (unlike the two above), so it may use only what every rank has alike — the call's kind,
  // communicator size and, where every rank knows them (CollectiveInfo::sizes_agree), its sizes
  // — and the profile and cost inputs the ranks compared at MPI_Init. Never called where they
  // differ between ranks.
  virtual bool plain(const CallShape& call) {
    (void)call;
    return false;
  }
  // The segments the trace pass cut a broadcast of `bytes` over `comm_size` ranks into (so
  // that the profile's chunk orders apply); 0 when the profile has none. Global, like plain().
  virtual int bcast_segments(int comm_size, std::size_t bytes) {
    (void)comm_size;
    (void)bytes;
    return 0;
  }
  // The code after the call at its site as the trace pass measured it, for node-level priorities
  // (runtime/node_choice.hh); nothing where the profile does not know it. Rank-local, like order().
  virtual std::optional<SiteProgram> program(const CallShape& call) {
    (void)call;
    return std::nullopt;
  }
  // ---- start-up ----
  // A hash of the profile and of the settings that judge it: ranks compare it at MPI_Init.
  virtual std::uint64_t fingerprint() const { return 0; }
  // The cost model the decisions use (runtime/model/), how tnbc runs, and whether every rank
  // has the same fingerprint (else plain() must answer false).
  virtual void start(std::shared_ptr<const model::Inputs> model, const model::Execution& x, bool agreed) {
    (void)model;
    (void)x;
    (void)agreed;
  }
};

}  // namespace tnbc
