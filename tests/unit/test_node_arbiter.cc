// Node-level priorities (runtime/node_arbiter.hh) with simulated ranks: threads, each with its
// own NodeArbiter, over one board in plain memory (what runtime/node_segment.cc maps from
// shared memory). No MPI. Times are given, not measured, except where threads really race.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "runtime/futex.hh"
#include "runtime/node_arbiter.hh"

using namespace tnbc;

namespace {

constexpr long long kMs = 1000 * 1000;

struct Board {
  explicit Board(int n) : slots(std::make_unique<NodeSlot[]>(static_cast<std::size_t>(n))), n(n) {}
  std::unique_ptr<NodeSlot[]> slots;
  int n;
  std::vector<std::unique_ptr<NodeArbiter>> ranks(long long hold_ns) {
    std::vector<std::unique_ptr<NodeArbiter>> out;
    for (int r = 0; r < n; ++r) out.push_back(std::make_unique<NodeArbiter>(slots.get(), n, r, hold_ns));
    return out;
  }
};

using V = NodeArbiter::Verdict;

}  // namespace

TEST_CASE("node arbiter: the most urgent outstanding send of the node starts, the others hold") {
  Board b(3);
  auto r = b.ranks(10 * kMs);
  const long long t = 1000 * kMs;
  // Rank 1 is read first (priority 0..), rank 0 second, rank 2 has nothing outstanding.
  r[1]->add(node_key(7, 0), t);
  r[1]->add(node_key(7, 1), t);
  r[0]->add(node_key(7, 10), t);
  CHECK(r[1]->published() == node_key(7, 0));
  CHECK(r[2]->published() == kNoKey);
  CHECK(r[1]->admit(node_key(7, 0), t) == V::Start);
  CHECK(r[1]->admit(node_key(7, 1), t) == V::Start);  // its own keys never hold it
  CHECK(r[0]->admit(node_key(7, 10), t) == V::Hold);
  r[1]->remove(node_key(7, 0), t + 1);
  CHECK(r[0]->admit(node_key(7, 10), t + 1) == V::Hold);  // key 1 still outstanding (in flight)
  r[1]->remove(node_key(7, 1), t + 2);
  CHECK(r[1]->published() == kNoKey);
  CHECK(r[0]->admit(node_key(7, 10), t + 2) == V::Start);
  // A rank with nothing outstanding holds nobody; its own sends are judged by their keys.
  CHECK(r[2]->admit(node_key(7, 5), t + 2) == V::Start);
  CHECK(r[2]->admit(node_key(7, 11), t + 2) == V::Hold);
}

TEST_CASE("node arbiter: earlier collectives first, equal keys broken by rank, removal of unknown keys ignored") {
  Board b(2);
  auto r = b.ranks(10 * kMs);
  const long long t = 5 * kMs;
  r[0]->add(node_key(3, 100), t);  // an older collective, low urgency in it
  r[1]->add(node_key(4, 0), t);
  CHECK(r[1]->admit(node_key(4, 0), t) == V::Hold);
  CHECK(r[0]->admit(node_key(3, 100), t) == V::Start);
  r[0]->remove(node_key(3, 100), t);
  r[0]->remove(node_key(3, 100), t);  // twice: no effect
  r[0]->add(node_key(4, 0), t);
  // The same key on both ranks (they derived it from different read orders): rank 0 first.
  CHECK(r[0]->admit(node_key(4, 0), t) == V::Start);
  CHECK(r[1]->admit(node_key(4, 0), t) == V::Hold);
  CHECK(node_key(1, 0) > node_key(0, 0xffffffffLL));
  CHECK(node_key(0, -5) == node_key(0, 0));
}

