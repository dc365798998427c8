#include "runtime/bcast_cost.hh"

#include <algorithm>

#include "runtime/threshold.hh"

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
  return (c.o + bytes_time(c, m) + c.L + c.o + c.O_r) * ceil_log2(p);
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

BcastParams bcast_params(const LogGP& rma_probe, const LogGP& p2p_probe, const model::Machine* m, model::LevelKind level) {
  BcastParams c{rma_probe, p2p_probe, false};
  if (!m || !m->at(level).measured) return c;
  const model::Level& l = m->at(level);
  c.machine = true;
  c.p2p.L = l.L_ns * 1e-9;
  c.p2p.o = (l.os_ns + l.or_ns) / 2 * 1e-9;
  c.p2p.g = l.g_ns * 1e-9;
  c.p2p.G = l.G_ns_per_byte * 1e-9;
  // The probe's O_r holds the sleep's floor (the setting), the machine's measured sleep what
  // the kernel really gives; the flag poll stays the probe's (an atomic, not MPI_Testsome).
  c.rma.O_r = c.p2p.O_r = rma_probe.o + m->sleep_ns / 2 * 1e-9;
  return c;
}

std::vector<BcastRange> bcast_ranges(const BcastParams& c, int p, bool usable, std::size_t max_bytes) {
  std::vector<BcastRange> r{{0, cheapest_bcast(c.rma, c.p2p, 0, p, usable)}};
  for (std::size_t m = 1, prev = 0; m <= max_bytes; prev = m, m *= 2) {
    const BcastBackend b = cheapest_bcast(c.rma, c.p2p, m, p, usable);
    if (b == r.back().backend) continue;
    // The change lies in (prev, m]: the first size of the new backend, by bisection.
    std::size_t lo = prev, hi = m;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (cheapest_bcast(c.rma, c.p2p, mid, p, usable) == b ? hi : lo) = mid;
    }
    r.push_back({hi, b});
  }
  return r;
}

std::string ranges_text(const std::vector<BcastRange>& r) {
  static constexpr const char* kNames[] = {"p2p", "rma-binomial", "rma-linear", "auto"};
  std::string s;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (i) s += ", ";
    s += kNames[static_cast<int>(r[i].backend)];
    if (i > 0) s += " from " + bytes_text(r[i].from);
    if (i + 1 < r.size()) s += (i > 0 ? " to " : " below ") + bytes_text(r[i + 1].from);
  }
  return s;
}

}  // namespace tnbc
