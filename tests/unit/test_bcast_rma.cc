// The RMA broadcast without MPI: its builder (runtime/coll/bcast_rma.cc) step by step, the cost
// formulas of seed 000 (runtime/bcast_cost.hh), and whole broadcasts through the Bcast file run by
// executors over a loopback RMA transport (each simulated rank has a data window, request flags
// and a done counter; Put writes the peer's window, Flag raises its flag, Await waits for one's
// own), checked byte for byte.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <set>

#include "loopback.hh"
#include "machines.hh"
#include "runtime/bcast_cost.hh"
#include "runtime/coll/builders.hh"
#include "runtime/coll/collective.hh"

using namespace tnbc;
using namespace tnbc::test;

namespace {

std::vector<Chunk> chunks_of(std::size_t bytes) { return bcast_chunks(bytes, kPage, 5); }

// Every step of `s` of kind `k`.
std::vector<int> of_kind(const Schedule& s, StepKind k) {
  std::vector<int> out;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].kind == k) out.push_back(static_cast<int>(i));
  return out;
}

bool waits_for(const Schedule& s, int step, int dep) {
  for (int d : s.after(static_cast<std::size_t>(step)))
    if (d == dep) return true;
  return false;
}

}  // namespace

TEST_CASE("bcast rma: binomial steps follow the seed's tree, every flag after its data") {
  for (int size = 2; size <= 9; ++size)
    for (int root = 0; root < size; ++root)
      for (int rank = 0; rank < size; ++rank) {
        const auto chunks = chunks_of(20 * kPage + 3);
        const auto order = bcast_chunk_order(chunks.size(), {});
        const Schedule s = build_bcast_rma(rank, size, root, chunks, order, RmaAlgorithm::Binomial);
        const auto children = bcast_children(rank, size, root);
        const auto puts = of_kind(s, StepKind::Put), flags = of_kind(s, StepKind::Flag), awaits = of_kind(s, StepKind::Await);
        CHECK(puts.size() == children.size() * chunks.size());
        std::set<int> targets;
        for (int p : puts) {
          targets.insert(s[static_cast<std::size_t>(p)].peer);
          // Its flag comes right after it and waits for it.
          REQUIRE(static_cast<std::size_t>(p + 1) < s.size());
          CHECK(s[static_cast<std::size_t>(p + 1)].kind == StepKind::Flag);
          CHECK(s[static_cast<std::size_t>(p + 1)].peer == s[static_cast<std::size_t>(p)].peer);
          CHECK(waits_for(s, p + 1, p));
        }
        CHECK(targets == std::set<int>(children.begin(), children.end()));
        const Step& last = s[s.size() - 1];
        CHECK(last.peer == root);
        CHECK(s.after(s.size() - 1).size() == (rank == root ? 0 : chunks.size()) + puts.size());
        if (rank == root) {
          CHECK(awaits.size() == 2);  // the slot is free; every rank counted done
          CHECK(s[0].tag_offset == kSlotFree);
          CHECK(last.kind == StepKind::Await);
          CHECK(last.tag_offset == kAllDone);
          for (int p : puts) CHECK(waits_for(s, p, 0));
        } else {
          CHECK(awaits.size() == chunks.size());
          CHECK(last.kind == StepKind::Flag);
          CHECK(last.tag_offset == kDoneCounter);
          for (int a : awaits) CHECK(s[static_cast<std::size_t>(a)].peer == bcast_parent(rank, size, root));
          // A chunk is forwarded only once it is here.
          for (int p : puts) {
            const int c = s[static_cast<std::size_t>(p)].sub;
            bool found = false;
            for (int a : awaits) found = found || (s[static_cast<std::size_t>(a)].sub == c && waits_for(s, p, a));
            CHECK(found);
          }
        }
        CHECK(flags.size() == puts.size() + (rank == root ? 0 : 1));
      }
}

TEST_CASE("bcast rma: linear puts from the root to every rank, nobody forwards") {
  const auto chunks = chunks_of(9 * kPage);
  const auto order = bcast_chunk_order(chunks.size(), {});
  for (int rank = 0; rank < 6; ++rank) {
    const Schedule s = build_bcast_rma(rank, 6, 2, chunks, order, RmaAlgorithm::Linear);
    if (rank == 2) {
      CHECK(s.count(StepKind::Put) == 5 * chunks.size());
    } else {
      CHECK(s.count(StepKind::Put) == 0);
      CHECK(s.count(StepKind::Await) == chunks.size());
      for (const Step& st : s)
        if (st.kind == StepKind::Await) CHECK(st.peer == 2);
    }
  }
}