TEST_CASE("node arbiter: a rank whose key did not change for the hold limit is ignored (timed out)") {
  Board b(2);
  auto r = b.ranks(10 * kMs);
  const long long t = 100 * kMs;
  r[0]->add(node_key(0, 0), t);  // then it stalls (or dies)
  r[1]->add(node_key(0, 50), t);
  CHECK(r[1]->admit(node_key(0, 50), t + 9 * kMs) == V::Hold);
  CHECK(r[1]->admit(node_key(0, 50), t + 11 * kMs) == V::TimedOut);
  // It moves again: its new least key is fresh, and holds again.
  r[0]->add(node_key(0, 1), t + 20 * kMs);  // not its least: since_ns unchanged
  CHECK(r[1]->admit(node_key(0, 50), t + 21 * kMs) == V::TimedOut);
  r[0]->remove(node_key(0, 0), t + 22 * kMs);  // least changes to key 1
  CHECK(r[1]->admit(node_key(0, 50), t + 23 * kMs) == V::Hold);
  // Same key, but it keeps starting sends (one long piece after another): not stale.
  r[0]->moving(t + 30 * kMs);
  CHECK(r[1]->admit(node_key(0, 50), t + 39 * kMs) == V::Hold);
  CHECK(r[1]->admit(node_key(0, 50), t + 41 * kMs) == V::TimedOut);
  // A send of it completes (not its least key): it moves.
  r[0]->add(node_key(0, 2), t + 42 * kMs);
  r[0]->remove(node_key(0, 2), t + 45 * kMs);
  CHECK(r[1]->admit(node_key(0, 50), t + 50 * kMs) == V::Hold);
}

TEST_CASE("node arbiter: whatever keys the ranks derive, exactly one holds the node's least pair") {
  std::mt19937 rng(19);
  for (int round = 0; round < 200; ++round) {
    const int n = 2 + static_cast<int>(rng() % 5);
    Board b(n);
    auto r = b.ranks(kMs);
    std::vector<std::uint64_t> least(static_cast<std::size_t>(n), kNoKey);
    for (int i = 0; i < n; ++i)
      for (int k = 0, m = static_cast<int>(rng() % 4); k < m; ++k) {
        const std::uint64_t key = node_key(rng() % 2, static_cast<std::int64_t>(rng() % 6));
        r[static_cast<std::size_t>(i)]->add(key, 0);
        least[static_cast<std::size_t>(i)] = std::min(least[static_cast<std::size_t>(i)], key);
      }
    int starts = 0, with_keys = 0;
    for (int i = 0; i < n; ++i) {
      if (least[static_cast<std::size_t>(i)] == kNoKey) continue;
      ++with_keys;
      starts += r[static_cast<std::size_t>(i)]->admit(least[static_cast<std::size_t>(i)], 0) == V::Start;
    }
    CHECK(starts == (with_keys ? 1 : 0));
  }
}

