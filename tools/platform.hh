// The cluster `tnbc predict` simulates (tools/predict_sim.hh): how many nodes, how many cores each,
// the node's link to the network, the backbone, and the link inside a node. Three sources:
//
//   from_machine(machine)   this machine's calibration (runtime/model/machine.hh): the node link
//                           is the inter-node level's shared link (node_out), its latency L; the
//                           link inside a node the intra-node level's (node_bi); no backbone limit
//   --platform FILE         the short form below, or a SimGrid platform file (XML: the file
//                           begins with '<'), whose hosts are the nodes in the order SimGrid lists
//                           them
//
// Short form: one `key value` per line, `#` starts a comment; bandwidths in bits or bytes per
// second with a unit (`40Gbps`, `5GBps`, `100Mbps`; a bare number is bytes/s), latencies with a
// unit (`1us`, `0.5ms`, `2ns`; a bare number is seconds):
//
//   nodes 8             # required
//   cores 8             # per node (default 1)
//   link_bw 40Gbps      # each node's link (full duplex: the bandwidth in each direction)
//   link_lat 1us
//   backbone_bw 0       # optional: the network's shared capacity (0 or absent: no limit)
//   backbone_lat 0
//   loopback_bw 10GBps  # between ranks of one node (shared by them; default: 4 x link_bw)
//   loopback_lat 0.3us
//   slice 0             # how a rank waits on a node with more ranks than cores: 0 (default) it yields
//                       # its core (MPI knows the node is oversubscribed); a time (`4ms`): it busy-polls
//                       # and the OS scheduler gives the core away in slices of that length
//   shm_fragment 32KiB  # with slice > 0: what one handoff moves between two ranks of a node (B, KiB,
//                       # MiB; default: Open MPI vader's fragment, 32 KiB)
//
// From a calibration made with more ranks per node than CPUs (netrun's one CPU per emulated node),
// the intra-node ping-pong shows how the ranks wait: a latency of a scheduler slice or more
// (kSliceEvidenceNs) means they busy-poll; slice is that latency and shm_fragment what the sweep's
// largest sizes move per two slices (docs/predict.md, "CPU").
//
// Pure (no SimGrid): the unit tests link it.
#pragma once

#include <string>

#include "runtime/model/machine.hh"
#include "runtime/status.hh"

namespace tnbc::tools {

inline constexpr double kShmFragmentBytes = 32 * 1024;  // Open MPI vader's btl_vader_max_send_size
// An intra-node latency at least this long is the OS scheduler's slice (Linux EEVDF's base slice is
// 0.75 ms, and a spinning task keeps its core until a tick), not a message's latency.
inline constexpr double kSliceEvidenceNs = 500e3;

struct Platform {
  std::string source;        // "calibration of FILE", "FILE"
  std::string xml;           // a SimGrid platform file to load instead of the numbers below
  int nodes = 0;             // 0: as many as the run needs (the calibration's form)
  int cores = 1;
  double link_Bps = 0, link_lat_s = 0;          // bytes/s, s
  double backbone_Bps = 0, backbone_lat_s = 0;  // 0: no limit
  double loopback_Bps = 0, loopback_lat_s = 0;
  double slice_s = 0;                            // 0: waiting ranks yield their core; else busy-poll slices
  double shm_fragment_B = kShmFragmentBytes;     // bytes per handoff inside a node (with slice_s > 0)
};

// Bandwidth, latency and size words of the short form (0 and a message on error).
Result<double> parse_bandwidth(const std::string& word);
Result<double> parse_latency(const std::string& word);
Result<double> parse_bytes(const std::string& word);

Result<Platform> parse_platform(const std::string& text, const std::string& name);
Result<Platform> read_platform(const std::string& path);
Platform from_machine(const model::Machine& m, const std::string& name);

// Why `p` cannot hold `np` ranks, `per_node` on each node (empty: it can). An XML platform's
// host count is checked when it is loaded.
std::string platform_misfit(const Platform& p, int np, int per_node);

// One line for the output: "8 nodes x 8 cores, link 40 Gb/s 1 us, no backbone limit, ...".
std::string describe(const Platform& p);

}  // namespace tnbc::tools
