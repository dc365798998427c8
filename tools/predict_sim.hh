// The SimGrid simulation behind `tnbc predict --profile` (docs/predict.md). Each rank is an S4U
// actor on its node's host; for each call site of the profile, one representative call is run in
// four variants, one after the other on the same platform (a barrier between them):
//
//   blocking      the MPI library's own collective in the call (exchanges: all pairs at once up to
//                 kPairwiseFrom ranks, pairwise exchange beyond, as Open MPI's tuned component
//                 does for large blocks; Bcast: a binomial tree of 128 KiB segments), then the
//                 program's CURC and CRC
//   nbc           tnbc's schedule as runtime/coll/ builds it (build_exchange, build_bcast) with
//                 the default read order: Tinit's work (staging copy, guard hold: the machine
//                 file's memcpy and guard lines, the guard the engine takes at the bytes the rank
//                 receives, model::by_size_pays; memcpy_cold for a first call, SimSite::
//                 cold_calls), the edge pieces from the call, then the return; body pieces
//                 from the progress thread in priority order through the send window
//                 (TNBC_SEND_WINDOW); each landing step published (notice + the guard's publish
//                 line, one at a time); the program computes T_CURC, then reads the sub-messages
//                 in the profile's order, each read waiting for its sub-message to be published
//                 (plus a fault's cost) and taking its share of T_CRC
//   optimize      the same with the profile's consensus order; a site whose early return does
//                 not pay completes in the call as the MPI library's call (the judge's `plain`)
//   optimize+node the same with node-level priorities: the ranks of a node admit their inter-node
//                 sends through tnbc's own NodeArbiter (runtime/node_arbiter.hh) on a board per node
//
// CPU: Tinit's work (own block, staging copy, guard hold), T_CURC, the reading (T_CRC, faults)
// and the progress thread's publication are CPU work on the node's host, whose cores (the
// platform's) SimGrid shares between the actors computing at once: a node with more ranks than
// cores (4 ranks on a 2-core node) stretches them, as the kernel's scheduler does. Waiting
// (for messages, for publication) takes no CPU, unless the node has more ranks than cores and
// the platform says its ranks busy-poll (Platform::slice_s > 0: MPI did not know the node was
// oversubscribed): then a rank waiting in the MPI library's call (tnbc's own waits yield) holds
// one of the node's cores (a semaphore, the OS run queue) for a slice at a time, executing it,
// and a message between two ranks of that node moves through shared memory one fragment per
// handoff, each copied in while the sender is on a core and out while the receiver is (the
// sender's request completes with its last fragment in). The progress thread's polling is not
// modelled.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"
#include "runtime/status.hh"
#include "runtime/vocabulary.hh"
#include "tools/platform.hh"

namespace tnbc::tools {

inline constexpr int kPairwiseFrom = 16;  // the blocking exchange switches to pairwise at this many ranks

enum class Variant { Blocking, Nbc, Optimize, OptimizeNode };
inline constexpr int kVariants = 4;
const char* variant_name(Variant v);

// One call site as simulated at N ranks (sizes and times already scaled to N).
// The staging pool's size class of `bytes` (runtime/pool.hh: a power of two; blocks of whole huge
// pages are mapped in them).
inline double staging_size_class(double bytes) {
  return static_cast<double>(std::bit_ceil(static_cast<std::uint64_t>(std::max(1.0, bytes))));
}

struct SimSite {
  std::string name;
  Kind kind = Kind::Alltoall;
  double bytes = 0;          // per peer (exchanges), whole message (Bcast)
  double calls = 1;          // calls per rank in the program (a site's figure is one call x calls)
  double curc_ns = 0;        // T_CURC per call
  double crc_ns = 0;         // T_CRC per call (all the sub-messages)
  std::vector<int> order;    // the profile's consensus read order at N (sub-message indices)
  bool mpi = false;          // below tnbc's size threshold: every variant runs the MPI library's call
  // tnbc's schedule completed in the call beats the library's call at this size on the run's
  // placement (model::own_call_bands, as Policy::route finds it): a call of a variant that does not
  // return early completes that way (the runtime's route; optimize's basis own_call_faster), not
  // as the library's. Also set for an Alltoallv taking tnbc's schedule whose mean block returns
  // early nowhere (the runtime's below_threshold), faster or not. With `mpi` false and `in_call`
  // true the size returns early nowhere: every variant but blocking completes in the call so.
  bool own_call = false;
  bool in_call = false;
  // Of `calls`, how many copy their staging into pages never touched before (tnbc's pool keeps a
  // block per size once made, runtime/pool.hh: the program's first call at a staging size): their
  // staging copy is priced at the machine's line for fresh staging of its size class
  // (Machine::fresh_staging; the memcpy line where the file has none), the others' at its memcpy line.
  double cold_calls = 0;
  // Exchanges with blocks per peer (the profile's sub_bytes; empty: every block is `bytes`, then
  // the ranks' mean): blocks0[dst * np0 + src] the bytes rank dst received from src per call in the
  // traced run (times --data-scale), stretched to N (rank r at N takes the place of r * np0 / N)
  // and times block_scale (the scaling rule's per-block factor). `bytes` is then their mean.
  std::vector<double> blocks0;
  // Where the blocks come from: "even" (all alike: Alltoall, or blocks per peer within 1 %),
  // "per_peer" (blocks0), "mean" (uneven-size exchange whose profile lacks them: the ranks' mean).
  const char* blocks = "even";
  int np0 = 0;
  double block_scale = 1;
  // Bytes rank `dst` receives from rank `src` at N ranks.
  double block(int dst, int src, int n) const;
};

struct SimConfig {
  Platform platform;
  model::Machine machine;
  model::Execution x;        // the send window, guard backend, poll interval
  int np = 0, per_node = 1;
  int bcast_max_segments = static_cast<int>(kDefaultBcastMaxSegments);  // TNBC_BCAST_MAX_SEGMENTS
};

struct VariantTimes {
  double call_ns = 0;    // in the call (slowest rank): Tinit for an early return, Tcomm for blocking
  double total_ns = 0;   // call + CURC + CRC (slowest rank)
  bool plain = false;    // optimize: completed in the call as the MPI library's (no gain)
  bool own_call = false; // completed in the call through tnbc's schedule (SimSite::own_call)
};
struct SimResult {
  VariantTimes v[kVariants];
  VariantTimes own;         // tnbc's schedule completed in the call (SimSite::own_call; else zeros)
  double comm_done_ns = 0;  // nbc: until the last step is done (slowest rank)
  long long messages = 0;   // simulated MPI messages (all variants)
};

// Runs the simulation (once per process: SimGrid keeps one engine). Errors: a platform SimGrid
// refuses, an XML platform with too few hosts.
Result<std::vector<SimResult>> simulate(const SimConfig& c, const std::vector<SimSite>& sites);

}  // namespace tnbc::tools
