// Mode optimize's blocking decision (trace/gain.hh): profile values in, decision out. Sites
// that read at once and sites that compute first, cheap and expensive communication, a missing
// site, missing estimates, an older profile, ranks that disagree, sizes not recorded, and the
// agreement digest every rank compares at start-up.
#include <catch2/catch.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "trace/gain.hh"
#include "trace/merge.hh"
#include "trace/profile.hh"

using namespace tnbc::trace;

namespace {

constexpr double kMs = 1e6;  // ns per ms
constexpr std::uint64_t kMiB = 1024 * 1024;

// One rank's values at a site, as `tnbc merge` writes them (nullopt: null in the file).
struct RankValues {
  int calls = 10;
  int traced = 10;
  bool receives = true;
  std::uint64_t bytes = 4 * kMiB;
  std::optional<double> dur_ns = 20 * kMs;
  std::optional<double> curc_ns = 0.05 * kMs;
  std::optional<double> r_crc = 4.0 * 1024 * kMiB;  // 4 GiB/s: 4 MiB in ~1 ms
  std::vector<double> gaps_ns = {0.3 * kMs, 0.3 * kMs, 0.3 * kMs};
  std::vector<std::string> keys = {"0x00000000000000a1"};
};

std::string num(const std::optional<double>& v) {
  if (!v) return "null";
  std::ostringstream o;
  o.precision(17);
  o << *v;
  return o.str();
}

// A profile with one alltoall site over `ranks.size()` ranks (np = comm_size = ranks.size()).
// `estimates` false: the fields an older `tnbc merge` did not write are left out.
std::string profile_text(const std::vector<RankValues>& ranks, bool estimates = true, const std::string& site = "0x0000000000000051") {
  std::ostringstream o;
  const std::size_t np = ranks.size();
  o << "{\"format\": \"tnbc-profile\", \"version\": 1, \"np\": " << np << ", \"executable\": \"/x/app\", \"sites\": [\n"
    << " {\"site\": \"" << site << "\", \"kind\": \"alltoall\", \"comm_size\": " << np
    << ", \"frames\": [{\"module\": \"app\", \"offset\": \"0x10\", \"symbol\": \"main\"}], \"sub_messages\": 4,"
    << " \"consensus_order\": [0, 1, 2, 3], \"ranks\": [";
  for (std::size_t r = 0; r < np; ++r) {
    const RankValues& v = ranks[r];
    o << (r ? ",\n" : "\n") << "  {\"rank\": " << r << ", \"receives\": " << (v.receives ? "true" : "false")
      << ", \"order\": [0, 1, 2, 3], \"keys\": [";
    for (std::size_t k = 0; k < v.keys.size(); ++k) o << (k ? ", " : "") << "\"" << v.keys[k] << "\"";
    o << "]";
    if (estimates) {
      o << ", \"calls\": " << v.calls << ", \"traced\": " << v.traced << ", \"bytes_per_call\": " << v.bytes
        << ", \"duration_ns\": " << num(v.dur_ns) << ", \"curc_ns\": " << num(v.curc_ns)
        << ", \"r_crc_bytes_per_s\": " << num(v.r_crc) << ", \"gaps_ns\": [";
      for (std::size_t k = 0; k < v.gaps_ns.size(); ++k) o << (k ? ", " : "") << num(v.gaps_ns[k]);
      o << "]";
    }
    o << "}";
  }
  o << "]}]}\n";
  return o.str();
}

// 500 us + 500 us/MiB: the defaults.
const CostModel kCost{500e3, 500e3};

Decision decide_text(const std::string& text, bool sizes_recorded = true, const CostModel& cost = kCost) {
  const LoadedProfile p = parse_profile(text, "test.profile");
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
  CHECK(describe(now).find("runs blocking: no overlap to gain") == 0);

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
  CHECK(cost_model([] {
          tnbc::Settings s;
          s.early_return_cost_us = 100;
          s.early_return_cost_us_per_mib = 200;
          return s;
        }()).cost_ns(2.0 * kMiB) == Approx(100e3 + 2 * 200e3));
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

TEST_CASE("gain: T_CRC from the gaps when no R_CRC was measured") {
  std::vector<RankValues> r(4);
  for (auto& v : r) v.r_crc.reset(), v.gaps_ns = {1 * kMs, 1 * kMs}, v.curc_ns = 0.2 * kMs;
  const SiteEstimate e = estimate_site(parse_profile(profile_text(r), "t").sites[0]);
  REQUIRE(e.crc_ns);
  CHECK(*e.crc_ns == Approx(2 * kMs));
  CHECK(*e.overlap_ns == Approx(2.2 * kMs));
}

TEST_CASE("gain: ranks that disagree are decided by site-level medians, alike for every rank") {
  // Rank 0 reads at once; ranks 1-3 compute 10 ms first. The median over ranks decides.
  std::vector<RankValues> r(4);
  for (int k = 1; k < 4; ++k) r[static_cast<std::size_t>(k)].curc_ns = 10 * kMs;
  r[3].keys = {"0x00000000000000b2"};  // another instance key, recorded by rank 3 only
  const std::string text = profile_text(r);
  const ProfileIndex index(parse_profile(text, "t"));
  const ProfileSite* site = index.find_site(0x51);
  REQUIRE(site);
  const Decision d = decide(site, index.key_recorded(*site, 0xa1), kCost, true);
  CHECK(d.basis == Basis::OverlapPays);
  // Whatever rank asks, the inputs are the file's: the key recorded by rank 3 counts as recorded
  // for all, and the estimate is the site's.
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
  const SiteEstimate e = estimate_site(parse_profile(profile_text(root), "t").sites[0]);
  CHECK(e.estimating_ranks == 3);
  CHECK(*e.comm_ns == Approx(20 * kMs));
}

TEST_CASE("gain: sites the ranks did not call alike, sizes not recorded, decisions off: return early") {
  std::vector<RankValues> uneven(4);
  uneven[1].calls = 9;
  const Decision d = decide_text(profile_text(uneven));
  CHECK(d.basis == Basis::UnevenRanks);
  CHECK_FALSE(d.blocking());
  // A site only some of the ranks listed (2 of a 4-rank communicator).
  std::string three = profile_text(std::vector<RankValues>(4));
  three.replace(three.find("\"comm_size\": 4"), 14, "\"comm_size\": 3");
  CHECK(decide_text(three).basis == Basis::UnevenRanks);

  CHECK(decide_text(profile_text(std::vector<RankValues>(4)), false).basis == Basis::OtherSizes);
  const LoadedProfile p = parse_profile(profile_text(std::vector<RankValues>(4)), "t");
  CHECK(decide(&p.sites[0], true, kCost, false).basis == Basis::Off);
  CHECK_FALSE(decide(&p.sites[0], true, kCost, false).blocking());
}

TEST_CASE("gain: the profile's estimate fields are checked, the digest follows the bytes") {
  const std::string good = profile_text(std::vector<RankValues>(2));
  const auto bad = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK_THROWS_AS(parse_profile(bad("\"curc_ns\": 50000", "\"curc_ns\": \"fast\""), "t"), ProfileError);
  CHECK_THROWS_AS(parse_profile(bad("\"curc_ns\": 50000", "\"curc_ns\": -3"), "t"), ProfileError);
  CHECK_THROWS_AS(parse_profile(bad("\"calls\": 10", "\"calls\": 1.5"), "t"), ProfileError);
  CHECK_THROWS_AS(parse_profile(bad("\"gaps_ns\": [", "\"gaps_ns\": [true, "), "t"), ProfileError);
  CHECK_NOTHROW(parse_profile(bad("\"duration_ns\": 20000000", "\"duration_ns\": null"), "t"));

  const LoadedProfile a = parse_profile(good, "a"), b = parse_profile(good, "b");
  CHECK(a.digest == b.digest);  // same bytes, same digest, whatever the file is called
  CHECK(parse_profile(bad("\"curc_ns\": 50000", "\"curc_ns\": 50001"), "a").digest != a.digest);
  CHECK(a.sites[0].ranks[1].curc_ns == b.sites[0].ranks[1].curc_ns);
}

TEST_CASE("gain: from traces through tnbc merge to the decision") {
  // Two ranks, one alltoall site, each call 20 ms blocking and read at once: the merge's
  // estimates, written and read back, say block.
  std::vector<TraceFile> traces;
  for (int r = 0; r < 2; ++r) {
    TraceFile t;
    t.rank = r;
    t.size = 2;
    t.executable = "/x/app";
    t.run_id = "1";
    t.clock = "monotonic";
    t.ended_by = "finalize";
    t.sites.push_back({0x77, "alltoall", 2, {{"app", 0x10, "main"}}});
    for (int c = 0; c < 3; ++c) {
      CallRecord call;
      call.seq = static_cast<std::uint64_t>(c);
      call.site = 0x77;
      call.key = 0x99;
      call.traced = true;
      call.dur_ns = 20000000;
      call.subs.resize(2);
      for (int k = 0; k < 2; ++k) {
        SubRecord& s = call.subs[static_cast<std::size_t>(k)];
        s.bytes = 2 * kMiB;
        s.guarded = true;
        s.order = k;
        s.t_ns = 10000 + 500000 * k;  // first touch 10 us after return, the next 0.5 ms later
        s.how = How::Read;
      }
      t.calls.push_back(call);
    }
    traces.push_back(t);
  }
  const LoadedProfile p = parse_profile(profile_json(merge(traces)), "merged");
  REQUIRE(p.sites.size() == 1);
  const SiteEstimate e = estimate_site(p.sites[0]);
  CHECK(e.uniform);
  CHECK(e.estimating_ranks == 2);
  CHECK(*e.comm_ns == Approx(20e6));
  CHECK(*e.curc_ns == Approx(10000));
  CHECK(*e.crc_ns == Approx(4.0 * kMiB / (2.0 * kMiB / 0.5e-3) * 1e9));  // all bytes at the touch rate: 1 ms
  const Decision d = decide(&p.sites[0], true, kCost, true);
  CHECK(d.blocking());
  CHECK(d.cost_ns == Approx(0.5e6 + 4 * 0.5e6));
}
