// Mode optimize's plain program (trace/plain_run.hh), judged before MPI_Init from the profile and
// the machine file: every site no gain -> plain; one site that gains -> not plain; ranks whose
// inputs differ (another MPI library than the machine file's, another margin) judge differently,
// and agree_plain() then takes the disagreement path (every call the MPI library's own).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "machines.hh"
#include "profiles.hh"
#include "runtime/config.hh"
#include "runtime/model/machine.hh"
#include "temp_dir.hh"
#include "trace/plain_run.hh"

using namespace tnbc;
using namespace tnbc::test;
using namespace tnbc::trace;

namespace {

constexpr const char* kApp = "/x/app";  // profile_of's executable

// Ranks that read the 4 MiB they receive at once (no gain), or compute `curc_ms` first.
std::vector<RankValues> ranks(int np, double curc_ms) {
  std::vector<RankValues> r(static_cast<std::size_t>(np));
  for (auto& v : r) v.curc_ns = curc_ms * kMs, v.dur_ns = 20 * kMs;
  return r;
}

struct Setup {
  TempDir dir;
  Settings s;
  std::string library = "Test MPI 1.0";  // test::machine's
  // One alltoall site per entry of `curc_ms` over np 2 ranks.
  Setup(const std::vector<double>& curc_ms) {
    std::vector<std::string> sites;
    for (std::size_t k = 0; k < curc_ms.size(); ++k)
      sites.push_back(site_text(ranks(2, curc_ms[k]), true, "0x00000000000000" + std::to_string(51 + k), 2));
    model::Machine m = machine(1000);
    m.ranks = m.ranks_per_node = 2;
    s.mode = Mode::Optimize;
    s.profile_blocking = ProfileBlocking::Auto;
    // Not the defaults (measured, they may change): the cases below sit around 30 %. Both ranks on
    // one node (the machine's 2 per node): the shared-node margin applies.
    s.early_return_margin_shared_node_pct = 30;
    s.early_return_margin_cost_pct = 15;
    s.profile = dir.write("app.profile", profile_of(2, sites));
    s.machine = dir.write("machine.json", model::machine_json(m));
  }
  PlainRun judge(const Settings& with) const { return judge_plain_run(with, kApp, library, 1); }
  PlainRun judge() const { return judge(s); }
};

}  // namespace

TEST_CASE("plain run: every site no gain -> the plain program, each site recorded as plain") {
  const Setup t({0.05, 0.05});
  const PlainRun r = t.judge();
  CHECK(r.plain);
  CHECK(r.np == 2);
  REQUIRE(r.sites.size() == 2);
  for (const auto& site : r.sites) CHECK(site.decision == "plain");
  CHECK_THAT(r.because, Catch::Contains("is judged no gain by the cost model"));
  CHECK_THAT(r.because, Catch::Contains(t.s.machine));
}

TEST_CASE("plain run: one site that gains -> not plain, naming why") {
  // The second site computes 18 ms of its 20 ms Tcomm before it reads: the model predicts a
  // saving far above the margin (30 % of Tcomm + 15 % of the cost, set above).
  const Setup t({0.05, 18});
  const PlainRun r = t.judge();
  CHECK_FALSE(r.plain);
  CHECK(r.sites.empty());
  CHECK_THAT(r.because, Catch::Contains("a site returns early"));
}

TEST_CASE("plain run: a site whose calls tnbc's schedule completes faster than the library's -> not plain") {
  // np 4 on 2 one-CPU nodes whose MPI ranks spin (machines.hh): ranks that read the 4 MiB they
  // receive at once, the library's call measured at 92 ms. The same site where the calibration
  // shows no spinning: no gain, the plain program.
  for (const bool spins : {true, false}) {
    TempDir dir;
    Settings s;
    s.mode = Mode::Optimize;
    s.profile_blocking = ProfileBlocking::Auto;
    std::vector<RankValues> r(4);
    for (auto& v : r) v.curc_ns = 0.18 * kMs, v.dur_ns = 92 * kMs;
    s.profile = dir.write("app.profile", profile_of(4, {site_text(r, true, "0x0000000000000051", 4)}));
    s.machine = dir.write("machine.json", model::machine_json(spinning_nodes(spins)));
    const PlainRun p = judge_plain_run(s, kApp, "Test MPI 1.0", 1);
    CHECK(p.plain == !spins);
    if (spins) CHECK_THAT(p.because, Catch::Contains("a site runs tnbc's schedule in the call"));
  }
}

