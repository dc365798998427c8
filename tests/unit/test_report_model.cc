// `tnbc report`'s cost-model section (tools/report_model.hh): a run whose machine file was
// calibrated while other processes took more than kLoadNoteShare of the CPUs says so, with the
// shares; a quiet calibration, or a file without the load (older), says nothing of it.
#include <catch2/catch.hpp>

#include <string>

#include "machines.hh"
#include "runtime/model/machine.hh"
#include "temp_dir.hh"
#include "tools/report_model.hh"

using namespace tnbc;

namespace {

// The cost model section of a run whose rank 0 summary embeds `m` as its machine file.
std::string section_with(const model::Machine& m) {
  TempDir d;
  d.write("tnbc-summary.0.json", "{\"rank\": 0, \"model\": {\"source\": \"file\", \"file\": \"m.json\", \"machine\": " +
                                     model::machine_json(m) + "}}");
  return tools::model_section(d.str(), [](const std::string& where) { return where; });
}

}  // namespace

TEST_CASE("report: a machine calibrated beside other processes is said, a quiet one not") {
  model::Machine m = test::machine(125);
  const std::string older = section_with(m);
  REQUIRE(older.find("the machine file m.json") != std::string::npos);
  CHECK(older.find("calibrated while") == std::string::npos);
  m.others_cpu_share = 0.012;
  m.steal_share = 0.001;
  CHECK(section_with(m).find("calibrated while") == std::string::npos);
  m.others_cpu_share = 0.31;
  CHECK(section_with(m).find("calibrated while other processes took 31 % of the CPU time (the hypervisor 0 %)") !=
        std::string::npos);
  m.others_cpu_share = 0.012;
  m.steal_share = 0.09;
  CHECK(section_with(m).find("(the hypervisor 9 %)") != std::string::npos);
  // The hypervisor alone: that may be the host's steady share, said so; other processes: a quiet node.
  CHECK(section_with(m).find("unless its hypervisor always takes that much") != std::string::npos);
  m.others_cpu_share = 0.31;
  CHECK(section_with(m).find("likely high; calibrate again on a quiet node\n") != std::string::npos);
}
