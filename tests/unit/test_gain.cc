// Mode optimize's blocking decision (trace/gain.hh): profile values in, decision out. Sites
// that read at once and sites that compute first, cheap and expensive communication, a missing
// site, missing estimates, an older profile, ranks that behave differently, sites only some
// ranks called (each decided from its own ranks' values), sizes not recorded.
#include <catch2/catch.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/policy.hh"
#include "trace/gain.hh"
#include "tools/merge.hh"
#include "tools/model_view.hh"
#include "trace/profile.hh"
#include "machines.hh"
#include "profiles.hh"
#include "results.hh"

using namespace tnbc::trace;
using namespace tnbc::tools;
using namespace tnbc::test;

namespace {
LoadedProfile parsed(const std::string& text, const std::string& name) { return must(parse_profile(text, name)); }
}  // namespace

namespace {

// A profile with one alltoall site over `ranks.size()` ranks (np = comm_size = ranks.size()).
std::string profile_text(const std::vector<RankValues>& ranks, bool estimates = true, const std::string& site = "0x0000000000000051") {
  return profile_of(ranks.size(), {site_text(ranks, estimates, site, ranks.size())});
}

// 500 us + 500 us/MiB: the fixed rule of TNBC_EARLY_RETURN_COST_US=500, ..._PER_MIB=500 (the
// defaults before the cost model).
const CostModel kCost{500e3, 500e3};

Decision decide_text(const std::string& text, bool sizes_recorded = true, const CostModel& cost = kCost) {
  const LoadedProfile p = parsed(text, "test.profile");
  REQUIRE(p.sites.size() == 1);
  return decide(&p.sites[0], sizes_recorded, cost, true);
}

}  // namespace

TEST_CASE("gain: a site that reads at once runs blocking, one that computes first returns early") {
  // Reads at once: T_CURC 0.05 ms + T_CRC 4 MiB / 4 GiB/s ~ 0.98 ms against a cost of
  // 0.5 + 4 * 0.5 = 2.5 ms: nothing to gain, though Tcomm is 20 ms.
  const Decision now = decide_text(profile_text(std::vector<RankValues>(4)));
  CHECK(now.blocking());
  CHECK(now.basis == Basis::NoOverlapToGain);
  REQUIRE(now.saved_ns);
  CHECK(*now.overlap_ns == Approx(0.05 * kMs + 4.0 * kMiB / (4.0 * 1024 * kMiB) * 1e9));
  CHECK(now.cost_ns == Approx(2.5 * kMs));
  CHECK(*now.comm_ns == Approx(20 * kMs));
  CHECK(*now.saved_ns < 0);
  CHECK(describe(now).find("completes in the call: no overlap to gain") == 0);

  // Computes 10 ms first: min(20, 10.98) - 2.5 > 0.
  std::vector<RankValues> computes(4);
  for (auto& r : computes) r.curc_ns = 10 * kMs;
  const Decision later = decide_text(profile_text(computes));
  CHECK_FALSE(later.blocking());
  CHECK(later.basis == Basis::OverlapPays);
  CHECK(*later.saved_ns == Approx(std::min(20 * kMs, 10 * kMs + *now.overlap_ns - 0.05 * kMs) - 2.5 * kMs));
  CHECK(describe(later).find("returns early: the overlap pays") == 0);
}

TEST_CASE("gain: the overlap is capped by Tcomm (Eq. 3): cheap communication is not worth it") {
  std::vector<RankValues> r(4);
  for (auto& v : r) v.curc_ns = 50 * kMs, v.dur_ns = 1 * kMs;  // computes long, communicates 1 ms
  const Decision d = decide_text(profile_text(r));
  CHECK(d.blocking());
  CHECK(*d.saved_ns == Approx(1 * kMs - 2.5 * kMs));
  // With no cost at all, any overlap pays.
  CHECK_FALSE(decide_text(profile_text(r), true, CostModel{0, 0}).blocking());
}

TEST_CASE("gain: the cost grows with the bytes of the rank that receives most") {
  std::vector<RankValues> r(4);
  r[2].bytes = 16 * kMiB;
  const Decision d = decide_text(profile_text(r));
  CHECK(d.cost_ns == Approx(0.5 * kMs + 16 * 0.5 * kMs));
  // TNBC_EARLY_RETURN_COST_US set: the fixed rule, with its per-MiB cost.
  tnbc::Settings s;
  s.early_return_cost_us = 100;
  s.early_return_cost_us_per_mib = 200;
  const Judge j = make_judge(s, nullptr, {});
  REQUIRE(j.fixed);
  CHECK(j.fixed->cost_ns(2.0 * kMiB) == Approx(100e3 + 2 * 200e3));
  // auto (the default): no fixed rule, the model judges.
  CHECK_FALSE(make_judge(tnbc::Settings{}, nullptr, {}).fixed);
}

TEST_CASE("gain: missing site, missing estimates, older profile: return early") {
  CHECK(decide(nullptr, true, kCost, true).basis == Basis::NotInProfile);
  CHECK_FALSE(decide(nullptr, true, kCost, true).blocking());

  // No rank touched the data (curc null everywhere): no estimate.
  std::vector<RankValues> untouched(4);
  for (auto& v : untouched) v.curc_ns.reset(), v.r_crc.reset(), v.gaps_ns.clear();
  const Decision none = decide_text(profile_text(untouched));
  CHECK(none.basis == Basis::NoEstimate);
  CHECK_FALSE(none.blocking());
  CHECK_FALSE(none.saved_ns);
  CHECK(describe(none).find("no estimate") != std::string::npos);
  CHECK(describe(none).find("the site trial decides") != std::string::npos);  // as the run does (judged_last)

  // Not traced at all (nothing could be guarded): estimates ignored.
  std::vector<RankValues> untraced(4);
  for (auto& v : untraced) v.traced = 0;
  CHECK(decide_text(profile_text(untraced)).basis == Basis::NoEstimate);

  // No blocking duration: no estimate either.
  std::vector<RankValues> no_dur(4);
  for (auto& v : no_dur) v.dur_ns.reset();
  CHECK(decide_text(profile_text(no_dur)).basis == Basis::NoEstimate);

  // A profile without the estimate fields (an older `tnbc merge`) is still read; no estimate.
  const std::string old = profile_text(std::vector<RankValues>(4), false);
  CHECK(old.find("curc_ns") == std::string::npos);
  CHECK(decide_text(old).basis == Basis::NoEstimate);
}

