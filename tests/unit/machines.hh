// Synthetic machines for the cost model's unit tests (runtime/model/machine.hh): round numbers of
// the order of this VM's, so the tests say what the model does with them, not what a machine is.
#pragma once

#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"

namespace tnbc::test {

// One level: latency L (us), link bandwidth (MB/s), CPU per message (us) and per MiB (us) at
// each end; the node's shared resource `shared` times slower than one pair per byte.
inline model::Level level(double L_us, double mb_per_s, double o_us, double o_us_per_mib, double shared = 1) {
  model::Level l;
  l.measured = true;
  l.L_ns = L_us * 1e3;
  l.os_ns = l.or_ns = o_us * 1e3;
  l.g_ns = o_us * 1e3;
  l.G_ns_per_byte = 1e3 / mb_per_s;
  l.Os_ns_per_byte = l.Or_ns_per_byte = o_us_per_mib * 1e3 / (1024.0 * 1024.0);
  l.node_out_ns_per_byte = l.G_ns_per_byte * shared;
  l.node_bi_ns_per_byte = l.G_ns_per_byte * shared;
  l.flows = 1;
  return l;
}

// A node of `cpus` CPUs whose ranks share one emulated link (TCP over a shaped loopback:
// bandwidth MB/s shared by every flow; CPU o_us per message and o_us_per_mib at each end), with
// userfaultfd page moves for the guard.
inline model::Machine machine(double mb_per_s, double L_us = 50, int cpus = 2, double o_us = 10, double o_us_per_mib = 300) {
  model::Machine m;
  m.method = "calibrate";
  m.mpi_library = "Test MPI 1.0";
  m.ranks = 4;
  m.nodes = 1;
  m.ranks_per_node = 4;
  m.cpus_per_node = cpus;
  m.page = 4096;
  m.level[0] = level(L_us, mb_per_s, o_us, o_us_per_mib);
  m.guard_measured[0] = true;
  m.guard[0] = {{10e3, 20e3 / 1048576.0}, {4e3, 20e3 / 1048576.0}, 30e3, {}};
  m.guard_measured[2] = true;
  m.guard[2] = {{3e3, 20e3 / 1048576.0}, {1e3, 250e3 / 1048576.0}, 30e3, {}};
  m.memcpy_cost = {0, 40e3 / 1048576.0};
  m.test_ns = 5e3;
  m.sleep_ns = 100e3;
  return m;
}

// An Alltoall of per_peer bytes to each peer, as the estimators take it.
inline model::Coll alltoall(double per_peer, std::size_t page = 4096) {
  model::Coll c;
  c.kind = Kind::Alltoall;
  c.bytes = per_peer;
  c.page = page;
  return c;
}

}  // namespace tnbc::test
