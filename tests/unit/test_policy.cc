// The policy (runtime/policy.hh): what it decides from the settings and a profile before the
// model starts (the built-in rules), and that the global answers depend on nothing else. The
// model's answers: tests/unit/test_model.cc.
#include <catch2/catch.hpp>

#include <thread>

#include "runtime/coll/collective.hh"
#include "runtime/policy.hh"

using namespace tnbc;

namespace {
constexpr std::size_t kPage = 4096;

std::unique_ptr<Policy> rules(int max_segments, std::size_t min_bytes, std::unique_ptr<ReadOrderSource> orders = nullptr) {
  Settings s;
  s.bcast_max_segments = max_segments;
  s.min_bytes = min_bytes;
  return make_policy(s, kPage, std::move(orders));
}

const model::Topology kFour = model::Topology::block(4, 4, 4, 1);
const model::Topology kOne = model::Topology::block(1, 1, 1, 1);

// A profile stand-in: blocking for calls of 3 ranks, a reversed order for every call.
struct FakeOrders final : ReadOrderSource {
  std::vector<int> order(const CallShape& c) override {
    std::vector<int> o;
    for (int i = static_cast<int>(c.recv_bytes.size()) - 1; i >= 0; --i) o.push_back(i);
    return o;
  }
  bool run_blocking(const CallShape& c) override { return c.comm_size == 3; }
};
}  // namespace

namespace {
// The settings with TNBC_BCAST_SEND_WINDOW=1.
Settings windowed_one(Settings s) {
  s.bcast_send_window = 1;
  return s;
}
}  // namespace

TEST_CASE("policy: broadcast segments follow the message and TNBC_BCAST_MAX_SEGMENTS only") {
  CHECK(rules(5, 0)->bcast_segments(0, kFour) == 1);
  CHECK(rules(5, 0)->bcast_segments(kMinGuardablePages * kPage - 1, kFour) == 1);
  CHECK(rules(5, 0)->bcast_segments(6 * kPage, kFour) == 2);
  CHECK(rules(5, 0)->bcast_segments(4 << 20, kFour) == 5);
  CHECK(rules(8, 0)->bcast_segments(4 << 20, kFour) == 8);
  CHECK(rules(0, 0)->bcast_segments(4 << 20, kFour) == 1);  // never 0 segments
  // The measured threshold changes no message: segments are the same whatever it is.
  CHECK(rules(5, 1 << 30)->bcast_segments(4 << 20, kFour) == rules(5, 0)->bcast_segments(4 << 20, kFour));
}

TEST_CASE("policy: route compares the table's unit with the threshold; intercommunicators and one-rank communicators run as MPI") {
  auto p = rules(5, 3 * kPage);
  CHECK(p->route(Kind::Alltoall, false, kFour, 3 * kPage) == Reason::None);
  CHECK(p->route(Kind::Alltoall, false, kFour, 3 * kPage - 1) == Reason::BelowThreshold);
  CHECK(p->route(Kind::Bcast, true, kFour, 1 << 20) == Reason::Intercommunicator);
  CHECK(p->route(Kind::Alltoallv, false, kFour, kNoUnit) == Reason::None);  // sizes differ: always the schedule
  CHECK(p->route(Kind::Allgatherv, false, kOne, kNoUnit) == Reason::SingleRank);
  CHECK(p->route(Kind::Bcast, false, kOne, 1 << 20) == Reason::SingleRank);
  // ... and the rank-local half of the threshold for those (TNBC_MIN_BYTES as set: what the
  // rank receives in all).
  CHECK_FALSE(p->early_return_pays(Kind::Alltoallv, 3 * kPage - 1, kFour));
  CHECK(p->early_return_pays(Kind::Alltoallv, 3 * kPage, kFour));
  // A rank that receives nothing (only sends after the return) holds nothing back: it returns
  // early wherever some size pays, and never where none does (the engine asks every call).
  CHECK(p->early_return_pays(Kind::Alltoallv, 0, kFour));
  auto never = rules(5, SIZE_MAX);
  CHECK_FALSE(never->early_return_pays(Kind::Alltoallv, 0, kFour));
  CHECK_FALSE(never->early_return_pays(Kind::Allgatherv, 0, kFour));
  CHECK_FALSE(never->early_return_pays(Kind::Bcast, 1 << 20, kFour));
}

