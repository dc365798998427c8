// The executor (runtime/executor.hh) on schedules of several simulated ranks in one process,
// connected by a loopback transport: every byte arrives, dependencies hold, sends start in
// priority order through the gate and within its window, local copies, hand-over between
// executors, timestamps, and a step no transport carries.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <tuple>

#include "loopback.hh"
#include "runtime/coll/builders.hh"
#include "runtime/executor.hh"

using namespace tnbc;
using namespace tnbc::test;

namespace {
// A collective of Copy steps only (source, offset, length each), between `send` and `recv`.
std::shared_ptr<InFlight> copies(std::vector<char>& send, std::vector<char>& recv,
                                 const std::vector<std::array<std::size_t, 3>>& steps) {
  auto f = std::make_shared<InFlight>();
  for (const auto& [source, offset, length] : steps) {
    Step copy;
    copy.kind = StepKind::Copy;
    copy.source = source;
    copy.offset = offset;
    copy.length = length;
    f->schedule.add(copy);
  }
  f->send_data = send.data();
  f->recv_data = recv.data();
  f->ready_to_run();
  return f;
}
}  // namespace

TEST_CASE("executor: an exchange of 4 ranks delivers every byte, sends in priority order within the window") {
  const int n = 4;
  const std::size_t per = 5 * kPage + 123;  // head, body pieces, tail
  Network net;
  Loopback::finished_.clear();
  std::vector<Rank> ranks(n);
  std::vector<std::unique_ptr<Executor>> execs;
  struct CountingGate final : SendGate {
    int window = 2, most = 0;
    Verdict admit(const InFlight&, const Step&, int in_flight) override {
      if (in_flight >= window) return Verdict::Stop;
      most = std::max(most, in_flight + 1);
      return Verdict::Start;
    }
  } gate;
  for (int r = 0; r < n; ++r) {
    Rank& rk = ranks[static_cast<std::size_t>(r)];
    rk.send.resize(n * per);
    rk.recv.assign(n * per, 0);
    for (std::size_t i = 0; i < rk.send.size(); ++i) rk.send[i] = static_cast<char>(r * 31 + i * 7);
    std::vector<std::size_t> bytes(n, per), off(n);
    for (int p = 0; p < n; ++p) off[static_cast<std::size_t>(p)] = static_cast<std::size_t>(p) * per;
    rk.f->schedule = build_exchange(r, n, bytes, off, bytes, off, kPage, {}, PieceSetting{kPage});
    rk.f->send_data = rk.send.data();
    rk.f->recv_data = rk.recv.data();
    rk.f->ready_to_run();
    net.rank_of[rk.f.get()] = r;
    execs.push_back(std::make_unique<Executor>(gate, loopback(net)));
    execs.back()->add(rk.f, Scope::All);
  }
  std::vector<Executor*> raw;
  for (auto& e : execs) raw.push_back(e.get());
  run_all(raw, ranks);
  CHECK(gate.most == gate.window);  // filled, never exceeded
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;  // the own block is staging's, not a step
      const Rank& from = ranks[static_cast<std::size_t>(p)];
      const Rank& to = ranks[static_cast<std::size_t>(r)];
      CHECK(std::equal(to.recv.begin() + p * static_cast<long>(per), to.recv.begin() + (p + 1) * static_cast<long>(per),
                       from.send.begin() + r * static_cast<long>(per)));
    }
  // Each rank's sends started in priority order (the gate never said Later).
  std::map<const InFlight*, std::int64_t> last;
  for (auto [f, i] : net.send_order) {
    const std::int64_t prio = f->schedule[static_cast<std::size_t>(i)].priority;
    CHECK(prio >= last[f]);
    last[f] = prio;
  }
  // Every step was stamped; the record knows the last one.
  for (const Rank& rk : ranks) {
    for (std::size_t i = 0; i < rk.f->schedule.size(); ++i) CHECK(rk.f->done_ns[i] >= 1000);
    CHECK(rk.f->times.last_step.load() >= 1000);
  }
}

