// Profile reader (trace/profile.hh) and its JSON reader (trace/json.hh): a profile written by
// the merge is read back; every way a profile can be wrong is refused with a message naming
// the file and the problem; the look-up tells found / unknown site / other sizes apart.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "temp_dir.hh"
#include "runtime/json.hh"
#include "tools/merge.hh"
#include "trace/profile.hh"
#include "results.hh"

using namespace tnbc::trace;
using namespace tnbc::tools;
namespace json = tnbc::json;

namespace {

constexpr std::uint64_t kSite = 0x18fdad14da2165e1ULL, kKey0 = 0x8d5bd2b14e64748fULL;

// Rank r's trace of a run of np ranks of `executable` that ended at MPI_Finalize, without sites or calls.
TraceFile trace_file(int r, int np, const char* executable) {
  TraceFile t;
  t.rank = r;
  t.size = np;
  t.executable = executable;
  t.run_id = "23814d3d785c9bc7";
  t.clock = "monotonic";
  t.ended_by = "finalize";
  return t;
}

// Two ranks' traces of one alltoall site (4 sub-messages read 3,1,2,0 on both ranks) merged
// into the JSON text `tnbc merge` writes.
std::string merged_profile_text(int np = 2) {
  std::vector<TraceFile> traces;
  for (int r = 0; r < np; ++r) {
    TraceFile t = trace_file(r, np, "/work/app/ft.x");
    t.sites.push_back({kSite, "alltoall", np, {{"ft.x", 0x15e4, "fft_"}}});
    CallRecord c;
    c.site = kSite;
    c.key = kKey0 + static_cast<std::uint64_t>(r);
    c.traced = true;
    c.subs.resize(4);
    const int order[] = {3, 1, 2, 0};
    for (int k = 0; k < 4; ++k) {
      SubRecord& s = c.subs[static_cast<std::size_t>(order[k])];
      s.bytes = 16384;
      s.guarded = true;
      s.order = k;
      s.t_ns = 1000 * (k + 1);
      s.how = How::Read;
    }
    t.calls.push_back(c);
    traces.push_back(t);
  }
  return profile_json(must(merge(traces)));
}

// The error of reading `text` from a file in `dir`.
std::string rejection(const TempDir& dir, const std::string& text) {
  const std::string path = dir.write("bad.profile", text);
  const std::string m = error_of(read_profile(path));
  if (!m.empty()) {
    CHECK(m.find(path) != std::string::npos);  // every message names the file
    return m;
  }
  FAIL("accepted a bad profile: " << text.substr(0, 200));
  return {};
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("json: values, escapes, positions") {
  const json::Value v = must(json::parse(" {\"a\": [1, -2.5e3, true, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\",\n \"n\": {}}"));
  REQUIRE(v.type == json::Value::Type::Object);
  const json::Value* a = v.find("a");
  REQUIRE(a);
  REQUIRE(a->items.size() == 4);
  CHECK(a->items[0].integer);
  CHECK(a->items[0].int_value == 1);
  CHECK_FALSE(a->items[1].integer);
  CHECK(a->items[1].number == -2500.0);
  CHECK(a->items[2].boolean);
  CHECK(a->items[3].type == json::Value::Type::Null);
  CHECK(v.find("s")->string == "x\xc3\xa9\xf0\x9f\x98\x80\n");
  CHECK(v.find("n")->line == 2);
  CHECK(v.find("n")->column == 7);
  CHECK(v.find("missing") == nullptr);
}

TEST_CASE("json: syntax errors say where and what") {
  CHECK_THAT(error_of(json::parse("{\"a\": 1")), Catch::Contains("line 1") && Catch::Contains("truncated"));
  CHECK_THAT(error_of(json::parse("[1, 2,")), Catch::Contains("truncated"));
  CHECK_THAT(error_of(json::parse("{\"a\": tru")), Catch::Contains("truncated"));
  CHECK_THAT(error_of(json::parse("{\"a\": 1,\n \"a\": 2}")), Catch::Contains("line 2") && Catch::Contains("duplicate"));
  CHECK_THAT(error_of(json::parse("{\"a\": 1} x")), Catch::Contains("after the end"));
  CHECK_THAT(error_of(json::parse("[01]")), Catch::Contains("expected ',' or ']'"));
  CHECK_THAT(error_of(json::parse("[1.]")), Catch::Contains("digits"));
  CHECK_THAT(error_of(json::parse("\"a\tb\"")), Catch::Contains("control character"));
  CHECK_THAT(error_of(json::parse("\"\\x\"")), Catch::Contains("invalid escape"));
  CHECK_THAT(error_of(json::parse("\"\\ud800\"")), Catch::Contains("surrogate"));
  CHECK_THAT(error_of(json::parse("{'a': 1}")), Catch::Contains("member name"));
  CHECK_THAT(error_of(json::parse(std::string(100, '[') + std::string(100, ']'))), Catch::Contains("64 levels"));
  CHECK_THAT(error_of(json::parse("")), Catch::Contains("truncated"));
}

TEST_CASE("profile: the merge's output is read back") {
  TempDir dir;
  const LoadedProfile p = must(read_profile(dir.write("app.profile", merged_profile_text())));
  CHECK(p.np == 2);
  CHECK(p.executable == "/work/app/ft.x");
  REQUIRE(p.sites.size() == 1);
  const ProfileSite& s = p.sites[0];
  CHECK(s.site == kSite);
  CHECK(s.kind == "alltoall");
  CHECK(s.comm_size == 2);
  CHECK(s.sub_messages == 4);
  CHECK(s.consensus == std::vector<int>{3, 1, 2, 0});
  CHECK(s.where == "fft_ (ft.x+0x00000000000015e4)");
  REQUIRE(s.ranks.size() == 2);
  CHECK(s.ranks[1].rank == 1);
  CHECK(s.ranks[1].receives);
  CHECK(s.ranks[1].order == std::vector<int>{3, 1, 2, 0});
  CHECK(s.ranks[1].keys == std::vector<std::uint64_t>{kKey0 + 1});
  CHECK(check_profile_run(p, 2, "/work/app/ft.x").ok());
}

TEST_CASE("profile: blocks per peer (sub_bytes) from the merge, read back; older profiles load without them") {
  // Rank r receives 4 KiB x (1 + k) from peer k in its first call, twice that in the second and
  // three times in the third: the profile keeps each peer's median (the second call's).
  std::vector<TraceFile> traces;
  for (int r = 0; r < 2; ++r) {
    TraceFile t = trace_file(r, 2, "/work/app/is.x");
    t.sites.push_back({kSite, "alltoallv", 2, {{"is.x", 0x1654, "rank"}}});
    for (std::uint64_t call : {1, 3, 2}) {
      CallRecord c;
      c.seq = call;
      c.site = kSite;
      c.key = kKey0 + call;
      c.subs.resize(2);
      for (std::size_t k = 0; k < 2; ++k) c.subs[k].bytes = call * 4096 * (1 + k + static_cast<std::size_t>(r));
      t.calls.push_back(c);
    }
    traces.push_back(t);
  }
  const std::string text = profile_json(must(merge(traces)));
  TempDir dir;
  const LoadedProfile p = must(read_profile(dir.write("v.profile", text)));
  REQUIRE(p.sites.size() == 1);
  REQUIRE(p.sites[0].ranks.size() == 2);
  CHECK(p.sites[0].ranks[0].sub_bytes == std::vector<double>{8192, 16384});
  CHECK(p.sites[0].ranks[1].sub_bytes == std::vector<double>{16384, 24576});
  // A profile merged before the field existed loads, without blocks per peer.
  const std::string old = replace_once(replace_once(text, "\"sub_bytes\": [8192, 16384], ", ""),
                                       "\"sub_bytes\": [16384, 24576], ", "");
  const LoadedProfile o = must(read_profile(dir.write("old.profile", old)));
  CHECK(o.sites[0].ranks[0].sub_bytes.empty());
  CHECK(o.sites[0].ranks[1].bytes_per_call == 40960u);
  // One entry per sub-message, each a number >= 0.
  CHECK_THAT(rejection(dir, replace_once(text, "[8192, 16384]", "[8192]")),
             Catch::Contains("sites[0].ranks[0].sub_bytes: 1 entries, the site has 2 sub-messages"));
  CHECK_THAT(rejection(dir, replace_once(text, "[8192, 16384]", "[8192, -1]")),
             Catch::Contains("sites[0].ranks[0].sub_bytes[1]: expected a number >= 0"));
  // Only where blocks can differ (Alltoallv, Allgatherv): an Alltoall's profile has no sub_bytes
  // (a number per rank and peer: ~7 MB per site at 1024 ranks) ...
  CHECK(blocks_can_differ("alltoallv"));
  CHECK(blocks_can_differ("allgatherv"));
  CHECK_FALSE(blocks_can_differ("alltoall"));
  CHECK_FALSE(blocks_can_differ("bcast"));
  for (TraceFile& t : traces) t.sites[0].kind = "alltoall";
  const std::string even = profile_json(must(merge(traces)));
  CHECK(even.find("sub_bytes") == std::string::npos);
  CHECK(must(read_profile(dir.write("even.profile", even))).sites[0].ranks[0].sub_bytes.empty());
  // ... while a profile that has them there (merged by session 9's tnbc) still loads.
  const std::string kind_v = "\"kind\": \"alltoallv\"";
  REQUIRE(text.find(kind_v) != std::string::npos);
  const LoadedProfile before = must(read_profile(dir.write("before.profile", replace_once(text, kind_v, "\"kind\": \"alltoall\""))));
  CHECK(before.sites[0].kind == "alltoall");
  CHECK(before.sites[0].ranks[0].sub_bytes == std::vector<double>{8192, 16384});
}

TEST_CASE("profile: look-up by site, instance key and rank") {
  TempDir dir;
  const ProfileIndex index(must(read_profile(dir.write("app.profile", merged_profile_text()))));
  const auto found = index.find(kSite, kKey0 + 1, 1, 4);
  CHECK(found.status == ProfileIndex::Status::Found);
  REQUIRE(found.site);
  CHECK(found.site->consensus == std::vector<int>{3, 1, 2, 0});
  REQUIRE(found.rank);
  CHECK(found.rank->rank == 1);
  CHECK(index.find(kSite + 1, kKey0, 0, 4).status == ProfileIndex::Status::UnknownSite);
  // Other sizes: a key this rank did not record (rank 0's key on rank 1), another number of
  // sub-messages, a rank that never called there.
  CHECK(index.find(kSite, kKey0, 1, 4).status == ProfileIndex::Status::OtherSizes);
  CHECK(index.find(kSite, kKey0 + 1, 1, 5).status == ProfileIndex::Status::OtherSizes);
  CHECK(index.find(kSite, kKey0 + 1, 7, 4).status == ProfileIndex::Status::OtherSizes);
}

TEST_CASE("profile: unreadable files are refused naming the file") {
  TempDir dir;
  CHECK_THAT(error_of(read_profile(dir.str() + "/none.profile")),
                    Catch::Contains(dir.str() + "/none.profile") && Catch::Contains("No such file"));
  CHECK_THAT(error_of(read_profile(dir.str())), Catch::Contains(dir.str()) && Catch::Contains("not a regular file"));
  const std::string locked = dir.write("locked.profile", merged_profile_text());
  REQUIRE(::chmod(locked.c_str(), 0) == 0);
  if (::geteuid() != 0)  // root reads it anyway
    CHECK_THAT(error_of(read_profile(locked)), Catch::Contains(locked) && Catch::Contains("Permission denied"));
}

TEST_CASE("profile: corrupt and truncated files are refused") {
  TempDir dir;
  const std::string good = merged_profile_text();
  CHECK_THAT(rejection(dir, ""), Catch::Contains("empty"));
  CHECK_THAT(rejection(dir, "\x7f" "ELF\x02\x01"), Catch::Contains("not valid JSON") && Catch::Contains("line 1, column 1"));
  for (std::size_t cut : {std::size_t{1}, good.size() / 3, good.size() / 2, good.size() - 3})
    CHECK_THAT(rejection(dir, good.substr(0, cut)), Catch::Contains("not valid JSON") && Catch::Contains("truncated"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"sites\": [", "\"sites\": [,")), Catch::Contains("not valid JSON"));
  CHECK_THAT(rejection(dir, "[1, 2]"), Catch::Contains("expected a JSON object"));
}

TEST_CASE("profile: other formats and versions are refused") {
  TempDir dir;
  const std::string good = merged_profile_text();
  CHECK_THAT(rejection(dir, replace_once(good, "\"tnbc-profile\"", "\"tnbc-summary\"")),
             Catch::Contains("\"tnbc-summary\" file, not a \"tnbc-profile\""));
  CHECK_THAT(rejection(dir, "{\"np\": 4}"), Catch::Contains("not a tnbc profile"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"version\": 1", "\"version\": 2")),
             Catch::Contains("version 2 is not supported") && Catch::Contains("tnbc merge"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"version\": 1", "\"version\": \"1\"")),
             Catch::Contains("version: expected a number"));
}