TEST_CASE("policy: read orders and blocking decisions come from the profile, defaults without one") {
  CallShape three{Kind::Alltoall, {}, 3, -1, {1, 2, 3}, {}}, four{Kind::Alltoall, {}, 4, -1, {1, 2, 3, 4}, {}};
  auto none = rules(5, 0);
  CHECK(none->read_order(three).empty());
  CHECK_FALSE(none->complete_in_call(three));
  auto with = rules(5, 0, std::make_unique<FakeOrders>());
  CHECK(with->read_order(three) == std::vector<int>{2, 1, 0});
  CHECK(with->complete_in_call(three));
  CHECK_FALSE(with->complete_in_call(four));
}

TEST_CASE("policy: guard backends and send windows from the settings") {
  Settings s;
  s.guard = GuardChoice::Protect;
  s.send_window = 7;
  auto p = make_policy(s, kPage, nullptr);
  REQUIRE(p->guards().size() == 1);
  CHECK(p->guards()[0] == GuardKind::ProtNone);
  constexpr SendRole kRoles[] = {SendRole::Staged, SendRole::Forward, SendRole::Only};
  for (SendRole r : kRoles) CHECK(p->send_window(Driver::ProgressThread, r) == 7);  // not placed yet: the setting
  // A progress thread on its rank's only CPU keeps the window only for staged sends of a rank
  // that receives (an exchange: the window orders the receivers' pieces); a broadcast's root and
  // forwarding ranks have none (a send held back would wait for that thread's next turn, rare
  // while the program is in another MPI call; docs/benchmarks.md, "Session 9: the window where
  // its driver starves").
  CpuShare shared;
  shared.own_cpus = shared.node_cpus = shared.progress_cpus = 1;
  shared.progress_on_own_cpu = true;
  p->set_cpu_share(shared);
  CHECK(p->send_window(Driver::ProgressThread, SendRole::Staged) == 7);
  CHECK(p->send_window(Driver::ProgressThread, SendRole::Forward) == 0);
  CHECK(p->send_window(Driver::ProgressThread, SendRole::Only) == 0);
  // A calling thread waiting in its call yields there once idle: the progress thread on its CPU
  // may have an earlier collective's sends to start (docs/benchmarks.md, "Session 61").
  CHECK(p->waiting().yield);
  // There a root's calling thread starts all its sends before it returns (none waits for the
  // progress thread's first turn); a rank that receives leaves its bodies to that thread.
  CHECK(p->caller_starts_sends(SendRole::Only));
  CHECK_FALSE(p->caller_starts_sends(SendRole::Forward));
  CHECK_FALSE(p->caller_starts_sends(SendRole::Staged));
  {
    // TNBC_BCAST_SEND_WINDOW: a broadcast's root and forwarding ranks keep a window of their own
    // there too (the root's call starts the edges only); an exchange's stays TNBC_SEND_WINDOW.
    Settings windowed = s;
    windowed.bcast_send_window = 1;
    auto q = make_policy(windowed, kPage, nullptr);
    q->set_cpu_share(shared);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Only) == 1);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Forward) == 1);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Staged) == 7);
    CHECK(q->send_window(Driver::CallingThread, SendRole::Only) == 0);
    CHECK_FALSE(q->caller_starts_sends(SendRole::Only));
  }
  {
    // auto (the default): that window of 1 where the MPI library lets the progress thread's calls
    // through while the program waits inside MPI (Open MPI's ob1); where it starves them (UCX) or
    // is not known, the root's call starts the sends as above. 0 keeps that under ob1 too.
    Settings automatic = s;
    REQUIRE_FALSE(automatic.bcast_send_window.has_value());
    CHECK(bcast_send_window(automatic, ThreadProgress::Through) == 1);
    CHECK(bcast_send_window(automatic, ThreadProgress::Starved) == 0);
    CHECK(bcast_send_window(automatic, ThreadProgress::Unknown) == 0);
    auto q = make_policy(automatic, kPage, nullptr);
    q->set_cpu_share(shared);
    q->set_thread_progress(ThreadProgress::Through);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Only) == 1);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Forward) == 1);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Staged) == 7);
    CHECK_FALSE(q->caller_starts_sends(SendRole::Only));
    q->set_thread_progress(ThreadProgress::Starved);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Only) == 0);
    CHECK(q->caller_starts_sends(SendRole::Only));
    Settings off = s;
    off.bcast_send_window = 0;
    auto r = make_policy(off, kPage, nullptr);
    r->set_cpu_share(shared);
    r->set_thread_progress(ThreadProgress::Through);
    CHECK(r->send_window(Driver::ProgressThread, SendRole::Only) == 0);
    CHECK(r->caller_starts_sends(SendRole::Only));
    // Every rank of the world on one node (shared memory): the sends all started, window or not
    // (docs/benchmarks.md, "Session 63"); a set window stays.
    CHECK(bcast_send_window(automatic, ThreadProgress::Through, true) == 0);
    CpuShare node = shared;
    node.node_ranks = node.world_ranks = 2;
    node.node_cpus = 2;
    q->set_thread_progress(ThreadProgress::Through);
    q->set_cpu_share(node);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Only) == 0);
    CHECK(q->caller_starts_sends(SendRole::Only));
    node.world_ranks = 4;  // two of four ranks on this node: the run spans nodes
    q->set_cpu_share(node);
    CHECK(q->send_window(Driver::ProgressThread, SendRole::Only) == 1);
    CHECK(bcast_send_window(windowed_one(s), ThreadProgress::Through, true) == 1);
    // The model prices what the policy runs.
    CHECK(execution(automatic, 0, -1, ThreadProgress::Through, true).bcast_window == 0);
    CHECK(execution(automatic, 0, -1, ThreadProgress::Through).bcast_window == 1);
    CHECK(execution(automatic, 0, -1, ThreadProgress::Starved).bcast_window == 0);
    CHECK(execution(off, 0, -1, ThreadProgress::Through).bcast_window == 0);
  }
  shared.node_ranks = 2;  // oversubscribed, without node-level priorities: as on one rank's CPU
  p->set_cpu_share(shared);
  CHECK(p->send_window(Driver::ProgressThread, SendRole::Staged) == 7);
  CHECK(p->send_window(Driver::ProgressThread, SendRole::Forward) == 0);
  CHECK(p->send_window(Driver::ProgressThread, SendRole::Only) == 0);
  CHECK(p->caller_starts_sends(SendRole::Only));
  {
    Settings arbitrated = s;  // node-level priorities pace the sends through the window: it stays
    arbitrated.node_priorities = NodePriorities::On;
    auto q = make_policy(arbitrated, kPage, nullptr);
    q->set_cpu_share(shared);
    for (SendRole r : kRoles) {
      CHECK(q->send_window(Driver::ProgressThread, r) == 7);
      CHECK_FALSE(q->caller_starts_sends(r));  // the window orders the root's sends
    }
  }
  shared.node_ranks = 1;
  shared.progress_on_own_cpu = false;  // a CPU of its own (or several): the setting
  shared.progress_cpus = 2;
  p->set_cpu_share(shared);
  for (SendRole r : kRoles) {
    CHECK(p->send_window(Driver::ProgressThread, r) == 7);
    CHECK(p->send_window(Driver::CallingThread, r) == 0);
    CHECK_FALSE(p->caller_starts_sends(r));
  }
  CHECK_FALSE(p->waiting().yield);  // nothing on this CPU to give it to: back-to-back polls
  s.guard = GuardChoice::Auto;
  auto q = make_policy(s, kPage, nullptr);
  REQUIRE(q->guards().size() == 2);
  CHECK(q->guards()[0] == GuardKind::Userfaultfd);
}

