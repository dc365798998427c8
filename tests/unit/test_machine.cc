// The machine file (runtime/model/machine.hh, format "tnbc-machine"): what `tnbc calibrate`
// writes reads back unchanged; a file of another version, another format, with a field missing
// or of the wrong type, or not JSON is refused with one message naming the file and the field;
// a file that reads but does not fit the run (another MPI library, node count, a level the run
// needs and the file lacks) is refused by misfit() with the reason.
#include <catch2/catch.hpp>

#include <string>

#include "machines.hh"
#include "results.hh"
#include "runtime/model/machine.hh"
#include "runtime/mpi_threads.hh"
#include "temp_dir.hh"

using namespace tnbc;
using namespace tnbc::model;

namespace {

Machine sample() {
  Machine m = test::machine(125);
  m.host = "vm";
  m.created = "2026-11-24T02:00:00Z";
  m.level[1] = test::level(60, 117, 12, 280);
  m.level[1].sweep = {{4096, 90e3, 12e3, 13e3, 40e3}, {65536, 600e3, 20e3, 30e3, 560e3}};
  m.level[0].node_sweep = {{65536, 2, 0.10, 0.08, 0.11}, {1 << 20, 2, 0.16, 0.14, 0.17},
                           {65536, 4, 0.12, 0.09, 0.14}, {1 << 20, 4, 0.15, 0.11, 0.16}};
  return m;
}

// `text` with the first occurrence of `from` replaced by `to` (the test's edit must apply).
std::string edited(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::string refusal(const std::string& text) {
  const Result<Machine> r = parse_machine(text, "m.json");
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

// `with` written and read back: the guard line `member` in the text, the file unchanged by the
// round trip, told apart from `without` by its hash, and refused, naming guard.`member`, where
// that line's first key is misspelt.
Machine guard_line_read_back(const Machine& with, const Machine& without, const std::string& member) {
  const std::string text = machine_json(with), key = "\"" + member + "\": {";
  CHECK(text.find(key) != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  CHECK(refusal(edited(text, key + "\"ns\"", key + "\"nanos\"")).find("guard." + member) != std::string::npos);
  return back;
}

}  // namespace

TEST_CASE("machine file: what is written reads back with every value") {
  const Machine m = sample();
  const Machine back = must(parse_machine(machine_json(m), "m.json"));
  CHECK(machine_json(back) == machine_json(m));
  CHECK(machine_hash(back) == machine_hash(m));
  CHECK(back.mpi_library == "Test MPI 1.0");
  CHECK(back.at(LevelKind::InterNode).measured);
  CHECK(back.at(LevelKind::InterNode).sweep.size() == 2);
  CHECK(back.at(LevelKind::IntraNode).node_sweep.size() == 4);
  CHECK(back.at(LevelKind::IntraNode).node_sweep[2].ranks == 4);
  CHECK(back.at(LevelKind::IntraNode).node_sweep[2].mpi_alltoall_ns_per_byte == Approx(0.14));
  CHECK(back.at(LevelKind::IntraNode).G_ns_per_byte == Approx(m.at(LevelKind::IntraNode).G_ns_per_byte));
  CHECK(back.guard_measured[0]);
  CHECK_FALSE(back.guard_measured[1]);  // null in the file: not measured
  CHECK(back.guard[2].publish.ns_per_byte == Approx(m.guard[2].publish.ns_per_byte));
  // Any change the model reads changes the hash the ranks compare.
  Machine other = m;
  other.level[0].L_ns += 1;
  CHECK(machine_hash(other) != machine_hash(m));
}

TEST_CASE("machine file: the MPI transport reads back, and a file without one (before session 60) reads as unknown") {
  Machine m = sample();
  m.mpi_transport = "Open MPI pml ob1";
  const std::string text = machine_json(m);
  CHECK(text.find("\"mpi_transport\": \"Open MPI pml ob1\"") != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK(back.mpi_transport == "Open MPI pml ob1");
  CHECK(thread_progress_of(back.mpi_transport) == ThreadProgress::Through);
  const Machine old = must(parse_machine(machine_json(sample()), "old.json"));
  CHECK(old.mpi_transport.empty());
  CHECK(thread_progress_of(old.mpi_transport) == ThreadProgress::Unknown);
  CHECK(thread_progress_of("Open MPI pml ucx") == ThreadProgress::Starved);
  CHECK(refusal(edited(text, "\"mpi_transport\": \"Open MPI pml ob1\"", "\"mpi_transport\": 1")).find("mpi_transport") !=
        std::string::npos);
}

TEST_CASE("machine file: a node sweep without MPI_Alltoall's rate (before session 14) still reads") {
  Machine m = sample();
  for (NodePoint& p : m.level[0].node_sweep) p.mpi_alltoall_ns_per_byte = 0;
  const std::string text = machine_json(m);
  CHECK(text.find("mpi_alltoall_ns_per_byte") == std::string::npos);  // 0: not written
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK_FALSE(back.at(LevelKind::IntraNode).mpi_alltoall_measured());
  CHECK(back.at(LevelKind::IntraNode).node_mpi_alltoall(1 << 20, 4) == Approx(0.15));  // the exchange pattern's
  CHECK(sample().at(LevelKind::IntraNode).node_mpi_alltoall(1 << 20, 4) == Approx(0.16));
  CHECK(refusal(edited(machine_json(sample()), "\"mpi_alltoall_ns_per_byte\": 0.11", "\"mpi_alltoall_ns_per_byte\": \"x\""))
            .find("node_sweep[0]") != std::string::npos);
}

TEST_CASE("machine file: another version, another format, not JSON: refused, naming the file") {
  const std::string text = machine_json(sample());
  const std::string v2 = refusal(edited(text, "\"version\": 3", "\"version\": 2"));
  CHECK(v2.find("m.json") != std::string::npos);
  CHECK(v2.find("version 2, this tnbc reads version 3") != std::string::npos);
  CHECK(refusal(edited(text, "\"tnbc-machine\"", "\"tnbc-profile\"")).find("not a \"tnbc-machine\" file") !=
        std::string::npos);
  CHECK(refusal(text.substr(0, text.size() / 2)).find("not valid JSON") != std::string::npos);
  CHECK(refusal("[1, 2]").find("m.json") != std::string::npos);
}

TEST_CASE("machine file: a missing or mistyped field is named") {
  const std::string text = machine_json(sample());
  CHECK(refusal(edited(text, "\"mpi_library\"", "\"mpi_lib\"")).find("mpi_library") != std::string::npos);
  CHECK(refusal(edited(text, "\"G_ns_per_byte\"", "\"G\"")).find("levels.intra_node") != std::string::npos);
  CHECK(refusal(edited(text, "\"fault_ns\"", "\"fault\"")).find("guard.userfaultfd_move") != std::string::npos);
  CHECK(refusal(edited(text, "\"test_ns\"", "\"test\"")).find("progress") != std::string::npos);
  CHECK(refusal(edited(text, "\"inter_node\"", "\"between\"")).find("levels.inter_node") != std::string::npos);
  CHECK(refusal(edited(text, "\"page\": 4096", "\"page\": \"4096\"")).find("page") != std::string::npos);
  // Sweep sizes must increase.
  CHECK(refusal(edited(text, "\"bytes\": 65536, \"T_ns\"", "\"bytes\": 1024, \"T_ns\"")).find("sizes must increase") !=
        std::string::npos);
}

TEST_CASE("machine file: read_machine says when the file is missing or empty") {
  TempDir d;
  const Result<Machine> missing = read_machine(d.str() + "/none.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("cannot be read") != std::string::npos);
  const Result<Machine> empty = read_machine(d.write("empty.json", ""));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message().find("empty") != std::string::npos);
  CHECK(read_machine(d.write("ok.json", machine_json(sample()))).ok());
}

TEST_CASE("machine file: misfit names another MPI library, node count or a missing level") {
  Machine m = sample();
  m.nodes = 2;
  RunFacts run{"Test MPI 1.0", 2, 1};
  CHECK(misfit(m, run).empty());
  run.mpi_library = "Open MPI v4.1.4";
  CHECK(misfit(m, run).find("another MPI library") != std::string::npos);
  run.mpi_library = m.mpi_library;
  run.nodes = 1;
  CHECK(misfit(m, run).find("measured on 2 nodes, this run has 1") != std::string::npos);
  run.nodes = 2;
  m.level[1].measured = false;
  CHECK(misfit(m, run).find("no inter-node level") != std::string::npos);
  m.nodes = 1;
  m.level[0].measured = false;
  CHECK(misfit(m, {"Test MPI 1.0", 1, 4}).find("no intra-node level") != std::string::npos);
  CHECK(misfit(m, {"Test MPI 1.0", 1, 1}).empty());  // one rank per node needs no level
}

TEST_CASE("machine file: the node sweep is read in order, and interpolated by size and ranks") {
  const Machine m = sample();
  const Level& l = m.at(LevelKind::IntraNode);
  // At a measured point, its value; between two sizes, in log(size); outside, the end's value.
  CHECK(l.node_exchange(65536, 2) == Approx(0.10));
  CHECK(l.node_exchange(256 * 1024, 2) == Approx(0.13));  // half way in log2: 16 of 20 -> 18
  CHECK(l.node_exchange(4096, 2) == Approx(0.10));
  CHECK(l.node_exchange(64 << 20, 2) == Approx(0.16));
  CHECK(l.node_ring(1 << 20, 4) == Approx(0.11));
  // Ranks: the most measured up to the call's (3 -> 2, 8 -> 4); fewer than measured: the fewest.
  CHECK(l.node_exchange(1 << 20, 3) == Approx(0.16));
  CHECK(l.node_exchange(1 << 20, 8) == Approx(0.15));
  CHECK(l.node_exchange(1 << 20, 1) == Approx(0.16));
  // No sweep: the level's one rate.
  Level plain = l;
  plain.node_sweep.clear();
  CHECK(plain.node_exchange(1 << 20, 4) == Approx(plain.node_bi()));
  CHECK(plain.node_ring(1 << 20, 4) == Approx(plain.node_bi()));
  // Out of order: refused, naming the point.
  const std::string text = machine_json(m);
  const std::string swapped = edited(text, "\"ranks\": 4, \"exchange_ns_per_byte\": 0.12", "\"ranks\": 1, \"exchange_ns_per_byte\": 0.12");
  CHECK(refusal(swapped).find("node_sweep[2]") != std::string::npos);
}

TEST_CASE("machine file: buffered_send_bytes and memcpy_cold are optional: files without them load as not measured") {
  // Without them (version 3 files written before session 10, the start-up probe): not written,
  // read back as 0 / not measured.
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("buffered_send_bytes") == std::string::npos);
  CHECK(old_text.find("memcpy_cold") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK(old_back.at(LevelKind::IntraNode).buffered_send_bytes == 0);
  CHECK(old_back.at(LevelKind::InterNode).buffered_send_bytes == 0);
  CHECK_FALSE(old_back.memcpy_cold_measured());
  // With them: written, read back with their values, and part of the hash the ranks compare.
  Machine with = sample();
  with.level[1].buffered_send_bytes = 4 << 20;
  with.memcpy_cold = {1500, 0.31};
  const std::string text = machine_json(with);
  CHECK(text.find("\"buffered_send_bytes\": 4194304") != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK(back.at(LevelKind::InterNode).buffered_send_bytes == 4 << 20);
  CHECK(back.at(LevelKind::IntraNode).buffered_send_bytes == 0);  // this level's not measured
  REQUIRE(back.memcpy_cold_measured());
  CHECK(back.memcpy_cold.ns == Approx(1500));
  CHECK(back.memcpy_cold.ns_per_byte == Approx(0.31));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  // Present but wrong: refused, naming the field.
  CHECK(refusal(edited(text, "\"buffered_send_bytes\": 4194304", "\"buffered_send_bytes\": \"4m\"")).find(
            "levels.inter_node.buffered_send_bytes") != std::string::npos);
  CHECK(refusal(edited(text, "\"buffered_send_bytes\": 4194304", "\"buffered_send_bytes\": -1")).find(
            "buffered_send_bytes") != std::string::npos);
  CHECK(refusal(edited(text, "\"memcpy_cold\": {\"ns\"", "\"memcpy_cold\": {\"nanos\"")).find("guard.memcpy_cold") !=
        std::string::npos);
}

TEST_CASE("machine file: memcpy_cold_huge is optional; fresh staging of whole huge pages is priced by it") {
  Machine m = sample();
  m.memcpy_cold = {1500, 2.5};
  const std::string old_text = machine_json(m);
  CHECK(old_text.find("memcpy_cold_huge") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.memcpy_cold_huge_measured());
  CHECK(&old_back.fresh_staging(32 << 20) == &old_back.memcpy_cold);  // without it: pages never touched
  m.memcpy_cold_huge = {900, 0.06};
  m.huge_page_bytes = 2 << 20;
  const std::string text = machine_json(m);
  CHECK(text.find("\"huge_page_bytes\": 2097152") != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  REQUIRE(back.memcpy_cold_huge_measured());
  CHECK(back.memcpy_cold_huge.ns_per_byte == Approx(0.06));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(old_back));
  // Whole huge pages: the huge line; a block below one, or not a multiple: pages never touched.
  CHECK(back.fresh_staging(32 << 20).ns_per_byte == Approx(0.06));
  CHECK(back.fresh_staging(2 << 20).ns_per_byte == Approx(0.06));
  CHECK(back.fresh_staging(1 << 20).ns_per_byte == Approx(2.5));
  CHECK(back.fresh_staging(3 << 20).ns_per_byte == Approx(2.5));
  CHECK(refusal(edited(text, "\"huge_page_bytes\": 2097152", "\"huge_page_bytes\": \"2m\"")).find("huge_page_bytes") !=
        std::string::npos);
}

TEST_CASE("machine file: a level's shared_cpu is optional; files without it load as not measured") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("shared_cpu") == std::string::npos);
  CHECK_FALSE(must(parse_machine(old_text, "m.json")).at(LevelKind::InterNode).shared_cpu_measured());
  Machine with = sample();
  with.level[1].shared_cpu = {3000, 1.25};
  const std::string text = machine_json(with);
  const Machine back = must(parse_machine(text, "m.json"));
  REQUIRE(back.at(LevelKind::InterNode).shared_cpu_measured());
  CHECK_FALSE(back.at(LevelKind::IntraNode).shared_cpu_measured());
  CHECK(back.at(LevelKind::InterNode).shared_cpu.ns == Approx(3000));
  CHECK(back.at(LevelKind::InterNode).shared_cpu.ns_per_byte == Approx(1.25));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  CHECK(refusal(edited(text, "\"shared_cpu\": {\"ns\"", "\"shared_cpu\": {\"nanos\"")).find(
            "levels.inter_node.shared_cpu") != std::string::npos);
}

TEST_CASE("machine file: memcpy_in_call is optional; without it tnbc's copies in a call are priced at the memcpy line") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("memcpy_in_call") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.memcpy_in_call_measured());
  CHECK(old_back.in_call_copy().ns_per_byte == Approx(old_back.memcpy_cost.ns_per_byte));
  Machine with = sample();
  with.memcpy_in_call = {2500, 0.11};
  const Machine back = guard_line_read_back(with, without, "memcpy_in_call");
  REQUIRE(back.memcpy_in_call_measured());
  CHECK(back.in_call_copy().ns == Approx(2500));
  CHECK(back.in_call_copy().ns_per_byte == Approx(0.11));
}

TEST_CASE("machine file: memcpy_in_call_alone is optional; without it a broadcast root's copy is priced at the in-call line") {
  Machine without = sample();
  without.memcpy_in_call = {2500, 0.11};
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("memcpy_in_call_alone") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.memcpy_in_call_alone_measured());
  CHECK(old_back.in_call_copy_alone().at(1 << 20) == Approx(old_back.in_call_copy().at(1 << 20)));
  Machine with = without;
  with.memcpy_in_call_alone = fit_through({65536, 1 << 20}, {3e3, 70e3});
  const Machine back = guard_line_read_back(with, without, "memcpy_in_call_alone");
  REQUIRE(back.memcpy_in_call_alone_measured());
  CHECK(back.in_call_copy_alone().at(1 << 20) == Approx(70e3));
  CHECK(back.in_call_copy().ns_per_byte == Approx(0.11));  // the every-rank line stays
}

