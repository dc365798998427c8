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
  m.guard[0] = {{10e3, 20e3 / 1048576.0}, {4e3, 20e3 / 1048576.0}, 30e3, {}, {}};
  m.guard_measured[2] = true;
  m.guard[2] = {{3e3, 20e3 / 1048576.0}, {1e3, 250e3 / 1048576.0}, 30e3, {}, {}};
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

// The same machine with its ranks of a node exchanging through shared memory: the transfer is
// their CPUs' work (O_s + O_r per byte = G), as `tnbc calibrate` measures it there (O_r = G).
inline model::Machine through_shared_memory(model::Machine m) {
  model::Level& l = m.at(model::LevelKind::IntraNode);
  l.Os_ns_per_byte = l.Or_ns_per_byte = l.G_ns_per_byte / 2;
  return m;
}

// Two nodes joined by a 1 Gbit/s link (125 MB/s, 50 us), one rank each: the primary
// configuration of docs/benchmarks.md.
inline model::Machine two_nodes() {
  model::Machine m = machine(2000, 5, 2, 5, 100);  // inside a node: 2 GB/s
  m.nodes = 2;
  m.ranks = 2;
  m.ranks_per_node = 1;
  m.level[1] = level(50, 125, 10, 300);
  m.level[1].node_bi_ns_per_byte = m.level[1].G_ns_per_byte / 2;  // full duplex: in and out at once
  return m;
}

// np 4 on 2 emulated nodes of one CPU each (netrun), 1 Gbit/s between them, as `tnbc calibrate`
// measured it with the launcher's 2 slots per node: the ranks of a node spin, so the ping-pong
// inside the node took a scheduler slice (2 ms) at 1 byte and 92 ms at 1 MiB, and the node sweep
// measured those slices too (45 ns/B); `evidence` false: the same node rates from a calibration
// whose ping-pong took microseconds (no sign of spinning).
inline model::Machine spinning_nodes(bool evidence) {
  model::Machine m = two_nodes();
  m.ranks = 4;
  m.ranks_per_node = 2;
  m.cpus_per_node = 1;
  model::Level& intra = m.at(model::LevelKind::IntraNode);
  intra.L_ns = evidence ? 2e6 : 3e3;
  intra.G_ns_per_byte = 0.125;
  if (evidence)
    intra.sweep = {{1, 2e6, 300, 300, 300}, {1048576, 92e6, 1.1e5, 1.35e5, 1.35e5}, {4194304, 348e6, 4e5, 5.3e5, 5.3e5}};
  intra.node_sweep = {{1048576, 2, 45.7, 45.7}, {4194304, 2, 41.9, 42.9}};
  return m;
}
}  // namespace tnbc::test
