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
  std::optional<SiteProgram> program(const CallShape&) override { return site; }
  std::optional<SiteProgram> site;  // what the profile says the program does after the call
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

// A policy with TNBC_NODE_PRIORITIES=auto in mode optimize on machine `m` and placement `t`, and
// the profile source whose program the test sets.
struct AutoPolicy {
  std::unique_ptr<Policy> policy;
  Orders* orders;
};
AutoPolicy auto_policy(const Machine& m, const Topology& t) {
  auto inputs = std::make_shared<Inputs>();
  inputs->machine = m;
  inputs->world = t;
  Settings s;
  s.mode = Mode::Optimize;
  auto orders = std::make_unique<Orders>();
  Orders* o = orders.get();
  auto p = make_policy(s, kPage, std::move(orders));
  p->start(inputs, 0, true);
  return {std::move(p), o};
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

namespace {

// A program that reads all it received right after the call, at about the rate the data comes
// (is-proxy's Alltoallv: T_CRC short against the transfer), or that works long on each block.
Program reads_at_once(double ms) { return Program{0, ms * 1e6}; }

NodeChoice verdict_of(const Machine& m, const Topology& t, double per_peer, int senders, const Program* p) {
  Coll c = alltoall(per_peer);
  c.pieces = PieceRule(std::nullopt, piece_scale(m, t, {}, kPage));
  return node_choice(m, t, c, {}, senders, 0.30, p);
}

}  // namespace

TEST_CASE("node choice: wake-ups where a node's threads outnumber its CPUs", "[node]") {
  // What waking costs: nothing with CPUs to spare or no measured wake-up; on a crowded node a
  // hand-off costs the wake-up, a send what the driver's window does not cover.
  Machine m = two_nodes_v2();
  const Level& link = m.level[1];
  Execution x;
  x.window = 4;
  // Not measured (older files, the start-up probe): the stated default, the progress thread's
  // requested slice, where the node is crowded; nothing where its CPUs suffice.
  CHECK(m.wake_loaded_ns < 0);
  CHECK(wakes(m, link, x, 2, 1, 10, 10 * kMiB).handoff_ns == Approx(kUnmeasuredWakeNs));
  CHECK(wakes(m, link, x, 2, 4, 10, 10 * kMiB).handoff_ns == 0);
  m.wake_loaded_ns = 0;  // measured: none
  CHECK(wakes(m, link, x, 2, 1, 10, 10 * kMiB).handoff_ns == 0);
  m.wake_loaded_ns = 2e6;
  const Wakes crowded = wakes(m, link, x, 2, 1, 10, 10 * 64 * 1024.0);
  CHECK(crowded.handoff_ns == Approx(2e6));
  CHECK(crowded.send_ns == Approx(2e6 - 3 * link.g(64 * 1024.0)));
  CHECK(crowded.rank_ns == Approx(10 * crowded.send_ns));
  CHECK(wakes(m, link, x, 2, 1, 10, 10 * kMiB).send_ns == 0);     // 3 MiB in flight cover 2 ms
  CHECK(wakes(m, link, x, 2, 4, 10, 10 * kMiB).handoff_ns == 0);  // 2 ranks + 1 driver on 4 CPUs
  CHECK(wakes(m, link, x, 1, 1, 10, 10 * kMiB).handoff_ns == 0);  // nobody to hand the link to

  // The version 2 placement M = 2 on one CPU per node, bodies cut in 64 KiB pieces (0.5 ms each
  // on the wire): on, the link bounds it (session 7). A wake-up long against what the window
  // covers (3 ms against 3 x 0.5 ms: the kernel's slice on a busy CPU) turns each send of the one
  // driver into a pause of the link: off, basis costs; with CPUs to spare it costs nothing.
  const Topology t2 = Topology::block(4, 2, 1, 1);
  Machine slow = two_nodes_v2();
  slow.wake_loaded_ns = 3e6;
  for (double mib : {1.0, 4.0}) {
    CAPTURE(mib);
    Coll c = alltoall(mib * kMiB);
    c.pieces = PieceRule(PieceSetting(64 * 1024));
    CHECK(node_choice(two_nodes_v2(), t2, c, {}, 2, 0.30).on);
    // The pauses delay the first-read sender's own stream too: no gain left.
    const NodeChoice w = node_choice(slow, t2, c, {}, 2, 0.30);
    CHECK_FALSE(w.on);
    CHECK(w.basis == NodeBasis::NoGain);
    CHECK(w.end_on_ns > node_choice(two_nodes_v2(), t2, c, {}, 2, 0.30).end_on_ns);
    CHECK(node_choice(slow, Topology::block(4, 2, 4, 2), c, {}, 2, 0.30).on);
  }
  // Pieces that keep the link busy longer than the wake-up (256 KiB: 2 ms each on the wire):
  // only the hand-off costs, 3 ms later than without; at 4 MiB per peer still on.
  Coll c = alltoall(4 * kMiB);
  c.pieces = PieceRule(PieceSetting(256 * 1024));
  const NodeChoice covered = node_choice(slow, t2, c, {}, 2, 0.30);
  CHECK(covered.on);
  Machine no_wake = two_nodes_v2();
  no_wake.wake_loaded_ns = 0;  // measured: none (unmeasured would charge kUnmeasuredWakeNs)
  CHECK(covered.end_on_ns - node_choice(no_wake, t2, c, {}, 2, 0.30).end_on_ns == Approx(3e6));
  CHECK(covered.end_on_ns - node_choice(two_nodes_v2(), t2, c, {}, 2, 0.30).end_on_ns == Approx(3e6 - kUnmeasuredWakeNs));
}

TEST_CASE("node choice: the program's read time after the call", "[node]") {
  // M = 2, version 2 machine, a wake-up as `tnbc calibrate` measures it on this VM (~0.1-1 ms).
  Machine m = two_nodes_v2();
  m.wake_loaded_ns = 0.5e6;
  const Topology t2 = Topology::block(4, 2, 1, 1);
  const Topology t4 = Topology::block(4, 4, 2, 1);
  for (double mib : {1.0, 4.0}) {
    CAPTURE(mib);
    // Unknown program: the first read's gain decides (on).
    const NodeChoice bare = verdict_of(m, t2, mib * kMiB, 2, nullptr);
    CHECK(bare.on);
    // A program that reads everything at once gains nothing from the earlier first read and
    // waits for the end, which arbitration delays: off (is-proxy with early return forced).
    const Program quick = reads_at_once(0.02 * mib);
    const NodeChoice at_once = verdict_of(m, t2, mib * kMiB, 2, &quick);
    CHECK_FALSE(at_once.on);
    CHECK(at_once.basis == NodeBasis::Costs);
    // One that works on what it read for longer than the transfer: the earlier first read is
    // an earlier end of its work: on (Table 1's slow readers).
    const Program slow = reads_at_once(4 * bare.end_off_ns / 1e6);
    CHECK(verdict_of(m, t2, mib * kMiB, 2, &slow).on);
    // M = 4 on one loopback, crowded (4 ranks + a driver on 2 CPUs): the same two programs.
    Machine lo = loopback_v2();
    lo.wake_loaded_ns = 0.5e6;
    CHECK_FALSE(verdict_of(lo, t4, mib * kMiB, 4, &quick).on);
    const NodeChoice four = verdict_of(lo, t4, mib * kMiB, 4, nullptr);
    const Program slow4 = reads_at_once(4 * four.end_off_ns / 1e6);
    CHECK(four.on);
    CHECK(verdict_of(lo, t4, mib * kMiB, 4, &slow4).on);
  }
}

TEST_CASE("node choice: the machine file's wake-up is optional", "[node]") {
  Machine m = two_nodes_v2();
  Result<Machine> none = parse_machine(machine_json(m), "test");
  REQUIRE(none.ok());
  CHECK(none.value().wake_loaded_ns < 0);  // files without it: not measured
  m.wake_loaded_ns = 123e3;
  Result<Machine> with = parse_machine(machine_json(m), "test");
  REQUIRE(with.ok());
  CHECK(with.value().wake_loaded_ns == Approx(123e3));
  CHECK(machine_hash(with.value()) != machine_hash(none.value()));
}

TEST_CASE("node choice: the policy weighs the profile's program, in the model's time", "[node]") {
  const Topology t = Topology::block(4, 2, 1, 1);
  Machine m = two_nodes_v2();
  m.wake_loaded_ns = 0.5e6;
  auto [p, o] = auto_policy(m, t);
  const CallShape call = shape(Kind::Alltoall, 4, 4 << 20);
  CHECK(p->node_priorities(call, t, 2).on);  // no program known: the first read decides
  // Measured: the blocking call took 3x the model's; the program reads for 1 % of it.
  Coll c = alltoall(4 << 20);
  const double blocking = 3 * mpi_blocking_ns(m, t, c);
  o->site = SiteProgram{Program{0, 0.01 * blocking}, blocking};
  const NodeChoice quick = p->node_priorities(call, t, 2);
  CHECK_FALSE(quick.on);
  CHECK(quick.basis == NodeBasis::Costs);
  // Scaled into the model's time: a third.
  const auto scaled = model_program(*o->site, m, t, c);
  REQUIRE(scaled);
  CHECK(scaled->crc_ns == Approx(0.01 * blocking / 3));
  CHECK_FALSE(model_program(SiteProgram{Program{0, 1e6}, 0}, m, t, c));
  // A program that works on the data for 4x the blocking time: on.
  o->site = SiteProgram{Program{0, 4 * blocking}, blocking};
  CHECK(p->node_priorities(call, t, 2).on);
}

TEST_CASE("node choice: a reader faster than the data gains; the program's margin is the cost margin", "[node]") {
  // Table 1 (c): no CURC, the program reads twice as fast as the data comes (T_CRC = Tcomm / 2).
  // Arbitration brings each reader's first block at ~1/M of the transfer, so it reads while the
  // rest arrives and ends ~T_CRC / n after the last byte; without, it starts reading near the end
  // (measured, 4 MiB: totals on/off 0.83-0.90 at M = 2, 0.72 at M = 4; docs/benchmarks.md,
  // sessions 8-9). The model's gain (~20 % of the program's end) is below the blocking time's 45 %
  // the first read alone is judged with, above the 15 % of its error on tnbc's own costs.
  for (const bool four : {false, true}) {
    CAPTURE(four);
    const Topology t = four ? Topology::block(4, 4, 2, 1) : Topology::block(4, 2, 1, 1);
    const Machine m = four ? loopback_v2() : two_nodes_v2();
    const int senders = four ? 4 : 2;
    auto [p, o] = auto_policy(m, t);
    Coll c = alltoall(4 << 20);
    const double blocking = mpi_blocking_ns(m, t, c);
    o->site = SiteProgram{Program{0, 0.5 * blocking}, blocking};
    const NodeChoice fast = p->node_priorities(shape(Kind::Alltoall, 4, 4 << 20), t, senders);
    CHECK(fast.on);
    CHECK(fast.basis == NodeBasis::Gains);
    const double net = fast.done_off_ns - fast.done_on_ns;
    CHECK(net > 0.15 * blocking);
    CHECK(fast.margin_ns == Approx(0.15 * blocking));
    // Judged with the first read's margin (the rule before session 9): off, which lost 10-28 %.
    c.pieces = PieceRule(std::nullopt, piece_scale(m, t, {}, kPage));
    const Program program{0, 0.5 * blocking};
    CHECK_FALSE(node_choice(m, t, c, {}, senders, 0.45, &program).on);
    // A program that reads it all at once right after the call still gets off (is-proxy forced).
    o->site = SiteProgram{Program{0, 0.01 * blocking}, blocking};
    CHECK_FALSE(p->node_priorities(shape(Kind::Alltoall, 4, 4 << 20), t, senders).on);
    // Without the program, the first read's margin (45 % of the blocking time).
    o->site.reset();
    CHECK(p->node_priorities(shape(Kind::Alltoall, 4, 4 << 20), t, senders).margin_ns == Approx(0.45 * blocking));
  }
}