TEST_CASE("machine file: the load beside the calibration is optional, written and read back; above 5 % it is disturbed") {
  Machine quiet = sample();
  const std::string old_text = machine_json(quiet);
  CHECK(old_text.find("\"load\"") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.load_known());
  CHECK_FALSE(old_back.disturbed());
  quiet.others_cpu_share = 0.008;
  quiet.steal_share = 0.001;
  const std::string text = machine_json(quiet);
  CHECK(text.find("\"load\": {\"others_cpu_share\": 0.008") != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  REQUIRE(back.load_known());
  CHECK(back.others_cpu_share == Approx(0.008));
  CHECK(back.steal_share == Approx(0.001));
  CHECK_FALSE(back.disturbed());
  CHECK(machine_json(back) == text);
  Machine busy = quiet;
  busy.others_cpu_share = 0.31;
  CHECK(busy.disturbed());
  busy.others_cpu_share = 0.008;
  busy.steal_share = 0.07;  // the hypervisor's share counts alike
  CHECK(busy.disturbed());
  CHECK(refusal(edited(text, "\"others_cpu_share\": 0.008", "\"others_cpu_share\": -1")).find("load.others_cpu_share") !=
        std::string::npos);
  CHECK(refusal(edited(text, "\"load\": {\"others_cpu_share\": 0.008, \"steal_share\": 0.001}", "\"load\": 3")).find("load") !=
        std::string::npos);
}

TEST_CASE("machine file: the hand-over is optional; files without it load as not measured and the model charges none") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("handover_ns") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK(old_back.handover_ns < 0);
  CHECK(old_back.handover(false) == 0);
  Machine with = sample();
  with.handover_ns = 24e3;
  const std::string text = machine_json(with);
  CHECK(text.find("\"handover_ns\": 24000") != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK(back.handover(false) == Approx(24e3));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  CHECK(refusal(edited(text, "\"handover_ns\": 24000", "\"handover_ns\": \"24000\"")).find("handover_ns") !=
        std::string::npos);
}

TEST_CASE("machine file: in_call_rest is optional; files without it load as not measured and the model charges none") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("in_call_rest") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.in_call_rest_measured());
  CHECK(old_back.in_call_rest.at(4 << 20) == 0);
  Machine with = sample();
  with.in_call_rest = fit_through({65536, 1 << 20, 4 << 20}, {80e3, 100e3, 95e3});
  const Machine back = guard_line_read_back(with, without, "in_call_rest");
  REQUIRE(back.in_call_rest_measured());
  REQUIRE(back.in_call_rest.points.size() == 3);
  CHECK(back.in_call_rest.at(1 << 20) == Approx(100e3));
}

