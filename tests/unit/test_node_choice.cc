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

TEST_CASE("node choice: nothing to arbitrate with one sender", "[node]") {
  const Machine m = two_per_node();
  const Topology t = Topology::block(4, 2, 2, 1);
  for (int senders : {0, 1}) {
    const NodeChoice c = node_choice(m, t, alltoall(1 * kMiB), {}, senders, 0.10);
    CHECK_FALSE(c.on);
    CHECK(c.basis == NodeBasis::OneSender);
    CHECK(c.first_on_ns < 0);
  }
}

TEST_CASE("node choice: where the CPUs, not the link, bound the transfer, an earlier first read costs more", "[node]") {
  // TCP that costs each end 8 ms of CPU per MiB (the kernel's copies; 1 Gbit/s takes 8.4 ms per
  // MiB on the wire): two ranks per node on one CPU (as emulated nodes on this project's 2-core
  // machine) compute while their progress threads drive the exchange. One driver at a time gets
  // a third of the CPU instead of two getting a quarter each: the link idles.
  Machine m = two_per_node();
  m.level[1] = test::level(50, 125, 10, 8000);
  const NodeChoice tight = node_choice(m, Topology::block(4, 2, 1, 1), alltoall(1 * kMiB), {}, 2, 0.10);
  CHECK_FALSE(tight.on);
  CHECK(tight.basis == NodeBasis::Costs);
  CHECK(node_basis_name(tight.basis) == std::string("costs"));
  CHECK(tight.first_on_ns < tight.first_off_ns - tight.margin_ns);  // the first read alone would gain
  CHECK(tight.end_on_ns - tight.end_off_ns > tight.first_off_ns - tight.first_on_ns - tight.margin_ns);
  // The same exchange with CPUs to spare (8 per node, 4 per rank): link-bound, on.
  const NodeChoice roomy = node_choice(m, Topology::block(4, 2, 8, 4), alltoall(1 * kMiB), {}, 2, 0.10);
  CHECK(roomy.on);
  CHECK(roomy.basis == NodeBasis::Gains);
  CHECK(roomy.end_on_ns <= roomy.end_off_ns + roomy.margin_ns);
  // The default machine's cheap TCP on one CPU per node: still link-bound, on.
  CHECK(node_choice(two_per_node(), Topology::block(4, 2, 1, 1), alltoall(1 * kMiB), {}, 2, 0.10).on);
  // The drivers' CPU: M at once get min(M, C / 2) CPUs together, one at a time min(1, C / (M + 1)).
  CHECK(driver_cpu(2, 1).off == Approx(0.5));
  CHECK(driver_cpu(2, 1).on == Approx(1.0 / 3));
  CHECK(driver_cpu(4, 2).off == Approx(1.0));
  CHECK(driver_cpu(4, 2).on == Approx(0.4));
  CHECK(driver_cpu(2, 8).off == Approx(2.0));
  CHECK(driver_cpu(2, 8).on == Approx(1.0));
}

namespace {

// Machines like the version 2 files `tnbc calibrate` wrote for docs/benchmarks.md's placements
// (1 Gbit/s: 8 ns per byte on the wire; per-byte CPU at each end ~0.3 ns, 1/25 of it).
// One node's loopback carries every message once, both directions on one resource (M = 4,
// TNBC_NODE_LOCAL_SENDS=link), 2 CPUs:
Machine loopback_v2() {
  Machine m = test::machine(125, 3, 2, 5, 330);
  m.test_ns = 5e3;
  m.sleep_ns = 90e3;
  return m;
}
// Two nodes of 2 ranks, one full-duplex link each (node_bi half the wire's per-byte time), one CPU
// per node:
Machine two_nodes_v2() {
  Machine m = two_per_node();
  m.cpus_per_node = 1;
  m.level[1] = test::level(0, 125, 8, 400);
  m.level[1].node_bi_ns_per_byte = m.level[1].G_ns_per_byte / 2;
  m.test_ns = 0.8e3;
  m.sleep_ns = 95e3;
  return m;
}

// auto's verdict for an Alltoall of `per_peer` bytes cut as the model cuts it (TNBC_PIECE_BYTES=auto),
// with the default margin (30 % of the blocking time).
NodeChoice verdict(const Machine& m, const Topology& t, double per_peer, int senders) {
  Coll c = alltoall(per_peer);
  c.pieces = PieceRule(std::nullopt, piece_scale(m, t, {}, kPage));
  return node_choice(m, t, c, {}, senders, 0.30);
}

}  // namespace