TEST_CASE("cpu share: the progress thread takes a caller's CPU where it has none of its own") {
  CpuShare c;
  c.node_ranks = 1;
  c.own_cpus = c.node_cpus = c.progress_cpus = 1;
  c.progress_on_own_cpu = true;  // one rank per node, bound to its node's one CPU
  CHECK(progress_takes_callers_cpu(c));
  c.progress_on_own_cpu = false;
  c.node_ranks = 2;
  c.node_cpus = c.progress_cpus = 2;  // shared memory, np 2 on 2 CPUs, the thread on both
  CHECK(progress_takes_callers_cpu(c));
  c.node_ranks = 4;  // np 4 on 2 CPUs
  CHECK(progress_takes_callers_cpu(c));
  c.node_ranks = 2;
  c.node_cpus = c.progress_cpus = 4;  // two ranks on four CPUs: two to spare
  CHECK_FALSE(progress_takes_callers_cpu(c));
  c.progress_cpus = 0;  // not placed yet
  CHECK_FALSE(progress_takes_callers_cpu(c));
}

TEST_CASE("cpu share: a rank on one CPU is told whether a binding or its cpuset gave it that one") {
  CpuShare c;
  c.own_cpus = c.node_cpus = c.progress_cpus = 1;
  c.cpuset_cpus = 2;  // bound to one of its cpuset's two CPUs: a binding option helps
  CHECK(cpu_share_problem(c).find("bound to a single CPU") != std::string::npos);
  c.cpuset_cpus = 0;  // cpuset unknown: the binding's advice, as before
  CHECK(cpu_share_problem(c).find("--bind-to none") != std::string::npos);
  c.cpuset_cpus = 1;  // the node (its cpuset) has one CPU: no binding option gives a second
  const std::string one = cpu_share_problem(c);
  CHECK(one.find("node has a single CPU") != std::string::npos);
  CHECK(one.find("--bind-to none") == std::string::npos);
  c.own_cpus = c.node_cpus = c.progress_cpus = c.cpuset_cpus = 2;
  CHECK(cpu_share_problem(c).empty());
}