TEST_CASE("bcast rma: chunks keep the point-to-point broadcast's read order and edges") {
  const auto chunks = chunks_of(40 * kPage);
  REQUIRE(chunks.size() == 7);
  const auto order = bcast_chunk_order(chunks.size(), {0, 5, 4, 3, 2, 1, 6});
  const Schedule s = build_bcast_rma(1, 4, 0, chunks, order, RmaAlgorithm::Binomial);
  std::vector<int> seen;
  for (const Step& st : s)
    if (st.kind == StepKind::Await) {
      seen.push_back(st.sub);
      CHECK(st.edge == (st.sub == 0 || st.sub == 6));
      CHECK(st.offset == chunks[static_cast<std::size_t>(st.sub)].offset);
      CHECK(st.length == chunks[static_cast<std::size_t>(st.sub)].length);
    }
  CHECK(seen == std::vector<int>{0, 6, 5, 4, 3, 2, 1});
}

TEST_CASE("bcast cost: seed 000's LogP/LogGP formulas") {
  LogGP c;
  c.L = 2e-6, c.o = 1e-6, c.g = 3e-6, c.G = 1e-9, c.O_r = 5e-6;
  // q = max(o, g) = 3 us; LogP (m = 1): (o + 2q + L + O_r) log2 P + o + L.
  CHECK(rma_binomial_time(c, 1, 8) * 1e6 == Approx(45));
  // LogGP: each stage adds (m-1)G.
  CHECK(rma_binomial_time(c, 1001, 8) * 1e6 == Approx(45 + 3 * 1000 * 1e-3));
  // Not a power of two: ceil(log2 P) stages.
  CHECK(ceil_log2(5) == 3);
  CHECK(ceil_log2(1) == 0);
  CHECK(rma_binomial_time(c, 1, 5) == Approx(rma_binomial_time(c, 1, 8)));
  // Two ranks: one put and one flag either way.
  CHECK(rma_linear_time(c, 4096, 2) == Approx(rma_binomial_time(c, 4096, 2)));
  CHECK(rma_binomial_time(c, 100, 1) == 0);
}

TEST_CASE("bcast cost: binomial overtakes linear as size and ranks grow; auto picks the cheapest") {
  LogGP c;
  c.L = 50e-6, c.o = 5e-6, c.g = 5e-6, c.G = 1e-8, c.O_r = 200e-6;  // a slow-noticing Ethernet-like link
  // Small messages, few ranks: linear (no per-stage request noticing).
  CHECK(rma_linear_time(c, 1024, 4) < rma_binomial_time(c, 1024, 4));
  // Large messages, many ranks: binomial.
  CHECK(rma_binomial_time(c, 1 << 20, 32) < rma_linear_time(c, 1 << 20, 32));
  // The crossing size shrinks as P grows (the seed's measurements show the same).
  auto crossing = [&](int p) {
    std::size_t m = 1;
    while (m < (1u << 30) && rma_linear_time(c, m, p) <= rma_binomial_time(c, m, p)) m *= 2;
    return m;
  };
  CHECK(crossing(64) <= crossing(16));
  CHECK(crossing(16) < crossing(8));
  // Without RMA, p2p whatever the costs; with zero costs (nothing measured), p2p on the tie.
  CHECK(cheapest_bcast(c, c, 1 << 20, 32, false) == BcastBackend::P2p);
  CHECK(cheapest_bcast(LogGP{}, LogGP{}, 1 << 20, 32, true) == BcastBackend::P2p);
  // With one parameter set, p2p binomial has the same stages without flags or noticing.
  CHECK(cheapest_bcast(c, c, 1 << 20, 32, true) == BcastBackend::P2p);
  // Messages dearer per byte than puts (e.g. a copy through a bounce buffer): RMA where bytes dominate.
  LogGP slow = c;
  slow.G = 4e-8;
  CHECK(cheapest_bcast(c, slow, 1 << 20, 32, true) == BcastBackend::RmaBinomial);
  CHECK(cheapest_bcast(c, slow, 1 << 20, 2, true) == BcastBackend::RmaBinomial);
  LogGP far = c;
  far.L = 1e-3;
  CHECK(cheapest_bcast(c, far, 64, 3, true) == BcastBackend::RmaLinear);
}

