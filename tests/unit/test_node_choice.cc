// The decision behind TNBC_NODE_PRIORITIES=auto (runtime/node_choice.hh, Policy::node_priorities)
// on fixed machines (machines.hh): arbitration where several ranks of a node share its link and
// the model's first read comes earlier by more than the margin; never with one sender on the
// link, never for a kind the model does not cover; the settings on/off override it.
#include <catch2/catch.hpp>

#include <memory>

#include "machines.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/inputs.hh"
#include "runtime/node_choice.hh"
#include "runtime/policy.hh"

using namespace tnbc;
using namespace tnbc::model;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::size_t kPage = 4096;

// Nodes joined by 1 Gbit/s links (125 MB/s, 50 us), 2 ranks per node sharing each link.
Machine two_per_node() {
  Machine m = test::machine(2000, 5, 2, 5, 100);
  m.nodes = 2;
  m.ranks = 4;
  m.ranks_per_node = 2;
  m.level[1] = test::level(50, 125, 10, 300);
  return m;
}

Coll alltoall(double per_peer) { return test::alltoall(per_peer, kPage); }

// A profile source that only says "mode optimize": the node decision asks nothing of it.
class Orders final : public ReadOrderSource {
 public:
  std::vector<int> order(const CallShape&) override { return {}; }
};

CallShape shape(Kind k, int n, std::uint64_t per_peer) {
  CallShape c;
  c.kind = k;
  c.comm_size = n;
  c.recv_bytes.assign(static_cast<std::size_t>(n), per_peer);
  return c;
}

}  // namespace

TEST_CASE("node choice: a shared link gains where the data is large, and is judged alike each time", "[node]") {
  const Machine m = two_per_node();
  const Topology t = Topology::block(4, 2, 2, 1);
  const NodeChoice big = node_choice(m, t, alltoall(1 * kMiB), {}, 2, 0.10);
  CHECK(big.basis == NodeBasis::Gains);
  CHECK(big.on);
  CHECK(big.first_on_ns > 0);
  CHECK(big.first_on_ns < big.first_off_ns);
  CHECK(big.first_off_ns - big.first_on_ns > big.margin_ns);
  CHECK(node_basis_name(big.basis) == std::string("gains"));
  // A margin larger than any gain (the whole blocking time): no.
  const NodeChoice strict = node_choice(m, t, alltoall(1 * kMiB), {}, 2, 1.0);
  CHECK_FALSE(strict.on);
  CHECK(strict.basis == NodeBasis::NoGain);
}

TEST_CASE("node choice: nothing to arbitrate with one sender, and Bcast is not modelled", "[node]") {
  const Machine m = two_per_node();
  const Topology t = Topology::block(4, 2, 2, 1);
  for (int senders : {0, 1}) {
    const NodeChoice c = node_choice(m, t, alltoall(1 * kMiB), {}, senders, 0.10);
    CHECK_FALSE(c.on);
    CHECK(c.basis == NodeBasis::OneSender);
    CHECK(c.first_on_ns < 0);
  }
  Coll b = alltoall(4 * kMiB);
  b.kind = Kind::Bcast;
  const NodeChoice c = node_choice(m, t, b, {}, 2, 0.10);
  CHECK_FALSE(c.on);
  CHECK(c.basis == NodeBasis::NotModelled);
}

TEST_CASE("node choice: the policy's answers (auto asks the model, on/off are settings)", "[node]") {
  const Topology t = Topology::block(4, 2, 2, 1);
  auto inputs = std::make_shared<Inputs>();
  inputs->machine = two_per_node();
  inputs->world = t;
  const CallShape call = shape(Kind::Alltoall, 4, 1 << 20);

  Settings s;
  s.mode = Mode::Optimize;
  auto p = make_policy(s, kPage, std::make_unique<Orders>());
  // Before the model starts: on where several ranks share the link (no model to judge).
  CHECK(p->node_priorities(call, t, 2).basis == NodeBasis::NoModel);
  CHECK(p->node_priorities(call, t, 2).on);
  p->start(inputs, 0, true);
  const NodeChoice a = p->node_priorities(call, t, 2);
  CHECK(a.on);
  CHECK(a.basis == NodeBasis::Gains);
  const NodeChoice again = p->node_priorities(call, t, 2);  // cached: the same answer
  CHECK(again.first_on_ns == a.first_on_ns);
  CHECK_FALSE(p->node_priorities(call, t, 0).on);
  CHECK(p->node_priorities(call, t, 0).basis == NodeBasis::OneSender);

  // Without a profile (mode nbc): no read order worth keeping node-wide.
  Settings nbc;
  auto q = make_policy(nbc, kPage, nullptr);
  q->start(inputs, 0, true);
  CHECK_FALSE(q->node_priorities(call, t, 2).on);
  CHECK(q->node_priorities(call, t, 2).basis == NodeBasis::NoProfile);

  for (NodePriorities v : {NodePriorities::On, NodePriorities::Off}) {
    Settings forced;
    forced.mode = Mode::Optimize;
    forced.node_priorities = v;
    auto f = make_policy(forced, kPage, std::make_unique<Orders>());
    f->start(inputs, 0, true);
    const NodeChoice c = f->node_priorities(call, t, 0);
    CHECK(c.on == (v == NodePriorities::On));
    CHECK(c.basis == NodeBasis::Setting);
  }
}

TEST_CASE("node choice: uncut bodies gain only from more than two senders; who sends on the link", "[node]") {
  // One piece per sub-message: without arbitration a receiver's first-read sub-message comes
  // on average half-way through the flow; with it after 1/M: equal for M = 2, earlier for M = 4.
  Machine m = two_per_node();
  m.ranks = 8;
  m.ranks_per_node = 4;
  Coll c = alltoall(1 * kMiB);
  c.pieces = PieceRule(PieceSetting(0));
  const NodeChoice two = node_choice(m, Topology::block(4, 2, 2, 1), c, {}, 2, 0.10);
  CHECK_FALSE(two.on);
  CHECK(two.first_on_ns == Approx(two.first_off_ns));
  const NodeChoice four = node_choice(m, Topology::block(8, 4, 2, 1), c, {}, 4, 0.10);
  CHECK(four.on);

  CHECK(link_senders(Topology::block(4, 2, 2, 1), 0, false) == 2);
  CHECK(link_senders(Topology::block(4, 4, 2, 1), 0, false) == 0);  // one node, shared memory
  CHECK(link_senders(Topology::block(4, 4, 2, 1), 0, true) == 4);   // one node, over its link
  CHECK(link_senders(Topology::block(2, 1, 2, 1), 0, false) == 0);  // one rank per node
}