TEST_CASE("cpu share: the cpuset's CPUs, whatever the binding, at least the rank's own") {
  cpu_set_t mine;
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  const int n = cpuset_cpu_count();
  CHECK(n >= CPU_COUNT(&mine));
  CHECK(n <= static_cast<int>(std::thread::hardware_concurrency()));
  // Bound to one CPU, the process still reaches the others of its cpuset.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mine)) {
      CPU_SET(c, &one);
      break;
    }
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const int bound = cpuset_cpu_count();
  REQUIRE(sched_setaffinity(0, sizeof mine, &mine) == 0);
  CHECK(bound == n);
}

TEST_CASE("policy: where the progress thread runs (TNBC_PROGRESS_CPUS)") {
  CpuShare bound;  // one rank per node, bound to one CPU (mpirun --bind-to core at np <= 2)
  bound.node_ranks = 1;
  bound.own_cpus = bound.node_cpus = 1;
  CpuShare packed = bound;  // four ranks bound to one CPU each on a node of four CPUs
  packed.node_ranks = 4;
  packed.node_cpus = 4;
  Settings s;
  auto p = make_policy(s, kPage, nullptr);
  CHECK(p->progress_cpus(bound) == ProgressCpus::Allowed);  // the node's union is no wider: the cpuset
  CHECK(p->progress_cpus(packed) == ProgressCpus::Node);    // never outside what the job's ranks were given
  s.progress_cpus = ProgressCpus::Rank;
  auto q = make_policy(s, kPage, nullptr);
  CHECK(q->progress_cpus(bound) == ProgressCpus::Rank);
  CHECK(q->progress_cpus(packed) == ProgressCpus::Rank);
}

TEST_CASE("policy: TNBC_SEND_COPY decides the sends' copy and the own block's apart") {
  Settings s;
  const std::uint64_t kBytes = 8ull << 20;
  s.send_copy = SendCopy::Eager;
  auto eager = make_policy(s, kPage, nullptr);
  CHECK_FALSE(eager->lazy_send_copy(kBytes));
  CHECK_FALSE(eager->lazy_own_block(kBytes));
  s.send_copy = SendCopy::Lazy;
  auto lazy = make_policy(s, kPage, nullptr);
  CHECK(lazy->lazy_send_copy(kBytes));
  CHECK(lazy->lazy_own_block(kBytes));  // the own block a Copy step after the return too
  s.send_copy = SendCopy::LazySends;
  auto sends = make_policy(s, kPage, nullptr);
  CHECK(sends->lazy_send_copy(kBytes));
  CHECK_FALSE(sends->lazy_own_block(kBytes));  // copied into place in the call
}
