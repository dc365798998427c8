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
#include "runtime/node_turn.hh"

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

// ---- the turn passes when the bytes can have left (runtime/node_turn.hh) ----

TEST_CASE("node turn: a send the kernel absorbed holds the node until its bytes can have left") {
  Board b(2);
  auto r = b.ranks(10 * kMs);
  const double g = 8.0;  // ns per byte: 1 Gbit/s
  const double piece = 256 * 1024;
  const long long t = 1000 * kMs;
  r[0]->add(node_key(1, 0), t);
  r[0]->add(node_key(1, 1), t);
  r[1]->add(node_key(1, 5), t);
  CHECK(r[1]->admit(node_key(1, 5), t) == V::Hold);
  // Both of rank 0's pieces start at t and complete 20 us later (the socket took them whole).
  const long long done = t + 20 * 1000;
  const long long first = r[0]->leaves_ns(piece, g, t), second = r[0]->leaves_ns(piece, g, t);
  CHECK(first == t + static_cast<long long>(piece * g));
  CHECK(second == t + static_cast<long long>(2 * piece * g));  // after the bytes queued before it
  r[0]->remove(node_key(1, 0), done, first);
  r[0]->remove(node_key(1, 1), done, second);
  CHECK(r[0]->published() == kNoKey);
  // Turn by MPI's completion would pass now; by the wire it passes once both pieces can have left.
  CHECK(r[1]->admit(node_key(1, 5), done + 1000) == V::Hold);
  CHECK(r[1]->admit(node_key(1, 5), first + 1000) == V::Hold);
  CHECK(r[1]->admit(node_key(1, 5), second + 1) == V::Start);  // a time: rank 0 need not move again
  // A more urgent send than the leaving ones is not held by them.
  CHECK(r[1]->admit(node_key(0, 9), done + 1000) == V::Start);
  // A completion after the wire time (a send larger than the buffer): the turn passes at once.
  r[0]->add(node_key(2, 0), second + 2);
  const long long third = r[0]->leaves_ns(piece, g, second + 2);
  r[0]->remove(node_key(2, 0), third + 5, third);
  CHECK(r[1]->admit(node_key(2, 3), third + 6) == V::Start);
  // Without a link rate (G unknown) no wire time: the old rule.
  CHECK(r[0]->leaves_ns(piece, 0, t) == 0);
}

TEST_CASE("node turn: which sends wait for their wire time, and where the buffered size comes from") {
  model::Level link;
  link.G_ns_per_byte = 8.05;
  NodeTurn t = node_turn(link, 4194304);
  CHECK(t.source == "kernel_tcp_wmem_max");
  CHECK(t.by_wire(512 * 1024));
  CHECK_FALSE(t.by_wire(8 << 20));
  t = node_turn(link, -1);
  CHECK(t.source == "unknown_every_send");
  CHECK(t.by_wire(8 << 20));  // every send: too large a size costs nothing (leaves <= completion)
  link.buffered_send_bytes = 600 * 1024;  // measured by tnbc calibrate: the file's, not the kernel's
  t = node_turn(link, 4194304);
  CHECK(t.source == "machine_file");
  CHECK(t.by_wire(512 * 1024));
  CHECK_FALSE(t.by_wire(1 << 20));
  link.G_ns_per_byte = 0;
  t = node_turn(link, 4194304);
  CHECK_FALSE(t.by_wire(1024));
  CHECK(t.source == "no_link_rate");
}

namespace {

// A simulated node: `n` ranks, each with `sends` pieces of `piece` bytes outstanding (rank r's
// keys after rank r-1's: the read order puts rank 0's data first everywhere), one link of `g` ns
// per byte, and MPI sends over TCP that complete as soon as the socket holds them (every piece
// fits the socket buffer). The wire serves the sockets that hold bytes in turn (TCP's flows
// share the link), in 4 KiB segments. Returns when each rank's last byte left (ns from 0).
std::vector<long long> simulate_tcp_node(int n, int sends, double piece, double g, bool turn_by_wire) {
  Board b(n);
  auto r = b.ranks(1000 * kMs);
  for (int k = 0; k < n; ++k)
    for (int s = 0; s < sends; ++s) r[static_cast<std::size_t>(k)]->add(node_key(0, k * 100 + s), 0);
  std::vector<int> next(static_cast<std::size_t>(n), 0);
  std::vector<double> socket(static_cast<std::size_t>(n), 0);
  std::vector<long long> last(static_cast<std::size_t>(n), -1);
  const double segment = 4096;
  const long long tick = static_cast<long long>(segment * g);
  int turn = 0;
  for (long long now = 0; now < 100000 * kMs; now += tick) {
    // Every rank's progress thread: start what the board allows; the send completes at once.
    for (int k = 0; k < n; ++k) {
      NodeArbiter& a = *r[static_cast<std::size_t>(k)];
      auto& i = next[static_cast<std::size_t>(k)];
      while (i < sends) {
        const std::uint64_t key = node_key(0, k * 100 + i);
        if (a.admit(key, now) == V::Hold) break;
        const long long leaves = a.leaves_ns(piece, g, now);
        socket[static_cast<std::size_t>(k)] += piece;
        a.remove(key, now, turn_by_wire ? leaves : 0);
        ++i;
      }
    }
    // The wire: one segment from the next socket that holds bytes.
    bool any = false;
    for (int j = 0; j < n && !any; ++j) {
      const int k = (turn + j) % n;
      auto& q = socket[static_cast<std::size_t>(k)];
      if (q <= 0) continue;
      q -= segment;
      any = true;
      turn = k + 1;
      if (q <= 0 && next[static_cast<std::size_t>(k)] == sends) last[static_cast<std::size_t>(k)] = now + tick;
    }
    if (!any && std::all_of(next.begin(), next.end(), [&](int i) { return i == sends; })) break;
  }
  return last;
}

}  // namespace

