// `tnbc calibrate --combine` (runtime/model/combine.hh): each field of the combined machine file
// is the median of the files' values (an odd count: the middle one; even: the mean of the middle
// two), the widest spread is named, and files that describe another placement, MPI library or
// sweep are refused with one message naming the file and the field.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "machines.hh"
#include "results.hh"
#include "runtime/model/combine.hh"
#include "runtime/model/machine.hh"
#include "tools/calibrate_combine.hh"

using namespace tnbc;
using namespace tnbc::model;

namespace {

// A calibration whose time-like fields are all scaled by `f` (a fast or slow launch).
Machine launch(double f, const std::string& created) {
  Machine m = test::machine(125);
  m.created = created;
  Level& l = m.level[0];
  l.L_ns *= f;
  l.G_ns_per_byte *= f;
  l.sweep = {{65536, 40e3 * f, 5e3, 6e3, 30e3 * f}, {1 << 20, 300e3 * f, 8e3, 9e3, 250e3 * f}};
  l.node_sweep = {{65536, 2, 0.10 * f, 0.20 * f, 0.30 * f}, {1 << 20, 2, 0.16 * f, 0.14 * f, 0.12 * f}};
  m.memcpy_cost = {100 * f, 0.07 * f};
  m.test_ns = 300 * f;
  return m;
}

std::string refusal(const std::vector<Machine>& ms) {
  const auto r = combine_machines(ms, {"a.json", "b.json", "c.json"});
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("calibrate --combine: every field the median, the newest date, the widest spread named") {
  const std::vector<Machine> ms = {launch(1.5, "2026-11-25T02:00:00Z"), launch(1.0, "2026-11-25T02:10:00Z"),
                                   launch(1.1, "2026-11-25T02:05:00Z")};
  const Combined c = must(combine_machines(ms, {"a.json", "b.json", "c.json"}));
  const Level& l = c.machine.at(LevelKind::IntraNode);
  const Level& mid = ms[2].at(LevelKind::IntraNode);  // the 1.1x launch is the median of every field
  CHECK(l.L_ns == Approx(mid.L_ns));
  CHECK(l.G_ns_per_byte == Approx(mid.G_ns_per_byte));
  CHECK(l.sweep[1].t_ns == Approx(330e3));
  CHECK(l.sweep[1].g_ns == Approx(275e3));
  CHECK(l.node_sweep[0].exchange_ns_per_byte == Approx(0.11));
  CHECK(l.node_sweep[0].ring_ns_per_byte == Approx(0.22));
  CHECK(l.node_sweep[1].mpi_alltoall_ns_per_byte == Approx(0.132));
  CHECK(c.machine.memcpy_cost.ns_per_byte == Approx(0.077));
  CHECK(c.machine.test_ns == Approx(330));
  CHECK(c.machine.created == "2026-11-25T02:10:00Z");
  // (1.5 - 1.0) / 1.1 in every scaled field; one of the watched times is named (not L, not
  // memcpy's fixed cost, not a CPU overhead).
  CHECK(c.widest.relative == Approx(0.5 / 1.1));
  CHECK((c.widest.field.find("sweep") != std::string::npos || c.widest.field == "guard.memcpy.ns_per_byte"));
  std::vector<Machine> odd = ms;
  odd[0].level[0].node_sweep[1].ring_ns_per_byte = 1.0;  // one launch's ring far off: named
  odd[0].level[0].os_ns = 1e9;                            // an overhead far off: not watched
  const Combined w = must(combine_machines(odd, {"a.json", "b.json", "c.json"}));
  CHECK(w.widest.field == "levels.intra_node.node_sweep[1].ring_ns_per_byte");
  // Fields equal in every file are kept as they are; the result writes and reads back.
  CHECK(l.os_ns == Approx(ms[0].at(LevelKind::IntraNode).os_ns));
  CHECK(machine_json(must(parse_machine(machine_json(c.machine), "c.json"))) == machine_json(c.machine));
  // Two files: the mean of the two.
  const Combined two = must(combine_machines({ms[0], ms[1]}, {"a.json", "b.json"}));
  CHECK(two.machine.at(LevelKind::IntraNode).sweep[1].t_ns == Approx(375e3));
}

TEST_CASE("calibrate --combine: another placement, library or sweep is refused, naming the file and the field") {
  const Machine a = launch(1.0, "x"), b = launch(1.2, "y");
  CHECK(combine_machines({a}, {"a.json"}).status().message().find("at least 2") != std::string::npos);
  Machine c = launch(1.1, "z");
  c.mpi_library = "Other MPI 2.0";
  CHECK(refusal({a, b, c}).find("c.json differs from a.json in mpi_library") != std::string::npos);
  c = launch(1.1, "z");
  c.nodes = 2;
  CHECK(refusal({a, b, c}).find("c.json differs from a.json in nodes") != std::string::npos);
  c = launch(1.1, "z");
  c.ranks = 2;
  CHECK(refusal({a, c, b}).find("b.json differs from a.json in ranks (4 and 2)") != std::string::npos);  // 2nd named b
  c = launch(1.1, "z");
  c.level[0].sweep.pop_back();
  CHECK(refusal({a, b, c}).find("levels.intra_node.sweep") != std::string::npos);
  c = launch(1.1, "z");
  c.level[0].node_sweep[1].ranks = 4;
  CHECK(refusal({a, b, c}).find("levels.intra_node.node_sweep") != std::string::npos);
  c = launch(1.1, "z");
  c.level[1] = test::level(60, 117, 12, 280);
  CHECK(refusal({a, b, c}).find("levels.inter_node (measured in one") != std::string::npos);
  c = launch(1.1, "z");
  for (NodePoint& p : c.level[0].node_sweep) p.mpi_alltoall_ns_per_byte = 0;  // a file from before session 14
  CHECK(refusal({a, b, c}).find("c.json differs from a.json in levels.intra_node.node_sweep's mpi_alltoall") !=
        std::string::npos);
  c = launch(1.1, "z");
  c.memcpy_cold = {1500, 0.3};
  CHECK(refusal({a, b, c}).find("guard.memcpy_cold") != std::string::npos);
  c = launch(1.1, "z");
  c.memcpy_cold_huge = {900, 0.06};
  c.huge_page_bytes = 2 << 20;
  CHECK(refusal({a, b, c}).find("guard.memcpy_cold_huge") != std::string::npos);
  c = launch(1.1, "z");
  c.memcpy_in_call = {2000, 0.1};
  CHECK(refusal({a, b, c}).find("guard.memcpy_in_call") != std::string::npos);
  c = launch(1.1, "z");
  c.memcpy_in_call_alone = {1800, 0.08};
  CHECK(refusal({a, b, c}).find("guard.memcpy_in_call_alone") != std::string::npos);
  c = launch(1.1, "z");
  c.level[0].shared_cpu = {0, 1.2};
  CHECK(refusal({a, b, c}).find("levels.intra_node.shared_cpu") != std::string::npos);
  c = launch(1.1, "z");
  c.guard[0].hold.points = {{4096, 9e3}};
  CHECK(refusal({a, b, c}).find("guard.userfaultfd_move.hold.points") != std::string::npos);
  c = launch(1.1, "z");
  c.level[0].sweep[0].post_ns = 2e3;
  CHECK(refusal({a, b, c}).find("c.json differs from a.json in levels.intra_node.sweep's post_ns") != std::string::npos);
}

TEST_CASE("calibrate --combine: the measured points of a cost and MPI_Isend's time per size are medians too") {
  std::vector<Machine> ms = {launch(1.5, "a"), launch(1.0, "b"), launch(1.1, "c")};
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const double f = i == 0 ? 1.5 : i == 1 ? 1.0 : 1.1;
    ms[i].memcpy_in_call = {16e3 * f, 0.05 * f};
    ms[i].memcpy_in_call.points = {{65536, 8e3 * f}, {1 << 20, 60e3 * f}};
    ms[i].memcpy_in_call_alone = {12e3 * f, 0.04 * f};
    ms[i].memcpy_in_call_alone.points = {{65536, 6e3 * f}, {1 << 20, 50e3 * f}};
    ms[i].guard[0].hold.points = {{4096, 5e3 * f}, {1 << 20, 40e3 * f}};
    for (SizePoint& p : ms[i].level[0].sweep) p.post_ns = 3e3 * f;
  }
  const Machine c = must(combine_machines(ms, {"a.json", "b.json", "c.json"})).machine;
  REQUIRE(c.memcpy_in_call.points.size() == 2);
  CHECK(c.memcpy_in_call.points[0].ns == Approx(8.8e3));
  CHECK(c.memcpy_in_call.points[1].bytes == Approx(1 << 20));
  REQUIRE(c.memcpy_in_call_alone.points.size() == 2);
  CHECK(c.memcpy_in_call_alone.points[1].ns == Approx(55e3));
  CHECK(c.memcpy_in_call_alone.ns_per_byte == Approx(0.044));
  REQUIRE(c.guard[0].hold.points.size() == 2);
  CHECK(c.guard[0].hold.points[1].ns == Approx(44e3));
  CHECK(c.level[0].sweep[1].post_ns == Approx(3.3e3));
}

TEST_CASE("`tnbc calibrate` recognises --combine wherever it stands, not as -o's value") {
  using V = std::vector<std::string>;
  CHECK(tools::combine_request({"--combine", "a.json", "b.json"}) == V{"a.json", "b.json"});
  CHECK(tools::combine_request({"-o", "m.json", "--combine", "a.json", "b.json"}) == V{"-o", "m.json", "a.json", "b.json"});
  CHECK(tools::combine_request({"a.json", "--combine", "b.json", "--output", "m.json"}) ==
        V{"a.json", "b.json", "--output", "m.json"});
  CHECK_FALSE(tools::combine_request({"-o", "m.json", "--max-bytes", "4m"}));
  CHECK_FALSE(tools::combine_request({"-o", "--combine"}));  // a file named --combine: a calibration
  CHECK_FALSE(tools::combine_request({}));
}

TEST_CASE("calibrate --combine: the in-call copy line, the levels' shared_cpu, the hand-over and the call's rest are the launches' medians") {
  std::vector<Machine> ms;
  for (double f : {1.0, 1.6, 1.1}) {
    ms.push_back(launch(f, "x"));
    ms.back().memcpy_in_call = {2000 * f, 0.1 * f};
    ms.back().level[0].shared_cpu = {100 * f, 1.2 * f};
    ms.back().handover_ns = 20e3 * f;
    ms.back().in_call_rest = fit_through({65536, 1 << 20}, {50e3 * f, 80e3 * f});
    ms.back().in_call_rest_bcast = fit_through({65536, 1 << 20}, {40e3 * f, 60e3 * f});
    ms.back().in_call_rest_bcast_root = fit_through({65536, 1 << 20}, {30e3 * f, 70e3 * f});
    ms.back().cpu_taken = fit_through({1 << 20, 4 << 20}, {1e6 * f, 5e6 * f});
  }
  const Combined c = must(combine_machines(ms, {"a.json", "b.json", "c.json"}));
  REQUIRE(c.machine.memcpy_in_call_measured());
  CHECK(c.machine.memcpy_in_call.ns == Approx(2200));
  CHECK(c.machine.memcpy_in_call.ns_per_byte == Approx(0.11));
  CHECK(c.machine.at(LevelKind::IntraNode).shared_cpu.ns == Approx(110));
  CHECK(c.machine.at(LevelKind::IntraNode).shared_cpu.ns_per_byte == Approx(1.32));
  CHECK(c.machine.handover_ns == Approx(22e3));
  REQUIRE(c.machine.in_call_rest.points.size() == 2);
  CHECK(c.machine.in_call_rest.points[1].ns == Approx(88e3));
  REQUIRE(c.machine.in_call_rest_bcast.points.size() == 2);
  CHECK(c.machine.in_call_rest_bcast.points[1].ns == Approx(66e3));
  CHECK(c.machine.in_call_rest_bcast.ns_per_byte == Approx(fit_through({65536, 1 << 20}, {44e3, 66e3}).ns_per_byte));
  REQUIRE(c.machine.in_call_rest_bcast_root.points.size() == 2);
  CHECK(c.machine.in_call_rest_bcast_root.points[0].ns == Approx(33e3));
  CHECK(c.machine.in_call_rest_bcast_root.points[1].ns == Approx(77e3));
  REQUIRE(c.machine.cpu_taken.points.size() == 2);
  CHECK(c.machine.cpu_taken.points[1].ns == Approx(5.5e6));
  std::vector<Machine> one_taken = ms;
  one_taken[0].cpu_taken = {};  // what tnbc's transfer takes measured in two launches only: refused
  const Result<Combined> no_taken = combine_machines(one_taken, {"a.json", "b.json", "c.json"});
  REQUIRE_FALSE(no_taken.ok());
  CHECK(no_taken.status().message().find("progress.cpu_taken") != std::string::npos);
  std::vector<Machine> one_bcast = ms;
  one_bcast[2].in_call_rest_bcast = {};  // the broadcast's rest measured in two launches only: refused
  const Result<Combined> no_bcast = combine_machines(one_bcast, {"a.json", "b.json", "c.json"});
  REQUIRE_FALSE(no_bcast.ok());
  CHECK(no_bcast.status().message().find("guard.in_call_rest_bcast") != std::string::npos);
  std::vector<Machine> one_root = ms;
  one_root[1].in_call_rest_bcast_root = {};  // the root's rest measured in two launches only: refused
  const Result<Combined> no_root = combine_machines(one_root, {"a.json", "b.json", "c.json"});
  REQUIRE_FALSE(no_root.ok());
  CHECK(no_root.status().message().find("guard.in_call_rest_bcast_root") != std::string::npos);
  ms[1].handover_ns = -1;  // measured in two of three launches only: refused
  const Result<Combined> refused = combine_machines(ms, {"a.json", "b.json", "c.json"});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("progress.handover_ns") != std::string::npos);
}