TEST_CASE("bcast cost: p2p stages pay O_r (tnbc's progress thread forwards), zero gives the seed's form") {
  LogGP c;
  c.L = 2e-6, c.o = 1e-6, c.G = 1e-9;
  const double seed = p2p_binomial_time(c, 1001, 8);
  CHECK(seed * 1e6 == Approx((1 + 1 + 2 + 1) * 3));
  c.O_r = 5e-6;
  CHECK(p2p_binomial_time(c, 1001, 8) == Approx(seed + 3 * 5e-6));
}

TEST_CASE("bcast cost: auto's parameters come from the machine at the level crossed, else the probe") {
  LogGP rma, p2p;
  rma.L = 3e-6, rma.o = rma.g = 1e-6, rma.G = 0.5e-9, rma.O_r = 60e-6;
  p2p.L = 4e-6, p2p.G = 0.4e-9;
  // No machine: the probe's figures as they are.
  BcastParams c = bcast_params(rma, p2p, nullptr, model::LevelKind::IntraNode);
  CHECK(!c.machine);
  CHECK(c.rma.O_r == rma.O_r);
  CHECK(c.p2p.L == p2p.L);
  // A machine (calibrate's file or the model's probe): messages from its level, O_r from its sleep.
  model::Machine m = test::machine(125, 50, 2, 10, 300);
  c = bcast_params(rma, p2p, &m, model::LevelKind::IntraNode);
  CHECK(c.machine);
  CHECK(c.p2p.L == Approx(50e-6));
  CHECK(c.p2p.o == Approx(10e-6));
  CHECK(c.p2p.G == Approx(1e-9 * 1e3 / 125));
  CHECK(c.rma.O_r == Approx(rma.o + 50e-6));  // the probe's flag poll + half the measured 100 us sleep
  CHECK(c.p2p.O_r == c.rma.O_r);
  CHECK(c.rma.L == rma.L);  // one-sided costs: only the RMA probe measures them
  CHECK(c.rma.G == rma.G);
  // A level the machine did not measure (a one-node calibration, a run across nodes): the probe's.
  CHECK(!bcast_params(rma, p2p, &m, model::LevelKind::InterNode).machine);
}

TEST_CASE("bcast cost: auto's ranges over sizes name each change once, in order") {
  LogGP rma;
  rma.L = 50e-6, rma.o = rma.g = 5e-6, rma.G = 1e-8, rma.O_r = 200e-6;
  LogGP p2p = rma;
  p2p.G = 4e-8;  // messages dearer per byte than puts
  p2p.L = 1e-3;  // and slower to start
  const BcastParams c{rma, p2p, false};
  const auto r = bcast_ranges(c, 32, true, std::size_t{64} << 20);
  REQUIRE(r.size() >= 2);
  CHECK(r.front().from == 0);
  for (std::size_t i = 1; i < r.size(); ++i) {
    CHECK(r[i].from > r[i - 1].from);
    CHECK(r[i].backend != r[i - 1].backend);
    CHECK(cheapest_bcast(rma, p2p, r[i].from, 32, true) == r[i].backend);
    CHECK(cheapest_bcast(rma, p2p, r[i].from - 1, 32, true) != r[i].backend);
  }
  CHECK(r.front().backend == BcastBackend::RmaLinear);
  CHECK(r.back().backend == BcastBackend::RmaBinomial);
  CHECK(ranges_text(r).find("rma-linear below ") == 0);
  // RMA unusable: one range, p2p.
  const auto none = bcast_ranges(c, 32, false, std::size_t{64} << 20);
  REQUIRE(none.size() == 1);
  CHECK(ranges_text(none) == "p2p");
}

