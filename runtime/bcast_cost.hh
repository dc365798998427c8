// The cost of a broadcast by each backend, in the LogP / LogGP models of seed 000 (Paznikov,
// "RMA binomial broadcast"), for TNBC_BCAST_BACKEND=auto. Pure: the parameters come in (the
// start-up probe's figures today, `tnbc calibrate`'s machine file once the cost model of issue
// 16 is merged), times in seconds come out.
//
//   q   = max(o, g)
//   O_r = the cost of noticing a request: the Broadcaster's busy-wait on its flags
//
//   RMA binomial (seed 000, LogGP): ceil(log2 P) stages, each a data put, a description put
//   and a flag (o + (m-1)G + 2q + L + O_r), then the last hop's o + L:
//       t = (o + (m-1)G + 2q + L + O_r) * ceil(log2 P) + o + L
//   (m = 1 gives the seed's LogP form (o + 2q + L + O_r) * log2 P + o + L.)
//
//   RMA linear (one passive epoch, the root puts to each of the P-1 others in turn; not in the
//   seed's text, written here the same way): the root's link carries P-1 copies, every target
//   notices its flag once:
//       t = (P-1) * (o + (m-1)G + q) + q + L + O_r + o + L
//
//   point-to-point binomial (for comparison, no flags): the seed's blocking MPI_Bcast needs no
//   noticing; tnbc's, after an early return, forwards when its progress thread notices a
//   message arrived, as the Broadcaster notices a flag, so its stages pay O_r too (the `p2p`
//   parameters' O_r; zero gives the seed's form):
//       t = (o + (m-1)G + L + o + O_r) * ceil(log2 P)
//
// The seed measured binomial overtaking linear above a size that shrinks as P grows (from
// 25 MB at P=24 to 7 MB at P=48 on InfiniBand; 32 KB at P=40, 16 KB at P=96 on Gigabit
// Ethernet): in these formulas, where (P-1-ceil(log2 P)) * (m-1)G outgrows the extra
// (2q + O_r) per stage.
//
// Where the parameters come from (bcast_params): the RMA ones (L, o = g, G of puts, flags and
// atomics) from the start-up RMA probe, the only place one-sided operations are measured; the
// message ones and O_r from the cost model's machine (`tnbc calibrate`'s file with TNBC_MACHINE,
// else the model's start-up probe) at the level the broadcast crosses. All of it is equal on
// every rank (one file read alike, probes agreed by reduction), so every rank selects alike.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/function_ref.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"

namespace tnbc {

struct LogGP {
  double L = 0;   // latency, s
  double o = 0;   // overhead per message at either end, s
  double g = 0;   // gap between messages, s
  double G = 0;   // gap per byte of a long message, s/B
  double O_r = 0; // noticing a request (RMA flags), s
  double C = 0;   // RMA: copying a byte out of the data window at the target, s/B (0: the machine's memcpy)
};

struct BcastCosts {
  double rma_binomial = 0, rma_linear = 0, p2p_binomial = 0;  // s
};

int ceil_log2(int p);
double rma_binomial_time(const LogGP& c, std::size_t m, int p);
double rma_linear_time(const LogGP& c, std::size_t m, int p);
double p2p_binomial_time(const LogGP& c, std::size_t m, int p);
BcastCosts bcast_costs(const LogGP& rma, const LogGP& p2p, std::size_t m, int p);
// The cheapest backend for `m` bytes over `p` ranks (p2p on ties): the RMA ones with `rma`'s
// parameters, point-to-point with `p2p`'s (measured separately: one MPI library's messages and
// its one-sided operations have different o, L and G); `usable`: whether RMA may be chosen at all.
// With one parameter set for both, p2p binomial is never dearer (no flags).
BcastBackend cheapest_bcast(const LogGP& rma, const LogGP& p2p, std::size_t m, int p, bool usable);

// The parameters auto decides with. `rma_probe` / `p2p_probe`: the RMA probe's figures (its
// O_r: one flag poll plus the progress thread's shortest sleep). With a machine whose `level`
// was measured, messages take its LogGP (o the mean of o_s and o_r) and both backends' O_r
// is the probe's flag poll plus half the machine's measured sleep (a request arrives on
// average half a sleep before the poll that sees it); without, the probe's figures as they are.
struct BcastParams {
  LogGP rma, p2p;
  bool machine = false;  // the message parameters and O_r came from the machine
};
BcastParams bcast_params(const LogGP& rma_probe, const LogGP& p2p_probe, const model::Machine* m, model::LevelKind level);

// ---- auto with a machine: tnbc's broadcasts as they run ----
// The formulas above (the seed's) charge every stage the whole message. tnbc's broadcasts, p2p
// and RMA alike, cut it into the chunks of bcast_chunks (the policy's segment count plus the two
// one-page edges) and pipeline them down the tree; what an inner rank forwards it has first
// noticed and taken in. With a machine, auto therefore compares the cost model's estimates:
//   p2p   tnbc's point-to-point broadcast as the model times it (model::tnbc_timeline: segmented
//         binomial tree, send window, noticing, publication, the root's copy in the call);
//   RMA   the model's pipelined tree (model::bcast_tree_ns, binomial or linear) over the same
//         chunks, where a chunk to a child is a flushed put, then a flushed flag: the sender
//         waits for both (one chunk in flight per sender, no window), so its gap per chunk is
//         put(c) + flag = o + L + (c-1) G + (2o + L) with the RMA probe's figures; the child
//         notices it after O_r, copies it out of its data window (memcpy) and publishes it; plus
//         the root's copy into its window in the call.
// `segments`: the policy's segment count for `bytes` (the same for both: the builders cut alike).
BcastCosts bcast_costs_pipelined(const LogGP& rma, const model::Machine& m, const model::Topology& t, std::size_t bytes,
                                 int segments, const model::Execution& x);
// The cheapest of `t` (p2p on ties); p2p when RMA is not `usable`. `rma_margin`: an RMA backend
// must cost at most (1 - rma_margin) of p2p's.
BcastBackend cheapest_of(const BcastCosts& t, bool usable, double rma_margin = 0);
// auto's margin for RMA with a machine: p2p's estimate rests on `tnbc calibrate`'s sweep of real
// messages, RMA's on one start-up probe of a few flushed puts; and the measured table
// (docs/benchmarks.md, "RMA broadcast") shows RMA gaining at most 1.3x where it won and losing
// up to 7.6x where it lost. So RMA is chosen only where the model gives it a clear lead.
inline constexpr double kRmaMargin = 0.2;

// The largest size the start-up log line's ranges go to.
inline constexpr std::size_t kBcastPlanMaxBytes = std::size_t{256} << 20;
// What auto chooses over sizes: from `from` bytes on, `backend` (until the next range), sizes
// tried in powers of two up to `max_bytes`, each change then located to the byte; the first
// range starts at 0. `choose`: auto's choice for a size.
struct BcastRange {
  std::size_t from = 0;
  BcastBackend backend = BcastBackend::P2p;
};
std::vector<BcastRange> bcast_ranges(FunctionRef<BcastBackend(std::size_t)> choose, std::size_t max_bytes);
// The seed's formulas with `c` (auto without a machine).
std::vector<BcastRange> bcast_ranges(const BcastParams& c, int p, bool usable, std::size_t max_bytes);
// "p2p below 64 KiB, rma-binomial from 64 KiB" (for the log line and the benchmark).
std::string ranges_text(const std::vector<BcastRange>& r);

}  // namespace tnbc