TEST_CASE("gain: a site where some rank reads its own block after every peer's") {
  ProfileSite s;
  s.kind = "alltoall";
  s.comm_size = 2;
  auto rank = [](int id, std::vector<int> order) {
    ProfileSite::Rank r;
    r.rank = id;
    r.receives = true;
    r.order = std::move(order);
    return r;
  };
  // One communicator (the job's ranks 0 and 1), both reading block 0 first: rank 1's own last.
  s.ranks = {rank(0, {0, 1}), rank(1, {0, 1})};
  CHECK(reads_own_last(s));
  CHECK(estimate_site(s).own_last);
  // Each its own block first (Table 1's `self`).
  s.ranks = {rank(0, {0, 1}), rank(1, {1, 0})};
  CHECK_FALSE(reads_own_last(s));
  // A partial order (a block never touched) says nothing.
  s.ranks = {rank(0, {0, 1}), rank(1, {0})};
  CHECK_FALSE(reads_own_last(s));
  // Four job ranks at a site of two-rank communicators: the numbers are not places in it; one
  // order for all puts some rank's own block last, orders that differ do not tell.
  s.ranks = {rank(0, {0, 1}), rank(1, {0, 1}), rank(2, {0, 1}), rank(3, {0, 1})};
  CHECK(reads_own_last(s));
  s.ranks = {rank(0, {0, 1}), rank(1, {1, 0}), rank(2, {0, 1}), rank(3, {1, 0})};
  CHECK_FALSE(reads_own_last(s));
  s.ranks = {rank(2, {0, 1}), rank(3, {0})};  // one full order only: fewer than a communicator's ranks
  CHECK_FALSE(reads_own_last(s));
  // The estimate carries it to the model's program; a broadcast has no own block.
  s.ranks = {rank(0, {0, 1}), rank(1, {0, 1})};
  for (auto& r : s.ranks) r.traced = 1, r.curc_ns = 1e6, r.gaps_ns = {1e6};
  const auto p = site_program(estimate_site(s));
  REQUIRE(p);
  CHECK(p->own_last);
  s.kind = "bcast";
  CHECK_FALSE(estimate_site(s).own_last);
}

TEST_CASE("gain: T_CRC from the gaps when no R_CRC was measured") {
  std::vector<RankValues> r(4);
  for (auto& v : r) v.r_crc.reset(), v.gaps_ns = {1 * kMs, 1 * kMs}, v.curc_ns = 0.2 * kMs;
  const SiteEstimate e = estimate_site(parsed(profile_text(r), "t").sites[0]);
  REQUIRE(e.crc_ns);
  CHECK(*e.crc_ns == Approx(2 * kMs));
  CHECK(*e.overlap_ns == Approx(2.2 * kMs));
}

TEST_CASE("gain: ranks that behave differently at one site are decided by the site's medians") {
  // Rank 0 reads at once; ranks 1-3 compute 10 ms first. The median over ranks decides.
  std::vector<RankValues> r(4);
  for (int k = 1; k < 4; ++k) r[static_cast<std::size_t>(k)].curc_ns = 10 * kMs;
  r[3].keys = {"0x00000000000000b2"};  // another instance key, recorded by rank 3 only
  const std::string text = profile_text(r);
  const ProfileIndex index(parsed(text, "t"));
  const ProfileSite* site = index.find_site(0x51);
  REQUIRE(site);
  const Decision d = decide(site, index.key_recorded(*site, 0xa1), kCost, true);
  CHECK(d.basis == Basis::OverlapPays);
  // Whatever rank asks, the inputs are the site's: the key recorded by rank 3 counts as recorded
  // for all, and the estimate is over all its ranks.
  CHECK(index.key_recorded(*site, 0xb2));
  CHECK_FALSE(index.key_recorded(*site, 0xc3));
  CHECK(decide(site, index.key_recorded(*site, 0xb2), kCost, true).basis == Basis::OverlapPays);
  // Three of four read at once: the median says block.
  std::vector<RankValues> most_now(4);
  most_now[0].curc_ns = 10 * kMs;
  CHECK(decide_text(profile_text(most_now)).blocking());
  // A Bcast root (receives nothing) gives no CURC and is left out of the median, but its
  // duration counts for Tcomm.
  std::vector<RankValues> root(4);
  root[0].receives = false, root[0].curc_ns.reset(), root[0].dur_ns = 60 * kMs;
  const SiteEstimate e = estimate_site(parsed(profile_text(root), "t").sites[0]);
  CHECK(e.estimating_ranks == 3);
  CHECK(*e.comm_ns == Approx(20 * kMs));
}

TEST_CASE("gain: a site some ranks did not call, or called more often, is decided from its own ranks") {
  // Ranks called it a different number of times: decided all the same (the call completes in
  // the call with the same messages, so ranks need not agree; runtime/read_order.hh).
  std::vector<RankValues> uneven(4);
  uneven[1].calls = 9;
  const Decision d = decide_text(profile_text(uneven));
  CHECK(d.basis == Basis::NoOverlapToGain);
  CHECK(d.blocking());

  // NPB IS: the compiler duplicated the call, so rank 0 reaches the collective from one site and
  // ranks 1-3 from another. Each site is listed by its ranks only and decided from their values:
  // rank 0 reads at once (blocking), ranks 1-3 compute 10 ms first (early), and no value of one
  // site leaks into the other's estimate.
  std::vector<RankValues> rank0(1), others(3);
  rank0[0].dur_ns = 30 * kMs, rank0[0].bytes = 2 * kMiB;
  for (auto& v : others) v.curc_ns = 10 * kMs;
  others[2].dur_ns = 40 * kMs;
  const LoadedProfile p = parsed(profile_of(4, {site_text(rank0, true, "0x00000000000000a0", 4, {0}),
                                                        site_text(others, true, "0x00000000000000b0", 4, {1, 2, 3})}),
                                        "is.profile");
  const ProfileIndex index(p);
  const ProfileSite* a = index.find_site(0xa0);
  const ProfileSite* b = index.find_site(0xb0);
  REQUIRE(a);
  REQUIRE(b);
  const Decision da = decide(a, true, kCost, true), db = decide(b, true, kCost, true);
  CHECK(da.basis == Basis::NoOverlapToGain);
  CHECK(*da.comm_ns == Approx(30 * kMs));   // rank 0's own duration
  CHECK(da.cost_ns == Approx(0.5 * kMs + 2 * 0.5 * kMs));  // rank 0's bytes, not the other site's 4 MiB
  CHECK(estimate_site(*a).estimating_ranks == 1);
  CHECK(db.basis == Basis::OverlapPays);
  CHECK(*db.comm_ns == Approx(20 * kMs));   // median of 20, 20, 40
  CHECK(estimate_site(*b).estimating_ranks == 3);
  // The other way round (rank 0 computes, the others read at once): rank 0 returns early while
  // its peers complete the same collective in the call.
  rank0[0].curc_ns = 10 * kMs;
  for (auto& v : others) v.curc_ns = 0.05 * kMs;
  const LoadedProfile q = parsed(profile_of(4, {site_text(rank0, true, "0x00000000000000a0", 4, {0}),
                                                        site_text(others, true, "0x00000000000000b0", 4, {1, 2, 3})}),
                                        "is2.profile");
  CHECK(decide(&q.sites[0], true, kCost, true).basis == Basis::OverlapPays);
  CHECK(decide(&q.sites[1], true, kCost, true).basis == Basis::NoOverlapToGain);

  CHECK(decide_text(profile_text(std::vector<RankValues>(4)), false).basis == Basis::OtherSizes);
  const LoadedProfile off = parsed(profile_text(std::vector<RankValues>(4)), "t");
  CHECK(decide(&off.sites[0], true, kCost, false).basis == Basis::Off);
  CHECK_FALSE(decide(&off.sites[0], true, kCost, false).blocking());
  CHECK(describe(decide(&off.sites[0], true, kCost, false)) == "returns early: decisions off (TNBC_PROFILE_BLOCKING=off)");
}