namespace {

// A simulated node: each thread is a rank whose progress thread starts its sends to other
// nodes in its own priority order through the arbiter, "sends" each (a short sleep while the
// link is its own), and removes it. The link log records every start with the sends in flight.
struct Link {
  std::mutex m;
  std::vector<std::uint64_t> started;
  int in_flight = 0, most_in_flight = 0;
};

void run_rank(NodeArbiter& a, std::vector<std::uint64_t> keys, Link& link, std::atomic<int>& timeouts,
              std::atomic<int>& registered, int ranks) {
  const long long now = futex::now_ns();
  for (std::uint64_t k : keys) a.add(k, now);
  // Every rank registers before any starts (as the ranks of a node enter one collective).
  registered.fetch_add(1);
  while (registered.load() < ranks) std::this_thread::yield();
  std::sort(keys.begin(), keys.end());
  for (std::uint64_t k : keys) {
    for (;;) {
      const V v = a.admit(k, futex::now_ns());
      if (v == V::Hold) {
        std::this_thread::yield();
        continue;
      }
      if (v == V::TimedOut) timeouts.fetch_add(1);
      break;
    }
    {
      std::lock_guard lock(link.m);
      link.started.push_back(k);
      link.most_in_flight = std::max(link.most_in_flight, ++link.in_flight);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    {
      std::lock_guard lock(link.m);
      --link.in_flight;
    }
    a.remove(k, futex::now_ns());
  }
}

}  // namespace

TEST_CASE("node arbiter: threads as ranks put the node's sends on the link most urgent first") {
  // 4 ranks, the read order 2, 0, 3, 1 (an Alltoall read in the order "swap"-like): rank 2's
  // sends are the node's most urgent, then rank 0's, ...
  const int n = 4;
  const int position[n] = {1, 3, 0, 2};
  Board b(n);
  auto r = b.ranks(5000 * kMs);  // no rank stalls here: a hold limit that never expires
  Link link;
  std::atomic<int> timeouts{0}, registered{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    std::vector<std::uint64_t> keys;
    for (int piece = 0; piece < 5; ++piece) keys.push_back(node_key(0, position[i] * 100 + piece));
    threads.emplace_back(run_rank, std::ref(*r[static_cast<std::size_t>(i)]), keys, std::ref(link), std::ref(timeouts),
                         std::ref(registered), n);
  }
  for (auto& t : threads) t.join();
  REQUIRE(link.started.size() == 20);
  CHECK(std::is_sorted(link.started.begin(), link.started.end()));
  CHECK(link.most_in_flight == 1);
  CHECK(timeouts.load() == 0);
  for (int i = 0; i < n; ++i) CHECK(r[static_cast<std::size_t>(i)]->published() == kNoKey);
}

TEST_CASE("node arbiter: ranks that derived their keys from different orders all finish, none waits for long") {
  // Rank 0 and rank 1 both believe they are read first (equal keys), rank 2 interleaves.
  const int n = 3;
  Board b(n);
  auto r = b.ranks(5000 * kMs);
  Link link;
  std::atomic<int> timeouts{0}, registered{0};
  const std::vector<std::vector<std::uint64_t>> keys = {
      {node_key(0, 0), node_key(0, 1), node_key(0, 2)},
      {node_key(0, 0), node_key(0, 1), node_key(0, 2)},
      {node_key(0, 1), node_key(0, 3)}};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back(run_rank, std::ref(*r[static_cast<std::size_t>(i)]), keys[static_cast<std::size_t>(i)],
                         std::ref(link), std::ref(timeouts), std::ref(registered), n);
  for (auto& t : threads) t.join();
  CHECK(link.started.size() == 8);
  CHECK(std::is_sorted(link.started.begin(), link.started.end()));
  CHECK(timeouts.load() == 0);
}

TEST_CASE("node arbiter: a rank that dies with its most urgent send outstanding holds the others only for the limit") {
  const int n = 3;
  Board b(n);
  const long long hold = 100 * kMs;  // long against a thread waiting for a core on a busy machine
  auto r = b.ranks(hold);
  // Rank 0 registers the node's most urgent key and never sends it (it died; its slot stays).
  r[0]->add(node_key(0, 0), futex::now_ns());
  Link link;
  std::atomic<int> timeouts{0}, registered{1};
  const long long t0 = futex::now_ns();
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i)
    threads.emplace_back(run_rank, std::ref(*r[static_cast<std::size_t>(i)]),
                         std::vector<std::uint64_t>{node_key(0, static_cast<std::int64_t>(i) * 10),
                                                    node_key(0, static_cast<std::int64_t>(i) * 10 + 1)},
                         std::ref(link), std::ref(timeouts), std::ref(registered), n);
  for (auto& t : threads) t.join();
  const long long took = futex::now_ns() - t0;
  CHECK(link.started.size() == 4);
  CHECK(std::is_sorted(link.started.begin(), link.started.end()));  // the living ones keep their order
  CHECK(timeouts.load() >= 1);
  CHECK(took >= hold);
  CHECK(took < 100 * hold);  // bounded: not a hang (generous: 2 cores shared with other work)
}