TEST_CASE("node turn: with sends the kernel absorbs, the wire follows the board only if turns wait for the wire") {
  const int n = 4, sends = 3;
  const double piece = 128 * 1024, g = 8.0;
  const double one_rank = sends * piece * g;  // one rank's bytes alone on the link
  const std::vector<long long> by_wire = simulate_tcp_node(n, sends, piece, g, true);
  const std::vector<long long> by_mpi = simulate_tcp_node(n, sends, piece, g, false);
  // By the wire: rank k's bytes have left after about (k + 1) x one rank's: read order on the wire.
  for (int k = 0; k < n; ++k) {
    CHECK(by_wire[static_cast<std::size_t>(k)] <= static_cast<long long>((k + 1) * one_rank * 1.05));
    CHECK(by_wire[static_cast<std::size_t>(k)] >= static_cast<long long>((k + 1) * one_rank * 0.95));
  }
  // By MPI's completion: every socket filled at once and TCP shares the wire: the first rank's
  // bytes leave near the end, as everyone's (the session 9 finding at 512 KiB).
  CHECK(by_mpi[0] >= static_cast<long long>((n - 0.5) * one_rank));
  CHECK(by_mpi[static_cast<std::size_t>(n - 1)] <= static_cast<long long>(n * one_rank * 1.05));
}

TEST_CASE("node arbiter: what a stalled rank costs the others is bounded by its stall and the hold limit, whatever M") {
  // Rank 0 holds the node's most urgent key and stalls again and again (a progress thread that the
  // scheduler deschedules: 2 cores, M = 8); between stalls it moves for a moment. The others ask
  // every 0.1 ms. Each of their waits ends within the hold limit (then they start past it: a
  // counted time-out, the order degrades, nothing waits longer), and a rank that never moves
  // again (dead) costs one hold limit, once: later sends start past it at once.
  const long long hold = 20 * kMs, tick = kMs / 10;
  for (int n : {2, 4, 8}) {
    Board b(n);
    auto r = b.ranks(hold);
    r[0]->add(node_key(0, 0), 0);
    for (int k = 1; k < n; ++k) r[static_cast<std::size_t>(k)]->add(node_key(0, 10 * k), 0);
    long long longest = 0, held_since = -1;
    int timeouts = 0;
    for (long long now = 0; now < 1000 * kMs; now += tick) {
      if (now % (50 * kMs) == 0) r[0]->moving(now);  // moves every 50 ms, stalls in between
      const V v = r[static_cast<std::size_t>(n - 1)]->admit(node_key(0, 10 * (n - 1)), now);
      if (v == V::Hold) {
        if (held_since < 0) held_since = now;
        longest = std::max(longest, now - held_since + tick);
      } else {
        timeouts += v == V::TimedOut;
        held_since = -1;
      }
    }
    CHECK(longest <= hold + 2 * tick);
    CHECK(timeouts > 0);
    // Dead from now on: the first send waits at most the limit, the next ones not at all.
    const long long dead = 2000 * kMs;
    r[0]->moving(dead);
    CHECK(r[1]->admit(node_key(0, 10), dead + hold / 2) == V::Hold);
    CHECK(r[1]->admit(node_key(0, 10), dead + hold + tick) == V::TimedOut);
    r[1]->add(node_key(1, 0), dead + hold + 2 * tick);  // its next call's send, fresh key
    CHECK(r[1]->admit(node_key(1, 0), dead + hold + 3 * tick) == V::TimedOut);
  }
}