TEST_CASE("gain: the profile's estimate fields are checked") {
  const std::string good = profile_text(std::vector<RankValues>(2));
  const auto bad = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK_FALSE(parse_profile(bad("\"curc_ns\": 50000", "\"curc_ns\": \"fast\""), "t").ok());
  CHECK_FALSE(parse_profile(bad("\"curc_ns\": 50000", "\"curc_ns\": -3"), "t").ok());
  CHECK_FALSE(parse_profile(bad("\"calls\": 10", "\"calls\": 1.5"), "t").ok());
  CHECK_FALSE(parse_profile(bad("\"gaps_ns\": [", "\"gaps_ns\": [true, "), "t").ok());
  CHECK(parse_profile(bad("\"duration_ns\": 20000000", "\"duration_ns\": null"), "t").ok());

  CHECK(*parsed(good, "a").sites[0].ranks[1].curc_ns == Approx(0.05 * kMs));
}

namespace {

// One rank's trace: `calls` alltoall calls at `site` over `size` ranks, 20 ms blocking, two
// 2 MiB sub-messages, first touched `curc_ns` after return, the next 0.5 ms later.
TraceFile trace_of(int rank, int size, std::uint64_t site, int calls, std::uint64_t curc_ns) {
  TraceFile t;
  t.rank = rank;
  t.size = size;
  t.executable = "/x/app";
  t.run_id = "1";
  t.clock = "monotonic";
  t.ended_by = "finalize";
  t.sites.push_back({site, "alltoall", size, {{"app", site, "main"}}});
  for (int c = 0; c < calls; ++c) {
    CallRecord call;
    call.seq = static_cast<std::uint64_t>(c);
    call.site = site;
    call.key = 0x99;
    call.traced = true;
    call.dur_ns = 20000000;
    call.subs.resize(2);
    for (int k = 0; k < 2; ++k) {
      SubRecord& s = call.subs[static_cast<std::size_t>(k)];
      s.bytes = 2 * kMiB;
      s.guarded = true;
      s.order = k;
      s.t_ns = curc_ns + 500000 * static_cast<std::uint64_t>(k);
      s.how = How::Read;
    }
    t.calls.push_back(call);
  }
  return t;
}

}  // namespace

TEST_CASE("gain: from traces through tnbc merge to the decision") {
  // Two ranks, one alltoall site, each call 20 ms blocking and read at once (10 us): the
  // merge's estimates, written and read back, say block.
  std::vector<TraceFile> traces{trace_of(0, 2, 0x77, 3, 10000), trace_of(1, 2, 0x77, 3, 10000)};
  const LoadedProfile p = parsed(profile_json(must(merge(traces))), "merged");
  REQUIRE(p.sites.size() == 1);
  const SiteEstimate e = estimate_site(p.sites[0]);
  CHECK(e.estimating_ranks == 2);
  CHECK(*e.comm_ns == Approx(20e6));
  CHECK(*e.curc_ns == Approx(10000));
  CHECK(*e.crc_ns == Approx(4.0 * kMiB / (2.0 * kMiB / 0.5e-3) * 1e9));  // all bytes at the touch rate: 1 ms
  const Decision d = decide(&p.sites[0], true, kCost, true);
  CHECK(d.blocking());
  CHECK(d.cost_ns == Approx(0.5e6 + 4 * 0.5e6));
}

TEST_CASE("gain: ranks that reach one collective from different sites (IS) get a decision per site") {
  // Rank 0 calls from site 0x70 and reads at once; ranks 1-2 call from 0x71 and compute 15 ms
  // first; rank 1 made one call more. The merge keeps two sites, each listing its own ranks, and
  // each is decided (the refusal "the ranks did not call the site alike" is gone).
  std::vector<TraceFile> traces{trace_of(0, 3, 0x70, 4, 10000), trace_of(1, 3, 0x71, 5, 15000000),
                                trace_of(2, 3, 0x71, 4, 15000000)};
  const LoadedProfile p = parsed(profile_json(must(merge(traces))), "is");
  REQUIRE(p.sites.size() == 2);
  const ProfileIndex index(p);
  const ProfileSite* at_once = index.find_site(0x70);
  const ProfileSite* later = index.find_site(0x71);
  REQUIRE(at_once);
  REQUIRE(later);
  CHECK(at_once->ranks.size() == 1);
  CHECK(later->ranks.size() == 2);
  const Decision a = decide(at_once, index.key_recorded(*at_once, 0x99), kCost, true);
  const Decision b = decide(later, index.key_recorded(*later, 0x99), kCost, true);
  CHECK(a.basis == Basis::NoOverlapToGain);
  CHECK(b.basis == Basis::OverlapPays);
  REQUIRE(b.saved_ns);
  CHECK(*b.saved_ns == Approx(std::min(20e6, 15e6 + 1e6) - 2.5e6));
}