TEST_CASE("machine file: a broadcast receiver's rest is optional; written, read back; without it the exchange's rest prices it") {
  Machine without = sample();
  without.warm_below_bytes = 1 << 20;
  without.in_call_rest = fit_through({65536, 1 << 20}, {90e3, 150e3});
  without.in_call_rest_warm = fit_through({65536}, {10e3});
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("in_call_rest_bcast") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.in_call_rest_bcast_measured());
  CHECK(old_back.rest_bcast(1 << 20, false) == Approx(150e3));
  CHECK(old_back.rest_bcast(65536, true) == Approx(10e3));
  Machine with = without;
  with.in_call_rest_bcast = fit_through({65536, 1 << 20}, {80e3, 90e3});
  const Machine cold_only = guard_line_read_back(with, without, "in_call_rest_bcast");
  REQUIRE(cold_only.in_call_rest_bcast_measured());
  CHECK(cold_only.rest_bcast(1 << 20, false) == Approx(90e3));
  CHECK(cold_only.rest_bcast(65536, true) == Approx(80e3));  // no warm line: the cold one
  CHECK(cold_only.rest(1 << 20, false) == Approx(150e3));     // the exchange's unchanged
  with.in_call_rest_bcast_warm = fit_through({65536, 262144}, {20e3, 5e3});
  const Machine back = guard_line_read_back(with, cold_only, "in_call_rest_bcast_warm");
  CHECK(back.rest_bcast(65536, true) == Approx(20e3));
  CHECK(back.rest_bcast(65536, false) == Approx(80e3));
}