TEST_CASE("calibrate --combine: the load beside the launches is their median, unknown where one file lacks it") {
  std::vector<Machine> ms;
  for (double f : {0.01, 0.40, 0.02}) {
    ms.push_back(launch(1.0, "x"));
    ms.back().others_cpu_share = f;
    ms.back().steal_share = f / 10;
  }
  const Combined c = must(combine_machines(ms, {"a.json", "b.json", "c.json"}));
  CHECK(c.machine.others_cpu_share == Approx(0.02));
  CHECK(c.machine.steal_share == Approx(0.002));
  CHECK_FALSE(c.machine.disturbed());  // one disturbed launch of three is outvoted
  CHECK(c.widest.field.find("load") == std::string::npos);  // not a figure of the machine
  ms[1].others_cpu_share = ms[1].steal_share = -1;  // an older file: combined, the load unknown
  const Combined older = must(combine_machines(ms, {"a.json", "b.json", "c.json"}));
  CHECK_FALSE(older.machine.load_known());
}

TEST_CASE("calibrate --combine: the warm figures and the first round are the launches' medians; another cache size is refused") {
  std::vector<Machine> ms;
  for (double f : {1.0, 1.6, 1.1}) {
    ms.push_back(launch(f, "x"));
    ms.back().warm_below_bytes = 1 << 20;
    ms.back().handover_warm_ns = 10e3 * f;
    ms.back().first_round_ns = 60e3 * f;
    ms.back().in_call_rest_warm = fit_through({65536}, {30e3 * f});
    ms.back().guard[0].hold_warm = fit_through({4096, 65536}, {5e3 * f, 15e3 * f});
  }
  const Combined c = must(combine_machines(ms, {"a.json", "b.json", "c.json"}));
  CHECK(c.machine.warm_below_bytes == 1 << 20);
  CHECK(c.machine.handover_warm_ns == Approx(11e3));
  CHECK(c.machine.first_round_ns == Approx(66e3));
  REQUIRE(c.machine.in_call_rest_warm.points.size() == 1);
  CHECK(c.machine.in_call_rest_warm.points[0].ns == Approx(33e3));
  REQUIRE(c.machine.guard[0].hold_warm.points.size() == 2);
  CHECK(c.machine.guard[0].hold_warm.points[1].ns == Approx(16.5e3));
  ms[2].warm_below_bytes = 512 << 10;
  const Result<Combined> refused = combine_machines(ms, {"a.json", "b.json", "c.json"});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("guard.warm_below_bytes") != std::string::npos);
}