TEST_CASE("gain: an Alltoallv site's blocks per pair, where every rank of the world recorded its own") {
  ProfileSite s;
  s.kind = "alltoallv";
  s.comm_size = 3;
  s.sub_messages = 3;
  for (int r = 0; r < 3; ++r) {
    ProfileSite::Rank rank;
    rank.rank = r;
    rank.receives = true;
    rank.bytes_per_call = 3 * (r + 1) * kMiB;
    rank.sub_bytes = {(r + 1.0) * kMiB, (r + 1.0) * kMiB, (r + 1.0) * kMiB};
    s.ranks.push_back(rank);
  }
  const SiteEstimate e = estimate_site(s);
  CHECK(e.bytes == 9 * kMiB);  // the heaviest receiver's
  REQUIRE(e.blocks);
  CHECK(e.blocks->n == 3);
  CHECK(e.blocks->at(2, 0) == 3 * kMiB);  // rank 2 receives 3 MiB from rank 0
  CHECK(e.blocks->at(0, 2) == 1 * kMiB);
  // An Alltoall (one block for all), a rank missing, a rank twice, blocks not recorded: none.
  ProfileSite alltoall = s;
  alltoall.kind = "alltoall";
  CHECK_FALSE(estimate_site(alltoall).blocks);
  ProfileSite missing = s;
  missing.ranks.pop_back();
  CHECK_FALSE(estimate_site(missing).blocks);
  ProfileSite twice = s;
  twice.ranks[2].rank = 1;
  CHECK_FALSE(estimate_site(twice).blocks);
  ProfileSite older = s;
  older.ranks[1].sub_bytes.clear();
  CHECK_FALSE(estimate_site(older).blocks);
}

TEST_CASE("gain: sites whose calls are the same collectives on other ranks complete in the call together") {
  // NPB IS's pattern: rank 0 reaches the Alltoallv from one site, ranks 1-3 from another; the
  // same calls sit at the same places of every rank's sequence of collectives.
  auto site = [](const std::string& kind, const std::string& where, std::vector<std::pair<int, std::vector<std::uint64_t>>> ranks) {
    ProfileSite s;
    s.kind = kind;
    s.comm_size = 4;
    s.where = where;
    for (auto& [rank, places] : ranks) {
      ProfileSite::Rank r;
      r.rank = rank;
      r.first_calls = places;
      s.ranks.push_back(r);
    }
    return s;
  };
  const std::vector<ProfileSite> sites = {
      site("alltoallv", "rank0", {{0, {4, 6, 8}}}),
      site("alltoallv", "others", {{1, {4, 6, 8}}, {2, {4, 6, 8}}, {3, {4, 6, 8}}}),
      site("alltoallv", "warm-up", {{0, {2}}, {1, {2}}, {2, {2}}, {3, {2}}}),
      site("bcast", "root", {{0, {4}}}),
  };
  auto decided = [](Basis b, bool by_model = true) {
    Decision d;
    d.basis = b;
    d.by_model = by_model;
    return d;
  };
  std::vector<Decision> d = {decided(Basis::OwnCallFaster), decided(Basis::OverlapPays), decided(Basis::OverlapPays),
                             decided(Basis::OverlapPays)};
  align_partners(sites, d);
  CHECK(d[0].basis == Basis::OwnCallFaster);
  CHECK(d[1].basis == Basis::PartnerInCall);  // the same calls as rank 0's
  CHECK(d[1].blocking());
  CHECK_FALSE(d[1].library_call());  // tnbc's schedule completes it, as at its partner
  CHECK(d[1].partner == "rank0");
  CHECK(describe(d[1]).find("completes in the call: the same calls complete in the call on other ranks (at rank0)") == 0);
  CHECK(std::string(basis_name(d[1].basis)) == "partner_in_call");
  CHECK(d[2].basis == Basis::OverlapPays);  // other calls
  CHECK(d[3].basis == Basis::OverlapPays);  // another kind
  // Both early, or both in the call: nothing changes.
  std::vector<Decision> early = {decided(Basis::OverlapPays), decided(Basis::OverlapPays)};
  align_partners({sites[0], sites[1]}, early);
  CHECK(early[0].basis == Basis::OverlapPays);
  CHECK(early[1].basis == Basis::OverlapPays);
  // The fixed rule keeps each site's own decision (tests place a cost between two sites).
  std::vector<Decision> fixed = {decided(Basis::NoOverlapToGain, false), decided(Basis::OverlapPays, false)};
  align_partners({sites[0], sites[1]}, fixed);
  CHECK(fixed[1].basis == Basis::OverlapPays);
  // A profile without the places (written before first_calls): no partners.
  std::vector<ProfileSite> older = {sites[0], sites[1]};
  for (ProfileSite& s : older)
    for (ProfileSite::Rank& r : s.ranks) r.first_calls.clear();
  std::vector<Decision> unknown = {decided(Basis::OwnCallFaster), decided(Basis::OverlapPays)};
  align_partners(older, unknown);
  CHECK(unknown[1].basis == Basis::OverlapPays);
}

namespace {
// A decision of the cost model with these figures (ms); early_at_pct < 0: none.
Decision model_decision(Basis b, double saved_ms, double margin_ms, double cost_ms, int early_at_pct) {
  Decision d;
  d.basis = b;
  d.by_model = true;
  d.saved_ns = saved_ms * 1e6;
  d.margin_ns = margin_ms * 1e6;
  d.cost_ns = cost_ms * 1e6;
  if (early_at_pct >= 0) d.early_at_pct = early_at_pct;
  return d;
}
// A site of `kind` over 2 ranks that each called it `calls` times (the trace's count).
ProfileSite two_rank_site(const char* kind, std::uint64_t calls) {
  ProfileSite s;
  s.kind = kind;
  s.comm_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    ProfileSite::Rank r;
    r.rank = rank;
    r.calls = calls;
    s.ranks.push_back(r);
  }
  return s;
}
}  // namespace