TEST_CASE("bcast cost: the policy's auto asks the machine at the level the communicator crosses") {
  Settings s;
  s.bcast_backend = BcastBackend::Auto;
  auto a = make_policy(s, kPage, nullptr);
  auto b = make_policy(s, kPage, nullptr);
  RmaFacts f;
  f.usable = true;
  f.costs.L = 3e-6, f.costs.o = f.costs.g = 1e-6, f.costs.G = 0.1e-9, f.costs.O_r = 60e-6;
  f.p2p.L = 3e-6, f.p2p.G = 0.1e-9;
  auto in = std::make_shared<model::Inputs>();
  in->machine = test::machine(125);  // messages at 125 MB/s inside the node: puts are cheaper per byte
  in->world = model::Topology::block(4, 4, 2, 1);
  for (auto* p : {a.get(), b.get()}) {
    p->set_rma(f);
    p->start(in, 0, true);
  }
  const auto& w = in->world;
  // Equal inputs, equal answers (every rank selects alike).
  for (std::size_t m : {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{8} << 20})
    CHECK(a->bcast_backend(m, w) == b->bcast_backend(m, w));
  const BcastParams c = bcast_params(f.costs, f.p2p, &in->machine, model::LevelKind::IntraNode);
  // With a model: its pipelined estimates over the policy's segments, RMA only with a clear lead.
  for (std::size_t m : {std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{8} << 20}) {
    const BcastCosts k = bcast_costs_pipelined(c.rma, in->machine, w, m, a->bcast_segments(m, w), execution(s, 0));
    CHECK(a->bcast_backend(m, w) == cheapest_of(k, true, kRmaMargin));
  }
  CHECK(a->bcast_backend(8 << 20, w) != BcastBackend::P2p);  // puts at 40 GB/s against messages at 125 MB/s
  CHECK(a->bcast_backend(0, w) == BcastBackend::P2p);
  const auto plan = a->bcast_plan(w, kBcastPlanMaxBytes);
  REQUIRE(!plan.empty());
  CHECK(plan.front().backend == BcastBackend::P2p);
  for (const BcastRange& r : plan) CHECK(a->bcast_backend(r.from, w) == r.backend);
  // Not usable: p2p.
  f.usable = false;
  a->set_rma(f);
  CHECK(a->bcast_backend(8 << 20, w) == BcastBackend::P2p);
}

TEST_CASE("bcast cost: auto with a machine pipelines the chunks, p2p as the model times it") {
  const model::Machine m = test::machine(1000);  // messages at 1 GB/s, 50 us latency
  const model::Topology t = model::Topology::block(8, 8, 8, 1);
  const model::Execution x = execution(Settings{}, 0);
  LogGP rma;
  rma.L = 50e-6, rma.o = rma.g = 10e-6, rma.G = 1e-9, rma.O_r = 55e-6;  // a message's latency and per-byte gap
  const std::size_t big = std::size_t{8} << 20;
  // p2p is the cost model's own estimate of tnbc's broadcast.
  model::Coll c;
  c.kind = Kind::Bcast;
  c.bytes = static_cast<double>(big);
  c.segments = 5;
  const BcastCosts k = bcast_costs_pipelined(rma, m, t, big, 5, x);
  CHECK(k.p2p_binomial == Approx(model::tnbc_timeline(m, t, c, x, true).total_ns * 1e-9));
  // Flushed one-sided operations as slow as UCX's emulation over TCP (16 ms each): p2p.
  LogGP slow = rma;
  slow.L = 16e-3;
  CHECK(cheapest_of(bcast_costs_pipelined(slow, m, t, big, 5, x), true) == BcastBackend::P2p);
  CHECK(cheapest_of(bcast_costs_pipelined(slow, m, t, 64 << 10, 1, x), true) == BcastBackend::P2p);
  // Far cheaper puts make binomial RMA the choice, and linear (the root's link carries 7
  // copies) dearer than binomial at 8 ranks.
  LogGP fast = rma;
  fast.L = 1e-6, fast.o = fast.g = 0.5e-6, fast.G = 0.02e-9, fast.C = 0.02e-9;
  const BcastCosts f = bcast_costs_pipelined(fast, m, t, big, 5, x);
  CHECK(f.rma_binomial < f.rma_linear);
  CHECK(cheapest_of(f, true, kRmaMargin) == BcastBackend::RmaBinomial);
  // The copy out of the window counts.
  fast.C = 2e-9;
  CHECK(bcast_costs_pipelined(fast, m, t, big, 5, x).rma_binomial > f.rma_binomial);
  // More segments: more flushed round trips for RMA (L dominant).
  LogGP far = rma;
  far.L = 5e-3;
  CHECK(bcast_costs_pipelined(far, m, t, big, 8, x).rma_binomial > bcast_costs_pipelined(far, m, t, big, 2, x).rma_binomial);
  // Nothing to send, one rank: p2p.
  CHECK(cheapest_of(bcast_costs_pipelined(fast, m, t, 0, 1, x), true) == BcastBackend::P2p);
  CHECK(cheapest_of(bcast_costs_pipelined(fast, m, model::Topology::block(1, 1, 8, 1), big, 5, x), true) == BcastBackend::P2p);
}

