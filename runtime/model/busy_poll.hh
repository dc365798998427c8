// Ranks that busy-poll on a node with more ranks than CPUs: what the calibration shows of it and
// what it does to shared memory (docs/architecture.md, "The cost model"; docs/predict.md, "CPU").
//
// An MPI library that does not know its node is oversubscribed (the launcher gave it a slot per
// rank: netrun's one CPU per emulated node) never yields while it waits: its ranks spin, and the
// OS scheduler gives a node's CPU to each spinning rank for a slice at a time. Shared memory
// between two such ranks then moves one fragment per hand-off (the sender copies in while it is
// on a CPU, the receiver copies out while it is on one: Open MPI vader's FIFO), so a message takes
// slices, not memory bandwidth. tnbc's own threads yield (the calling thread on such a node, the
// progress thread always), so after an early return the same bytes move at the memory's rate.
//
// The evidence, in a calibration made with more ranks per node than CPUs: the intra-node
// ping-pong's latency is at least a scheduler slice (kSliceEvidenceNs; a message through shared
// memory takes a microsecond) at every size up to 1 KiB (latency_of: a 1-byte point alone of
// 2 ms, with 64 bytes in 150 ns, was one MPICH calibration's noise, not spinning). Then
//   slice      that latency
//   fragment   what the ping-pong's largest sizes add per two slices (2 L / slope of T(m))
//   memory     the level's CPU gap G per byte after o_s + o_r (what the copies themselves take)
//
// Pure: no MPI (`tnbc predict`'s platform, tools/platform.cc, derives its `slice` and
// `shm_fragment` from the same function).
#pragma once

#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"

namespace tnbc::model {

// Open MPI vader's btl_vader_max_send_size: a fragment where the calibration does not show one.
inline constexpr double kShmFragmentBytes = 32 * 1024;
// An intra-node latency at least this long is the OS scheduler's slice (Linux EEVDF's base slice
// is 0.75 ms, and a spinning task keeps its CPU until a tick), not a message's latency.
inline constexpr double kSliceEvidenceNs = 500e3;

struct BusyPoll {
  double slice_ns = 0;                          // 0: the ranks yield (no evidence of spinning)
  double fragment_bytes = kShmFragmentBytes;    // bytes per hand-off between two ranks of a node
  double memory_ns_per_byte = 0;                // the copies themselves (0: not measured)
  double memory_latency_ns = 0;                 // a message between ranks that yield: o_s + o_r
  bool spins() const { return slice_ns > 0; }
};

// From a calibration (`m.ranks_per_node` > `m.cpus_per_node` and a slice-long intra-node
// latency); a machine without that evidence (or the start-up probe's) gives slice_ns 0.
BusyPoll busy_poll(const Machine& m);

// Whether ranks of `t` spin on `m`: the calibration shows busy polling and `t`'s busiest node
// has more ranks than CPUs (equal on every rank: the machine and the gathered placement).
bool spins_on(const Machine& m, const Topology& t);

// How long a node whose `ranks` spin on `cpus` CPUs takes to move `bytes` from one of its ranks
// to another (every directed pair of the node moves its own fragment in the same hand-off: each
// rank copies for all its peers while it holds a CPU): one fragment per round of the run queue,
// ceil(ranks / cpus) slices, at least two (sender, then receiver).
double handoff_ns(const BusyPoll& b, double bytes, int ranks, int cpus);

// The machine as tnbc's yielding threads see it on such a node: the intra-node level without
// the slices — latency o_s + o_r, per byte the copy's G, no ping-pong or node sweep taken with
// spinning ranks. `m` itself where the ranks do not spin.
Machine yielding(const Machine& m);

}  // namespace tnbc::model