TEST_CASE("plain run: not asked, or without a machine file -> not plain") {
  const Setup t({0.05});
  Settings nbc = t.s;
  nbc.mode = Mode::Nbc;
  CHECK_FALSE(t.judge(nbc).plain);
  Settings off = t.s;
  off.profile_blocking = ProfileBlocking::Off;
  CHECK_FALSE(t.judge(off).plain);
  Settings no_machine = t.s;
  no_machine.machine.clear();
  const PlainRun r = t.judge(no_machine);
  CHECK_FALSE(r.plain);
  CHECK_THAT(r.because, Catch::Contains("no machine file"));
  // Another executable than the profile's: the profile does not fit, never plain.
  CHECK_FALSE(judge_plain_run(t.s, "/x/other", t.library, 1).plain);
}

TEST_CASE("plain run: inputs that differ between ranks -> verdicts differ -> the disagreement path") {
  Setup t({0.05, 4});
  // Both sites' predicted savings (4 ms + ~1 ms of reading, less tnbc's cost) lie within 30 % of
  // 20 ms: by default the site trial decides them (TNBC_TRY_WITHIN_MARGIN), so no plain program.
  const PlainRun tried = t.judge();
  CHECK_FALSE(tried.plain);
  CHECK_THAT(tried.because, Catch::Contains("a site returns early"));
  t.s.try_within_margin = Switch::Off;
  // Rank A, without that: both sites no gain.
  const PlainRun a = t.judge();
  REQUIRE(a.plain);
  // Rank B, another MPI library than the machine file's: the file does not describe it, no verdict.
  const PlainRun b = judge_plain_run(t.s, kApp, "Other MPI 9.9", 1);
  CHECK_FALSE(b.plain);
  // Rank C, a margin of 0: the second site's predicted saving now pays.
  Settings zero = t.s;
  zero.early_return_margin_shared_node_pct = 0;
  zero.early_return_margin_cost_pct = 0;
  const PlainRun c = t.judge(zero);
  CHECK_FALSE(c.plain);
  // What MPI_Init's comparison (MPI_MIN and MPI_MAX of the verdicts) then does.
  CHECK(agree_plain(a.plain && b.plain, a.plain || b.plain) == PlainAgreement::Disagree);
  CHECK(agree_plain(a.plain && c.plain, a.plain || c.plain) == PlainAgreement::Disagree);
  CHECK(agree_plain(a.plain && a.plain, a.plain || a.plain) == PlainAgreement::Plain);
  CHECK(agree_plain(b.plain && c.plain, b.plain || c.plain) == PlainAgreement::Engine);
}

