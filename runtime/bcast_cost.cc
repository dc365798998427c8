#include "runtime/bcast_cost.hh"

#include <algorithm>

#include "runtime/coll/builders.hh"
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
  return cheapest_of(bcast_costs(rma, p2p, m, p), usable);
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

BcastCosts bcast_costs_pipelined(const LogGP& rma, const model::Machine& m, const model::Topology& t, std::size_t bytes,
                                 int segments, const model::Execution& x) {
  BcastCosts out;
  if (t.n() <= 1 || bytes == 0) return out;  // nothing to send: all zero (cheapest_of: p2p)
  model::Coll c;
  c.kind = Kind::Bcast;
  c.bytes = static_cast<double>(bytes);
  c.segments = std::max(1, segments);
  c.page = m.page;
  out.p2p_binomial = model::tnbc_timeline(m, t, c, x, true).total_ns * 1e-9;
  // The one-sided machine: every level the RMA probe's (it measured the level the ring of
  // MPI_COMM_WORLD crosses), a chunk's time and its sender's gap alike (flushed operations).
  model::Machine r = m;
  const double o = rma.o * 1e9, L = rma.L * 1e9, G = rma.G * 1e9, flag = 2 * o + L;
  constexpr double kFar = 1024.0 * 1024 * 1024;
  for (model::Level& l : r.level) {
    const bool measured = l.measured;
    l = model::Level{};
    l.measured = measured;
    l.L_ns = L, l.os_ns = o, l.g_ns = o + L + flag, l.G_ns_per_byte = G;
    const double near = o + L + flag, far = near + (kFar - 1) * G;
    l.sweep = {{1, near, near, 0, near}, {kFar, far, far, 0, far}};
  }
  if (!r.at(model::LevelKind::IntraNode).measured && !r.at(model::LevelKind::InterNode).measured)
    r.at(model::LevelKind::IntraNode).measured = true;
  // A child takes the chunk out of its data window, then publishes it as a p2p inner rank does.
  const int inner = m.guard_measured[1] ? 1 : x.guard;
  const model::Line publish = inner >= 0 && inner < model::kGuardBackends && m.guard_measured[inner]
                                  ? m.guard[inner].publish
                                  : model::Line{};
  const double copy = rma.C > 0 ? rma.C * 1e9 : m.memcpy_cost.ns_per_byte;
  model::Line taken{m.memcpy_cost.ns + publish.ns, copy + publish.ns_per_byte};
  if (!publish.points.empty()) {  // publication measured size by size (calibrate since session 56): the chunks' sizes through them
    std::vector<double> x, y;
    for (const model::CostPoint& p : publish.points) {
      x.push_back(p.bytes);
      y.push_back(m.memcpy_cost.ns + copy * p.bytes + p.ns);
    }
    taken = model::fit_through(x, y);
  }
  const double root_copy = x.eager_copy ? m.in_call_copy_alone().at(c.bytes) : 0;  // the one rank that copies
  const auto chunks = static_cast<int>(bcast_chunks(bytes, m.page, c.segments).size());
  const double notice = rma.O_r * 1e9;
  out.rma_binomial = (root_copy + model::bcast_tree_ns(r, t, c.bytes, 0, chunks, model::BcastTree::Binomial, notice,
                                                       taken, m.page)) * 1e-9;
  out.rma_linear = (root_copy + model::bcast_tree_ns(r, t, c.bytes, 0, chunks, model::BcastTree::Linear, notice,
                                                     taken, m.page)) * 1e-9;
  return out;
}

BcastBackend cheapest_of(const BcastCosts& t, bool usable, double rma_margin) {
  if (!usable || t.p2p_binomial <= 0) return BcastBackend::P2p;  // nothing to send (0 B, one rank)
  BcastBackend best = BcastBackend::P2p;
  double best_t = t.p2p_binomial * (1 - rma_margin);
  if (t.rma_binomial < best_t) best = BcastBackend::RmaBinomial, best_t = t.rma_binomial;
  if (t.rma_linear < best_t) best = BcastBackend::RmaLinear;
  return best;
}

std::vector<BcastRange> bcast_ranges(FunctionRef<BcastBackend(std::size_t)> choose, std::size_t max_bytes) {
  std::vector<BcastRange> r{{0, choose(0)}};
  for (std::size_t m = 1, prev = 0; m <= max_bytes; prev = m, m *= 2) {
    const BcastBackend b = choose(m);
    if (b == r.back().backend) continue;
    // The change lies in (prev, m]: the first size of the new backend, by bisection.
    std::size_t lo = prev, hi = m;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (choose(mid) == b ? hi : lo) = mid;
    }
    r.push_back({hi, b});
  }
  return r;
}

std::vector<BcastRange> bcast_ranges(const BcastParams& c, int p, bool usable, std::size_t max_bytes) {
  return bcast_ranges([&](std::size_t m) { return cheapest_bcast(c.rma, c.p2p, m, p, usable); }, max_bytes);
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
