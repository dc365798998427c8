// Trace pass: the trace file round trip and error detection, the region layout, and the merge
// (Kendall's tau, consensus, per-site estimates, rejection of mixed runs).
#include <catch2/catch.hpp>

#include <cmath>

#include "trace/format.hh"
#include "trace/page_reopen.hh"
#include "trace/layout.hh"
#include "tools/merge.hh"
#include "results.hh"

using namespace tnbc::trace;
using namespace tnbc::tools;

namespace {

// A call of `n` sub-messages of `bytes` each, first touched in `order` every `gap` ns after
// `curc` ns; the send buffer written at `send_t` (-1: never).
CallRecord make_call(std::uint64_t seq, std::uint64_t site, const std::vector<int>& order, int n, std::uint64_t bytes,
                     std::int64_t curc, std::int64_t gap, std::int64_t send_t = -1) {
  CallRecord c;
  c.seq = seq;
  c.site = site;
  c.key = site ^ 0x55;
  c.dur_ns = 1000000;
  c.traced = true;
  c.send_bytes = bytes * static_cast<std::uint64_t>(n);
  c.send_guarded = true;
  c.send_t_ns = send_t;
  c.send_how = send_t >= 0 ? How::Write : How::None;
  c.subs.resize(static_cast<std::size_t>(n));
  for (auto& s : c.subs) {
    s.bytes = bytes;
    s.guarded = true;
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    SubRecord& s = c.subs[static_cast<std::size_t>(order[k])];
    s.order = static_cast<int>(k);
    s.t_ns = curc + gap * static_cast<std::int64_t>(k);
    s.how = How::Read;
    s.code = "prog+0x1234";
  }
  return c;
}

TraceFile make_trace(int rank, int size, const std::vector<int>& order, int calls = 2) {
  TraceFile t;
  t.rank = rank;
  t.size = size;
  t.executable = "/path/with space/prog";
  t.run_id = "00112233deadbeef";
  t.clock = "tsc";
  t.page = 4096;
  t.ended_by = "finalize";
  SiteInfo s;
  s.site = 0xabcdef;
  s.kind = "alltoall";
  s.comm_size = size;
  s.frames = {{"prog", 0x1234, "main"}, {"libc.so.6", 0x2724a, ""}};
  t.sites.push_back(s);
  for (int i = 0; i < calls; ++i)
    t.calls.push_back(make_call(static_cast<std::uint64_t>(i), 0xabcdef, order, size, 8192, 1000 + rank, 2000));
  return t;
}

}  // namespace

TEST_CASE("trace file: written and read back, every field equal") {
  TraceFile t = make_trace(1, 4, {3, 1, 2, 0});
  t.calls[0].subs[2].shared = true;
  t.calls[0].subs[0].how = How::Syscall;
  t.calls[0].subs[0].code = "";
  t.calls[1].subs[1].masked = true;
  t.calls[1].reason = "";
  t.calls[1].traced = false;
  t.calls[1].root = 2;
  t.calls[1].send_t_ns = 77;
  t.calls[1].send_how = How::MpiCall;
  t.dropped = 3;
  t.ended_by = "exit";
  t.page_reopen_ns = 6800;
  const std::string text = serialize(t);
  REQUIRE(text.rfind("TNBC-TRACE 2\n", 0) == 0);
  const TraceFile back = must(parse(text, "x.txt"));
  CHECK(back == t);
  CHECK(back.executable == "/path/with space/prog");
  // Version 1 (before page_reopen_ns) is still read, the cost 0.
  TraceFile t1 = t;
  t1.version = 1;
  t1.page_reopen_ns = 0;
  const std::string v1 = serialize(t1);
  REQUIRE(v1.rfind("TNBC-TRACE 1\n", 0) == 0);
  CHECK(v1.find("page_reopen_ns") == std::string::npos);
  CHECK(must(parse(v1, "v1.txt")) == t1);
}