TEST_CASE("bcast cost: the margin keeps p2p where RMA's lead is small") {
  BcastCosts t;
  t.p2p_binomial = 1.0, t.rma_binomial = 0.9, t.rma_linear = 0.95;
  CHECK(cheapest_of(t, true) == BcastBackend::RmaBinomial);
  CHECK(cheapest_of(t, true, kRmaMargin) == BcastBackend::P2p);
  t.rma_linear = 0.7;
  CHECK(cheapest_of(t, true, kRmaMargin) == BcastBackend::RmaLinear);
  CHECK(cheapest_of(t, false, kRmaMargin) == BcastBackend::P2p);
}

// ---------------------------------------------------------------- whole broadcasts
namespace {

// One-sided communication between simulated ranks: per rank a data window, request flags per
// chunk and a done counter. Completes its own steps at once (Put, Flag) or when their flag is up.
struct Windows {
  std::map<const InFlight*, int> rank_of;
  std::vector<std::vector<char>> data;
  std::vector<std::set<int>> flags;
  std::vector<int> done;
  int root = 0;
};

class RmaLoopback final : public Transport {
 public:
  explicit RmaLoopback(Windows& w) : w_(w) {}
  bool carries(StepKind k) const override { return k == StepKind::Put || k == StepKind::Flag || k == StepKind::Await; }
  Status start(InFlight& f, int i) override {
    for (int d : f.schedule.after(static_cast<std::size_t>(i))) REQUIRE(f.done(static_cast<std::size_t>(d)));
    const Step& s = f.schedule[static_cast<std::size_t>(i)];
    const int me = w_.rank_of.at(&f);
    if (s.kind == StepKind::Put) {
      const char* src = me == w_.root ? f.send_data + s.offset : w_.data[static_cast<std::size_t>(me)].data() + s.offset;
      std::memcpy(w_.data[static_cast<std::size_t>(s.peer)].data() + s.offset, src, s.length);
    } else if (s.kind == StepKind::Flag) {
      if (s.tag_offset == kDoneCounter) ++w_.done[static_cast<std::size_t>(s.peer)];
      else w_.flags[static_cast<std::size_t>(s.peer)].insert(s.tag_offset);
    }
    mine_.emplace_back(&f, i);
    return {};
  }
  Status poll(Completions& done) override {
    for (auto it = mine_.begin(); it != mine_.end();) {
      InFlight& f = *it->first;
      const Step& s = f.schedule[static_cast<std::size_t>(it->second)];
      const auto me = static_cast<std::size_t>(w_.rank_of.at(&f));
      bool in = true;
      if (s.kind == StepKind::Await) {
        if (s.tag_offset == kAllDone) in = w_.done[me] == static_cast<int>(w_.data.size()) - 1;
        else if (s.tag_offset >= 0) in = w_.flags[me].count(s.tag_offset) > 0;
        if (in && s.tag_offset >= 0) std::memcpy(f.recv_data + s.offset, w_.data[me].data() + s.offset, s.length);
      }
      if (!in) {
        ++it;
        continue;
      }
      done.completed(f, it->second, false, 1);
      it = mine_.erase(it);
    }
    return {};
  }
  std::size_t busy() const override { return mine_.size(); }
  std::vector<Started> release() override { return {}; }
  void adopt(const Started&) override {}