TEST_CASE("gain: partners take the way their calls' predicted savings beyond their margins sum to") {
  // bcast-proxy A at np 2 on one node (session 64): rank 1's first broadcast alone at a site of
  // its own, held just inside its margin, and the other site's calls on both ranks, each well
  // beyond its margin; the first call of each rank at the same place of its sequence.
  auto site = [](const std::string& where, std::vector<std::tuple<int, std::uint64_t, std::vector<std::uint64_t>>> ranks) {
    ProfileSite s;
    s.kind = "bcast";
    s.comm_size = 2;
    s.where = where;
    for (auto& [rank, calls, places] : ranks) {
      ProfileSite::Rank r;
      r.rank = rank;
      r.calls = calls;
      r.first_calls = places;
      s.ranks.push_back(r);
    }
    return s;
  };
  const std::vector<ProfileSite> sites = {site("loop", {{0, 11, {0, 1, 2}}, {1, 10, {1, 2, 3}}}),
                                          site("first", {{1, 1, {0}}})};
  auto judged = [](Basis b, double saved_ms, double margin_ms) {
    return model_decision(b, saved_ms, margin_ms, 0, b != Basis::OverlapPays ? 34 : -1);
  };
  // 21 calls 7 ms beyond their margin against one 0.05 ms short of it: all return early.
  std::vector<Decision> d = {judged(Basis::OverlapPays, 26.1, 18.8), judged(Basis::NoOverlapToGain, 23.67, 23.72)};
  align_partners(sites, d);
  CHECK(d[0].basis == Basis::OverlapPays);
  CHECK(d[1].basis == Basis::PartnerEarly);
  CHECK_FALSE(d[1].blocking());
  CHECK_FALSE(d[1].library_call());
  CHECK_FALSE(d[1].early_at_pct);  // returns early: no margin to name
  CHECK(d[1].partner == "loop");
  CHECK(std::string(basis_name(d[1].basis)) == "partner_early");
  CHECK(describe(d[1]).find("returns early: the same calls return early on other ranks (at loop)") == 0);
  // The one call far short of its margin (a predicted loss of 200 ms): the sum is negative, all
  // complete in the call.
  std::vector<Decision> loss = {judged(Basis::OverlapPays, 26.1, 18.8), judged(Basis::NoOverlapToGain, -180, 20)};
  align_partners(sites, loss);
  CHECK(loss[0].basis == Basis::PartnerInCall);
  CHECK(loss[0].partner == "first");
  CHECK(loss[1].basis == Basis::NoOverlapToGain);
  // Weighed against tnbc's schedule in the call, the site's lead on that schedule counts.
  std::vector<Decision> own = {judged(Basis::OverlapPays, 26.1, 18.8), judged(Basis::OwnCallFaster, 30, 5)};
  own[1].beyond_own_ns = -200e6;  // the schedule in the call 200 ms ahead of the early return
  align_partners(sites, own);
  CHECK(own[0].basis == Basis::PartnerInCall);
  CHECK(own[1].basis == Basis::OwnCallFaster);
}

TEST_CASE("gain: tnbc merge prints the model's figures for a site outside the sizes that return early too") {
  // Four ranks on a node of two CPUs, through shared memory: the shared node's margin is 100 %,
  // so no size returns early there and every site is plain MPI by its size. The line still
  // gives what the model predicts at the site (blocking, hidden, cost, saved against the margin).
  std::vector<RankValues> computes(4);
  for (auto& r : computes) r.curc_ns = 30 * kMs;  // computes past the transfer: its best case
  const LoadedProfile p = parsed(profile_text(computes), "crowded.profile");
  const tnbc::Settings s;
  RunModel m;
  m.inputs = std::make_shared<tnbc::model::Inputs>();
  m.inputs->machine = through_shared_memory(machine(125));
  m.inputs->world = tnbc::model::Topology::block(4, 4, 2, 1);
  const std::vector<std::string> v = site_verdicts(p, s, &m);
  REQUIRE(v.size() == 1);
  CHECK(v[0].find("plain MPI anyway: outside the sizes that return early (never, from the cost model)") == 0);
  CHECK(v[0].find("; the site by the model (predicted: blocking 20.00 ms") != std::string::npos);
  CHECK(v[0].find(" <= margin ") != std::string::npos);
  // The figures are describe's own, after its verdict.
  const Decision d = decide_sites(p.sites, make_judge(s, m.inputs, tnbc::execution(s, m.inputs->machine)))[0];
  CHECK(v[0].find(describe_figures(d)) != std::string::npos);
  CHECK(describe(d) == "completes in the call: no overlap to gain " + describe_figures(d));
  // An incomplete estimate has no figures, and the line none either.
  const LoadedProfile none = parsed(profile_text(computes, false), "none.profile");
  CHECK(site_verdicts(none, s, &m)[0].find("the site by the model") == std::string::npos);
}

TEST_CASE("gain: tnbc merge promises plain MPI for a broadcast only where a root's own site follows it") {
  // A broadcast read at once (its receivers' site, 4 MiB) and the roots' own site of the same
  // calls (no rank receives there: no size, no estimate), on 2 one-CPU nodes, every size judged.
  std::vector<RankValues> readers(2), roots(2);
  for (auto& r : roots) {
    r.receives = false;
    r.bytes = 0;
    r.curc_ns.reset();
    r.r_crc.reset();
    r.gaps_ns.clear();
  }
  auto bcast = [](std::string text) {
    for (std::size_t at = text.find("\"alltoall\""); at != std::string::npos; at = text.find("\"alltoall\"", at))
      text.replace(at, 10, "\"bcast\"");
    return text;
  };
  const std::string text =
      bcast(profile_of(2, {site_text(readers, true, "0x00000000000000b1", 2), site_text(roots, true, "0x00000000000000b2", 2)}));
  LoadedProfile p = parsed(text, "roots.profile");
  REQUIRE(p.sites.size() == 2);
  tnbc::Settings s;
  s.min_bytes = 4096;
  RunModel m;
  m.inputs = std::make_shared<tnbc::model::Inputs>();
  m.inputs->machine = machine(125);
  m.inputs->world = tnbc::model::Topology::block(2, 1, 1, 1);
  const Judge j = make_judge(s, m.inputs, tnbc::execution(s, m.inputs->machine));
  // Not partners (no places recorded): the roots' site keeps no estimate, and the readers' site,
  // though judged no gain, is not the library's call on every rank.
  std::vector<Decision> d = decide_sites(p.sites, j);
  REQUIRE(d[0].library_call());
  CHECK(d[1].basis == Basis::NoEstimate);
  CHECK_FALSE(site_sizes(s, j, p.sites[1], tnbc::Kind::Bcast).outside);  // no size: not outside the sizes
  std::vector<std::string> v = site_verdicts(p, s, &m);
  CHECK(v[0].find("another site of this kind and size does not run the library's call") != std::string::npos);
  CHECK(v[1].find("no estimate") != std::string::npos);
  // Partners (the same places): the roots' site follows, and both are the library's call.
  for (ProfileSite& site : p.sites)
    for (ProfileSite::Rank& r : site.ranks) r.first_calls = {0, 2, 4};
  d = decide_sites(p.sites, j);
  CHECK(d[1].library_call());
  v = site_verdicts(p, s, &m);
  CHECK(v[0].find("plain MPI on every rank") != std::string::npos);
  CHECK(v[1].find("(the root's own call site: as its receivers' at ") != std::string::npos);
  CHECK(v[1].find("plain MPI on every rank") != std::string::npos);
}