TEST_CASE("machine file: where ranks share a node, the rests measured warm only price the warm calls; the cold ones none") {
  Machine without = sample();
  without.warm_below_bytes = 1 << 20;
  Machine with = without;  // calibrate on shared memory: warm lines, no cold ones
  with.in_call_rest_warm = fit_through({65536}, {9e3});
  with.in_call_rest_bcast_warm = fit_through({65536}, {4e3});
  with.in_call_rest_bcast_root_warm = fit_through({65536}, {6e3});
  const Machine back = must(parse_machine(machine_json(with), "m.json"));
  REQUIRE_FALSE(back.in_call_rest_measured());
  REQUIRE_FALSE(back.in_call_rest_bcast_measured());
  REQUIRE_FALSE(back.in_call_rest_bcast_root_measured());
  REQUIRE(back.prices_warm());
  CHECK(back.warm(4 * 65536));
  CHECK(back.rest(65536, true) == Approx(9e3));
  CHECK(back.rest_bcast(65536, true) == Approx(4e3));  // its own warm line, not the exchange's
  CHECK(back.rest_bcast_root(65536, true) == Approx(6e3));
  CHECK(back.rest(4 << 20, false) == 0);  // the cold calls: no rest charged, as before
  CHECK(back.rest_bcast(4 << 20, false) == 0);
  CHECK(back.rest_bcast_root(4 << 20, false) == 0);
}