 private:
  Windows& w_;
  std::vector<std::pair<InFlight*, int>> mine_;
};

class RmaServices final : public Services {
 public:
  explicit RmaServices(BcastBackend b) {
    Settings s;
    s.bcast_backend = b;
    policy_ = make_policy(s, kPage, nullptr);
    policy_->set_rma({true, {}, {}});
  }
  TypeInfo type(MPI_Datatype) override { return {1, 1, true}; }
  ByteRange span(const void* buf, long long count, MPI_Datatype) override {
    const auto lo = reinterpret_cast<std::uintptr_t>(buf);
    return {lo, lo + static_cast<std::uintptr_t>(count)};
  }
  void fence(const void*, long long, MPI_Datatype) override {}
  char* send_area(std::size_t bytes) override { return area(bytes); }
  char* recv_area(std::size_t bytes, const void*) override { return area(bytes); }
  Status pack(const void* src, long long, MPI_Datatype, char* dst, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return {};
  }
  Policy& policy() override { return *policy_; }

 private:
  char* area(std::size_t bytes) {
    areas_.push_back(std::make_unique<std::vector<char>>(bytes + 1, '\x5a'));
    return areas_.back()->data();
  }
  std::unique_ptr<Policy> policy_;
  std::vector<std::unique_ptr<std::vector<char>>> areas_;
};

void broadcast(int n, int root, std::size_t bytes, BcastBackend backend, bool in_call) {
  Windows w;
  w.root = root;
  w.data.assign(static_cast<std::size_t>(n), std::vector<char>(bytes + 1, '\0'));
  w.flags.resize(static_cast<std::size_t>(n));
  w.done.assign(static_cast<std::size_t>(n), 0);
  WindowGate gate(0);
  std::vector<Rank> ranks(static_cast<std::size_t>(n));
  std::vector<std::vector<char>> bufs(static_cast<std::size_t>(n));
  std::vector<std::unique_ptr<RmaServices>> services;
  std::vector<std::unique_ptr<Executor>> execs;
  for (int r = 0; r < n; ++r) {
    auto& b = bufs[static_cast<std::size_t>(r)];
    b.resize(bytes);
    for (std::size_t i = 0; i < bytes; ++i) b[i] = r == root ? static_cast<char>(i * 13 + 5) : '\x11';
    CollCall c;
    c.kind = Kind::Bcast;
    c.recv = {b.data(), static_cast<int>(bytes), nullptr, nullptr, MPI_Datatype{}};
    c.root = root;
    services.push_back(std::make_unique<RmaServices>(backend));
    RmaServices& s = *services.back();
    const model::Topology topo = model::Topology::block(n, n, n, 1);  // CallContext: never null
    const CallContext ctx{r, n, kPage, &s, &s.policy(), &topo};
    const Collective& coll = collective(Kind::Bcast);
    const Layout l = coll.layout(c, ctx);
    Prepared p;
    REQUIRE(coll.prepare(c, l, in_call, ctx, s, p).ok());
    REQUIRE(p.schedule.count(StepKind::Send) == 0);
    REQUIRE(p.schedule.count(StepKind::Await) > 0);
    InFlight& f = *ranks[static_cast<std::size_t>(r)].f;
    f.kind = Kind::Bcast;
    f.schedule = std::move(p.schedule);
    f.send_data = p.send_data;
    f.recv_data = p.recv_data;
    f.user_recv = p.user_recv;
    f.ready_to_run();
    w.rank_of[&f] = r;
    std::vector<std::unique_ptr<Transport>> t;
    t.push_back(std::make_unique<RmaLoopback>(w));
    execs.push_back(std::make_unique<Executor>(gate, std::move(t)));
    execs.back()->add(ranks[static_cast<std::size_t>(r)].f, Scope::All);
  }
  std::vector<Executor*> raw;
  for (auto& e : execs) raw.push_back(e.get());
  run_all(raw, ranks);
  std::vector<char> want(bytes);
  for (std::size_t i = 0; i < bytes; ++i) want[i] = static_cast<char>(i * 13 + 5);
  for (int r = 0; r < n; ++r) REQUIRE(bufs[static_cast<std::size_t>(r)] == want);
  CHECK(w.done[static_cast<std::size_t>(root)] == n - 1);
}

}  // namespace

TEST_CASE("bcast rma: every byte reaches every rank, binomial and linear, staged and in the call") {
  for (BcastBackend b : {BcastBackend::RmaBinomial, BcastBackend::RmaLinear})
    for (int n : {2, 3, 5, 8})
      for (std::size_t bytes : {std::size_t{1}, 3 * kPage + 17, 40 * kPage + 1})
        for (bool in_call : {false, true}) broadcast(n, (n + 1) / 2, bytes, b, in_call);
}