TEST_CASE("trace file: truncated, corrupted and foreign files are rejected naming the file") {
  const std::string text = serialize(make_trace(0, 2, {0, 1}));
  SECTION("truncated") {
    for (std::size_t cut : {text.size() / 3, text.size() / 2, text.size() - 5}) {
      const std::string e = error_of(parse(text.substr(0, cut), "dir/tnbc-trace.0.txt"));
      REQUIRE_FALSE(e.empty());  // refused
      CHECK(e.find("dir/tnbc-trace.0.txt") != std::string::npos);
      CHECK(e.find("truncated") != std::string::npos);
    }
  }
  SECTION("one digit changed") {
    std::string bad = text;
    const auto pos = bad.find("t_ns 1000");
    REQUIRE(pos != std::string::npos);
    bad[pos + 5] = '7';
    CHECK_THAT(error_of(parse(bad, "f.txt")), Catch::Contains("f.txt") && Catch::Contains("checksum"));
  }
  SECTION("not a trace") {
    CHECK_THAT(error_of(parse("{\"format\": 1}\n", "g.txt")), Catch::Contains("not a tnbc trace"));
    CHECK_THAT(error_of(parse("", "g.txt")), Catch::Contains("empty"));
  }
  SECTION("other version") {
    std::string v3 = text;
    v3.replace(0, 12, "TNBC-TRACE 3");
    CHECK_THAT(error_of(parse(v3, "h.txt")), Catch::Contains("version 3"));
  }
}

TEST_CASE("token escaping keeps spaces, percent signs and empty strings") {
  for (std::string s : {"", "a b", "100%", "-", "x\ty", "plain"}) CHECK(unescape_token(escape_token(s)) == s);
  CHECK(escape_token("a b").find(' ') == std::string::npos);
}

TEST_CASE("layout: whole pages cut per sub-message, shared pages listed with both") {
  const std::size_t P = 4096;
  // sub 0: [0, 10000), sub 1: [10000, 20000); buffer [0, 20000)
  auto r = plan_trace_regions({{0, 10000}, {10000, 20000}}, 0, 20000, P);
  REQUIRE(r.size() == 3);
  CHECK(r[0].lo == 0);
  CHECK(r[0].hi == 2 * P);
  CHECK(r[0].subs == std::vector<int>{0});
  CHECK(r[1].lo == 2 * P);
  CHECK(r[1].hi == 3 * P);
  CHECK(r[1].subs == std::vector<int>{0, 1});
  CHECK(r[2].hi == 4 * P);  // the partial last page [16384, 20000) is not guarded
  CHECK(r[2].subs == std::vector<int>{1});
  // unaligned buffer start: the partial first page is left out; a gap between sub-messages too
  auto g = plan_trace_regions({{100, 3 * P}, {5 * P, 7 * P}}, 100, 7 * P, P);
  REQUIRE(g.size() == 2);
  CHECK(g[0].lo == P);
  CHECK(g[0].hi == 3 * P);
  CHECK(g[1].lo == 5 * P);
  // no whole page
  CHECK(plan_trace_regions({{10, 4000}}, 10, 4000, P).empty());
  // send pages except the receive regions
  auto s = whole_pages_except(0, 8 * P, P, {{2 * P, 3 * P}, {5 * P, 6 * P}});
  REQUIRE(s.size() == 3);
  CHECK(s[0].hi == 2 * P);
  CHECK(s[1].lo == 3 * P);
  CHECK(s[1].hi == 5 * P);
  CHECK(s[2].lo == 6 * P);
}

TEST_CASE("Kendall tau between first-touch orders") {
  CHECK(kendall_tau({0, 1, 2, 3}, {0, 1, 2, 3}, 4) == Approx(1.0));
  CHECK(kendall_tau({3, 2, 1, 0}, {0, 1, 2, 3}, 4) == Approx(-1.0));
  CHECK(kendall_tau({1, 0, 2, 3}, {0, 1, 2, 3}, 4) == Approx(4.0 / 6.0));
  CHECK(kendall_tau({3, 1, 2, 0}, {3, 1, 2, 0}, 4) == Approx(1.0));
  // missing entries are tied last: tau-b
  CHECK(kendall_tau({0, 1}, {0, 1, 2, 3}, 4) == Approx(5.0 / std::sqrt(5.0 * 6.0)));
  CHECK(kendall_tau({}, {}, 4) == Approx(1.0));
}