TEST_CASE("node choice: the verdict per placement on version 2 calibrations", "[node]") {
  for (double mib : {1.0, 4.0}) {
    CAPTURE(mib);
    // M = 4 on one loopback: link-bound, arbitration gives each rank's first-read block the link
    // first at no cost to the end (measured: first read 0.28 of off, Table 1 totals 0.76-0.94).
    // One rank alone fills the loopback (its window and gaps): the serialized streams are the
    // link's own time, not twice it (before: the rank's receives counted too, basis costs).
    const NodeChoice four = verdict(loopback_v2(), Topology::block(4, 4, 2, 1), mib * kMiB, 4);
    CHECK(four.on);
    CHECK(four.basis == NodeBasis::Gains);
    CHECK(four.end_on_ns <= four.end_off_ns * 1.05);
    CHECK(four.first_on_ns < 0.5 * four.first_off_ns);
    // M = 2 on two nodes with one CPU each: per-byte CPU 1/20 of the wire's, link-bound: on
    // (measured: Table 1 totals on/off 0.91-1.01).
    const Topology t2 = Topology::block(4, 2, 1, 1);
    const NodeChoice pair = verdict(two_nodes_v2(), t2, mib * kMiB, 2);
    CHECK(pair.on);
    CHECK(pair.basis == NodeBasis::Gains);
    // The same link with a version 1 file's per-byte CPU (about the wire's: the spinning
    // acknowledgement counted as CPU): CPU-bound, off.
    Machine v1 = two_nodes_v2();
    v1.level[1].Os_ns_per_byte = v1.level[1].Or_ns_per_byte = v1.level[1].G_ns_per_byte;
    const NodeChoice old = verdict(v1, t2, mib * kMiB, 2);
    CHECK_FALSE(old.on);
    CHECK(old.basis == NodeBasis::Costs);
  }
}

TEST_CASE("node choice: a broadcast's forwarders on one link", "[node]") {
  const Machine m = two_per_node();
  Coll b = alltoall(4 * kMiB);
  b.kind = Kind::Bcast;
  b.segments = 4;
  // 2 nodes of 2: each node's link has one forwarder whatever the root (binomial tree).
  for (int root = 0; root < 4; ++root) {
    b.root = root;
    CHECK(node_choice(m, Topology::block(4, 2, 2, 1), b, {}, 2, 0.10).basis == NodeBasis::OneSender);
  }
  // 4 ranks on one node, all over its link (TNBC_NODE_LOCAL_SENDS=link): the root streams the
  // chunks while the forwarders wait for theirs; arbitration gives every rank's first chunk the
  // link before the root's later ones.
  b.root = 0;
  const NodeChoice one = node_choice(m, Topology::block(4, 4, 2, 1), b, {}, 4, 0.10);
  CHECK(one.on);
  CHECK(one.basis == NodeBasis::Gains);
  CHECK(one.first_on_ns < one.first_off_ns);
  // 6 ranks on 2 nodes from root 0: ranks 0 and 2 both forward over node 0's link, but each
  // sends a chunk in the same order: no gain above the margin. From root 1 only one does.
  const NodeChoice six = node_choice(m, Topology::block(6, 3, 2, 1), b, {}, 3, 0.10);
  CHECK_FALSE(six.on);
  CHECK(six.basis == NodeBasis::NoGain);
  CHECK(six.first_on_ns > 0);
  b.root = 1;
  CHECK(node_choice(m, Topology::block(6, 3, 2, 1), b, {}, 3, 0.10).basis == NodeBasis::OneSender);
  // The one node's gain, with TCP as costly as the CPU-bound exchange above on one CPU: off.
  Machine costly = m;
  costly.level[0] = test::level(50, 125, 10, 8000);
  b.root = 0;
  CHECK_FALSE(node_choice(costly, Topology::block(4, 4, 1, 1), b, {}, 4, 0.10).on);
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
  CHECK(two.first_on_ns == Approx(two.first_off_ns).epsilon(0.01));
  const NodeChoice four = node_choice(m, Topology::block(8, 4, 2, 1), c, {}, 4, 0.10);
  CHECK(four.on);

  CHECK(link_senders(Topology::block(4, 2, 2, 1), 0, false) == 2);
  CHECK(link_senders(Topology::block(4, 4, 2, 1), 0, false) == 0);  // one node, shared memory
  CHECK(link_senders(Topology::block(4, 4, 2, 1), 0, true) == 4);   // one node, over its link
  CHECK(link_senders(Topology::block(2, 1, 2, 1), 0, false) == 0);  // one rank per node
}
