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