TEST_CASE("profile: missing, mistyped and inconsistent fields are refused") {
  TempDir dir;
  const std::string good = merged_profile_text();
  CHECK_THAT(rejection(dir, replace_once(good, "\"np\": 2, ", "")), Catch::Contains("required field \"np\" is missing"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"np\": 2", "\"np\": \"2\"")), Catch::Contains("np: expected a number"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"np\": 2", "\"np\": 0")), Catch::Contains("np: 0 is out of range"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"np\": 2", "\"np\": 2.5")), Catch::Contains("np: expected an integer"));
  CHECK_THAT(rejection(dir, "{\"format\": \"tnbc-profile\", \"version\": 1, \"np\": 2, \"executable\": \"x\", \"sites\": {}}"),
             Catch::Contains("sites: expected an array, found an object (line 1, column 79)"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"kind\": \"alltoall\"", "\"kind\": \"allreduce\"")),
             Catch::Contains("sites[0].kind") && Catch::Contains("allreduce"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"site\": \"0x", "\"site\": \"0y")),
             Catch::Contains("sites[0].site") && Catch::Contains("hex"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"comm_size\": 2", "\"comm_size\": 3")),
             Catch::Contains("sites[0].comm_size: 3 is out of range"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"consensus_order\": [3, 1, 2, 0]", "\"consensus_order\": [3, 1, 7, 0]")),
             Catch::Contains("sites[0].consensus_order[2]: 7 is not a sub-message index (the site has 4)"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"consensus_order\": [3, 1, 2, 0]", "\"consensus_order\": [3, 1, 3]")),
             Catch::Contains("listed twice"));
  CHECK_THAT(rejection(dir, replace_once(good, "{\"rank\": 1", "{\"rank\": 2")),
             Catch::Contains("sites[0].ranks[1].rank: 2 is out of range"));
  CHECK_THAT(rejection(dir, replace_once(good, "{\"rank\": 1", "{\"rank\": 0")), Catch::Contains("rank 0 is listed twice"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"order\": [3, 1, 2, 0]", "\"order\": [3, -1]")),
             Catch::Contains("sites[0].ranks[0].order[1]: -1 is not a sub-message index"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"keys\": [\"0x", "\"keys\": [12, \"0x")),
             Catch::Contains("sites[0].ranks[0].keys[0]: expected a hex string"));
  CHECK_THAT(rejection(dir, replace_once(good, "\"receives\": true", "\"receives\": 1")),
             Catch::Contains("receives: expected a boolean"));
}

