#include "runtime/bcast_cost.hh"

#include <algorithm>

namespace tnbc {

int ceil_log2(int p) {
  int r = 0;
  while (p > 1 && (1LL << r) < p) ++r;
  return r;
}

namespace {
double bytes_time(const LogGP& c, std::size_t m) { return m > 0 ? static_cast<double>(m - 1) * c.G : 0.0; }
double q(const LogGP& c) { return std::max(c.o, c.g); }
}  // namespace

double rma_binomial_time(const LogGP& c, std::size_t m, int p) {
  if (p <= 1) return 0;
  return (c.o + bytes_time(c, m) + 2 * q(c) + c.L + c.O_r) * ceil_log2(p) + c.o + c.L;
}

double rma_linear_time(const LogGP& c, std::size_t m, int p) {
  if (p <= 1) return 0;
  return (p - 1) * (c.o + bytes_time(c, m) + q(c)) + q(c) + c.L + c.O_r + c.o + c.L;
}

double p2p_binomial_time(const LogGP& c, std::size_t m, int p) {
  if (p <= 1) return 0;
  return (c.o + bytes_time(c, m) + c.L + c.o) * ceil_log2(p);
}

BcastCosts bcast_costs(const LogGP& rma, const LogGP& p2p, std::size_t m, int p) {
  return {rma_binomial_time(rma, m, p), rma_linear_time(rma, m, p), p2p_binomial_time(p2p, m, p)};
}

BcastBackend cheapest_bcast(const LogGP& rma, const LogGP& p2p, std::size_t m, int p, bool usable) {
  if (!usable) return BcastBackend::P2p;
  const BcastCosts t = bcast_costs(rma, p2p, m, p);
  BcastBackend best = BcastBackend::P2p;
  double best_t = t.p2p_binomial;
  if (t.rma_binomial < best_t) best = BcastBackend::RmaBinomial, best_t = t.rma_binomial;
  if (t.rma_linear < best_t) best = BcastBackend::RmaLinear;
  return best;
}

}  // namespace tnbc