TEST_CASE("merge: the gaps and R_CRC leave out the trace's reopening of the pages each sub-message opened") {
  // Sub-messages of 8192 bytes (2 pages), first touches 2 us apart (make_call).
  std::vector<TraceFile> t;
  for (int r = 0; r < 4; ++r) t.push_back(make_trace(r, 4, {3, 1, 2, 0}));
  for (auto& f : t) f.page_reopen_ns = 400;
  t[2].page_reopen_ns = 800;  // the busiest rank: 2 calls x 4 sub-messages x 2 pages at 800 ns
  const Profile p = must(merge(t));
  const RankSite& r1 = p.sites[0].ranks[1];
  REQUIRE(r1.gaps_ns.size() == 3);
  CHECK(r1.gaps_ns[0] == Approx(2000 - 2 * 400));
  CHECK(*r1.r_crc == Approx(3 * 8192 / 3.6e-6));
  CHECK(*r1.curc_ns == Approx(1001));  // the first touch is not a gap
  bool noted = false;
  for (const auto& n : p.notes)
    noted = noted || (n.find("400 ns a page") != std::string::npos &&
                      n.find("about 12.8 us on rank 2 (16 pages guarded)") != std::string::npos);
  CHECK(noted);
  // All of each gap the trace's own: read as good as at once, never a negative gap.
  for (auto& f : t) f.page_reopen_ns = 1500;
  const Profile q = must(merge(t));
  CHECK(q.sites[0].ranks[1].gaps_ns[0] == 0);
  CHECK_FALSE(q.sites[0].ranks[1].r_crc);
  CHECK(q.sites[0].ranks[1].crc_at_once);
  CHECK(q.sites[0].crc_at_once);
  CHECK_FALSE(q.sites[0].r_crc_median);
  const std::string text = profile_summary(q, {}, [](const Frame&) { return std::string(); });
  CHECK(text.find("R_CRC (data consumed between first accesses): at once") != std::string::npos);
  // Unmeasured (0, or a version-1 trace): the gaps as recorded, no note.
  for (auto& f : t) f.page_reopen_ns = 0;
  const Profile u = must(merge(t));
  CHECK(u.sites[0].ranks[1].gaps_ns[0] == Approx(2000));
  CHECK(u.notes.empty());
}

TEST_CASE("gap_without_reopen: whole pages of the opened bytes, at least 0") {
  CHECK(tnbc::trace::gap_without_reopen(10000, 3 * 4096 + 100, 4096, 1000) == Approx(7000));
  CHECK(tnbc::trace::gap_without_reopen(1000, 8 * 4096, 4096, 1000) == 0);
  CHECK(tnbc::trace::gap_without_reopen(1000, 8 * 4096, 0, 1000) == Approx(1000));
  CHECK(tnbc::trace::measure_page_reopen_ns(4096, 0, 1) == 0);
}