TEST_CASE("machine file: a broadcast root's rest is optional; written, read back; without it the root is charged none") {
  Machine without = sample();
  without.warm_below_bytes = 1 << 20;
  without.in_call_rest = fit_through({65536, 1 << 20}, {90e3, 150e3});
  without.in_call_rest_warm = fit_through({65536}, {10e3});
  without.in_call_rest_bcast = fit_through({65536, 1 << 20}, {80e3, 90e3});
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("in_call_rest_bcast_root") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.in_call_rest_bcast_root_measured());
  CHECK(old_back.rest_bcast_root(1 << 20, false) == 0);
  CHECK(old_back.rest_bcast_root(65536, true) == 0);
  Machine with = without;
  with.in_call_rest_bcast_root = fit_through({65536, 1 << 20}, {30e3, 120e3});
  const Machine cold_only = guard_line_read_back(with, without, "in_call_rest_bcast_root");
  REQUIRE(cold_only.in_call_rest_bcast_root_measured());
  CHECK(cold_only.rest_bcast_root(1 << 20, false) == Approx(120e3));
  CHECK(cold_only.rest_bcast_root(65536, true) == Approx(30e3));  // no warm line: the cold one
  CHECK(cold_only.rest_bcast(1 << 20, false) == Approx(90e3));     // the receivers' unchanged
  with.in_call_rest_bcast_root_warm = fit_through({65536, 262144}, {5e3, 8e3});
  const Machine back = guard_line_read_back(with, cold_only, "in_call_rest_bcast_root_warm");
  CHECK(back.rest_bcast_root(65536, true) == Approx(5e3));
  CHECK(back.rest_bcast_root(65536, false) == Approx(30e3));
}

