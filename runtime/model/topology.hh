// Where the ranks of one communicator run, as the cost model needs it: the node of every rank
// (LogGPH: which level a message crosses; how many ranks share a node's link), the CPUs of a
// node and of a rank (whether the progress thread has a CPU of its own or takes it from the
// computation). Equal on every rank: built from MPI_COMM_WORLD's placement, gathered at
// MPI_Init (runtime/model/probe.hh), and the communicator's group.
//
// Pure: no MPI (the `tnbc` tool and the unit tests build topologies with block()).
#pragma once

#include <vector>

#include "runtime/model/machine.hh"

namespace tnbc::model {

struct Topology {
  std::vector<int> node;   // per rank of the communicator: its node, 0..nodes()-1
  int cpus_per_node = 1;   // CPUs of a node (the smallest over the nodes)
  int cpus_per_rank = 1;   // CPUs of a rank's affinity mask (the smallest over the ranks)

  int n() const { return static_cast<int>(node.size()); }
  int nodes() const;
  int ranks_on(int node_index) const;
  int max_per_node() const;
  LevelKind level(int a, int b) const {
    return node[static_cast<std::size_t>(a)] == node[static_cast<std::size_t>(b)] ? LevelKind::IntraNode
                                                                                   : LevelKind::InterNode;
  }
  // How many ranks share one CPU of the busiest node (>= 1): CPU work of the ranks stretches by it.
  double cpu_stretch() const;
  // The CPU a rank has beyond one for its computation, 0..1: what the progress thread can use
  // without taking it from the program.
  double spare_cpu() const;

  // n ranks placed block-wise, `per_node` per node (the last node may have fewer).
  static Topology block(int n, int per_node, int cpus_per_node, int cpus_per_rank);
};

}  // namespace tnbc::model
