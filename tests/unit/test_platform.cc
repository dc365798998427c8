// tools/platform.hh: the short platform form of `tnbc predict --platform`, the calibration's
// platform, and the checks that a run fits it.
#include <catch2/catch.hpp>

#include "machines.hh"
#include "tools/platform.hh"

using namespace tnbc;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

TEST_CASE("platform: units of bandwidth and latency") {
  CHECK_THAT(tools::parse_bandwidth("40Gbps").value(), WithinRel(5e9, 1e-12));
  CHECK_THAT(tools::parse_bandwidth("5GBps").value(), WithinRel(5e9, 1e-12));
  CHECK_THAT(tools::parse_bandwidth("1e6").value(), WithinRel(1e6, 1e-12));
  CHECK_THAT(tools::parse_latency("1.5us").value(), WithinRel(1.5e-6, 1e-12));
  CHECK_THAT(tools::parse_latency("2ms").value(), WithinRel(2e-3, 1e-12));
  CHECK_THAT(tools::parse_bandwidth("1Gbs").status().message(), Contains("unknown unit 'Gbs'"));
  CHECK_FALSE(tools::parse_latency("fast").ok());
}

TEST_CASE("platform: the short form, its defaults and its errors") {
  auto p = tools::parse_platform("# paper\nnodes 8\ncores 8\nlink_bw 40Gbps  # IB\nlink_lat 1us\n", "f");
  REQUIRE(p.ok());
  CHECK(p.value().nodes == 8);
  CHECK(p.value().cores == 8);
  CHECK_THAT(p.value().link_Bps, WithinRel(5e9, 1e-12));
  CHECK_THAT(p.value().loopback_Bps, WithinRel(2e10, 1e-12));  // 4 x the link by default
  CHECK(p.value().backbone_Bps == 0);
  CHECK_THAT(tools::parse_platform("link_bw 1Gbps\n", "f").status().message(), Contains("no 'nodes' line"));
  CHECK_THAT(tools::parse_platform("nodes 2\n", "f").status().message(), Contains("no 'link_bw' line"));
  CHECK_THAT(tools::parse_platform("nodes 0\nlink_bw 1Gbps\n", "f").status().message(), Contains("f:1:"));
  CHECK_THAT(tools::parse_platform("nodes 2\nlink_bw 1Gbps\nlink_lat -1us\n", "f").status().message(),
             Contains("zero or more"));
  CHECK_THAT(tools::parse_platform("nodes 2\nlink_bw 1Gbps 2\n", "f").status().message(),
             Contains("expected 'key value'"));
  auto xml = tools::parse_platform("  <?xml version='1.0'?><platform/>", "x.xml");
  REQUIRE(xml.ok());
  CHECK(xml.value().xml == "x.xml");
}

TEST_CASE("platform: a run that does not fit says why") {
  auto p = tools::parse_platform("nodes 4\ncores 2\nlink_bw 1Gbps\n", "c").value();
  CHECK(tools::platform_misfit(p, 8, 2).empty());
  CHECK_THAT(tools::platform_misfit(p, 9, 2), Contains("has 4 nodes"));
  // More ranks than cores: simulated with the cores shared (tools/predict_sim.hh), not refused.
  CHECK(tools::platform_misfit(p, 4, 3).empty());
  CHECK_THAT(tools::platform_misfit(p, 4, 0), Contains("at least 1"));
}

TEST_CASE("platform: the calibration's: the inter-node shared link and the node's own") {
  model::Machine m = test::machine(100);  // 100 MB/s between nodes
  m.at(model::LevelKind::InterNode) = m.at(model::LevelKind::IntraNode);
  m.at(model::LevelKind::InterNode).measured = true;
  m.at(model::LevelKind::InterNode).node_out_ns_per_byte *= 2;
  m.at(model::LevelKind::InterNode).L_ns = 70e3;
  const tools::Platform p = tools::from_machine(m, "m.json");
  const model::Level& inter = m.at(model::LevelKind::InterNode);
  CHECK_THAT(p.link_Bps, WithinRel(1e9 / inter.node_out_ns_per_byte, 1e-9));
  CHECK_THAT(p.link_lat_s, WithinRel(inter.L_ns * 1e-9, 1e-9));
  CHECK(p.nodes == 0);  // as many as the run needs
  CHECK(p.cores == m.cpus_per_node);
}

TEST_CASE("platform: how ranks wait on a node with more ranks than cores") {
  // The short form: yield by default; slice and shm_fragment when given.
  auto p = tools::parse_platform("nodes 2\ncores 1\nlink_bw 1Gbps\n", "f").value();
  CHECK(p.slice_s == 0);
  CHECK(p.shm_fragment_B == tools::kShmFragmentBytes);
  p = tools::parse_platform("nodes 2\ncores 1\nlink_bw 1Gbps\nslice 4ms\nshm_fragment 64KiB\n", "f").value();
  CHECK_THAT(p.slice_s, WithinRel(4e-3, 1e-12));
  CHECK_THAT(p.shm_fragment_B, WithinRel(65536, 1e-12));
  CHECK_THAT(tools::describe(p), Contains("busy-polls in slices of 4 ms"));
  CHECK_THAT(tools::parse_platform("nodes 2\nlink_bw 1Gbps\nshm_fragment 0\n", "f").status().message(),
             Contains("must be positive"));
  CHECK_THAT(tools::parse_platform("nodes 2\nlink_bw 1Gbps\nshm_fragment 3GB\n", "f").status().message(),
             Contains("unknown unit 'GB'"));

  // A calibration with 2 ranks on 1 CPU whose ping-pong inside the node takes a scheduler slice
  // (netrun's emulated nodes): the ranks busy-poll. The slice is the level's latency; a handoff
  // moves what the sweep's largest sizes add per two slices.
  model::Machine m = test::machine(100, 2000, 1);
  m.ranks_per_node = 2;
  model::Level& intra = m.at(model::LevelKind::IntraNode);
  intra.sweep = {{1, 2e6, 1e3, 1e3, 1e3}, {1048576, 92e6, 2e5, 2e5, 5e5}, {4194304, 348e6, 6e5, 6e5, 6e5}};
  tools::Platform c = tools::from_machine(m, "m.json");
  CHECK_THAT(c.slice_s, WithinRel(2e-3, 1e-12));
  const double slope = (348e6 - 92e6) / (4194304.0 - 1048576.0);
  CHECK_THAT(c.shm_fragment_B, WithinRel(2 * 2e6 / slope, 1e-9));
  CHECK_THAT(c.loopback_Bps, WithinRel(1e9 / intra.G_ns_per_byte, 1e-9));  // the copies, not the slices
  // The same with a latency of microseconds (MPI yields: Open MPI knew the node was
  // oversubscribed), or with as many CPUs as ranks: no busy polling.
  intra.L_ns = 3e3;
  CHECK(tools::from_machine(m, "m.json").slice_s == 0);
  intra.L_ns = 2e6;
  m.cpus_per_node = 2;
  CHECK(tools::from_machine(m, "m.json").slice_s == 0);
}