TEST_CASE("consensus order: mean position, ties by index") {
  CHECK(consensus_order({{3, 1, 2, 0}, {3, 1, 2, 0}, {3, 1, 2, 0}, {3, 2, 1, 0}}, 4) == std::vector<int>{3, 1, 2, 0});
  CHECK(consensus_order({{0, 1, 2, 3}, {1, 2, 3, 0}, {2, 3, 0, 1}, {3, 0, 1, 2}}, 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(consensus_order({{2}, {2, 0}}, 3) == std::vector<int>{2, 0});  // 1 never read: left out
  CHECK(consensus_order({}, 3).empty());
}

TEST_CASE("merge: per-site orders, agreement, CURC, R_CRC, send buffer") {
  std::vector<TraceFile> t;
  for (int r = 0; r < 4; ++r) t.push_back(make_trace(r, 4, {3, 1, 2, 0}));
  t[2].calls[1].send_t_ns = 500;  // < dur_ns: written before the collective would complete
  t[2].calls[1].send_how = How::Write;
  const Profile p = must(merge(t));
  REQUIRE(p.sites.size() == 1);
  const SiteProfile& s = p.sites[0];
  CHECK(s.consensus == std::vector<int>{3, 1, 2, 0});
  CHECK(s.tau_mean == Approx(1.0));
  CHECK(s.same_order_everywhere);
  CHECK(s.calls == 8);
  REQUIRE(s.ranks.size() == 4);
  CHECK(s.ranks[1].order == std::vector<int>{3, 1, 2, 0});
  CHECK(s.ranks[1].calls_with_order == 2);
  CHECK(*s.ranks[1].curc_ns == Approx(1001));
  REQUIRE(s.ranks[1].gaps_ns.size() == 3);
  CHECK(s.ranks[1].gaps_ns[0] == Approx(2000));
  // three sub-messages of 8192 bytes consumed in 3 gaps of 2 us
  CHECK(*s.ranks[1].r_crc == Approx(3 * 8192 / 6e-6));
  CHECK(s.send_written_early_calls == 1);
  CHECK(s.ranks[2].send_written_early == 1);
  const std::string json = profile_json(p);
  CHECK(json.find("\"format\": \"tnbc-profile\"") != std::string::npos);
  CHECK(json.find("\"consensus_order\": [3, 1, 2, 0]") != std::string::npos);
  // Every frame goes through `name` (tnbc merge: Symbolizer::name_call, file:line).
  const std::string text = profile_summary(p, {}, [](const Frame& f) { return "<" + f.module + ">"; });
  CHECK(text.find("every rank reads in the same order") != std::string::npos);
  CHECK(text.find("\n  at   <") != std::string::npos);
  CHECK(text.find("\n  at   ") == text.find("\n  at   <"));
}

TEST_CASE("merge: ranks that disagree lower tau") {
  std::vector<TraceFile> t;
  for (int r = 0; r < 4; ++r) t.push_back(make_trace(r, 4, {r, (r + 1) % 4, (r + 2) % 4, (r + 3) % 4}));
  const Profile p = must(merge(t));
  CHECK_FALSE(p.sites[0].same_order_everywhere);
  CHECK(p.sites[0].tau_mean < 0.5);
  CHECK(p.sites[0].ranks[2].order == std::vector<int>{2, 3, 0, 1});
}

TEST_CASE("merge rejects mixed or incomplete runs") {
  std::vector<TraceFile> t;
  for (int r = 0; r < 3; ++r) t.push_back(make_trace(r, 3, {0, 1, 2}));
  SECTION("different np") {
    t[1] = make_trace(1, 4, {0, 1, 2, 3});
    CHECK_THAT(error_of(merge(t, {"a", "b", "c"})), Catch::Contains("mixed runs") && Catch::Contains("b"));
  }
  SECTION("different executable") {
    t[2].executable = "/other";
    CHECK_THAT(error_of(merge(t)), Catch::Contains("mixed runs") && Catch::Contains("/other"));
  }
  SECTION("different run") {
    t[2].run_id = "ffff";
    CHECK_THAT(error_of(merge(t)), Catch::Contains("different runs"));
  }
  SECTION("missing rank") {
    t.pop_back();
    t[1] = make_trace(1, 3, {0, 1, 2});
    CHECK_THAT(error_of(merge(t)), Catch::Contains("rank(s) 2"));
  }
  SECTION("duplicate rank") {
    t[2] = make_trace(1, 3, {0, 1, 2});
    CHECK_THAT(error_of(merge(t)), Catch::Contains("two traces"));
  }
}

TEST_CASE("merge: a broadcast's calls as its root and as a receiver apart") {
  // bcast-proxy's rotating root at np 2: each rank the root of every other call, its calls there
  // short (1 ms: its send buffered), as a receiver long (30 ms: waiting for the late root, then the
  // transfer). The rank's Tcomm is its receiving calls' median, the root's calls counted apart.
  std::vector<TraceFile> t;
  for (int r = 0; r < 2; ++r) {
    TraceFile f = make_trace(r, 2, {0, 1}, 6);
    f.sites[0].kind = "bcast";
    for (std::size_t i = 0; i < f.calls.size(); ++i) {
      CallRecord& c = f.calls[i];
      c.comm_rank = r;
      c.root = static_cast<int>(i % 2);
      const bool root = c.root == r;
      c.dur_ns = root ? 1000000 + static_cast<std::int64_t>(i) : 30000000;
      if (root)
        for (SubRecord& s : c.subs) s = SubRecord{};
    }
    t.push_back(f);
  }
  const Profile p = must(merge(t));
  REQUIRE(p.sites.size() == 1);
  for (const RankSite& r : p.sites[0].ranks) {
    CHECK(r.dur_ns == Approx(30e6));
    CHECK(r.root_calls == 3);
    REQUIRE(r.root_dur_ns);
    CHECK(*r.root_dur_ns == Approx(1e6 + (r.rank == 0 ? 2 : 3)));
  }
  const std::string json = profile_json(p);
  CHECK(json.find("\"duration_ns\": 30000000, \"root_calls\": 3, \"root_duration_ns\": 100000") != std::string::npos);
  // Another kind has no roles: no fields.
  t[0].sites[0].kind = t[1].sites[0].kind = "alltoall";
  for (TraceFile& f : t)
    for (CallRecord& c : f.calls) c.root = -1;
  CHECK(profile_json(must(merge(t))).find("root_calls") == std::string::npos);
}
