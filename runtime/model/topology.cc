#include "runtime/model/topology.hh"

#include <algorithm>

namespace tnbc::model {

int Topology::nodes() const {
  int most = -1;
  for (int x : node) most = std::max(most, x);
  return most + 1;
}

int Topology::ranks_on(int node_index) const {
  return static_cast<int>(std::count(node.begin(), node.end(), node_index));
}

int Topology::max_per_node() const {
  int m = 0;
  for (int k = 0; k < nodes(); ++k) m = std::max(m, ranks_on(k));
  return std::max(1, m);
}

double Topology::cpu_stretch() const {
  return std::max(1.0, static_cast<double>(max_per_node()) / std::max(1, cpus_per_node));
}

double Topology::spare_cpu() const {
  const double per_rank = std::min(static_cast<double>(std::max(1, cpus_per_rank)),
                                   static_cast<double>(std::max(1, cpus_per_node)) / max_per_node());
  return std::clamp(per_rank - 1.0, 0.0, 1.0);
}

Topology Topology::block(int n, int per_node, int cpus_per_node, int cpus_per_rank) {
  Topology t;
  per_node = std::max(1, per_node);
  for (int r = 0; r < n; ++r) t.node.push_back(r / per_node);
  t.cpus_per_node = std::max(1, cpus_per_node);
  t.cpus_per_rank = std::max(1, cpus_per_rank);
  return t;
}

}  // namespace tnbc::model