TEST_CASE("machine file: what tnbc's own transfer takes from a computation is optional; written, read back") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("cpu_taken") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.cpu_taken.measured());
  CHECK_FALSE(old_back.cpu_taken_bcast.measured());
  Machine with = sample();
  with.cpu_taken = fit_through({65536, 1 << 20, 4 << 20}, {0, 1.5e6, 4.9e6});
  with.cpu_taken_bcast = fit_through({65536, 1 << 20}, {16e3, 0.7e6});
  const std::string text = machine_json(with);
  const Machine back = must(parse_machine(text, "m.json"));
  REQUIRE(back.cpu_taken.points.size() == 3);
  CHECK(back.cpu_taken.at(1 << 20) == Approx(1.5e6));
  REQUIRE(back.cpu_taken_bcast.points.size() == 2);
  CHECK(back.cpu_taken_bcast.at(65536) == Approx(16e3));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  CHECK(refusal(edited(text, "\"cpu_taken\": {", "\"cpu_taken\": 3, \"x\": {")).find("cpu_taken") != std::string::npos);
}

TEST_CASE("machine file: a guard's first reads are optional; written, read back; without them the publication holds them") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("first_read") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  for (int b = 0; b < kGuardBackends; ++b) CHECK_FALSE(old_back.guard[b].first_read.measured());
  Machine with = sample();
  REQUIRE(with.guard_measured[2]);
  with.guard[2].first_read = fit_through({4096, 1 << 20, 4 << 20}, {8e3, 1.15e6, 4.4e6});
  const std::string text = machine_json(with);
  const Machine back = must(parse_machine(text, "m.json"));
  REQUIRE(back.guard[2].first_read.points.size() == 3);
  CHECK(back.guard[2].first_read.at(1 << 20) == Approx(1.15e6));
  CHECK_FALSE(back.guard[0].first_read.measured());
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
}