TEST_CASE("profile: another np or another program is refused for this run") {
  TempDir dir;
  const LoadedProfile p = must(read_profile(dir.write("app.profile", merged_profile_text())));
  const std::string np = error_of(check_profile_run(p, 3, "/work/app/ft.x"));
  CHECK_THAT(np, Catch::Contains(dir.str() + "/app.profile") && Catch::Contains("recorded with 2 processes, this run has 3"));
  const std::string exe = error_of(check_profile_run(p, 2, "/work/app/is.x"));
  CHECK_THAT(exe, Catch::Contains(dir.str() + "/app.profile") && Catch::Contains("/work/app/ft.x") &&
                      Catch::Contains("this is /work/app/is.x"));
}

TEST_CASE("merge: a broadcast's bytes per call count the calls in which the rank received, not those it was root in") {
  // node_prio's broadcast: np 2, the root moving 0, 1, 0, 1, 524534 bytes in 7 chunks. Counting
  // the root's calls as 0 bytes gave the median 262267, and mode optimize, finding no site of
  // that size, cut its broadcasts afresh instead of as traced (session 40).
  constexpr std::uint64_t kBcastSite = 0x1256433e3f0de9a6ULL, kBytes = 524534;
  std::vector<TraceFile> traces;
  for (int r = 0; r < 2; ++r) {
    TraceFile t = trace_file(r, 2, "/work/app/node_prio");
    t.sites.push_back({kBcastSite, "bcast", 2, {{"node_prio", 0x19a1, "main"}}});
    for (int call = 0; call < 4; ++call) {
      const int root = call % 2;
      CallRecord c;
      c.site = kBcastSite;
      c.key = kKey0 + static_cast<std::uint64_t>(root);
      c.traced = true;
      c.subs.resize(7);
      if (root != r) {
        std::uint64_t left = kBytes;
        for (std::size_t k = 0; k < 7; ++k) {
          c.subs[k].bytes = k + 1 < 7 ? std::min<std::uint64_t>(left, 4096 * (k == 0 ? 1 : 26)) : left;
          left -= c.subs[k].bytes;
          c.subs[k].guarded = true;
        }
      }
      t.calls.push_back(c);
    }
    traces.push_back(t);
  }
  TempDir dir;
  const LoadedProfile p = must(read_profile(dir.write("bcast.profile", profile_json(must(merge(traces))))));
  REQUIRE(p.sites.size() == 1);
  for (const ProfileSite::Rank& rank : p.sites[0].ranks) {
    INFO("rank " << rank.rank);
    CHECK(rank.receives);
    REQUIRE(rank.bytes_per_call);
    CHECK(*rank.bytes_per_call == kBytes);
  }
}