TEST_CASE("leave_to_trial: a saving inside the model's margins goes to the site trial, a clear loss or gain does not") {
  auto judged = [](Basis b, double saved_ms, double cost_ms) {
    Decision d = model_decision(b, saved_ms, 18, cost_ms, b == Basis::NoOverlapToGain ? 16 : -1);
    if (d.early_at_pct) d.margin_setting = "TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT";
    return d;
  };
  Judge j;
  j.margin_of_cost = 0.15;
  j.try_within_margin = true;
  // bcast-proxy A (session 73): 10.05 ms under an 18 ms margin; is-proxy A: -0.19 ms against a
  // cost of 11.92 ms (its share 1.79 ms); a program that reads at once: -2 ms against a cost of 2 ms
  // (share 0.3 ms); one that returns early; one where tnbc's schedule in the call is faster; the
  // fixed rule's.
  std::vector<Decision> d = {judged(Basis::NoOverlapToGain, 10.05, 3.53), judged(Basis::NoOverlapToGain, -0.19, 11.92),
                             judged(Basis::NoOverlapToGain, -2.0, 2.0), judged(Basis::OverlapPays, 30, 3),
                             judged(Basis::OwnCallFaster, 1, 3), judged(Basis::NoOverlapToGain, -0.1, 1)};
  d[5].by_model = false;
  std::vector<Decision> off = d;
  const std::vector<ProfileSite> apart(d.size());  // no partners: each site alone
  leave_to_trial(apart, d, j);
  CHECK(d[0].basis == Basis::WithinMargin);
  CHECK(d[1].basis == Basis::WithinMargin);
  CHECK(d[2].basis == Basis::NoOverlapToGain);
  CHECK(d[3].basis == Basis::OverlapPays);
  CHECK(d[4].basis == Basis::OwnCallFaster);
  CHECK(d[5].basis == Basis::NoOverlapToGain);
  CHECK_FALSE(d[0].blocking());
  CHECK_FALSE(d[0].library_call());
  CHECK_FALSE(d[0].early_at_pct);  // not held back: the trial decides
  CHECK(d[2].early_at_pct == 16);
  CHECK(std::string(basis_name(d[0].basis)) == "within_margin");
  CHECK(describe(d[0]).find("returns early: on trial: the predicted saving lies within the model's margins") == 0);
  // TNBC_TRY_WITHIN_MARGIN=off, or no trial (TNBC_SITE_TRIAL_CALLS=0): as before.
  j.try_within_margin = false;
  leave_to_trial(apart, off, j);
  CHECK(off[0].basis == Basis::NoOverlapToGain);
  CHECK(off[1].basis == Basis::NoOverlapToGain);
  tnbc::Settings s;
  CHECK(make_judge(s, nullptr, {}).try_within_margin);
  s.site_trial_calls = 0;
  CHECK_FALSE(make_judge(s, nullptr, {}).try_within_margin);
  s = tnbc::Settings{};
  s.try_within_margin = tnbc::Switch::Off;
  CHECK_FALSE(make_judge(s, nullptr, {}).try_within_margin);
}

TEST_CASE("leave_to_trial: partner sites go to the trial together, by their calls' savings summed") {
  // NPB IS.A at np 2 on one node (session 74): rank 0 reaches the Alltoallv from one site, rank 1
  // from another, 10 calls each at the same places of their sequences.
  auto site = [](int rank, std::uint64_t calls) {
    ProfileSite s;
    s.kind = "alltoallv";
    s.comm_size = 2;
    ProfileSite::Rank r;
    r.rank = rank;
    r.calls = calls;
    for (std::uint64_t k = 0; k < calls; ++k) r.first_calls.push_back(3 + 2 * k);
    s.ranks.push_back(r);
    return s;
  };
  const std::vector<ProfileSite> sites = {site(0, 10), site(1, 10)};
  auto judged = [](double saved_ms, double cost_ms) {
    return model_decision(Basis::NoOverlapToGain, saved_ms, 18, cost_ms, -1);
  };
  Judge j;
  j.margin_of_cost = 0.15;
  j.try_within_margin = true;
  // Rank 0's 0.79 ms short, inside its bound (1.07 ms); rank 1's 1.59 ms short, outside its own
  // (1.05 ms): summed, 23.8 ms against 21.3: both keep the library's call.
  std::vector<Decision> split = {judged(-0.79, 7.14), judged(-1.59, 7.03)};
  leave_to_trial(sites, split, j);
  CHECK(split[0].basis == Basis::NoOverlapToGain);
  CHECK(split[1].basis == Basis::NoOverlapToGain);
  // Each site alone, rank 0's would be tried (what the run did before).
  std::vector<Decision> alone = {judged(-0.79, 7.14), judged(-1.59, 7.03)};
  leave_to_trial(std::vector<ProfileSite>(2), alone, j);
  CHECK(alone[0].basis == Basis::WithinMargin);
  CHECK(alone[1].basis == Basis::NoOverlapToGain);
  // Both short by less than the summed shares: both tried.
  std::vector<Decision> both = {judged(-0.79, 7.14), judged(-1.2, 7.03)};
  leave_to_trial(sites, both, j);
  CHECK(both[0].basis == Basis::WithinMargin);
  CHECK(both[1].basis == Basis::WithinMargin);
  // A partner the model did not price keeps the group the library's.
  std::vector<Decision> unpriced = {judged(-0.1, 7.14), judged(-0.1, 7.03)};
  unpriced[1].by_model = false;
  leave_to_trial(sites, unpriced, j);
  CHECK(unpriced[0].basis == Basis::NoOverlapToGain);
  // A partner on tnbc's schedule in the call anyway does not hold the other back: it is not the
  // library's call either way.
  std::vector<Decision> own = {judged(-0.79, 7.14), model_decision(Basis::OwnCallFaster, 1, 3, 3, -1)};
  leave_to_trial(sites, own, j);
  CHECK(own[0].basis == Basis::WithinMargin);
  CHECK(own[1].basis == Basis::OwnCallFaster);
}

