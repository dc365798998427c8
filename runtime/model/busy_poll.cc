#include "runtime/model/busy_poll.hh"

#include <algorithm>
#include <cmath>

namespace tnbc::model {

BusyPoll busy_poll(const Machine& m) {
  BusyPoll b;
  const Level& intra = m.at(LevelKind::IntraNode);
  if (!intra.measured || m.ranks_per_node <= m.cpus_per_node || intra.L_ns < kSliceEvidenceNs) return b;
  // The ping-pong measured the slices, not the memory: a message of m bytes took one slice plus
  // m / fragment round trips of two slices (sender's copy-in, receiver's copy-out).
  b.slice_ns = intra.L_ns;
  const auto& sw = intra.sweep;
  const std::size_t n = sw.size();
  const double slope = n >= 2 ? (sw[n - 1].t_ns - sw[n - 2].t_ns) / (sw[n - 1].bytes - sw[n - 2].bytes) : 0;
  if (slope > 0) b.fragment_bytes = std::max(static_cast<double>(m.page), 2 * intra.L_ns / slope);
  b.memory_ns_per_byte = intra.G_ns_per_byte;
  b.memory_latency_ns = intra.os_ns + intra.or_ns;
  return b;
}

bool spins_on(const Machine& m, const Topology& t) {
  return t.max_per_node() > std::max(1, t.cpus_per_node) && busy_poll(m).spins();
}

double handoff_ns(const BusyPoll& b, double bytes, int ranks, int cpus) {
  if (!b.spins() || bytes <= 0) return 0;
  const double round = std::max(2.0, std::ceil(static_cast<double>(std::max(1, ranks)) / std::max(1, cpus)));
  return std::ceil(bytes / b.fragment_bytes) * round * b.slice_ns;
}

Machine yielding(const Machine& m) {
  const BusyPoll b = busy_poll(m);
  if (!b.spins()) return m;
  Machine y = m;
  Level& l = y.at(LevelKind::IntraNode);
  l.L_ns = b.memory_latency_ns;
  l.sweep.clear();
  l.node_sweep.clear();
  // The CPU copies every byte (sender's copy-in and receiver's copy-out share the node's CPUs).
  l.node_out_ns_per_byte = l.node_bi_ns_per_byte = b.memory_ns_per_byte;
  return y;
}

}  // namespace tnbc::model
