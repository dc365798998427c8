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
//   point-to-point binomial (for comparison, no flags, no busy-wait):
//       t = (o + (m-1)G + L + o) * ceil(log2 P)
//
// The seed measured binomial overtaking linear above a size that shrinks as P grows (from
// 25 MB at P=24 to 7 MB at P=48 on InfiniBand; 32 KB at P=40, 16 KB at P=96 on Gigabit
// Ethernet): in these formulas, where (P-1-ceil(log2 P)) * (m-1)G outgrows the extra
// (2q + O_r) per stage.
#pragma once

#include <cstddef>

#include "runtime/config.hh"

namespace tnbc {

struct LogGP {
  double L = 0;   // latency, s
  double o = 0;   // overhead per message at either end, s
  double g = 0;   // gap between messages, s
  double G = 0;   // gap per byte of a long message, s/B
  double O_r = 0; // noticing a request (RMA flags), s
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
// With one parameter set for both, p2p binomial is never dearer (no flags, no noticing).
BcastBackend cheapest_bcast(const LogGP& rma, const LogGP& p2p, std::size_t m, int p, bool usable);

}  // namespace tnbc