TEST_CASE("leave_to_trial: a site a rank calls less than twice as often as the trial takes keeps the library's call") {
  // NPB FT.A at np 2 on 2 nodes (session 76): the forward transform's two sites, one call a rank
  // each, inside the margins (-1.64 and -2.16 ms against costs of 20.8 and 20.3 ms): tried, every
  // call was the trial's warm-up, an early return on no evidence.
  auto site = [](std::uint64_t calls) { return two_rank_site("alltoall", calls); };
  auto judged = [] { return model_decision(Basis::NoOverlapToGain, -1.64, 85, 20.8, -1); };
  Judge j;
  j.margin_of_cost = 0.15;
  j.try_within_margin = true;
  j.trial_calls = 4;
  // 1 and 5 calls a rank: the warm-up and the trial's four are all there is; 9: four calls after
  // the trial's five (NPB FT.A's loop, 6 a rank, session 81: 0.961x tried, 1.039x faster not);
  // 10: as many after it as it takes.
  const std::vector<ProfileSite> sites = {site(1), site(5), site(9), site(10)};
  std::vector<Decision> d = {judged(), judged(), judged(), judged()};
  leave_to_trial(sites, d, j);
  CHECK(d[0].basis == Basis::NoOverlapToGain);
  CHECK(d[0].untried_calls == 1u);
  CHECK(d[1].basis == Basis::NoOverlapToGain);
  CHECK(d[1].untried_calls == 5u);
  CHECK(d[2].basis == Basis::NoOverlapToGain);
  CHECK(d[2].untried_calls == 9u);
  CHECK(d[3].basis == Basis::WithinMargin);
  CHECK_FALSE(d[3].untried_calls);
  CHECK(describe(d[0]).find("; inside the margins, not tried: 1 call a rank, fewer than twice what the site trial "
                            "takes") != std::string::npos);
  CHECK(describe(d[1]).find("not tried: 5 calls a rank") != std::string::npos);
  CHECK(describe(d[3]).find("not tried") == std::string::npos);
  // bcast-proxy (session 76): rank 1 reaches its first broadcast from another site, once; the
  // partners go to the trial together, for the other site's 20 calls a rank after it.
  auto ranked = [](int rank, std::uint64_t calls, std::uint64_t first) {
    ProfileSite::Rank r;
    r.rank = rank;
    r.calls = calls;
    for (std::uint64_t k = 0; k < calls; ++k) r.first_calls.push_back(first + k);
    return r;
  };
  std::vector<ProfileSite> bcast(2);
  for (ProfileSite& b : bcast) {
    b.kind = "bcast";
    b.comm_size = 2;
  }
  bcast[0].ranks = {ranked(0, 21, 0), ranked(1, 20, 1)};
  bcast[1].ranks = {ranked(1, 1, 0)};
  std::vector<Decision> b = {judged(), judged()};
  leave_to_trial(bcast, b, j);
  CHECK(b[0].basis == Basis::WithinMargin);
  CHECK(b[1].basis == Basis::WithinMargin);
  // Alone, the one-call site is not tried.
  std::vector<Decision> alone = {judged()};
  leave_to_trial({bcast[1]}, alone, j);
  CHECK(alone[0].untried_calls == 1u);
  // A profile without call counts (older files): tried as before.
  std::vector<ProfileSite> unknown = {site(1)};
  for (auto& r : unknown[0].ranks) r.calls.reset();
  std::vector<Decision> k = {judged()};
  leave_to_trial(unknown, k, j);
  CHECK(k[0].basis == Basis::WithinMargin);
  // The settings': TNBC_SITE_TRIAL_CALLS.
  tnbc::Settings s;
  s.site_trial_calls = 6;
  CHECK(make_judge(s, nullptr, {}).trial_calls == 6);
}

TEST_CASE("follow_receivers: a broadcast root's own call site takes its receivers' decision") {
  // report_prog's broadcast with its fill inlined, np 2: each rank's root calls at one site (no
  // rank received there: no estimate), its receiving calls at another; the same calls, so the
  // same places in the ranks' sequences.
  auto site = [](const std::string& where, bool receives, std::vector<std::uint64_t> places) {
    ProfileSite s = two_rank_site("bcast", 6);
    s.where = where;
    for (ProfileSite::Rank& r : s.ranks) {
      r.receives = receives;
      r.first_calls = places;
      if (!receives) r.root_calls = 6;
    }
    return s;
  };
  const std::vector<ProfileSite> sites = {site("roots", false, {1, 4}), site("receivers", true, {1, 4})};
  Decision unknown;
  unknown.basis = Basis::NoEstimate;
  for (const Basis b : {Basis::NoOverlapToGain, Basis::OverlapPays, Basis::WithinMargin}) {
    std::vector<Decision> d = {unknown, model_decision(b, b == Basis::NoOverlapToGain ? -0.2 : 11.8, 5, 0.5, -1)};
    follow_receivers(sites, d);
    CHECK(d[0].basis == b);
    CHECK(d[0].receivers == "receivers");
    CHECK(d[0].saved_ns == d[1].saved_ns);
    CHECK(d[0].library_call() == (b == Basis::NoOverlapToGain));
    CHECK(d[1].receivers.empty());
    CHECK(describe(d[0]).find("the root's own call site: as its receivers' at receivers") != std::string::npos);
  }
  // Of two receiving partners, one that does not run the library's call leads.
  std::vector<ProfileSite> three = sites;
  three.push_back(site("more receivers", true, {4}));
  std::vector<Decision> d = {unknown, model_decision(Basis::NoOverlapToGain, -0.2, 5, 0.5, -1),
                             model_decision(Basis::OwnCallFaster, -0.1, 5, 0.5, -1)};
  follow_receivers(three, d);
  CHECK(d[0].basis == Basis::OwnCallFaster);
  CHECK(d[0].receivers == "more receivers");
  // Not partners (other calls), not a broadcast, or a site ranks received at: its own decision.
  d = {unknown, model_decision(Basis::NoOverlapToGain, -0.2, 5, 0.5, -1)};
  follow_receivers({site("roots", false, {2, 5}), sites[1]}, d);
  CHECK(d[0].basis == Basis::NoEstimate);
  CHECK(d[0].receivers.empty());
  std::vector<ProfileSite> exchange = sites;
  for (ProfileSite& s : exchange) s.kind = "alltoall";
  d = {unknown, model_decision(Basis::NoOverlapToGain, -0.2, 5, 0.5, -1)};
  follow_receivers(exchange, d);
  CHECK(d[0].basis == Basis::NoEstimate);
  std::vector<ProfileSite> read = sites;
  for (ProfileSite::Rank& r : read[0].ranks) r.receives = true;
  d = {unknown, model_decision(Basis::NoOverlapToGain, -0.2, 5, 0.5, -1)};
  follow_receivers(read, d);
  CHECK(d[0].basis == Basis::NoEstimate);
  // A receiving partner the model did not price (the fixed rule, no estimate): nothing to take.
  d = {unknown, unknown};
  follow_receivers(sites, d);
  CHECK(d[0].basis == Basis::NoEstimate);
}