TEST_CASE("machine file: the warm figures and the first round are optional; written, read back; without them every call is priced cold") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  for (const char* key : {"warm_below_bytes", "hold_warm", "in_call_rest_warm", "handover_warm_ns", "first_round_ns"})
    CHECK(old_text.find(key) == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK_FALSE(old_back.warm(1));
  CHECK(old_back.first_round() == 0);
  Machine with = sample();
  with.warm_below_bytes = 1 << 20;
  with.handover_warm_ns = 11e3;
  with.handover_ns = 24e3;
  with.in_call_rest = fit_through({65536, 1 << 20}, {60e3, 45e3});
  with.in_call_rest_warm = fit_through({65536}, {25e3});
  with.guard[0].hold_warm = fit_through({4096, 65536}, {9e3, 17e3});
  with.first_round_ns = 66e3;
  const std::string text = machine_json(with);
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  CHECK(back.warm((1 << 20) - 1));
  CHECK_FALSE(back.warm(1 << 20));  // as large as the cache: cold
  CHECK(back.first_round() == Approx(66e3));
  CHECK(back.handover(true) == Approx(11e3));
  CHECK(back.handover(false) == Approx(24e3));
  CHECK(back.rest(65536, true) == Approx(25e3));
  CHECK(back.rest(65536, false) == Approx(60e3));
  CHECK(back.guard[0].hold_at(65536, true) == Approx(17e3));
  CHECK(back.guard[0].hold_at(65536, false) == Approx(back.guard[0].hold.at(65536)));
  // A warm figure that was not measured falls back to the cold one.
  CHECK(back.guard[2].hold_at(65536, true) == Approx(back.guard[2].hold.at(65536)));
  // Without tnbc's own call measured warm (ranks sharing a node) no call is priced warm.
  Machine no_rest = back;
  no_rest.in_call_rest_warm = {};
  CHECK_FALSE(no_rest.warm(65536));
  Machine no_handover = back;
  no_handover.handover_warm_ns = -1;
  CHECK(no_handover.handover(true) == Approx(24e3));
  CHECK(refusal(edited(text, "\"handover_warm_ns\": 11000", "\"handover_warm_ns\": \"fast\"")).find("handover_warm_ns") !=
        std::string::npos);
}

TEST_CASE("machine file: a cost's measured points and MPI_Isend's time per size are optional, written and read back") {
  const Machine without = sample();
  const std::string old_text = machine_json(without);
  CHECK(old_text.find("points") == std::string::npos);
  CHECK(old_text.find("post_ns") == std::string::npos);
  const Machine old_back = must(parse_machine(old_text, "m.json"));
  CHECK(old_back.guard[0].hold.points.empty());
  CHECK(old_back.at(LevelKind::InterNode).sweep[0].post_ns < 0);  // not measured
  Machine with = sample();
  with.memcpy_in_call = {16e3, 0.05};
  with.memcpy_in_call.points = {{65536, 8e3}, {1 << 20, 60e3}, {4 << 20, 230e3}};
  with.guard[0].hold.points = {{4096, 6e3}, {65536, 20e3}};
  for (SizePoint& p : with.level[1].sweep) p.post_ns = p.bytes / 10;
  const std::string text = machine_json(with);
  CHECK(text.find("\"points\": [[65536, 8000], [1048576, 60000], [4194304, 230000]]") != std::string::npos);
  const Machine back = must(parse_machine(text, "m.json"));
  CHECK(machine_json(back) == text);
  CHECK(machine_hash(back) != machine_hash(without));
  REQUIRE(back.memcpy_in_call.points.size() == 3);
  CHECK(back.guard[0].hold.points[1].ns == Approx(20e3));
  CHECK(back.at(LevelKind::InterNode).sweep[1].post_ns == Approx(6553.6));
  CHECK(refusal(edited(text, "[65536, 8000], [1048576", "[65536, 8000], [65536")).find(
            "guard.memcpy_in_call.points[1]") != std::string::npos);
  CHECK(refusal(edited(text, "[65536, 8000]", "[65536]")).find("expected [bytes > 0, ns >= 0]") != std::string::npos);
}

TEST_CASE("a cost through its measured points: in proportion below the first, linear between, the last slope beyond") {
  Line l(50e3, 0.04);  // a least-squares line: its intercept alone exceeds the smallest size's cost
  CHECK(l.at(65536) == Approx(50e3 + 0.04 * 65536));
  l.points = {{65536, 20e3}, {1 << 20, 80e3}, {4 << 20, 200e3}};
  CHECK(l.at(65536) == Approx(20e3));
  CHECK(l.at(16384) == Approx(5e3));  // no fixed part below the first size measured
  CHECK(l.at(0) == Approx(0));
  const double mid = 65536 + (1048576 - 65536) / 2.0;
  CHECK(l.at(mid) == Approx(50e3));
  CHECK(l.at(8 << 20) == Approx(200e3 + 120e3 / 3145728.0 * 4194304));
}