TEST_CASE("executor: a broadcast's forwards start only after their receive; hand-over between executors") {
  const int n = 5, root = 1;
  const std::size_t bytes = 40 * kPage + 9;
  const auto chunks = bcast_chunks(bytes, kPage, 3);
  Network net;
  Loopback::finished_.clear();
  WindowGate gate(3);
  std::vector<Rank> ranks(n);
  std::vector<std::unique_ptr<Executor>> callers, progress;
  for (int r = 0; r < n; ++r) {
    Rank& rk = ranks[static_cast<std::size_t>(r)];
    rk.recv.assign(bytes, 0);
    if (r == root)
      for (std::size_t i = 0; i < bytes; ++i) rk.recv[i] = static_cast<char>(i * 13 + 5);
    rk.f->schedule = build_bcast(r, n, root, chunks, bcast_chunk_order(chunks.size(), {}), kPage, std::nullopt);
    rk.f->send_data = rk.f->recv_data = rk.recv.data();  // inner ranks forward from what they received
    rk.f->ready_to_run();
    // The calling thread takes the edge chunks' steps, the progress thread the rest.
    rk.f->by_caller.assign(rk.f->schedule.size(), false);
    for (std::size_t i = 0; i < rk.f->schedule.size(); ++i) rk.f->by_caller[i] = rk.f->schedule[i].edge;
    net.rank_of[rk.f.get()] = r;
    callers.push_back(std::make_unique<Executor>(gate, loopback(net)));
    callers.back()->add(rk.f, Scope::Caller);
    progress.push_back(std::make_unique<Executor>(gate, loopback(net)));
    progress.back()->add(rk.f, Scope::Progress);
  }
  // A few rounds of the callers alone, then they hand their started steps over and are gone.
  for (int round = 0; round < 3; ++round)
    for (auto& e : callers) {
      bool moved = false;
      REQUIRE(e->poll(moved).ok());
    }
  for (int r = 0; r < n; ++r)
    for (const Started& s : callers[static_cast<std::size_t>(r)]->release()) {
      progress[static_cast<std::size_t>(r)]->adopt(s);
      // ... except steps the caller never started: the progress executor does not take those.
    }
  // Caller steps not started by now (forwards waiting for their receive) need a caller: run it.
  std::vector<Executor*> all;
  for (auto& e : callers) all.push_back(e.get());
  for (auto& e : progress) all.push_back(e.get());
  run_all(all, ranks);
  for (const Rank& rk : ranks) CHECK(rk.recv == ranks[static_cast<std::size_t>(root)].recv);
}

TEST_CASE("executor: the window gate keeps each collective's window by the role of the rank's sends") {
  // A broadcast at np 4 (binomial: 0 -> 2 -> 3, 0 -> 1): the root only sends, rank 2 forwards,
  // ranks 1 and 3 only receive; an exchange's sends are staged.
  const int n = 4, root = 0;
  const auto chunks = bcast_chunks(40 * kPage, kPage, 3);
  const SendRole roles[] = {SendRole::Only, SendRole::Staged, SendRole::Forward, SendRole::Staged};
  WindowGate gate(2);
  gate.set_window(SendRole::Only, 0);
  gate.set_window(SendRole::Forward, 1);
  for (int r = 0; r < n; ++r) {
    InFlight f;
    f.schedule = build_bcast(r, n, root, chunks, bcast_chunk_order(chunks.size(), {}), kPage, std::nullopt);
    f.ready_to_run();
    CHECK(f.send_role == roles[r]);
    const Step* body = nullptr;
    for (const Step& s : f.schedule)
      if (s.kind == StepKind::Send && !s.edge) body = &s;
    if (!body) continue;  // a leaf sends nothing
    CHECK(gate.admit(f, *body, 0) == SendGate::Verdict::Start);
    // One in flight fills the forwarder's window; the root's has no limit.
    CHECK(gate.admit(f, *body, 1) == (r == root ? SendGate::Verdict::Start : SendGate::Verdict::Stop));
    CHECK(gate.admit(f, *body, 100) == (r == root ? SendGate::Verdict::Start : SendGate::Verdict::Stop));
    f.bodies_released.store(false);  // the calling thread still in the call: bodies wait either way
    CHECK(gate.admit(f, *body, 0) == SendGate::Verdict::Later);
    // ... at the progress thread's gate; a calling thread's own gate starts what its scope holds
    // (a root's bodies where Policy::caller_starts_sends says so).
    WindowGate caller(0, /*holds_bodies=*/false);
    CHECK(caller.admit(f, *body, 0) == SendGate::Verdict::Start);
  }
  // An exchange (np 3, 8 pages per peer): staged sends, the window of 2.
  const std::size_t per = 8 * kPage;
  std::vector<std::size_t> bytes(3, per), off{0, per, 2 * per};
  InFlight x;
  x.schedule = build_exchange(1, 3, bytes, off, bytes, off, kPage, {}, PieceSetting{kPage});
  x.ready_to_run();
  CHECK(x.send_role == SendRole::Staged);
  const Step* body = nullptr;
  for (const Step& s : x.schedule)
    if (s.kind == StepKind::Send && !s.edge) body = &s;
  REQUIRE(body);
  CHECK(gate.admit(x, *body, 1) == SendGate::Verdict::Start);
  CHECK(gate.admit(x, *body, 2) == SendGate::Verdict::Stop);
}