TEST_CASE("trial_costlier: a trial priced at a gain is left out where its completions cost more than it protects") {
  // bcast-proxy A at 4 Gbit/s (session 79): 6.87 ms priced within a 7.19 ms margin, 11 calls a
  // rank, a trial of 4 (two completions): 2 x 13.87^2 / 28.76 = 13.7 ms against 6 x 0.32^2 / 28.76.
  CHECK(trial_costlier(6.87e6, 7.19e6, 11, 4));
  // The README demo's bcast-proxy W at 1 Gbit/s: 2.03 ms within 8.33: 6.4 ms against 7.1: tried.
  CHECK_FALSE(trial_costlier(2.03e6, 8.33e6, 11, 4));
  // The same site called often: the calls after the trial outweigh its two completions.
  CHECK_FALSE(trial_costlier(6.87e6, 7.19e6, 100000, 4));
  // Priced at a loss, no margin, no trial: tried (or not at all) as before.
  CHECK_FALSE(trial_costlier(-0.19e6, 1.79e6, 11, 4));
  CHECK_FALSE(trial_costlier(0.0, 1e6, 11, 4));
  CHECK_FALSE(trial_costlier(1e6, 0.0, 11, 4));
  CHECK_FALSE(trial_costlier(6.87e6, 7.19e6, 11, 0));
  // Exactly at the margin no call can lose: any trial costs more than it protects.
  CHECK(trial_costlier(2e6, 2e6, 1000000, 4));

  auto site = [](std::uint64_t calls) { return two_rank_site("bcast", calls); };
  Judge j;
  j.margin_of_cost = 0.15;
  j.try_within_margin = true;
  j.trial_calls = 4;
  j.skip_costly_trial = true;
  auto within = [](double saved_ms) { return model_decision(Basis::NoOverlapToGain, saved_ms, 7.19, 5.91, 95); };
  std::vector<Decision> d = {within(6.87), within(6.87), within(-0.5)};
  leave_to_trial({site(11), site(100000), site(11)}, d, j);
  CHECK(d[0].basis == Basis::TrialCostlier);
  CHECK_FALSE(d[0].blocking());
  CHECK_FALSE(d[0].early_at_pct);
  CHECK(std::string(basis_name(d[0].basis)) == "trial_costlier");
  CHECK(describe(d[0]).find("returns early: not tried: the predicted saving lies within the model's margins") == 0);
  CHECK(d[1].basis == Basis::WithinMargin);
  CHECK(d[2].basis == Basis::WithinMargin);  // priced at a loss: the trial, leaning in the call
  // A profile without call counts: tried as before.
  std::vector<ProfileSite> unknown = {site(11)};
  for (auto& r : unknown[0].ranks) r.calls.reset();
  std::vector<Decision> k = {within(6.87)};
  leave_to_trial(unknown, k, j);
  CHECK(k[0].basis == Basis::WithinMargin);
  // TNBC_SKIP_COSTLY_TRIAL=off (the default): tried.
  j.skip_costly_trial = false;
  std::vector<Decision> tried = {within(6.87)};
  leave_to_trial({site(11)}, tried, j);
  CHECK(tried[0].basis == Basis::WithinMargin);
  tnbc::Settings s;
  CHECK_FALSE(make_judge(s, nullptr, {}).skip_costly_trial);
  s.skip_costly_trial = tnbc::Switch::On;
  CHECK(make_judge(s, nullptr, {}).skip_costly_trial);
}

TEST_CASE("gain: a broadcast's receivers and its root priced apart") {
  // bcast-proxy W at np 2 on 2 nodes of one CPU (session 78): the root rotating, its calls 1 ms
  // (its send buffered), the receivers' 31 ms (waiting for the late root, then the transfer).
  auto site = [](bool roles) {
    ProfileSite s;
    s.kind = "bcast";
    s.comm_size = 2;
    s.sub_messages = 7;
    s.where = "loop";
    for (int rank = 0; rank < 2; ++rank) {
      ProfileSite::Rank r;
      r.rank = rank;
      r.receives = true;
      r.calls = 10;
      r.traced = 10;
      r.bytes_per_call = 2 * 1024 * 1024;
      r.duration_ns = roles ? 31 * kMs : 16 * kMs;  // before: the median over both roles
      if (roles) {
        r.root_calls = 5;
        r.root_duration_ns = 1 * kMs;
      }
      r.curc_ns = 2.2 * kMs;
      r.r_crc = 1.5e9;
      s.ranks.push_back(r);
    }
    return s;
  };
  const SiteEstimate e = estimate_site(site(true));
  CHECK(*e.comm_ns == Approx(31 * kMs));
  REQUIRE(e.root_comm_ns);
  CHECK(*e.root_comm_ns == Approx(1 * kMs));
  CHECK(e.root_share == Approx(0.5));
  CHECK_FALSE(estimate_site(site(false)).root_comm_ns);
  tnbc::Settings s;
  auto inputs = std::make_shared<tnbc::model::Inputs>();
  inputs->machine = two_nodes();
  inputs->machine.cpus_per_node = 1;
  inputs->world = tnbc::model::Topology::block(2, 1, 1, 1);
  const Judge j = make_judge(s, inputs, tnbc::execution(s, inputs->machine));
  const ProfileSite with_roles = site(true);
  const Decision d = decide(&with_roles, true, j);
  REQUIRE(d.saved_ns);
  CHECK(*d.comm_ns == Approx(31 * kMs));  // the receivers' Tcomm
  const tnbc::model::Topology t = j.topology(2);
  const tnbc::model::Coll c =
      tnbc::model::run_coll(inputs->machine, t, j.exec, tnbc::Kind::Bcast, 2 * 1024 * 1024, j.piece_bytes);
  const double T = tnbc::model::mpi_blocking_ns(inputs->machine, t, c);
  REQUIRE(T > 1 * kMs);
  REQUIRE(T < 31 * kMs);
  // Beyond the transfer (the model's: longer than the root's call), the wait for the late root.
  CHECK(d.late_ns == Approx(31 * kMs - T));
  CHECK(*d.in_call_ns > d.late_ns);
  REQUIRE(d.root_lead_ns);
  CHECK(*d.root_lead_ns == Approx(T - 1 * kMs));
  CHECK(d.root_share == Approx(0.5));
  // The root's early return saves little or loses little, within its lead: the site's figures are
  // its receivers'.
  REQUIRE(d.root_saved_ns);
  CHECK(std::abs(*d.root_saved_ns) < *d.root_lead_ns);
  const tnbc::model::Overlap receivers =
      tnbc::model::overlap(inputs->machine, t, c, j.exec, *site_program(e), 31 * kMs, d.late_ns);
  CHECK(*d.saved_ns == Approx(receivers.saved_ns));
  const std::string line = describe(d);
  CHECK(line.find("the receivers' calls: the root's (50% of the calls) 1.00 ms") != std::string::npos);
  CHECK(line.find("waiting for the late root") != std::string::npos);
  // A profile without the roles (before session 78): one Tcomm, no root, no wait.
  const ProfileSite before = site(false);
  const Decision old = decide(&before, true, j);
  CHECK(*old.comm_ns == Approx(16 * kMs));
  CHECK(old.late_ns == 0);
  CHECK_FALSE(old.root_comm_ns);
}