TEST_CASE("a cost as people read it: its measured points where kept (what Line::at goes through), else its line") {
  Line l(50e3, 0.04);
  CHECK(cost_text(l) == "50.0 us + 41.9 us/MiB");
  l.points = {{65536, 4500}, {1 << 20, 90e3}, {16 << 20, 1.25e6}};
  CHECK(cost_text(l) == "4.5 us at 64 KiB, 90.0 us at 1 MiB, 1.25 ms at 16 MiB");
  CHECK(cost_text(Line{}) == "0.0 us + 0.0 us/MiB");
}

TEST_CASE("calibrate's passes: per size the median over the passes that measured it, one disturbed pass outvoted") {
  const std::vector<double> sizes{65536, 1 << 20, 4 << 20};
  // The middle pass disturbed at the larger sizes (as one calibration here: 4 MiB at 3.8 ms).
  const std::vector<std::vector<double>> passes{{4e3, 90e3, 300e3}, {4.2e3, 237e3, 3.8e6}, {3.8e3, 95e3, 320e3}};
  const Line l = fit_through_pass_medians(sizes, passes);
  REQUIRE(l.points.size() == 3);
  CHECK(l.points[0].ns == Approx(4e3));
  CHECK(l.points[1].ns == Approx(95e3));
  CHECK(l.points[2].ns == Approx(320e3));
  CHECK(l.at(4 << 20) == Approx(320e3));
  // A size no pass measured (< 0: a rank failed) is left out; two passes: their mean.
  const Line two = fit_through_pass_medians(sizes, {{4e3, -1, 300e3}, {6e3, -1, 340e3}});
  REQUIRE(two.points.size() == 2);
  CHECK(two.points[0].bytes == Approx(65536));
  CHECK(two.points[0].ns == Approx(5e3));
  CHECK(two.points[1].ns == Approx(320e3));
  // Fewer than two sizes measured, or no pass: no line (the model keeps the memcpy line).
  CHECK(fit_through_pass_medians(sizes, {{-1, -1, 300e3}}).points.empty());
  CHECK(fit_through_pass_medians(sizes, {}).ns_per_byte == 0);
}

TEST_CASE("LogGP's L from a size sweep: the fastest small size, a disturbed 1-byte point outvoted") {
  auto point = [](double bytes, double t, double os, double orr) {
    SizePoint p;
    p.bytes = bytes, p.t_ns = t, p.os_ns = os, p.or_ns = orr;
    return p;
  };
  // As the MPICH calibrations under CI (3 ranks on 2 CPUs): the 1-byte point 2 ms, the next sizes microseconds.
  const std::vector<SizePoint> disturbed{point(1, 2.003e6, 170, 220), point(64, 2400, 175, 225),
                                         point(1024, 2600, 230, 290), point(4096, 1e3, 0, 0)};
  CHECK(latency_of(disturbed) == Approx(2400 - 175 - 225));
  // Undisturbed: the 1-byte point; sizes above 1 KiB never count (their T carries the bytes).
  const std::vector<SizePoint> calm{point(1, 1983, 155, 0), point(64, 2200, 153, 137), point(1024, 2606, 53, 168),
                                    point(4096, 100, 0, 0)};
  CHECK(latency_of(calm) == Approx(1983 - 155));
  CHECK(latency_of({point(1, 100, 80, 60)}) == 0);  // o_s + o_r above T: no latency left
  CHECK(latency_of({}) == 0);
}

TEST_CASE("MPI_Isend's time per size: interpolated through the sweep, or a small send's CPU where not measured") {
  Level l = test::level(60, 117, 12, 280);
  l.sweep = {{4096, 90e3, 12e3, 13e3, 40e3}, {65536, 600e3, 20e3, 30e3, 560e3}};
  CHECK(l.post(65536, 4096) == Approx(l.o_s(4096)));  // not measured: the envelope's CPU, as before
  l.sweep[0].post_ns = 3e3;
  CHECK(l.post(65536, 4096) == Approx(l.o_s(4096)));  // measured at one size only: not measured
  l.sweep[1].post_ns = 15e3;
  CHECK(l.post(4096, 4096) == Approx(3e3));
  CHECK(l.post(34816, 4096) == Approx(9e3));
  CHECK(l.post(131072, 4096) == Approx(15e3 + 12e3 / 61440.0 * 65536));
}
