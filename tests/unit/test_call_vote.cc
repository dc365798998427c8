// The vote of a communicator's ranks on the calls to run as the MPI library's own
// (runtime/call_vote.hh): keys, votes, what the reduced ballots change. Two ranks are two
// objects fed the same calls; the reduction is the OR the engine's MPI_Iallreduce makes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "runtime/call_vote.hh"

using namespace tnbc;

namespace {

const VoteKey kExchange{Kind::Alltoall, 1 << 20, -1};
const VoteKey kVaried{Kind::Alltoallv, SIZE_MAX, -1};  // kNoUnit: sizes that differ by rank
int site_a = 0, site_b = 0;

CallVote::Ballot reduce(const std::vector<CallVote*>& ranks) {
  CallVote::Ballot out{};
  for (const CallVote* r : ranks)
    for (std::size_t i = 0; i < out.size(); ++i) out[i] |= r->ballot()[i];
  return out;
}

// One call of `k` on every rank, as the engine makes it: the vote where due, then the call runs as
// the library's own where agreed, else as `settled[rank]` says its trial left it. Returns whether
// it ran as the library's own, asserting every rank alike.
bool call(const std::vector<CallVote*>& ranks, const VoteKey& k, const std::vector<bool>& settled,
          const void* site = &site_a) {
  std::vector<CallVote::Entry> entries;
  for (CallVote* r : ranks) entries.push_back(r->enter(k));
  for (const auto& e : entries) REQUIRE((e.vote == entries[0].vote && e.key == entries[0].key));
  if (entries[0].vote) {
    const CallVote::Ballot all = reduce(ranks);
    for (CallVote* r : ranks) r->apply(all);
  }
  const bool plain = ranks[0]->plain(entries[0].key);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    REQUIRE(ranks[i]->plain(entries[i].key) == plain);
    ranks[i]->record(entries[i].key, site, plain || settled[i]);
  }
  return plain;
}

}  // namespace

TEST_CASE("call vote: votes at the 7th to 15th odd calls, every 8th to the 128th, every 32nd after") {
  std::vector<std::uint64_t> at;
  for (std::uint64_t n = 1; n <= 200; ++n)
    if (CallVote::vote_at(n)) at.push_back(n);
  CHECK(at == std::vector<std::uint64_t>{7, 9, 11, 13, 15, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120,
                                         128, 160, 192});
}

TEST_CASE("call vote: keys numbered as they first occur, the same key the same number") {
  CallVote a;
  CHECK(a.enter(kExchange).key == 0);
  CHECK(a.enter(kVaried).key == 1);
  CHECK(a.enter(kExchange).key == 0);
  CHECK(a.enter({Kind::Bcast, 4096, 0}).key == 2);
  CHECK(a.enter({Kind::Bcast, 4096, 1}).key == 3);  // another root
  CHECK(a.calls() == 5);
  CallVote full;
  for (int i = 0; i < CallVote::kMaxKeys; ++i)
    CHECK(full.enter({Kind::Bcast, static_cast<std::size_t>(i), 0}).key == i);
  CHECK(full.enter({Kind::Bcast, 1u << 30, 0}).key == -1);  // the table is full: never agreed
  CHECK_FALSE(full.plain(-1));
}

TEST_CASE("call vote: a key every rank's trial completes in the call is the library's own from the next vote") {
  CallVote r0, r1;
  const std::vector<CallVote*> ranks{&r0, &r1};
  std::vector<bool> plain;
  // Calls 1-5: the warm-up and the trial (not settled); from call 6 the verdict (settled).
  for (int n = 1; n <= 12; ++n) plain.push_back(call(ranks, kExchange, {n >= 6, n >= 6}));
  CHECK(plain == std::vector<bool>{false, false, false, false, false, false, true, true, true, true, true, true});
}

TEST_CASE("call vote: one rank whose trial returns early keeps every rank's calls out of the library's own") {
  CallVote r0, r1;
  const std::vector<CallVote*> ranks{&r0, &r1};
  for (int n = 1; n <= 40; ++n) CHECK_FALSE(call(ranks, kExchange, {n >= 6, false}));
}

TEST_CASE("call vote: two sites of one key, one of them returning early: never the library's own") {
  CallVote r0, r1;
  const std::vector<CallVote*> ranks{&r0, &r1};
  for (int n = 1; n <= 40; ++n) {
    const bool a = n % 2 == 1;  // site a settles, site b returns early
    CHECK_FALSE(call(ranks, kExchange, {a && n >= 6, a && n >= 6}, a ? static_cast<const void*>(&site_a) : &site_b));
  }
  // Both sites settled: one call of each since the vote.
  CallVote s0, s1;
  const std::vector<CallVote*> both{&s0, &s1};
  bool any = false;
  for (int n = 1; n <= 16; ++n)
    any |= call(both, kExchange, {n >= 6, n >= 6}, n % 2 ? static_cast<const void*>(&site_a) : &site_b);
  CHECK(any);
}

TEST_CASE("call vote: a key goes back through tnbc at the first vote from 8 times its agreement") {
  CallVote r0, r1;
  const std::vector<CallVote*> ranks{&r0, &r1};
  std::vector<int> back;
  bool was = false;
  for (int n = 1; n <= 200; ++n) {
    const bool now = call(ranks, kExchange, {n >= 6, n >= 6});
    if (was && !now) back.push_back(n);
    was = now;
  }
  // Agreed at call 7; back at 56 (the first vote from 56), agreed again at the next vote (64: its
  // calls settle at once, as a site whose trial is not due yet), back at 512 (beyond the run).
  CHECK(back == std::vector<int>{56});
  CHECK(r0.plain(0));
}

TEST_CASE("call vote: ranks whose keys differ turn it off alike, and vote no more") {
  CallVote r0, r1;
  r0.enter(kExchange);
  r1.enter(kVaried);  // an erroneous program, or keys computed differently
  const CallVote::Ballot all = reduce({&r0, &r1});
  CHECK(r0.apply(all).disagreed);
  CHECK(r1.apply(all).disagreed);
  CHECK(r0.off());
  for (int n = 2; n <= 40; ++n) CHECK_FALSE(r0.enter(kExchange).vote);
  CHECK_FALSE(r0.plain(0));
}