TEST_CASE("plain run: the run's sites against the profile that decided it") {
  const Setup t({0.05});
  const PlainRun p = t.judge();
  REQUIRE(p.plain);
  REQUIRE(p.recorded.size() == 1);  // profiles.hh: alltoall at app+0x10, 4 MiB a call on ranks 0 and 1
  // The sizes the profile recorded, from the module's path: nothing to say.
  const SizesNotRecorded same = sizes_not_recorded(p, 0, {{"alltoall", "/home/u/app", 0x10, 10, 40 * kMiB}});
  CHECK(same.sites.empty());
  CHECK(same.other_sizes_calls + same.unknown_site_calls == 0);
  // A larger class of the program: 8 MiB a call.
  const SizesNotRecorded larger = sizes_not_recorded(p, 1, {{"alltoall", "/home/u/app", 0x10, 10, 80 * kMiB}});
  CHECK(larger.other_sizes_calls == 10);
  REQUIRE(larger.sites.size() == 1);
  CHECK_THAT(larger.sites[0], Catch::Contains("alltoall at app+0x10") && Catch::Contains("8 MiB received a call") &&
                                  Catch::Contains("the profile 4 MiB"));
  // Sizes that vary: their mean is not the one size recorded.
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "/home/u/app", 0x10, 3, 12 * kMiB + 1}}).other_sizes_calls == 3);
  // A site the profile does not hold (another offset, another kind at the same place).
  const SizesNotRecorded unknown = sizes_not_recorded(
      p, 0, {{"alltoall", "/home/u/app", 0x20, 5, 20 * kMiB}, {"bcast", "/home/u/app", 0x10, 2, 8}});
  CHECK(unknown.unknown_site_calls == 7);
  CHECK(unknown.other_sizes_calls == 0);
  REQUIRE(unknown.sites.size() == 2);
  CHECK_THAT(unknown.sites[0], Catch::Contains("alltoall at app+0x20 (not in the profile)"));
  // A site never called says nothing; a module is known by its basename wherever it lies.
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "/home/u/app", 0x20, 0, 0}}).sites.empty());
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "/other/app", 0x10, 10, 40 * kMiB}}).sites.empty());
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "/home/u/app2", 0x10, 10, 40 * kMiB}}).unknown_site_calls == 10);
}

TEST_CASE("plain run: sizes compared only where the profile recorded one size a receiving rank took") {
  // A rank with two sizes at the site (two keys): its median says too little, the site matches alone.
  Setup t({0.05});
  std::vector<RankValues> r = ranks(2, 0.05);
  r[1].keys = {"0x00000000000000a1", "0x00000000000000a2"};
  t.s.profile = t.dir.write("two.profile", profile_of(2, {site_text(r, true, "0x0000000000000051", 2)}));
  const PlainRun p = t.judge();
  REQUIRE(p.plain);
  CHECK(sizes_not_recorded(p, 1, {{"alltoall", "app", 0x10, 10, 50 * kMiB}}).sites.empty());
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "app", 0x10, 10, 50 * kMiB}}).other_sizes_calls == 10);
  // A broadcast's root (the profile: it receives nothing; its summary counts the message) and an
  // Alltoallv (blocks differ between calls, as mode optimize's engine matches it): the site alone.
  PlainRun q;
  q.recorded = {{"bcast", "app", 0x30, {{1, 4096}}}, {"alltoallv", "app", 0x40, {{0, kMiB}, {1, kMiB}}}};
  CHECK(sizes_not_recorded(q, 0, {{"bcast", "app", 0x30, 4, 4 * 4096}}).sites.empty());
  CHECK(sizes_not_recorded(q, 1, {{"bcast", "app", 0x30, 4, 4 * 8192}}).other_sizes_calls == 4);
  CHECK(sizes_not_recorded(q, 1, {{"alltoallv", "app", 0x40, 4, 4 * 8 * kMiB}}).sites.empty());
}

TEST_CASE("plain run: profile sites sharing an innermost frame are compared only where they recorded one size") {
  // One function calling MPI_Alltoall from two places: two profile sites, one summary site.
  PlainRun p;
  p.recorded = {{"alltoall", "app", 0x50, {{0, kMiB}}}, {"alltoall", "app", 0x50, {{0, kMiB}}}};
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "app", 0x50, 4, 4 * kMiB}}).sites.empty());
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "app", 0x50, 4, 8 * kMiB}}).other_sizes_calls == 4);
  // Two sizes: the summary's sum says nothing about either.
  p.recorded[1].bytes_per_call = {{0, 2 * kMiB}};
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "app", 0x50, 4, 6 * kMiB}}).sites.empty());
  CHECK(sizes_not_recorded(p, 0, {{"alltoall", "app", 0x50, 4, 64 * kMiB}}).sites.empty());
}