TEST_CASE("executor: a Copy step is local, completes like a receive; a step no transport carries is an error") {
  Network net;
  Loopback::finished_.clear();
  WindowGate gate(0);
  std::vector<char> send(3 * kPage), recv(3 * kPage, 0);
  std::iota(send.begin(), send.end(), 0);
  auto f = copies(send, recv, {{kPage, 0, 2 * kPage}});
  net.rank_of[f.get()] = 0;
  Executor ex(gate, loopback(net));
  ex.add(f, Scope::All);
  bool moved = false;
  REQUIRE(ex.poll(moved).ok());
  CHECK(moved);
  CHECK(f->done(0));
  CHECK(f->steps_left.load() == 0);
  CHECK(std::equal(recv.begin(), recv.begin() + 2 * kPage, send.begin() + kPage));

  auto g = std::make_shared<InFlight>();
  Step put;
  put.kind = StepKind::Put;
  put.peer = 1;
  put.length = 8;
  g->schedule.add(put);
  g->send_data = send.data();
  g->ready_to_run();
  Executor ex2(gate, loopback(net));
  ex2.add(g, Scope::All);
  const Status st = ex2.poll(moved);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("no transport carries put steps") != std::string::npos);
}

TEST_CASE("executor: the progress thread's copies wait for the caller to leave, then run one per round") {
  Network net;
  Loopback::finished_.clear();
  WindowGate gate(0);
  std::vector<char> send(3 * kPage), recv(3 * kPage, 0);
  std::iota(send.begin(), send.end(), 0);
  auto f = copies(send, recv, {{0, 0, kPage}, {kPage, kPage, kPage}, {2 * kPage, 2 * kPage, kPage}});
  f->bodies_released.store(false);  // the caller is still in its call
  net.rank_of[f.get()] = 0;
  Executor ex(gate, loopback(net));
  ex.add(f, Scope::Progress);
  bool moved = false;
  REQUIRE(ex.poll(moved).ok());
  CHECK_FALSE(moved);
  CHECK(f->steps_left.load() == 3);
  f->bodies_released.store(true);  // returned: one copy per round
  for (int round = 1; round <= 3; ++round) {
    moved = false;
    REQUIRE(ex.poll(moved).ok());
    CHECK(moved);
    CHECK(f->steps_left.load() == 3 - round);
  }
  CHECK(std::equal(recv.begin(), recv.end(), send.begin()));

  // The calling thread's own copies (a call that completes in it) do not wait for a release.
  auto g = copies(send, recv, {{0, 0, kPage}});
  g->bodies_released.store(false);
  Executor mine(gate, loopback(net));
  mine.add(g, Scope::All);
  REQUIRE(mine.poll(moved).ok());
  CHECK(g->steps_left.load() == 0);
}
