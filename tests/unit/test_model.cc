// The cost model's estimators and the decisions taken from them (runtime/model/estimate.hh,
// trace/gain.hh, runtime/policy.hh) on fixed machine descriptions (machines.hh): the MPI
// library's blocking collectives against LogGP by hand, a link shared by a node's ranks, what an
// early return hides and costs for programs that compute first or read at once (Eq. 1, Eq. 3),
// the per-site decision with its margin, the segment count, and that the policy's global
// answers depend only on inputs every rank has alike.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "machines.hh"
#include "runtime/model/bands.hh"
#include "runtime/model/busy_poll.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/inputs.hh"
#include "runtime/model/mpi_algorithms.hh"
#include "runtime/policy.hh"
#include "trace/gain.hh"

using namespace tnbc;
using namespace tnbc::model;

namespace {

constexpr double kMs = 1e6;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::size_t kPage = 4096;

using test::two_nodes;
using test::through_shared_memory;
const Topology kTwoNodes = Topology::block(2, 1, 2, 1);  // one rank per node, 2 CPUs each

Coll alltoall(double per_peer) { return test::alltoall(per_peer, kPage); }
Coll bcast(double bytes) {
  Coll c = alltoall(bytes);
  c.kind = Kind::Bcast;
  return c;
}

trace::Judge judge(const Machine& m, const Topology& world, const Settings& s = {}) {
  auto in = std::make_shared<Inputs>();
  in->machine = m;
  in->world = world;
  in->source = "file";
  return trace::make_judge(s, in, Execution{});
}

// A site's trace values: Tcomm measured, T_CURC before the first touch, T_CRC reading.
trace::SiteEstimate site(double bytes_received, double comm_ns, double curc_ns, double crc_ns) {
  trace::SiteEstimate e;
  e.estimating_ranks = 2;
  e.bytes = bytes_received;
  e.comm_ns = comm_ns;
  e.curc_ns = curc_ns;
  e.crc_ns = crc_ns;
  e.overlap_ns = curc_ns + crc_ns;
  return e;
}

}  // namespace

TEST_CASE("model: a blocking Alltoall between two nodes is the link's time for the bytes") {
  const Machine m = two_nodes();
  const Level& l = m.at(LevelKind::InterNode);
  const double t = mpi_blocking_ns(m, kTwoNodes, alltoall(kMiB));
  // One MiB each way through a full-duplex 125 MB/s link: ~8.4 ms, plus the latency and the
  // ends' CPU (o_s + o_r), within LogGP's bound.
  CHECK(t >= kMiB * l.G_ns_per_byte);
  CHECK(t <= kMiB * l.G_ns_per_byte + l.L_ns + l.o_s(kMiB) + l.o_r(kMiB) + 1 * kMs);
  // Twice the bytes, about twice the time (the fixed terms are small here).
  CHECK(mpi_blocking_ns(m, kTwoNodes, alltoall(2 * kMiB)) == Approx(2 * t).epsilon(0.1));
  // A link whose two directions share one queue (node_bi = node_out): both MiB go through it.
  Machine queue = m;
  queue.level[1].node_bi_ns_per_byte = l.G_ns_per_byte;
  CHECK(mpi_blocking_ns(queue, kTwoNodes, alltoall(kMiB)) >= 2 * kMiB * l.G_ns_per_byte);
}

TEST_CASE("model: ranks of a node sharing its link take longer per byte (LogGPH node bound)") {
  Machine m = test::machine(125, 50, 2, 10, 300);
  const Topology four = Topology::block(4, 4, 2, 1);
  const Topology two = Topology::block(2, 2, 2, 1);
  // Per peer the same bytes; four ranks send three times as much each through one link.
  const double t4 = mpi_blocking_ns(m, four, alltoall(kMiB));
  const double t2 = mpi_blocking_ns(m, two, alltoall(kMiB));
  CHECK(t4 > 2.5 * t2);
  // A node whose shared resource is twice as slow per byte as one pair: slower still.
  m.level[0] = test::level(50, 125, 10, 300, 2);
  CHECK(mpi_blocking_ns(m, four, alltoall(kMiB)) > 1.5 * t4);
}

TEST_CASE("model: a broadcast grows with the tree and the bytes") {
  const Machine m = test::machine(125);
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = 4 * kMiB;
  c.page = kPage;
  const double two = mpi_blocking_ns(m, Topology::block(2, 2, 4, 1), c);
  const double four = mpi_blocking_ns(m, Topology::block(4, 4, 4, 1), c);
  CHECK(two >= 4 * kMiB * m.at(LevelKind::IntraNode).G_ns_per_byte);
  CHECK(four > two);
  c.bytes = 8 * kMiB;
  CHECK(mpi_blocking_ns(m, Topology::block(4, 4, 4, 1), c) > 1.8 * four);
}

TEST_CASE("model: Open MPI 4.1's own algorithm on one node, by its fixed rules") {
  const std::string ompi = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
  // coll_tuned_decision_fixed.c: pairwise only between 512 KiB and 1 MiB per peer (3..7 ranks),
  // one exchange with the peer at np 2; a broadcast unsegmented, linear below 1 MiB at np 4,
  // a chain from there; another library or no table entry: the generic bound.
  CHECK(mpi_alltoall_algorithm(ompi, 4, 64 * 1024) == MpiExchange::Linear);
  CHECK(mpi_alltoall_algorithm(ompi, 4, 768 * 1024) == MpiExchange::Pairwise);
  CHECK(mpi_alltoall_algorithm(ompi, 4, 4 * kMiB) == MpiExchange::Linear);
  CHECK(mpi_alltoall_algorithm(ompi, 2, 768 * 1024) == MpiExchange::Linear);
  CHECK(mpi_bcast_algorithm(ompi, 2, 4 * kMiB) == MpiBcast::Binary);
  CHECK(mpi_bcast_algorithm(ompi, 4, 256 * 1024) == MpiBcast::Linear);
  CHECK(mpi_bcast_algorithm(ompi, 4, 4 * kMiB) == MpiBcast::Chain);
  CHECK(mpi_bcast_algorithm("MPICH Version: 4.0.2", 4, 4 * kMiB) == MpiBcast::Unknown);
  CHECK(mpi_alltoall_algorithm(ompi, 16, kMiB) == MpiExchange::Unknown);
  // Alltoallv by the communicator's size alone (coll_tuned_decision_fixed.c, v4.1.4).
  CHECK(mpi_alltoallv_algorithm(ompi, 2) == MpiExchange::Linear);
  CHECK(mpi_alltoallv_algorithm(ompi, 3) == MpiExchange::Pairwise);
  CHECK(mpi_alltoallv_algorithm(ompi, 4) == MpiExchange::Linear);
  CHECK(mpi_alltoallv_algorithm(ompi, 15) == MpiExchange::Linear);
  CHECK(mpi_alltoallv_algorithm(ompi, 16) == MpiExchange::Unknown);
  CHECK(mpi_alltoallv_algorithm("MPICH Version: 4.0.2", 4) == MpiExchange::Unknown);

  // A node whose copies are slower per byte the more ranks copy at once, and one pair's
  // message train (g) slower than the node's two-rank aggregate.
  Machine m = test::machine(2000, 1, 2);
  m.mpi_library = ompi;
  Level& l = m.level[0];
  l.sweep = {{65536, 40e3, 1e3, 30e3, 32e3}, {4 * kMiB, 900e3, 1e3, 850e3, 880e3}};
  l.node_sweep = {{65536, 2, 0.30, 0.20}, {4 * kMiB, 2, 0.20, 0.12}, {65536, 4, 0.40, 0.30}, {4 * kMiB, 4, 0.25, 0.18}};
  const Topology two = Topology::block(2, 2, 2, 1), four = Topology::block(4, 4, 2, 1);
  Coll b;
  b.kind = Kind::Bcast;
  b.bytes = 4 * kMiB;
  b.page = kPage;
  // One flow of the node's one-way train (8 distinct messages, from memory): 0.15 ns/B.
  l.node_out_ns_per_byte = 0.15;
  l.flows = 1;
  // np 2: one unsegmented message (not 32 pipelined segments at the node's rate), a lone flow
  // from the root's buffer: no faster than the ping-pong's T(m), nor than one flow of the train.
  const double one = std::max(l.T(4 * kMiB), 0.15 * 4 * kMiB);
  CHECK(one == Approx(900e3));
  CHECK(mpi_blocking_ns(m, two, b) == Approx(one + l.L_ns));  // each round: + L
  // np 4, 4 MiB: a chain of three whole messages, one after another: the first from the root's
  // buffer (a lone flow), the two forwarded ones from a buffer in cache (the ping-pong's T).
  CHECK(mpi_blocking_ns(m, four, b) == Approx(one + l.L_ns + 2 * (l.T(4 * kMiB) + l.L_ns)));
  Machine warm = m;  // a ping-pong faster than the train: forwarding is faster than the first hop,
  warm.level[0].sweep[1].t_ns = 400e3;  // which takes the train's rate for one flow, not its gap g(m)
  const double first = 0.15 * 4 * kMiB;
  CHECK(first < warm.level[0].g(4 * kMiB));
  CHECK(mpi_blocking_ns(warm, four, b) == Approx(first + 2 * 400e3 + 3 * l.L_ns));
  CHECK(mpi_blocking_ns(warm, two, b) == Approx(first + l.L_ns));  // np 2: one round, from the root's buffer
  // The train measured with two flows at once (node_out per byte of the node's aggregate):
  // one flow alone at half that aggregate's rate, i.e. twice node_out per byte.
  warm.level[0].node_out_ns_per_byte = 0.1;
  warm.level[0].flows = 2;
  CHECK(mpi_blocking_ns(warm, two, b) == Approx(0.2 * 4 * kMiB + l.L_ns));
  // A transport that buffers the whole message (TCP): the link's time, the train's gap g(m).
  warm.level[0].buffered_send_bytes = 8 * kMiB;
  CHECK(mpi_blocking_ns(warm, two, b) == Approx(warm.level[0].g(4 * kMiB) + l.L_ns));
  // np 4, 256 KiB: linear, the root's three messages at once from its buffer in cache, each
  // copied by its receiver in the ping-pong's T(m), one at a time on the CPU the waiting root
  // leaves free (2 CPUs): 3 T, not the node's ring rate (measured after emptying the caches).
  b.bytes = 256 * 1024;
  const double lin = 3 * l.T(b.bytes) + l.L_ns;
  CHECK(mpi_blocking_ns(m, four, b) == Approx(lin));
  // With a CPU for every rank the three copies run at once: one T (the train's gap at least).
  const Topology roomy = Topology::block(4, 4, 4, 1);
  CHECK(mpi_blocking_ns(m, roomy, b) == Approx(std::max(l.g(b.bytes), l.T(b.bytes)) + l.L_ns));
  // np 3, 256 KiB (linear, two messages): one after the other on 2 CPUs.
  const Topology three_b = Topology::block(3, 3, 2, 1);
  CHECK(mpi_blocking_ns(m, three_b, b) == Approx(2 * l.T(b.bytes) + l.L_ns));
  // Alltoall at np 4: all pairs at once at the exchange rate of four ranks; pairwise: three
  // rounds of a four-rank ring (at most one copy per CPU), then the own block.
  CHECK(mpi_blocking_ns(m, four, alltoall(4 * kMiB)) == Approx(12 * 4 * kMiB * l.node_exchange(4 * kMiB, 4) + l.L_ns));
  const double q = 768 * 1024;
  const double round = std::max(l.g(q), 4 * q * l.node_ring(q, 2)) + l.L_ns;
  CHECK(mpi_blocking_ns(m, four, alltoall(q)) == Approx(3 * round + q * m.memcpy_cost.ns_per_byte));
  // Alltoallv (the mean block per peer): linear at np 4 whatever the size, pairwise at np 3.
  Coll v = alltoall(q);
  v.kind = Kind::Alltoallv;
  CHECK(mpi_blocking_ns(m, four, v) == Approx(12 * q * l.node_exchange(q, 4) + l.L_ns));
  const Topology three = Topology::block(3, 3, 2, 1);
  CHECK(mpi_blocking_ns(m, three, v) ==
        Approx(2 * (std::max(l.g(q), 3 * q * l.node_ring(q, 2)) + l.L_ns) + q * m.memcpy_cost.ns_per_byte));
  // Where calibrate measured MPI_Alltoall itself, the linear Alltoall takes that rate (interpolated
  // in log(size) at the most ranks measured), not the exchange pattern's; Alltoallv, pairwise
  // rounds and a sweep without it are unchanged.
  Machine own = m;
  const double rate[] = {0.5, 0.3, 0.6, 0.2};
  for (std::size_t i = 0; i < 4; ++i) own.level[0].node_sweep[i].mpi_alltoall_ns_per_byte = rate[i];
  CHECK(own.level[0].mpi_alltoall_measured());
  CHECK(mpi_blocking_ns(own, four, alltoall(4 * kMiB)) == Approx(12 * 4 * kMiB * 0.2 + l.L_ns));
  CHECK(mpi_blocking_ns(own, four, alltoall(65536)) == Approx(12 * 65536 * 0.6 + l.L_ns));
  CHECK(mpi_blocking_ns(own, four, alltoall(512 * 1024 - 1)) == Approx(12 * (512 * 1024 - 1) * 0.4 + l.L_ns).epsilon(1e-3));
  CHECK(mpi_blocking_ns(own, two, alltoall(65536)) != Approx(mpi_blocking_ns(m, two, alltoall(65536))));
  CHECK(mpi_blocking_ns(own, four, alltoall(q)) == Approx(mpi_blocking_ns(m, four, alltoall(q))));
  CHECK(mpi_blocking_ns(own, four, v) == Approx(mpi_blocking_ns(m, four, v)));
  own.level[0].node_sweep[3].mpi_alltoall_ns_per_byte = 0;  // one point missing: the pattern's rate
  CHECK_FALSE(own.level[0].mpi_alltoall_measured());
  CHECK(mpi_blocking_ns(own, four, alltoall(4 * kMiB)) == Approx(mpi_blocking_ns(m, four, alltoall(4 * kMiB))));
  // Another library on the same machine: the generic bound (pipelined 128 KiB segments).
  Machine other = m;
  other.mpi_library = "Test MPI 1.0";
  b.bytes = 4 * kMiB;
  CHECK(mpi_blocking_ns(other, two, b) != Approx(one));
}

TEST_CASE("model: Eq. 1 and Eq. 3 — computing first hides the transfer, reading at once hides nothing") {
  const Machine m = two_nodes();
  const Coll c = alltoall(kMiB);
  const Execution x;
  const double blocking = mpi_blocking_ns(m, kTwoNodes, c);
  // Computes 3x the transfer before touching the data.
  const Overlap compute = overlap(m, kTwoNodes, c, x, {3 * blocking, 0.1 * kMs});
  CHECK(compute.ideal_ns == Approx(blocking));                           // Eq. 1: min(Tcomm, X)
  CHECK(compute.hidden_ns == Approx(blocking - compute.in_call_ns));     // Eq. 3
  CHECK(compute.in_call_ns > 0);
  CHECK(compute.in_call_ns < 0.2 * blocking);
  CHECK(compute.saved_ns > 0.5 * blocking);
  CHECK(compute.cost_ns == Approx(compute.hidden_ns - compute.saved_ns));
  // Reads at once (no computation before, a fast read): nothing to hide, tnbc only costs.
  const Overlap at_once = overlap(m, kTwoNodes, c, x, {0, 0.05 * kMs});
  CHECK(at_once.hidden_ns <= 0.05 * kMs);
  CHECK(at_once.saved_ns <= 0);
  CHECK(at_once.cost_ns >= 0);
  // The trace's measured blocking time replaces the model's (the model's own stays for the report).
  const Overlap measured = overlap(m, kTwoNodes, c, x, {3 * blocking, 0.1 * kMs}, 2 * blocking);
  CHECK(measured.blocking_ns == Approx(2 * blocking));
  CHECK(measured.model_blocking_ns == Approx(blocking));
  CHECK(measured.scale == Approx(2));  // the model's error on the transfer cancels out of the comparison
}

TEST_CASE("model: a reader pays its first reads of the published pages on its own CPU, after the transfer too") {
  // GuardCost::first_read (calibrate since session 57): priced with the publication before, on
  // the progress thread, where a computation longer than the transfer hid it; a reader reading
  // 4 MiB after the transfer paid ~5 ms of it (docs/benchmarks.md, "Session 57").
  const Machine without = two_nodes();
  Machine with = two_nodes();
  const double per_byte = 1.2;  // ns per byte published
  with.guard[0].first_read = {0, per_byte};
  const Coll c = alltoall(kMiB);
  const Execution x;
  const double blocking = mpi_blocking_ns(without, kTwoNodes, c);
  const double received = kMiB * (kTwoNodes.n() - 1);
  // Computes 3x the transfer first: everything is in when it reads, and its reads still pay.
  const Program computes{3 * blocking, 1 * kMs};
  CHECK(overlap(with, kTwoNodes, c, x, computes).early_total_ns ==
        Approx(overlap(without, kTwoNodes, c, x, computes).early_total_ns + per_byte * received));
  // Reads at once: it reads the pieces as they are published; at least the last share's reads
  // come after the transfer, at most all of them.
  const Program at_once{0, 1 * kMs};
  const double more = overlap(with, kTwoNodes, c, x, at_once).early_total_ns - overlap(without, kTwoNodes, c, x, at_once).early_total_ns;
  CHECK(more > 0);
  CHECK(more <= per_byte * received * 1.0001);
  // The per-call guard choice weighs them too (guard_cycle_ns).
  CHECK(guard_cycle_ns(with.guard[0], kMiB) == Approx(guard_cycle_ns(without.guard[0], kMiB) + per_byte * kMiB));
}

TEST_CASE("model: without a spare CPU the progress thread's work comes out of the computation") {
  const Machine m = test::machine(125, 50, 2, 10, 300);
  const Coll c = alltoall(kMiB);
  const Program p{60 * kMs, 1 * kMs};  // computes long enough for the progress thread's CPU to count
  const Overlap spare = overlap(m, Topology::block(2, 2, 4, 2), c, {}, p);    // 2 CPUs per rank
  const Overlap shared = overlap(m, Topology::block(2, 2, 2, 1), c, {}, p);   // 1 CPU per rank
  CHECK(Topology::block(2, 2, 4, 2).spare_cpu() > Topology::block(2, 2, 2, 1).spare_cpu());
  CHECK(shared.saved_ns < spare.saved_ns);
}

TEST_CASE("model: a program that computes after the call meets the progress thread's first round late where they share a CPU") {
  // Machine::first_round_ns: the bodies start that much later (at most T_CURC: a reader's fault
  // lets the progress thread in at once); with a CPU of its own nothing changes.
  Machine m = two_nodes();
  REQUIRE(m.first_round_ns < 0);
  Machine late = m;
  late.first_round_ns = 200e3;
  const Coll c = alltoall(kMiB);
  const Topology shared = Topology::block(2, 1, 1, 1), spare = Topology::block(2, 1, 2, 2);
  REQUIRE(shared.spare_cpu() == 0);
  REQUIRE(spare.spare_cpu() == 1);
  const Program computes{0.5 * kMs, 0.1 * kMs};  // shorter than the transfer: the reader waits for it
  CHECK(overlap(late, shared, c, {}, computes).early_total_ns - overlap(m, shared, c, {}, computes).early_total_ns ==
        Approx(200e3).epsilon(0.01));  // (the progress CPU stolen from the computation shifts a little)
  const Program brief{0.05 * kMs, 0.1 * kMs};  // the reader's first fault comes after 50 us
  CHECK(overlap(late, shared, c, {}, brief).early_total_ns - overlap(m, shared, c, {}, brief).early_total_ns ==
        Approx(50e3).epsilon(0.01));
  const Program at_once{0, 0.1 * kMs};
  CHECK(overlap(late, shared, c, {}, at_once).early_total_ns == Approx(overlap(m, shared, c, {}, at_once).early_total_ns));
  CHECK(overlap(late, spare, c, {}, computes).early_total_ns == Approx(overlap(m, spare, c, {}, computes).early_total_ns));
}

TEST_CASE("decision: compute-first sites return early, read-at-once sites do not, with the margin") {
  const Machine m = two_nodes();
  const trace::Judge j = judge(m, kTwoNodes);
  const double blocking = mpi_blocking_ns(m, kTwoNodes, alltoall(kMiB));
  // IS-like: 2 MiB received per call over 2 ranks (1 MiB per peer, own block included).
  const trace::Decision compute = trace::decide(site(2 * kMiB, blocking, 3 * blocking, 0.5 * kMs), Kind::Alltoall, 2, j);
  CHECK(compute.by_model);
  CHECK(compute.basis == trace::Basis::OverlapPays);
  CHECK_FALSE(compute.blocking());
  REQUIRE(compute.saved_ns);
  CHECK(*compute.saved_ns > compute.margin_ns);
  CHECK(compute.margin_ns == Approx(j.margin_of_cost * std::max(0.0, compute.cost_ns) + j.margin_of_tcomm * blocking));
  // tnbc merge's line says the early return's time in the call (Tinit) the model priced.
  REQUIRE(compute.in_call_ns);
  char tinit[48];
  std::snprintf(tinit, sizeof tinit, ", in the call %.2f ms, ", *compute.in_call_ns / 1e6);
  CHECK(trace::describe(compute).find(tinit) != std::string::npos);
  CHECK(j.margin_of_cost == Approx(0.15));  // the settings' defaults
  CHECK(j.margin_of_tcomm == Approx(0.30));
  CHECK(j.margin_of_tcomm_shared == Approx(1.0));
  CHECK(j.margin_of_first_read == Approx(0.45));
  // Ranks sharing a node through shared memory: the share measured there (100 %: no saving can
  // exceed it).
  const trace::Judge shared = judge(through_shared_memory(m), Topology::block(2, 2, 2, 1));
  const trace::Decision there = trace::decide(site(2 * kMiB, blocking, 3 * blocking, 0.5 * kMs), Kind::Alltoall, 2, shared);
  CHECK(there.margin_ns >= shared.margin_of_tcomm_shared * blocking);
  CHECK(there.blocking());
  const trace::Decision at_once = trace::decide(site(2 * kMiB, blocking, 0.02 * kMs, 0.05 * kMs), Kind::Alltoall, 2, j);
  CHECK(at_once.basis == trace::Basis::NoOverlapToGain);
  CHECK(at_once.blocking());
  REQUIRE(at_once.saved_ns);
  CHECK(*at_once.saved_ns <= at_once.margin_ns);
  // A gain inside the margin does not return early: a site whose computation hides just a
  // little more than tnbc costs completes in the call.
  double lo = 0, hi = blocking;  // T_CURC where saved crosses the margin
  for (int i = 0; i < 40; ++i) {
    const double mid = (lo + hi) / 2;
    (trace::decide(site(2 * kMiB, blocking, mid, 0), Kind::Alltoall, 2, j).blocking() ? lo : hi) = mid;
  }
  const trace::Decision edge = trace::decide(site(2 * kMiB, blocking, lo, 0), Kind::Alltoall, 2, j);
  REQUIRE(edge.saved_ns);
  CHECK(*edge.saved_ns > 0);  // it would gain something: the margin holds it back
  CHECK(*edge.saved_ns <= edge.margin_ns);
  // No estimate: returns early (nothing shows it cannot pay).
  trace::SiteEstimate none = site(2 * kMiB, blocking, 0, 0);
  none.overlap_ns.reset();
  CHECK(trace::decide(none, Kind::Alltoall, 2, j).basis == trace::Basis::NoEstimate);
}

TEST_CASE("decision: the same site returns early on a slow link, not on a fast one") {
  // 5 ms of computation before the first touch, 1 MiB per peer, measured at each machine's speed.
  auto decided = [](const Machine& m) {
    const double blocking = mpi_blocking_ns(m, kTwoNodes, alltoall(kMiB));
    return trace::decide(site(2 * kMiB, blocking, 5 * kMs, 0.1 * kMs), Kind::Alltoall, 2, judge(m, kTwoNodes));
  };
  Machine fast = two_nodes();
  fast.level[1] = test::level(2, 20000, 1, 50);  // 20 GB/s: the transfer takes ~50 us, less than tnbc's work
  CHECK(decided(fast).blocking());
  CHECK_FALSE(decided(two_nodes()).blocking());  // 1 Gbit/s: ~8 ms, 5 ms of it hidden
  // The gain is bounded by the computation (Eq. 3): reading at once gains nothing even on a
  // 100 Mbit/s link.
  Machine slow = two_nodes();
  slow.level[1] = test::level(50, 12.5, 10, 300);
  const double blocking = mpi_blocking_ns(slow, kTwoNodes, alltoall(kMiB));
  CHECK(trace::decide(site(2 * kMiB, blocking, 0.05 * kMs, 0.05 * kMs), Kind::Alltoall, 2, judge(slow, kTwoNodes)).blocking());
}

namespace {

using test::spinning_nodes;
const Topology kSpinning = Topology::block(4, 2, 1, 1);  // 2 nodes, 2 ranks on each one CPU

}  // namespace

TEST_CASE("model: ranks that spin on a node's one CPU hand shared memory off once per slices") {
  const Machine m = spinning_nodes(true);
  const BusyPoll b = busy_poll(m);
  REQUIRE(b.spins());
  CHECK(b.slice_ns == Approx(2e6));
  CHECK(b.fragment_bytes == Approx(2 * 2e6 / ((348e6 - 92e6) / (4194304.0 - 1048576.0))));
  CHECK(spins_on(m, kSpinning));
  CHECK_FALSE(spins_on(m, Topology::block(4, 1, 1, 1)));     // one rank per node: nobody waits for a slice
  CHECK_FALSE(spins_on(m, Topology::block(4, 2, 2, 1)));     // as many CPUs as ranks
  CHECK_FALSE(busy_poll(spinning_nodes(false)).spins());    // microseconds: MPI yields
  Machine enough = m;
  enough.cpus_per_node = 2;
  CHECK_FALSE(busy_poll(enough).spins());  // the calibration had a CPU per rank: its latency is something else
  // One fragment per two slices (sender, receiver), every pair of the node at once.
  CHECK(handoff_ns(b, kMiB, 2, 1) == Approx(std::ceil(kMiB / b.fragment_bytes) * 2 * 2e6));
  CHECK(handoff_ns(b, kMiB, 4, 1) == Approx(2 * handoff_ns(b, kMiB, 2, 1)));
  CHECK(handoff_ns(BusyPoll{}, kMiB, 2, 1) == 0);

  // MPI's own Alltoall of 1 MiB per peer: the hand-offs inside the node (~90 ms) outweigh the
  // link (4 MiB leave each node at 125 MB/s: ~34 ms) ...
  const double blocking = mpi_blocking_ns(m, kSpinning, alltoall(kMiB));
  CHECK(blocking >= handoff_ns(b, kMiB, 2, 1));
  // ... while tnbc's yielding threads move them at the memory's rate: its schedule is the link's.
  const Timeline tl = tnbc_timeline(m, kSpinning, alltoall(kMiB), Execution{}, true);
  CHECK(tl.total_ns < 0.6 * blocking);
  CHECK(tl.total_ns > 4 * kMiB * m.at(LevelKind::InterNode).node_out());
  // Without the evidence both take the node's measured rate.
  const Machine plain = spinning_nodes(false);
  CHECK(tnbc_timeline(plain, kSpinning, alltoall(kMiB), Execution{}, true).total_ns >=
        0.9 * mpi_blocking_ns(plain, kSpinning, alltoall(kMiB)));
  // yielding() leaves a machine without the evidence as it is, and takes the slices out of one with it.
  CHECK(yielding(plain).at(LevelKind::IntraNode).L_ns == plain.at(LevelKind::IntraNode).L_ns);
  CHECK(yielding(m).at(LevelKind::IntraNode).L_ns ==
        Approx(m.at(LevelKind::IntraNode).os_ns + m.at(LevelKind::IntraNode).or_ns));
  CHECK(yielding(m).at(LevelKind::IntraNode).node_sweep.empty());
}

TEST_CASE("model: where ranks spin, an early return's call waits a scheduler slice once, its transfer does not") {
  // Two machines alike but for the slice their calibrations measured (2 and 3 ms): tnbc's threads
  // yield on both, so all but the call's wait for the CPU is the same.
  const Machine m = spinning_nodes(true);
  Machine longer = m;
  longer.at(LevelKind::IntraNode).L_ns = 3e6;
  longer.at(LevelKind::IntraNode).sweep[0].t_ns = 3e6;
  REQUIRE(busy_poll(longer).slice_ns == Approx(3e6));
  for (const Coll& c : {alltoall(kMiB), bcast(4 * kMiB)}) {
    const Timeline a = tnbc_timeline(m, kSpinning, c, Execution{}, true);
    const Timeline b = tnbc_timeline(longer, kSpinning, c, Execution{}, true);
    CHECK(b.in_call_ns - a.in_call_ns == Approx(1e6));
    CHECK(a.total_ns >= a.in_call_ns);
    CHECK(a.first_ns >= a.in_call_ns);
    // Completed in the call: no early return's wait (the library's ranks spin there as before).
    CHECK(tnbc_timeline(longer, kSpinning, c, Execution{}, false).total_ns ==
          Approx(tnbc_timeline(m, kSpinning, c, Execution{}, false).total_ns));
  }
  // Where calibrate's own calls met the slice, the rest it measured holds it already: once.
  Machine met = m;
  met.in_call_rest = Line(2.5e6, 0);
  Machine met_longer = longer;
  met_longer.in_call_rest = Line(2.5e6, 0);
  const Timeline rest = tnbc_timeline(met, kSpinning, alltoall(kMiB), Execution{}, true);
  CHECK(rest.in_call_rest_ns == Approx(2.5e6));
  CHECK(tnbc_timeline(met_longer, kSpinning, alltoall(kMiB), Execution{}, true).in_call_ns - rest.in_call_ns ==
        Approx(0.5e6));  // a 3 ms slice: the 0.5 ms the rest does not hold
  // Ranks that do not spin (one per CPU): no slice.
  const Topology roomy = Topology::block(4, 2, 2, 1);
  CHECK(tnbc_timeline(longer, roomy, alltoall(kMiB), Execution{}, true).in_call_ns ==
        Approx(tnbc_timeline(m, roomy, alltoall(kMiB), Execution{}, true).in_call_ns));
}

TEST_CASE("model: where ranks spin, calibrate's rest holds the slice and the model adds only what it does not hold") {
  // calibrate's rest: the call it measured less the model's call without rests and without the
  // slice (exchange_in_call_ns, bcast_*_in_call_ns). A call measured 3 ms over that is priced as
  // measured (the slice inside the rest, not added again); one 0.5 ms over, at the slice (2 ms),
  // the least the model prices an early return's call there. The broadcast's receiver alike.
  const Machine m = spinning_nodes(true);
  const double slice = busy_poll(m).slice_ns;
  const Coll a = alltoall(kMiB);
  const double alone = exchange_in_call_ns(m, kSpinning, a, Execution{});
  CHECK(tnbc_timeline(m, kSpinning, a, Execution{}, true).in_call_ns == Approx(alone + slice));
  for (const double over : {3e6, 0.5e6}) {
    Machine rested = m;
    rested.in_call_rest = Line(over, 0);
    rested.in_call_rest_bcast = Line(over, 0);
    CHECK(tnbc_timeline(rested, kSpinning, a, Execution{}, true).in_call_ns == Approx(alone + std::max(over, slice)));
    const Coll b = bcast(256 * 1024);
    CHECK(bcast_receiver_in_call_ns(rested, kSpinning, b, Execution{}) ==
          Approx(bcast_receiver_in_call_ns(m, kSpinning, b, Execution{}) + over));
  }
  // Without spinning ranks there is no slice: the exchange's call alone is the timeline's.
  const Topology roomy = Topology::block(4, 2, 2, 1);
  CHECK(exchange_in_call_ns(m, roomy, a, Execution{}) == Approx(tnbc_timeline(m, roomy, a, Execution{}, true).in_call_ns));
}

TEST_CASE("model: where ranks spin, a measured Tcomm does not scale tnbc's transfer, nor the slice shrink it") {
  // The library's call there is priced by scheduler slices tnbc's yielding threads do not wait
  // for; its measured time (a loop's calls 0.55x the model, the first call 1.00x: bcast-proxy A,
  // np 4 on 2 one-CPU nodes, session 66) says nothing about tnbc's transfer. Measured at half or
  // twice the model's, the early return's end and tnbc's schedule in the call stay where they are;
  // a slice 1 ms longer (3 ms, not 2), which the transfer runs beside, leaves the end where it was.
  const Machine m = spinning_nodes(true);
  Machine longer = m;
  longer.at(LevelKind::IntraNode).L_ns = 3e6;
  longer.at(LevelKind::IntraNode).sweep[0].t_ns = 3e6;
  const Coll c = alltoall(kMiB);
  auto priced = [&](const Machine& x, double times) {
    return overlap(x, kSpinning, c, Execution{}, Program{0, 0}, times * mpi_blocking_ns(x, kSpinning, c));
  };
  const Overlap a = priced(m, 2), b = priced(longer, 2), half = priced(m, 0.5);
  CHECK(a.scale == 1);
  CHECK(half.scale == 1);
  CHECK(half.blocking_ns == Approx(0.25 * a.blocking_ns));  // the measured Tcomm is the site's, as given
  CHECK(half.early_total_ns == Approx(a.early_total_ns));
  REQUIRE(b.in_call_ns - a.in_call_ns == Approx(1e6));
  REQUIRE(tnbc_timeline(m, kSpinning, c, Execution{}, true).total_ns > a.in_call_ns + 3e6);
  CHECK(b.early_total_ns - a.early_total_ns == Approx(0).margin(0.05e6));
  // The decision's tnbc schedule in the call is not scaled either: at half the model's Tcomm it is
  // the model's own, no shorter than the bytes' time on the link between the nodes.
  const double model = mpi_blocking_ns(m, kSpinning, c);
  const trace::Decision d =
      trace::decide(site(4 * kMiB, 0.5 * model, 5 * kMs, 5 * kMs), Kind::Alltoall, 4, judge(m, kSpinning));
  REQUIRE(d.own_call_ns);
  CHECK(*d.own_call_ns == Approx(own_call_ns(m, kSpinning, c, judge(m, kSpinning).exec)));
  CHECK(*d.own_call_ns > 2 * kMiB * m.at(LevelKind::InterNode).G_ns_per_byte);
}

TEST_CASE("model: where ranks outnumber CPUs and do not spin, an early return's call works on a share of a CPU") {
  const Machine m = spinning_nodes(false);  // the library's ranks do not spin
  const Topology crowded = Topology::block(4, 4, 2, 1), roomy = Topology::block(4, 4, 4, 1);  // one node, 2 or 4 CPUs
  REQUIRE_FALSE(spins_on(m, crowded));
  REQUIRE(crowded.cpu_stretch() == Approx(2));
  Machine rest = m;
  rest.in_call_rest = Line(0.3e6, 0);
  rest.in_call_rest_bcast = Line(0.2e6, 0);
  rest.in_call_rest_bcast_root = Line(0.1e6, 0);
  // The rests are not stretched: each adds itself once, to the root's call and the receiver's.
  const Coll b4 = bcast(4 * kMiB);
  CHECK(bcast_receiver_in_call_ns(rest, crowded, b4, Execution{}) - bcast_receiver_in_call_ns(m, crowded, b4, Execution{}) ==
        Approx(0.2e6));
  CHECK(bcast_root_in_call_ns(rest, crowded, b4, Execution{}) - bcast_root_in_call_ns(m, crowded, b4, Execution{}) ==
        Approx(0.1e6));
  // Their work twice as long (buffers aligned to pages: no wait for edge pieces).
  Execution aligned;
  aligned.unaligned = false;
  CHECK(bcast_receiver_in_call_ns(rest, crowded, b4, aligned) ==
        Approx(2 * bcast_receiver_in_call_ns(rest, roomy, b4, aligned) - 0.2e6));
  CHECK(bcast_root_in_call_ns(rest, crowded, b4, aligned) == Approx(2 * bcast_root_in_call_ns(rest, roomy, b4, aligned) - 0.1e6));
  for (const Machine& x : {m, rest})
    for (const Coll& c : {alltoall(kMiB), bcast(4 * kMiB)}) {
      const Timeline a = tnbc_timeline(x, roomy, c, Execution{}, true);
      const Timeline b = tnbc_timeline(x, crowded, c, Execution{}, true);
      REQUIRE(a.in_call_work_ns > a.in_call_rest_ns);
      // The call's work twice as long; not the rest calibrate measured with every rank in its call.
      CHECK(b.in_call_rest_ns == Approx(a.in_call_rest_ns));
      if (c.kind != Kind::Bcast) CHECK(b.in_call_work_ns == Approx(2 * a.in_call_work_ns - a.in_call_rest_ns));
      CHECK(b.in_call_ns > a.in_call_ns);
      // The transfer runs meanwhile (its copies already share the CPUs): it ends no earlier than the call.
      CHECK(b.total_ns >= b.in_call_ns);
      CHECK(b.first_ns >= b.in_call_ns);
      // The broadcast's root and receiver alone (what calibrate subtracts from its calls) alike.
      if (c.kind == Kind::Bcast)
        CHECK(b.in_call_ns == Approx(std::max(bcast_root_in_call_ns(x, crowded, c, Execution{}),
                                              bcast_receiver_in_call_ns(x, crowded, c, Execution{}))));
      // Completed in the call: no early return's call to stretch.
      CHECK(tnbc_timeline(x, crowded, c, Execution{}, false).in_call_ns ==
            Approx(tnbc_timeline(x, roomy, c, Execution{}, false).in_call_ns));
    }
}

TEST_CASE("model: on a crowded node, the call's share of a CPU does not shrink the transfer a measured Tcomm scales") {
  // A measured blocking time twice the model's scales the transfer after the call; 1 ms more of
  // work in the call (its hand-over) costs 2 ms there, 1 ms of which the transfer ran beside: the
  // early return ends 1 ms later, not earlier.
  const Machine m = spinning_nodes(false);
  const Topology crowded = Topology::block(4, 4, 2, 1);
  Machine heavier = m;
  heavier.handover_ns = std::max(0.0, m.handover_ns) + 1e6;
  heavier.handover_warm_ns = std::max(0.0, m.handover_warm_ns) + 1e6;
  const Coll c = alltoall(kMiB);
  const double twice = 2 * mpi_blocking_ns(m, crowded, c);
  const Overlap a = overlap(m, crowded, c, Execution{}, Program{0, 0}, twice);
  const Overlap b = overlap(heavier, crowded, c, Execution{}, Program{0, 0}, twice);
  REQUIRE(b.in_call_ns - a.in_call_ns == Approx(2e6));
  CHECK(b.early_total_ns - a.early_total_ns == Approx(1e6).margin(0.05e6));
}

TEST_CASE("decision: ranks that spin make an early return pay where the same node rates without that evidence do not") {
  // ft-proxy W's transposes: 4 MiB received per call, measured 92 ms blocking, the program reads
  // at once (T_CURC 0.18 ms, T_CRC 0.55 ms).
  auto decided = [](const Machine& m) {
    return trace::decide(site(4 * kMiB, 92 * kMs, 0.18 * kMs, 0.55 * kMs), Kind::Alltoall, 4, judge(m, kSpinning));
  };
  const trace::Decision spin = decided(spinning_nodes(true));
  REQUIRE(spin.saved_ns);
  // the early return pays against the library's call by its busy-poll margin ...
  CHECK(*spin.saved_ns > 0.15 * std::max(0.0, spin.cost_ns) + 0.45 * 92 * kMs);
  // ... and tnbc's schedule completed in the call more (the program reads at once: the early
  // return's wake-ups and stolen CPU buy nothing), so the site completes it in the call. The
  // margin is then a share of that schedule's time (TNBC_EARLY_RETURN_MARGIN_OWN_PCT).
  CHECK(spin.basis == trace::Basis::OwnCallFaster);
  CHECK(spin.blocking());
  CHECK_FALSE(spin.library_call());
  REQUIRE(spin.own_call_ns);
  REQUIRE(spin.beyond_own_ns);
  CHECK(*spin.own_call_ns <= 0.55 * 92 * kMs);
  CHECK(spin.margin_ns == Approx(0.15 * std::max(0.0, spin.cost_ns) + 0.05 * *spin.own_call_ns));
  CHECK(*spin.beyond_own_ns <= spin.margin_ns);
  const trace::Decision yields = decided(spinning_nodes(false));
  CHECK(yields.basis == trace::Basis::NoOverlapToGain);
  CHECK(yields.library_call());
  CHECK(yields.margin_ns >= 92 * kMs);  // the shared node's margin
  // One rank per CPU: nothing spins, the shared node's margin again.
  CHECK(trace::decide(site(4 * kMiB, 92 * kMs, 0.18 * kMs, 0.55 * kMs), Kind::Alltoall, 4,
                      judge(spinning_nodes(true), Topology::block(4, 2, 2, 1)))
            .blocking());
}

TEST_CASE("decision: a site held back by the margin says at which margin of Tcomm it would return early") {
  const Machine m = two_nodes();
  const trace::Judge j = judge(m, kTwoNodes);
  const double blocking = mpi_blocking_ns(m, kTwoNodes, alltoall(kMiB));
  // A site that computes a little first: a predicted saving above the cost's share of the margin
  // (15 %) but below the whole margin (+ 30 % of Tcomm).
  std::optional<trace::SiteEstimate> small;
  std::optional<trace::Decision> held;
  for (double f : {0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3}) {
    const trace::SiteEstimate e = site(2 * kMiB, blocking, f * blocking, 0.5 * kMs);
    const trace::Decision d = trace::decide(e, Kind::Alltoall, 2, j);
    if (d.basis == trace::Basis::NoOverlapToGain && d.saved_ns && *d.saved_ns > j.margin_of_cost * d.cost_ns) {
      small = e;
      held = d;
      break;
    }
  }
  REQUIRE(held);
  REQUIRE(held->early_at_pct);
  const int pct = *held->early_at_pct;
  CHECK(pct >= 0);
  CHECK(pct < 30);
  CHECK(held->margin_setting == "TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT");
  CHECK(trace::describe(*held).find("it would return early at TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT=" + std::to_string(pct)) !=
        std::string::npos);
  // Judged again with that margin it returns early, one percent more and it does not.
  Settings at;
  at.early_return_margin_tcomm_pct = pct;
  const trace::Decision there = trace::decide(*small, Kind::Alltoall, 2, judge(m, kTwoNodes, at));
  CHECK(there.basis == trace::Basis::OverlapPays);
  CHECK_FALSE(there.early_at_pct);  // returns early already: nothing to say
  at.early_return_margin_tcomm_pct = pct + 1;
  CHECK(trace::decide(*small, Kind::Alltoall, 2, judge(m, kTwoNodes, at)).basis != trace::Basis::OverlapPays);
  // Reading at once: the saving is below the cost's share alone, no margin of Tcomm would do.
  const trace::Decision at_once = trace::decide(site(2 * kMiB, blocking, 0.02 * kMs, 0.05 * kMs), Kind::Alltoall, 2, j);
  REQUIRE(at_once.basis == trace::Basis::NoOverlapToGain);
  CHECK_FALSE(at_once.early_at_pct);
  CHECK(trace::describe(at_once).find("it would return early") == std::string::npos);
  // Ranks sharing a node through shared memory: the setting named is that placement's.
  const Topology shared = Topology::block(2, 2, 2, 1);
  const Machine memory = through_shared_memory(m);
  const trace::SiteEstimate computes = site(2 * kMiB, blocking, 3 * blocking, 0.5 * kMs);
  const trace::Decision crowded = trace::decide(computes, Kind::Alltoall, 2, judge(memory, shared));
  REQUIRE(crowded.blocking());
  REQUIRE(crowded.early_at_pct);  // computing three transfers long: it would pay below 100 %
  CHECK(*crowded.early_at_pct < 100);
  CHECK(crowded.margin_setting == "TNBC_EARLY_RETURN_MARGIN_SHARED_NODE_PCT");
  // Where the node's share of Tcomm is weighed (a transfer partly wire time: this machine's node
  // level, O_s + O_r per byte 38 % of G), the setting named still takes it at that value, and
  // one percent more does not.
  Settings low;
  low.early_return_margin_shared_node_pct = 100;
  low.early_return_margin_tcomm_pct = 90;  // the site saves ~88 % of Tcomm: held at 100 %
  const trace::Decision weighed = trace::decide(computes, Kind::Alltoall, 2, judge(m, shared, low));
  REQUIRE(weighed.early_at_pct);
  CHECK(weighed.margin_setting == "TNBC_EARLY_RETURN_MARGIN_SHARED_NODE_PCT");
  low.early_return_margin_shared_node_pct = *weighed.early_at_pct;
  CHECK(trace::decide(computes, Kind::Alltoall, 2, judge(m, shared, low)).basis == trace::Basis::OverlapPays);
  low.early_return_margin_shared_node_pct = *weighed.early_at_pct + 1;
  CHECK(trace::decide(computes, Kind::Alltoall, 2, judge(m, shared, low)).basis != trace::Basis::OverlapPays);
}

TEST_CASE("margin: ranks sharing a node weigh the shared node's share by the transfer's CPU work") {
  const Topology shared = Topology::block(2, 2, 2, 1);     // a CPU each
  const Topology crowded = Topology::block(4, 4, 2, 1);    // more ranks than CPUs
  const Topology one_each = Topology::block(2, 1, 1, 1);   // one rank per node
  // TCP over a loopback shaped to 1 Gbit/s, as calibrate measured it on this VM (2026-12-05):
  // G 8.07 ns/B, O_s 0.23, O_r 0.22: the CPU busy 5.6 % of the transfer.
  Machine wire = test::machine(125);
  Level& l = wire.at(LevelKind::IntraNode);
  l.G_ns_per_byte = 8.07;
  l.Os_ns_per_byte = 0.23;
  l.Or_ns_per_byte = 0.22;
  CHECK(node_transfer_cpu_share(wire) == Approx(0.45 / 8.07));
  CHECK(margin_of_tcomm(wire, shared, 0.3, 0.45, 1.0) == Approx(0.3 + (0.45 / 8.07) * 0.7));
  CHECK(margin_of_tcomm(wire, crowded, 0.3, 0.45, 1.0) == Approx(1.0));  // the CPUs crowded: whole
  CHECK(margin_of_tcomm(wire, one_each, 0.3, 0.45, 1.0) == Approx(0.3));
  // Shared memory: the receiver copies every byte (O_r = G): the shared node's share whole.
  const Machine memory = through_shared_memory(wire);
  CHECK(node_transfer_cpu_share(memory) == Approx(1.0));
  CHECK(margin_of_tcomm(memory, shared, 0.3, 0.45, 1.0) == Approx(1.0));
  // No per-byte CPU in the file (or no level measured): taken as CPU work, the share whole.
  Machine unknown = wire;
  unknown.at(LevelKind::IntraNode).Os_ns_per_byte = unknown.at(LevelKind::IntraNode).Or_ns_per_byte = 0;
  CHECK(margin_of_tcomm(unknown, shared, 0.3, 0.45, 1.0) == Approx(1.0));
  unknown.at(LevelKind::IntraNode).measured = false;
  CHECK(node_transfer_cpu_share(unknown) == Approx(1.0));
}

TEST_CASE("decision: TNBC_EARLY_RETURN_COST_US set replaces the model by the fixed rule") {
  Settings s;
  s.early_return_cost_us = 1000;
  s.early_return_cost_us_per_mib = 0;
  const trace::Judge j = judge(two_nodes(), kTwoNodes, s);
  // min(Tcomm 10 ms, X 1.5 ms) - 1 ms = 0.5 ms > 0: pays, whatever the model says.
  const trace::Decision d = trace::decide(site(2 * kMiB, 10 * kMs, 1.5 * kMs, 0), Kind::Alltoall, 2, j);
  CHECK_FALSE(d.by_model);
  CHECK(d.basis == trace::Basis::OverlapPays);
  CHECK(*d.saved_ns == Approx(0.5 * kMs));
  // The description of a fixed-rule decision names no model figures.
  CHECK(trace::describe(d).find("model") == std::string::npos);
}

TEST_CASE("decision: node priorities' first-read margin is a setting of its own, not the early return's") {
  Settings s;
  s.early_return_margin_tcomm_pct = 5;
  s.node_priorities_margin_pct = 60;
  const trace::Judge j = judge(two_nodes(), kTwoNodes, s);
  CHECK(j.margin_of_tcomm == Approx(0.05));
  CHECK(j.margin_of_first_read == Approx(0.60));
  // The site's margin takes the early return's share of Tcomm (5 %), not the first read's (60 %).
  const trace::Decision d = trace::decide(site(2 * kMiB, 10 * kMs, 30 * kMs, 0.5 * kMs), Kind::Alltoall, 2, j);
  REQUIRE(d.saved_ns);
  CHECK(d.margin_ns == Approx(j.margin_of_cost * std::max(0.0, d.cost_ns) + 0.05 * 10 * kMs));
}

TEST_CASE("decision: sites over part of the world are judged on that many ranks, placed like the world") {
  const Topology world = Topology::block(4, 2, 2, 1);  // 2 nodes, 2 ranks each
  const trace::Judge j = judge(two_nodes(), world);
  CHECK(j.topology(4).node == world.node);
  const Topology half = j.topology(2);
  CHECK(half.n() == 2);
  CHECK(half.max_per_node() == 2);
}

TEST_CASE("model: broadcast segments stay in 1..max and one is enough for a small message") {
  const Machine m = test::machine(125);
  const Topology four = Topology::block(4, 4, 4, 1);
  CHECK(bcast_segments(m, four, 3.0 * kPage, {}, 8, kPage) == 1);
  for (double bytes : {64.0 * 1024, 1.0 * kMiB, 16.0 * kMiB}) {
    const int s = bcast_segments(m, four, bytes, {}, 8, kPage);
    CHECK(s >= 1);
    CHECK(s <= 8);
  }
  CHECK(bcast_segments(m, four, 16.0 * kMiB, {}, 1, kPage) == 1);
  CHECK(bcast_segments(m, Topology::block(1, 1, 1, 1), 16.0 * kMiB, {}, 8, kPage) == 1);
}

TEST_CASE("model: a reader's wake-up per segment makes a broadcast take fewer segments") {
  Machine m = test::machine(125);
  const Topology four = Topology::block(4, 4, 4, 1);
  const int cheap = bcast_segments(m, four, 4.0 * kMiB, {}, 8, kPage);
  for (int b = 0; b < kGuardBackends; ++b) m.guard[b].fault_ns = 1e9;  // 1 s per wake-up: more than the transfer
  CHECK(bcast_segments(m, four, 4.0 * kMiB, {}, 8, kPage) == 1);
  CHECK(cheap > 1);  // with 30 us the segments still pipeline the 1 Gbit/s tree
}

TEST_CASE("policy: the model's global answers depend on the machine and the placement only") {
  Settings s;
  auto a = make_policy(s, kPage, nullptr);
  auto b = make_policy(s, kPage, nullptr);
  auto in = std::make_shared<Inputs>();
  in->machine = test::machine(125);
  in->world = Topology::block(4, 4, 2, 1);
  a->start(in, 0, true);
  b->start(in, 0, true);
  const Topology& w = in->world;
  for (Kind k : {Kind::Alltoall, Kind::Bcast, Kind::Allgather}) CHECK(a->threshold(k, w) == b->threshold(k, w));
  CHECK(a->bcast_segments(4 << 20, w) == b->bcast_segments(4 << 20, w));
  CHECK(a->pieces(Kind::Alltoall, w).scale_bytes == b->pieces(Kind::Alltoall, w).scale_bytes);
  CHECK(a->threshold(Kind::Alltoall, w) == threshold_bytes(in->machine, w, Kind::Alltoall, execution(s, 0), kPage));
  // The rank-local half: per peer for the exchange family, the whole message for Bcast (a
  // broadcast the route let through returns early on every rank, its root included).
  const std::size_t tb = a->threshold(Kind::Bcast, w), ta = a->threshold(Kind::Alltoall, w);
  if (tb != SIZE_MAX) {
    CHECK(a->early_return_pays(Kind::Bcast, tb, w));
    CHECK_FALSE(a->early_return_pays(Kind::Bcast, tb - 1, w));
  }
  if (ta != SIZE_MAX) {
    CHECK(a->early_return_pays(Kind::Alltoallv, 3 * ta, w));  // 3 peers
    CHECK_FALSE(a->early_return_pays(Kind::Alltoallv, 3 * ta - 3, w));
  }
  // TNBC_MIN_BYTES set overrides the model.
  s.min_bytes = 1 << 20;
  auto c = make_policy(s, kPage, nullptr);
  c->start(in, 0, true);
  CHECK(c->threshold(Kind::Alltoall, w) == std::size_t{1} << 20);
  CHECK(c->route(Kind::Alltoall, false, w, (1 << 20) - 1) == Reason::BelowThreshold);
}

TEST_CASE("model: the library's broadcast across nodes whose ranks spin pays each node's hand-offs in turn") {
  Machine m = spinning_nodes(true);
  m.mpi_library = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
  const BusyPoll b = busy_poll(m);
  Coll c;
  c.kind = Kind::Bcast;
  c.page = kPage;
  // From 1 MiB Open MPI's rules at np 4 run a chain 0 -> 1 -> 2 -> 3: one edge through shared
  // memory on each node, and their hand-offs add up (measured: 2.1-2.3x one node's).
  c.bytes = 4 * kMiB;
  CHECK(mpi_blocking_ns(m, kSpinning, c) >= 2 * handoff_ns(b, c.bytes, 2, 1));
  // Below it a linear broadcast: the root's node alone has an edge through shared memory.
  c.bytes = 512 * 1024;
  CHECK(mpi_blocking_ns(m, kSpinning, c) >= handoff_ns(b, c.bytes, 2, 1));
  CHECK(mpi_blocking_ns(m, kSpinning, c) < 1.5 * handoff_ns(b, c.bytes, 2, 1));
  // Ranks that yield: the node rates, one node's edges at a time as before (no hand-offs).
  const Machine plain = spinning_nodes(false);
  c.bytes = 4 * kMiB;
  CHECK(mpi_blocking_ns(plain, kSpinning, c) < handoff_ns(b, c.bytes, 2, 1));
  // tnbc's own broadcast there yields: the slices do not enter its schedule.
  CHECK(tnbc_timeline(m, kSpinning, c, Execution{}, true).total_ns < handoff_ns(b, c.bytes, 2, 1));
}

TEST_CASE("model: tnbc's copies in the call are priced at the machine's in-call line where calibrate measured it") {
  // An early return of 4 MiB per peer on two nodes: Tinit copies the own block into place and
  // stages the block it sends. A machine whose in-call line (every rank copying at once, nothing
  // in the caches) is slower than its memcpy line prices both copies at that line.
  Machine m = two_nodes();
  m.memcpy_cost = {1000, 0.05};
  REQUIRE_FALSE(m.memcpy_in_call_measured());
  CHECK(m.in_call_copy().ns_per_byte == Approx(0.05));  // not measured: the memcpy line
  const Coll c = alltoall(4 * kMiB);
  const Timeline before = tnbc_timeline(m, kTwoNodes, c, Execution{}, true);
  const Timeline in_call_before = tnbc_timeline(m, kTwoNodes, c, Execution{}, false);
  m.memcpy_in_call = {1000, 0.12};
  REQUIRE(m.memcpy_in_call_measured());
  const Timeline after = tnbc_timeline(m, kTwoNodes, c, Execution{}, true);
  // Two blocks of 4 MiB (own + staged) at 0.07 ns/B more.
  CHECK(after.in_call_ns - before.in_call_ns == Approx(2 * 4 * kMiB * 0.07).epsilon(0.01));
  // Completing in the call copies only the own block.
  CHECK(tnbc_timeline(m, kTwoNodes, c, Execution{}, false).in_call_ns - in_call_before.in_call_ns ==
        Approx(4 * kMiB * 0.07).epsilon(0.01));
  // MPI's own blocking estimate does not use tnbc's copy line.
  Machine other = m;
  other.memcpy_in_call = {0, 0};
  CHECK(mpi_blocking_ns(m, kTwoNodes, c) == Approx(mpi_blocking_ns(other, kTwoNodes, c)));
  // The eager send copy against the lazy one (pages made read-only) is weighed at the same line:
  // protecting at 0.08 ns/B loses to a copy at 0.05 and wins against one at 0.12.
  const int prot = guard_index("prot_none");
  for (Machine* x : {&m, &other}) {
    x->guard_measured[prot] = true;
    x->guard[prot].hold = {0, 0.08};
  }
  CHECK_FALSE(lazy_copy_pays(other, 4 * kMiB, false, kPage));
  CHECK(lazy_copy_pays(m, 4 * kMiB, false, kPage));
}

TEST_CASE("model: the userfaultfd guard moves pages only where the machine prices moving no dearer than copying") {
  Machine m = test::machine(125);
  const int move = guard_index("userfaultfd_move"), copy = guard_index("userfaultfd_copy");
  REQUIRE(move >= 0);
  REQUIRE(copy >= 0);
  m.guard_measured[move] = m.guard_measured[copy] = false;
  CHECK(page_moves_pay(m));  // nothing measured (the start-up probe's first backend only): moving, as before
  const std::vector<double> sizes{4096, 1.0 * kMiB};
  m.guard_measured[move] = true;
  m.guard[move].hold = fit_through(sizes, {50e3, 100e3});
  m.guard[move].publish = {30e3, 0.002};
  CHECK(page_moves_pay(m));  // copying unmeasured
  m.guard_measured[copy] = true;
  m.guard[copy].hold = fit_through(sizes, {40e3, 90e3});
  m.guard[copy].publish = {10e3, 0.15};
  // Moving 80 + 132 us against copying 51 + 257 us over the two sizes.
  CHECK(page_moves_pay(m));
  CHECK(priced_guards(m).runs == move);  // the offline tools price what the engine runs
  // The first accesses to moved pages priced in (~1.7 ns/B, session 55's guest): copying is cheaper.
  m.guard[move].publish = {180e3, 1.7};
  CHECK_FALSE(page_moves_pay(m));
  CHECK(priced_guards(m).runs == copy);
  // Copying measured at other sizes only: nothing to compare, moving kept.
  m.guard[copy].hold = fit_through({8192}, {40e3});
  CHECK(page_moves_pay(m));
  CHECK(priced_guards(m).runs == move);
  // Moving not measured (a kernel without UFFDIO_MOVE): copying, whatever it costs.
  m.guard_measured[move] = false;
  CHECK(priced_guards(m).runs == copy);
}

TEST_CASE("model: TNBC_GUARD=auto takes PROT_NONE per call where the machine prices it cheaper at the call's size") {
  Machine m = test::machine(125);
  const int move = guard_index("userfaultfd_move"), copy = guard_index("userfaultfd_copy"), prot = guard_index("prot_none");
  REQUIRE(prot >= 0);
  for (int b : {move, copy, prot}) m.guard_measured[b] = false;
  const std::vector<double> sizes{4096, 1.0 * kMiB, 32.0 * kMiB};
  // Session 56's guest: copying's publication 0.7 ns/B up to 4 MiB, ~2 at 32 MiB (pages freed and
  // allocated at every call); PROT_NONE's ~1.4 and ~1.2.
  m.guard_measured[copy] = true;
  m.guard[copy].hold = fit_through(sizes, {40e3, 140e3, 1.4e6});
  m.guard[copy].publish = fit_through(sizes, {12e3, 0.75e6, 65e6});
  CHECK(guard_by_size(m, copy, true) == -1);  // PROT_NONE unmeasured (the start-up probe): userfaultfd only
  m.guard_measured[prot] = true;
  m.guard[prot].hold = fit_through(sizes, {48e3, 113e3, 1.8e6});
  m.guard[prot].publish = fit_through(sizes, {35e3, 1.5e6, 40e6});
  CHECK(guard_by_size(m, copy, true) == prot);
  CHECK(guard_by_size(m, copy, false) == -1);  // not on every rank's list (TNBC_GUARD=uffd, /proc/self/mem refused)
  CHECK(guard_by_size(m, prot, true) == -1);   // PROT_NONE runs anyway
  CHECK_FALSE(by_size_pays(m, copy, prot, 4096));
  CHECK_FALSE(by_size_pays(m, copy, prot, 1.0 * kMiB));
  CHECK(by_size_pays(m, copy, prot, 16.0 * kMiB));  // between the points: 32.5 against 21.2 ms
  CHECK(by_size_pays(m, copy, prot, 32.0 * kMiB));
  CHECK_FALSE(by_size_pays(m, copy, -1, 32.0 * kMiB));
  // The model prices each size with the guard the call gets.
  const GuardCost e = guard_envelope(m.guard[copy], m.guard[prot]);
  CHECK(guard_cycle_ns(e, 1.0 * kMiB) == Approx(guard_cycle_ns(m.guard[copy], 1.0 * kMiB)));
  CHECK(guard_cycle_ns(e, 32.0 * kMiB) == Approx(guard_cycle_ns(m.guard[prot], 32.0 * kMiB)));
  CHECK(e.publish.at(32.0 * kMiB) == Approx(40e6));
  const PricedGuards g = priced_guards(m);
  CHECK(g.runs == copy);
  CHECK(g.by_size == prot);
  // PROT_NONE dearer at every size: userfaultfd for every call.
  m.guard[prot].publish = fit_through(sizes, {35e3, 1.5e6, 90e6});
  CHECK(guard_by_size(m, copy, true) == -1);
  CHECK(priced_guards(m).by_size == -1);
}

TEST_CASE("model: moving or copying by the geometric mean of their costs' ratios, every size alike") {
  Machine m = test::machine(125);
  const int move = guard_index("userfaultfd_move"), copy = guard_index("userfaultfd_copy");
  const std::vector<double> sizes{4096, 1.0 * kMiB, 32.0 * kMiB};
  m.guard_measured[move] = m.guard_measured[copy] = true;
  // Moving 2.4x dearer at 1 MiB (its pages' first touches), 10 % cheaper at 32 MiB: a sum would be
  // the 32 MiB size's verdict (moving); every size weighing alike, copying.
  m.guard[copy].hold = fit_through(sizes, {50e3, 150e3, 1.4e6});
  m.guard[copy].publish = fit_through(sizes, {10e3, 0.75e6, 65e6});
  m.guard[move].hold = fit_through(sizes, {60e3, 180e3, 4.8e6});
  m.guard[move].publish = fit_through(sizes, {10e3, 1.95e6, 55e6});
  CHECK_FALSE(page_moves_pay(m));
  CHECK(guard_that_runs(m, move) == copy);
  CHECK_FALSE(guard_costs_no_more(m, move, copy));
  CHECK(guard_costs_no_more(m, copy, move));
}

TEST_CASE("model: an early return's time in the call ends with the hand-over calibrate measured, a completion's does not") {
  // Every early return hands its steps to the progress thread at its end (runtime/engine.cc):
  // the poke, and where that thread shares the caller's CPU the switch there and back.
  Machine m = two_nodes();
  REQUIRE(m.handover_ns < 0);  // not measured: none charged
  Machine h = m;
  h.handover_ns = 30e3;
  Coll b;
  b.kind = Kind::Bcast;
  b.page = kPage;
  for (const Coll& c : {alltoall(kMiB), alltoall(4 * kMiB), b}) {
    Coll x = c;
    if (x.kind == Kind::Bcast) x.bytes = kMiB;
    const Timeline early = tnbc_timeline(m, kTwoNodes, x, Execution{}, true);
    const Timeline early_h = tnbc_timeline(h, kTwoNodes, x, Execution{}, true);
    CHECK(early_h.in_call_ns - early.in_call_ns == Approx(30e3));
    CHECK(early_h.in_call_work_ns - early.in_call_work_ns == Approx(30e3));  // work a blocking call does not do
    CHECK(tnbc_timeline(h, kTwoNodes, x, Execution{}, false).in_call_ns ==
          Approx(tnbc_timeline(m, kTwoNodes, x, Execution{}, false).in_call_ns));
    CHECK(mpi_blocking_ns(h, kTwoNodes, x) == Approx(mpi_blocking_ns(m, kTwoNodes, x)));
  }
}

TEST_CASE("model: the rest calibrate measured in tnbc's own early return is charged by the bytes received") {
  // Measured by running tnbc's engine (tools/calibrate_own_call.hh): what its call took beyond
  // the priced parts, by bytes received from the other ranks (the exchange: (n - 1) x per peer;
  // a broadcast's leaf: the whole message); not in a completion in the call, not in MPI's call.
  Machine m = two_nodes();
  m.memcpy_cost = {0, 0};  // the broadcast's root copies for free: its leaf's call is the longer
  REQUIRE_FALSE(m.in_call_rest_measured());
  Machine r = m;
  r.in_call_rest = fit_through({65536, 4 * kMiB}, {20e3, 100e3});
  const Coll b = bcast(4 * kMiB);
  const Coll a = alltoall(4 * kMiB);  // two ranks: 4 MiB from the one peer
  for (const Coll& c : {a, b}) {
    const Timeline with = tnbc_timeline(r, kTwoNodes, c, Execution{}, true);
    const Timeline without = tnbc_timeline(m, kTwoNodes, c, Execution{}, true);
    CHECK(with.in_call_work_ns - without.in_call_work_ns == Approx(100e3));
    CHECK(tnbc_timeline(r, kTwoNodes, c, Execution{}, false).in_call_ns ==
          Approx(tnbc_timeline(m, kTwoNodes, c, Execution{}, false).in_call_ns));
    CHECK(mpi_blocking_ns(r, kTwoNodes, c) == Approx(mpi_blocking_ns(m, kTwoNodes, c)));
  }
  // On four ranks of one node each, an exchange of 1 MiB per peer receives 3 MiB: priced there.
  const Topology four = Topology::block(4, 1, 2, 1);
  Machine r4 = r, m4 = m;
  for (Machine* x : {&r4, &m4}) x->ranks = x->nodes = 4;
  const double rest3 = r.in_call_rest.at(3 * kMiB);
  CHECK(tnbc_timeline(r4, four, alltoall(kMiB), Execution{}, true).in_call_work_ns -
            tnbc_timeline(m4, four, alltoall(kMiB), Execution{}, true).in_call_work_ns ==
        Approx(rest3));
}

TEST_CASE("model: a broadcast's receivers pay their own measured rest where calibrate measured it; the exchange's is unchanged") {
  // tools/calibrate_own_call.hh measures tnbc's own MPI_Bcast too (Machine::rest_bcast): a
  // receiver's call does less than an exchange's of the same bytes.
  Machine m = two_nodes();
  m.memcpy_cost = {0, 0};  // the root copies for free: the receiver's call is the longer
  m.in_call_rest = fit_through({65536, 4 * kMiB}, {20e3, 100e3});
  Machine r = m;
  r.in_call_rest_bcast = fit_through({65536, 4 * kMiB}, {10e3, 40e3});
  const Coll b = bcast(4 * kMiB);
  const Execution x;
  CHECK(bcast_receiver_in_call_ns(m, kTwoNodes, b, x) - bcast_receiver_in_call_ns(r, kTwoNodes, b, x) == Approx(60e3));
  CHECK(tnbc_timeline(m, kTwoNodes, b, x, true).in_call_work_ns - tnbc_timeline(r, kTwoNodes, b, x, true).in_call_work_ns ==
        Approx(60e3));
  // The receiver's figure is the timeline's where the receiver is the slowest rank.
  CHECK(tnbc_timeline(r, kTwoNodes, b, x, true).in_call_ns == Approx(bcast_receiver_in_call_ns(r, kTwoNodes, b, x)));
  const Coll a = alltoall(4 * kMiB);
  CHECK(tnbc_timeline(r, kTwoNodes, a, x, true).in_call_ns == Approx(tnbc_timeline(m, kTwoNodes, a, x, true).in_call_ns));
}

TEST_CASE("model: a broadcast's root pays its own measured rest where calibrate measured it; its receivers' calls are unchanged") {
  // tools/calibrate_own_call.hh measures the root's call apart (Machine::rest_bcast_root): its
  // copy ran slower in Table 1 than the copy alone priced it (docs/benchmarks.md, "Session 36").
  Machine m = two_nodes();
  m.memcpy_in_call_alone = {0, 0.1};  // the root's copy: its call the longer
  m.in_call_rest_bcast = fit_through({65536, 4 * kMiB}, {10e3, 40e3});
  Machine r = m;
  r.in_call_rest_bcast_root = fit_through({65536, 4 * kMiB}, {20e3, 90e3});
  const Coll b = bcast(4 * kMiB);
  const Execution x;
  REQUIRE(bcast_root_in_call_ns(m, kTwoNodes, b, x) > bcast_receiver_in_call_ns(m, kTwoNodes, b, x));
  CHECK(bcast_root_in_call_ns(r, kTwoNodes, b, x) - bcast_root_in_call_ns(m, kTwoNodes, b, x) == Approx(90e3));
  CHECK(bcast_receiver_in_call_ns(r, kTwoNodes, b, x) == Approx(bcast_receiver_in_call_ns(m, kTwoNodes, b, x)));
  // The root is the slowest rank: the timeline's Tinit is its call, and the transfer starts later.
  const Timeline with = tnbc_timeline(r, kTwoNodes, b, x, true), without = tnbc_timeline(m, kTwoNodes, b, x, true);
  CHECK(with.in_call_ns == Approx(bcast_root_in_call_ns(r, kTwoNodes, b, x)));
  CHECK(with.in_call_ns - without.in_call_ns == Approx(90e3));
  CHECK(with.total_ns >= without.total_ns);
  // Completed in the call (no early return), MPI's own call and an exchange: unchanged.
  CHECK(tnbc_timeline(r, kTwoNodes, b, x, false).in_call_ns == Approx(tnbc_timeline(m, kTwoNodes, b, x, false).in_call_ns));
  CHECK(mpi_blocking_ns(r, kTwoNodes, b) == Approx(mpi_blocking_ns(m, kTwoNodes, b)));
  const Coll a = alltoall(4 * kMiB);
  CHECK(tnbc_timeline(r, kTwoNodes, a, x, true).in_call_ns == Approx(tnbc_timeline(m, kTwoNodes, a, x, true).in_call_ns));
}

TEST_CASE("model: a call whose data fits in the cache pays the warm hold, rest and hand-over; a larger one the cold") {
  // Machine::warm: what a rank sends and receives (its own block included) below the cache size.
  Machine m = two_nodes();
  m.memcpy_cost = {0, 0};  // the broadcast's root copies for free: its leaf's call is the longer
  m.handover_ns = 24e3;
  m.in_call_rest = fit_through({65536, 4 * kMiB}, {160e3, 200e3});  // the leaf's call the longer, warm or cold
  Machine w = m;
  w.warm_below_bytes = static_cast<double>(kMiB);
  w.handover_warm_ns = 11e3;
  w.in_call_rest_warm = fit_through({65536}, {125e3});
  w.guard[0].hold_warm = fit_through({4096, 65536}, {2e3, 3e3});
  const double cold_hold = m.guard[0].hold.at(65536), warm_hold = w.guard[0].hold_warm.at(65536);
  REQUIRE(cold_hold > warm_hold);
  Coll b = bcast(65536);
  // Two ranks at 64 KiB per peer touch 256 KiB; a 64 KiB broadcast 64 KiB: both warm.
  for (const Coll& c : {alltoall(65536), b}) {
    const Timeline cold = tnbc_timeline(m, kTwoNodes, c, Execution{}, true);
    const Timeline warm = tnbc_timeline(w, kTwoNodes, c, Execution{}, true);
    CHECK(cold.in_call_work_ns - warm.in_call_work_ns == Approx((24e3 - 11e3) + (160e3 - 125e3) + (cold_hold - warm_hold)));
  }
  // 256 KiB per peer touch 1 MiB (not below the cache), a 1 MiB broadcast too: priced cold.
  b.bytes = kMiB;
  for (const Coll& c : {alltoall(256 << 10), b})
    CHECK(tnbc_timeline(w, kTwoNodes, c, Execution{}, true).in_call_work_ns ==
          Approx(tnbc_timeline(m, kTwoNodes, c, Execution{}, true).in_call_work_ns));
}

TEST_CASE("model: where calibrate kept the in-call copy's points, small copies are priced by them, not the line's intercept") {
  // The line through a 64 KiB-4 MiB sweep: 20 us + 0.1 ns/B, where 64 KiB measured 6 us. An
  // early return at 64 KiB per peer copies its own block and stages the block it sends in pieces
  // of at most 64 KiB: each piece paid the intercept.
  Machine line = two_nodes();
  line.memcpy_in_call = {20e3, 0.1};
  Machine points = line;
  points.memcpy_in_call.points = {{65536, 6e3}, {kMiB, 100e3}};
  const Coll c = alltoall(65536);
  const double own_line = tnbc_timeline(line, kTwoNodes, c, Execution{}, false).in_call_ns;
  const double own_points = tnbc_timeline(points, kTwoNodes, c, Execution{}, false).in_call_ns;
  CHECK(own_line - own_points == Approx(20e3 + 0.1 * 65536 - 6e3));  // the own block: one copy of 64 KiB
  const double early_line = tnbc_timeline(line, kTwoNodes, c, Execution{}, true).in_call_ns;
  const double early_points = tnbc_timeline(points, kTwoNodes, c, Execution{}, true).in_call_ns;
  // The staging: every piece's intercept (at least one piece) and the slope's 6.5 us, against
  // 6 us for the 64 KiB in proportion.
  CHECK((early_line - own_line) - (early_points - own_points) >= Approx(20e3 + 0.1 * 65536 - 6e3));
  // At a measured size both price the same; between two points the line through them.
  Coll big = alltoall(kMiB);
  points.memcpy_in_call.points = {{65536, 20e3 + 0.1 * 65536}, {kMiB, 20e3 + 0.1 * kMiB}};
  CHECK(tnbc_timeline(points, kTwoNodes, big, Execution{}, false).in_call_ns ==
        Approx(tnbc_timeline(line, kTwoNodes, big, Execution{}, false).in_call_ns));
}

TEST_CASE("model: a broadcast's root pays in its call for every send it starts there") {
  // The root's progress thread shares its only CPU: the calling thread starts every piece's
  // send (runtime/policy.cc, caller_starts_sends); with a CPU to spare, the edges' only. Each
  // costs MPI_Isend's measured time (SizePoint::post_ns).
  Machine m = two_nodes();
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = 4 * kMiB;
  c.page = kPage;
  c.segments = 5;
  const Topology spare = Topology::block(2, 1, 2, 2);  // two CPUs per rank
  REQUIRE(kTwoNodes.spare_cpu() == 0);
  REQUIRE(spare.spare_cpu() > 0);
  auto root_call = [&](const Topology& t, double post_ns) {
    for (SizePoint& p : m.level[1].sweep) p.post_ns = post_ns;
    return tnbc_timeline(m, t, c, Execution{}, true).in_call_ns;
  };
  m.level[1].sweep = {{4096, 90e3, 12e3, 13e3, 40e3}, {kMiB, 8e6, 20e3, 30e3, 8e6}};
  // Isends slow enough that the root's call is the longest (the leaves' guard is cheap here).
  const double edges = root_call(spare, 800e3) - root_call(spare, 400e3);
  CHECK(edges == Approx(2 * 400e3));
  const double all = root_call(kTwoNodes, 800e3) - root_call(kTwoNodes, 400e3);
  CHECK(all >= 2 * edges);  // the edges and the middle pieces, 5 segments at least
  // A sweep without the field: each send started in the call costs a page's o_s, as before.
  m.level[1].sweep[0].post_ns = m.level[1].sweep[1].post_ns = -1;
  CHECK(m.level[1].post(kMiB, kPage) == Approx(m.level[1].o_s(kPage)));
}

TEST_CASE("model: a broadcast's leaves publish as the guard does, its inner ranks by copying") {
  // Inner ranks forward from the receive staging, so the userfaultfd guard copies there; a leaf
  // sends nothing and swaps its pages (uffd_backend.cc, can_swap). A copy publication made 100x
  // dearer changes nothing at 2 ranks (the root and a leaf), and the forwarding ranks' at 4.
  Machine m = test::machine(20000, 2, 8, 1, 50);  // shared memory, 8 CPUs: no crowding
  m.guard_measured[1] = true;
  m.guard[1] = m.guard[0];
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = 4 * kMiB;
  c.page = kPage;
  c.segments = 5;
  auto timeline = [&](int n, double copy_publish_ns_per_byte) {
    m.guard[1].publish = {4e3, copy_publish_ns_per_byte};
    return tnbc_timeline(m, Topology::block(n, n, 8, 1), c, Execution{}, true);
  };
  const Timeline two = timeline(2, 0.2), two_dear = timeline(2, 20);
  CHECK(two_dear.total_ns == Approx(two.total_ns));
  CHECK(two_dear.driver_cpu_ns == Approx(two.driver_cpu_ns));
  CHECK(two_dear.publish_ns == Approx(two.publish_ns));
  const Timeline four = timeline(4, 0.2), four_dear = timeline(4, 20);
  CHECK(four_dear.total_ns > four.total_ns + 10 * 4 * kMiB * 0.2);
  CHECK(four_dear.publish_ns > four.publish_ns);
}

TEST_CASE("model: a broadcast's middle pieces arrive a send window at a time, all together where the root starts them all") {
  // The MPI library interleaves the sends in flight fragment by fragment. With a CPU to spare
  // the root's progress thread keeps TNBC_SEND_WINDOW (4) of them in flight: the first four of
  // five middle pieces are in together, the fifth after them; the reader gets its first piece
  // with the first window and reads the last window's share (one piece of five) after the end.
  // One piece at a time, the first comes after one piece's time. Where the root's calling thread
  // starts every send (its progress thread on its only CPU: kTwoNodes), all are in at the end.
  const Machine m = two_nodes();
  const Topology spare = Topology::block(2, 1, 2, 2);
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = 4 * kMiB;
  c.page = kPage;
  c.segments = 5;
  Execution four, one;
  four.window = 4;
  one.window = 1;
  const Timeline w4 = tnbc_timeline(m, spare, c, four, true), w1 = tnbc_timeline(m, spare, c, one, true);
  CHECK(w4.last_share == Approx(1.0 / 5));
  CHECK(w4.round_share == Approx(1.0 / 5));
  CHECK(w1.last_share == Approx(1.0 / 5));
  CHECK(w4.total_ns == Approx(w1.total_ns));  // the last byte comes when it comes
  const double transfer = w1.total_ns - w1.in_call_ns;
  CHECK(w1.first_ns - w1.in_call_ns < 0.3 * transfer);  // one piece's time and the edges
  CHECK(w4.first_ns - w4.in_call_ns > 0.7 * transfer);  // four of five pieces' time
  // Four middle pieces and a window of 4: all of them in at the end.
  c.segments = 4;
  CHECK(tnbc_timeline(m, spare, c, four, true).last_share == Approx(1.0));
  // The root starts every send in its call, or no window: every piece in flight at once.
  c.segments = 5;
  const Timeline shared = tnbc_timeline(m, kTwoNodes, c, four, true);
  CHECK(shared.last_share == Approx(1.0));
  CHECK(shared.first_ns - shared.in_call_ns > 0.9 * (shared.total_ns - shared.in_call_ns));
  Execution all;
  all.window = 0;
  CHECK(tnbc_timeline(m, spare, c, all, true).last_share == Approx(1.0));
  // TNBC_BCAST_SEND_WINDOW=1: the root's progress thread sends the middle pieces one at a time on
  // its shared CPU too (the root's call starts the edges only): they arrive one after another.
  Execution bcast_one = four;
  bcast_one.bcast_window = 1;
  const Timeline paced = tnbc_timeline(m, kTwoNodes, c, bcast_one, true);
  CHECK(paced.last_share == Approx(1.0 / 5));
  CHECK(paced.first_ns - paced.in_call_ns < 0.3 * (paced.total_ns - paced.in_call_ns));
  CHECK(paced.in_call_ns < shared.in_call_ns);  // five sends fewer in the root's call
  // It wins over TNBC_SEND_WINDOW with a CPU to spare as well.
  Execution spare_one = four;
  spare_one.bcast_window = 1;
  CHECK(tnbc_timeline(m, spare, c, spare_one, true).first_ns == Approx(w1.first_ns));
}

TEST_CASE("model: the estimates cut a broadcast as a run does (run_segments)") {
  const Machine m = two_nodes();
  Execution x;
  x.bcast_max_segments = 5;
  const int s = run_segments(m, kTwoNodes, x, 4 * kMiB, kPage);
  CHECK(s == bcast_segments(m, kTwoNodes, 4 * kMiB, x, 5, kPage));
  x.bcast_max_segments = 1;
  CHECK(run_segments(m, kTwoNodes, x, 4 * kMiB, kPage) == 1);
  CHECK(run_segments(m, kTwoNodes, Execution{}, 2 * kPage, kPage) == 1);  // too small to cut
  // optimize's verdict on a broadcast site prices the pieces the run will cut (here more than one
  // segment: a reader gets the first window before the last byte).
  const trace::Judge j = judge(m, kTwoNodes);
  const double blocking = 35 * kMs;
  const trace::Decision d = trace::decide(site(4 * kMiB, blocking, 0.2 * kMs, 10 * kMs), Kind::Bcast, 2, j);
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = 4 * kMiB;
  c.page = kPage;
  c.segments = run_segments(m, kTwoNodes, j.exec, c.bytes, kPage);
  REQUIRE(c.segments > 1);
  const Overlap o = overlap(m, kTwoNodes, c, j.exec, Program{0.2 * kMs, 10 * kMs}, blocking);
  CHECK(d.saved_ns == Approx(o.saved_ns));
  c.segments = 1;
  CHECK(d.saved_ns != Approx(overlap(m, kTwoNodes, c, j.exec, Program{0.2 * kMs, 10 * kMs}, blocking).saved_ns));
}

TEST_CASE("model: what a transfer takes from a computation on its CPU comes from the level's measured shared_cpu") {
  // Two nodes of one CPU each (netrun's emulated nodes): the progress thread shares the rank's
  // CPU with the computation. A program that computes through the whole exchange (T_CURC longer
  // than Tcomm) loses the transfer's CPU: the driving thread's own, or the measured loss of a
  // computation on the transfer's CPU where calibrate measured more.
  Machine m = two_nodes();
  const Topology one_cpu = Topology::block(2, 1, 1, 1);
  const Coll c = alltoall(4 * kMiB);
  const double blocking = mpi_blocking_ns(m, one_cpu, c);
  const Program long_compute{2 * blocking, 0.1 * blocking};
  const Overlap without = overlap(m, one_cpu, c, Execution{}, long_compute, 0);
  REQUIRE_FALSE(m.at(LevelKind::InterNode).shared_cpu_measured());
  CHECK(tnbc_timeline(m, one_cpu, c, Execution{}, true).shared_cpu_ns == 0);
  m.level[1].shared_cpu = {0, 1.2};  // 1.2 ns per byte exchanged each way (1.26 ms per MiB)
  const Timeline tl = tnbc_timeline(m, one_cpu, c, Execution{}, true);
  CHECK(tl.shared_cpu_ns == Approx(1.2 * 4 * kMiB));
  REQUIRE(tl.shared_cpu_ns > tl.driver_cpu_ns);
  const Overlap with = overlap(m, one_cpu, c, Execution{}, long_compute, 0);
  // The computation covers the whole transfer: all of it is lost, in place of the driver's CPU.
  CHECK(with.saved_ns - without.saved_ns == Approx(-(tl.shared_cpu_ns - tl.driver_cpu_ns)).epsilon(0.02));
  // A rank with a CPU to spare loses nothing of it.
  const Topology two_cpus = Topology::block(2, 1, 2, 2);
  CHECK(overlap(m, two_cpus, c, Execution{}, long_compute, 0).saved_ns ==
        Approx(overlap(two_nodes(), two_cpus, c, Execution{}, long_compute, 0).saved_ns));
  // Below the driving thread's own CPU the measured loss changes nothing.
  m.level[1].shared_cpu = {0, 1e-6};
  CHECK(overlap(m, one_cpu, c, Execution{}, long_compute, 0).saved_ns == Approx(without.saved_ns));
  // A broadcast's rank receives the message once.
  m.level[1].shared_cpu = {5000, 1.2};
  Coll b = c;
  b.kind = Kind::Bcast;
  CHECK(tnbc_timeline(m, one_cpu, b, Execution{}, true).shared_cpu_ns == Approx(5000 + 1.2 * 4 * kMiB));
}

TEST_CASE("model: what tnbc's own transfer took from a computation, measured by calibrate, prices it in its placement") {
  // calibrate runs tnbc's engine on one-CPU nodes, one rank each, and times a computation right
  // after the call (Machine::cpu_taken, by bytes a rank receives; a broadcast's own line).
  Machine m = two_nodes();
  m.level[1].shared_cpu = {0, 1.2};
  const Topology one_cpu = Topology::block(2, 1, 1, 1);
  const Coll c = alltoall(4 * kMiB);
  const double blocking = mpi_blocking_ns(m, one_cpu, c);
  const Program long_compute{2 * blocking, 0.1 * blocking};
  const Timeline tl = tnbc_timeline(m, one_cpu, c, Execution{}, true);
  const double priced = std::max(tl.driver_cpu_ns, tl.shared_cpu_ns);
  const Overlap before = overlap(m, one_cpu, c, Execution{}, long_compute, 0);
  // 3 ms more than the level's line at 4 MiB received: the computation loses those 3 ms too.
  m.cpu_taken = fit_through({4 * kMiB}, {priced + 3 * kMs});
  CHECK(overlap(m, one_cpu, c, Execution{}, long_compute, 0).saved_ns == Approx(before.saved_ns - 3 * kMs).epsilon(0.01));
  // Below what the level's line and the driver's CPU price, it replaces them too.
  m.cpu_taken = fit_through({4 * kMiB}, {0.5 * priced});
  CHECK(overlap(m, one_cpu, c, Execution{}, long_compute, 0).saved_ns == Approx(before.saved_ns + 0.5 * priced).epsilon(0.01));
  // Where a node's ranks outnumber its CPUs, the line prices it too (by all the bytes a rank
  // receives), unscaled, where the driving thread's CPU alone had priced it (ft-proxy W at 0.84x
  // with 2 ranks per one-CPU node on a PVM guest, session 41).
  m.cpu_taken = fit_through({4 * kMiB}, {priced + 3 * kMs});
  Machine plain = two_nodes();
  plain.level[1].shared_cpu = {0, 1.2};
  const Topology crowded = Topology::block(4, 2, 1, 1);
  const Program longer{20 * blocking, 0.1 * blocking};  // the computation outlasts the transfer
  const Timeline ctl = tnbc_timeline(m, crowded, c, Execution{}, true);
  CHECK(overlap(m, crowded, c, Execution{}, longer, 0).saved_ns ==
        Approx(overlap(plain, crowded, c, Execution{}, longer, 0).saved_ns -
               (m.cpu_taken.at(3 * 4 * kMiB) - std::max(ctl.driver_cpu_ns, ctl.shared_cpu_ns)))
            .epsilon(0.01));
  // Two ranks on a node of two CPUs: not the placement it was measured in; priced as before.
  const Topology shared = Topology::block(4, 2, 2, 1);
  CHECK(overlap(m, shared, c, Execution{}, longer, 0).saved_ns ==
        Approx(overlap(plain, shared, c, Execution{}, longer, 0).saved_ns));
  // A broadcast takes its own line, by the bytes a rank receives; the exchange's does not price it.
  const Coll b = bcast(4 * kMiB);
  const Overlap bcast_before = overlap(plain, one_cpu, b, Execution{}, long_compute, 0);
  CHECK(overlap(m, one_cpu, b, Execution{}, long_compute, 0).saved_ns == Approx(bcast_before.saved_ns));
  const Timeline btl = tnbc_timeline(m, one_cpu, b, Execution{}, true);
  m.cpu_taken_bcast = fit_through({4 * kMiB}, {std::max(btl.driver_cpu_ns, btl.shared_cpu_ns) + 2 * kMs});
  CHECK(overlap(m, one_cpu, b, Execution{}, long_compute, 0).saved_ns == Approx(bcast_before.saved_ns - 2 * kMs).epsilon(0.01));
}

TEST_CASE("model: on one node whose ranks have a CPU each at most, calibrate's measured cpu_taken prices the transfer, at least the driver's CPU") {
  // np 2 on one node of 2 CPUs (shared memory): each rank's progress thread shares the CPU its
  // computation runs on; calibrate measures what tnbc's own transfer takes from a computation
  // there too (session 63), and the model charges that in place of the driver's CPU.
  Machine m = test::machine(2000, 5, 2, 5, 100);
  m.ranks = 2;
  m.ranks_per_node = 2;
  const Topology node = Topology::block(2, 2, 2, 1);
  REQUIRE(cpu_taken_placement(m, node));
  const Coll c = alltoall(1 * kMiB);
  const double blocking = mpi_blocking_ns(m, node, c);
  const Program long_compute{20 * blocking, 0.1 * blocking};  // the computation outlasts the transfer
  const Overlap before = overlap(m, node, c, Execution{}, long_compute, 0);
  const Timeline tl = tnbc_timeline(m, node, c, Execution{}, true);
  const double priced = std::max(tl.driver_cpu_ns, tl.shared_cpu_ns);
  Machine measured = m;
  measured.cpu_taken = fit_through({1 * kMiB}, {priced + 2 * kMs});  // by bytes a rank receives (1 peer)
  CHECK(overlap(measured, node, c, Execution{}, long_compute, 0).saved_ns == Approx(before.saved_ns - 2 * kMs).epsilon(0.01));
  // Below the driver's price it is a floor only (between nodes it replaces it: the test above).
  Machine under = m;
  under.cpu_taken = fit_through({1 * kMiB}, {0.5 * priced});
  CHECK(overlap(under, node, c, Execution{}, long_compute, 0).saved_ns == Approx(before.saved_ns));
  // A broadcast takes its own line.
  const Coll b = bcast(4 * kMiB);
  const Overlap bcast_before = overlap(measured, node, b, Execution{}, long_compute, 0);
  const Timeline btl = tnbc_timeline(m, node, b, Execution{}, true);
  measured.cpu_taken_bcast = fit_through({4 * kMiB}, {std::max(btl.driver_cpu_ns, btl.shared_cpu_ns) + 1 * kMs});
  CHECK(overlap(measured, node, b, Execution{}, long_compute, 0).saved_ns == Approx(bcast_before.saved_ns - 1 * kMs).epsilon(0.01));
  // A node with a CPU to spare for each rank: neither calibrate measures it nor the model uses it.
  const Topology roomy = Topology::block(2, 2, 4, 2);
  CHECK_FALSE(cpu_taken_placement(m, roomy));
  CHECK(overlap(measured, roomy, c, Execution{}, long_compute, 0).saved_ns ==
        Approx(overlap(m, roomy, c, Execution{}, long_compute, 0).saved_ns));
  // A line measured between nodes (a machine file of two nodes) does not price one node.
  Machine between = measured;
  between.nodes = 2;
  CHECK_FALSE(cpu_taken_placement(between, node));
  CHECK(overlap(between, node, c, Execution{}, long_compute, 0).saved_ns == Approx(before.saved_ns));
  // Between nodes the placements as before: one-CPU nodes, one rank each or crowded; not two
  // ranks on a node of two CPUs.
  const Machine two = two_nodes();
  CHECK(cpu_taken_placement(two, Topology::block(2, 1, 1, 1)));
  CHECK(cpu_taken_placement(two, Topology::block(4, 2, 1, 1)));
  CHECK_FALSE(cpu_taken_placement(two, Topology::block(4, 2, 2, 1)));
}

TEST_CASE("model: a send window's pieces arrive together, so a reader at once gets the last window's share only at the end") {
  // Two nodes, one rank each; 4 MiB per peer cut into 20 body pieces of ~208 KiB (as a run with
  // TNBC_PIECE_BYTES=208k cuts them). The MPI library interleaves the sends in flight on the link:
  // with a window of 4 the pieces complete in fours (measured on the emulated link: every ~6.8 ms
  // at 1 Gbit/s), the first a reader needs with the first four, the last four at the end.
  const Machine m = two_nodes();
  Coll c = alltoall(4 * kMiB);
  c.pieces = PieceRule(std::size_t{208 * 1024});
  Execution one, four, priorities;
  one.window = 1;
  four.window = 4;
  priorities.window = 4;
  priorities.node_priorities = true;
  const Timeline a = tnbc_timeline(m, kTwoNodes, c, one, true);
  const Timeline b = tnbc_timeline(m, kTwoNodes, c, four, true);
  const Timeline p = tnbc_timeline(m, kTwoNodes, c, priorities, true);
  const double body = 1.0 / b.round_share;  // the body pieces of the one peer
  REQUIRE(body == Approx(20));
  // Shares of what the reader reads, its own block (half of it at np 2) included.
  CHECK(a.last_share == Approx(1 / body / 2));  // one piece at a time: the last one only
  CHECK(b.last_share == Approx(4 / body / 2));  // the last window's four together
  CHECK(p.last_share == Approx(1 / body / 2));  // node-level priorities: one piece at a time
  CHECK(a.round_share == Approx(b.round_share));  // what node_choice reads is the round, unchanged
  const double piece = (b.total_ns - b.in_call_ns) / body;  // about one piece's wire time
  CHECK(b.first_ns - b.in_call_ns > 3.5 * piece);  // the first piece comes with its window of four
  CHECK(a.first_ns - a.in_call_ns < 1.5 * piece);
  // A reader that starts at once and reads twice as fast as the link (Table 1 (c)) still has
  // the last window to read when the transfer ends: four pieces' reading, not one (its own
  // block, half of what it reads, is in place since the call).
  const double blocking = mpi_blocking_ns(m, kTwoNodes, c);
  const Program at_once{0, 0.5 * blocking};
  const Overlap ob = overlap(m, kTwoNodes, c, four, at_once);
  CHECK(ob.early_total_ns >= b.total_ns + 4 / body / 2 * at_once.crc_ns);
  // What it still reads after the transfer: the last window's share of its reading, so a reader
  // half as fast finishes that much later (its wake-ups alike).
  const Overlap faster = overlap(m, kTwoNodes, c, four, Program{0, 0.25 * blocking});
  CHECK(ob.early_total_ns - faster.early_total_ns == Approx(4 / body / 2 * 0.25 * blocking).epsilon(0.01));
}

TEST_CASE("model: a reader that reads its own block after every peer's reads it after the last piece") {
  // Table 1 (c) in `seq` order, np 2: rank 1 reads rank 0's block, then its own — in place since
  // the call, but read only once the peer's last window is in and read (Program::own_last).
  // Measured on the emulated link, 4 MiB per peer: the model without it 16-26 % short of the
  // slowest rank's total (docs/benchmarks.md, "Session 25").
  const Machine m = two_nodes();
  Coll c = alltoall(4 * kMiB);
  c.pieces = PieceRule(std::size_t{208 * 1024});
  Execution four;
  four.window = 4;
  const double blocking = mpi_blocking_ns(m, kTwoNodes, c);
  Program at_once{0, 0.5 * blocking};
  Program own_last = at_once;
  own_last.own_last = true;
  CHECK(overlap(m, kTwoNodes, c, four, own_last).early_total_ns - overlap(m, kTwoNodes, c, four, at_once).early_total_ns ==
        Approx(at_once.crc_ns / 2).epsilon(0.01));
  // A reader slower than the data is bound by its own reading, wherever its own block comes.
  Program slow{0, 4 * blocking};
  Program slow_own = slow;
  slow_own.own_last = true;
  CHECK(overlap(m, kTwoNodes, c, four, slow_own).early_total_ns == Approx(overlap(m, kTwoNodes, c, four, slow).early_total_ns));
  // A broadcast has no own block.
  Coll b = c;
  b.kind = Kind::Bcast;
  b.segments = 4;
  CHECK(overlap(m, kTwoNodes, b, four, own_last).early_total_ns == Approx(overlap(m, kTwoNodes, b, four, at_once).early_total_ns));
}

TEST_CASE("model: mode nbc weighs an exchange against the library's call on idle links (the head start of a shaper's burst)") {
  // The sweep of a link shaped to 125 MB/s whose first 256 KiB get through at once: a message
  // alone takes T(m) = L + max(0, m - 256 KiB) G. Mode nbc, with no measured Tcomm, weighs an
  // exchange of one message each way (np 2 on 2 nodes) against that, not m x G; beyond the head
  // start the rate applies again. The estimate a measured Tcomm scales (mpi_blocking_ns) is the
  // rate's, as before.
  Machine m = two_nodes();
  Level& l = m.level[1];
  const double head = 256 * 1024, G = l.G_ns_per_byte;
  l.sweep.clear();
  for (double b : {65536.0, 262144.0, 1048576.0, 4194304.0})
    l.sweep.push_back({b, l.L_ns + std::max(0.0, b - head) * G + 0.01 * b, 10e3, 10e3, b * G, -1});
  CHECK(l.head_bytes() == Approx(head - 0.01 * 4194304 / G).epsilon(0.01));
  const Coll small = alltoall(65536), big = alltoall(4 * kMiB);
  CHECK(nbc_blocking_ns(m, kTwoNodes, small) < 0.5 * 65536 * G);
  CHECK(mpi_blocking_ns(m, kTwoNodes, small) >= 65536 * G);
  CHECK(nbc_blocking_ns(m, kTwoNodes, big) == Approx(l.T(4 * kMiB)).epsilon(0.05));
  CHECK(nbc_blocking_ns(m, kTwoNodes, big) <= mpi_blocking_ns(m, kTwoNodes, big));
  // The balance of mode nbc's sizes takes it as Tcomm.
  CHECK(exchange_balance(m, kTwoNodes, Kind::Alltoall, Execution{}, 65536, kPage).blocking_ns ==
        Approx(nbc_blocking_ns(m, kTwoNodes, small)));
  // Without a head start (T grows at G from the first byte) nothing changes; a broadcast and one
  // node keep the library's estimate.
  Machine plain = two_nodes();
  plain.level[1].sweep.clear();
  for (double b : {65536.0, 262144.0, 1048576.0, 4194304.0})
    plain.level[1].sweep.push_back({b, plain.level[1].L_ns + b * G, 10e3, 10e3, b * G, -1});
  CHECK(plain.level[1].head_bytes() == Approx(0).margin(1));
  CHECK(nbc_blocking_ns(plain, kTwoNodes, small) == Approx(mpi_blocking_ns(plain, kTwoNodes, small)).epsilon(0.02));
  Coll b = small;
  b.kind = Kind::Bcast;
  CHECK(nbc_blocking_ns(m, kTwoNodes, b) == Approx(mpi_blocking_ns(m, kTwoNodes, b)));
}

TEST_CASE("model: a broadcast's root copies alone in its call (the alone line), an exchange's ranks all at once") {
  // Every rank at once 1 ns/B, one rank alone 0.25 ns/B: the root's call is the broadcast's Tinit
  // (its leaves' call holds pages only, cheap here), so the alone line moves it by 0.75 ns/B.
  Machine m = test::machine(125, 50, 2, 10, 0);
  m.memcpy_in_call = {0, 1.0};
  const Topology two = Topology::block(2, 1, 1, 1);
  Coll b;
  b.kind = Kind::Bcast;
  b.bytes = 4 * kMiB;
  b.page = kPage;
  Coll a = b;
  a.kind = Kind::Alltoall;
  const Timeline bcast_at_once = tnbc_timeline(m, two, b, {}, true), exchange_at_once = tnbc_timeline(m, two, a, {}, true);
  m.memcpy_in_call_alone = {0, 0.25};
  const Timeline bcast_alone = tnbc_timeline(m, two, b, {}, true), exchange_alone = tnbc_timeline(m, two, a, {}, true);
  CHECK(bcast_at_once.in_call_ns - bcast_alone.in_call_ns == Approx(0.75 * 4 * kMiB));
  CHECK(exchange_alone.in_call_ns == Approx(exchange_at_once.in_call_ns));
}

TEST_CASE("own call: where the library's ranks spin, tnbc's schedule completed in the call beats their call") {
  // np 4 on 2 one-CPU nodes at 1 Gbit/s: measured with every Alltoall so, ft-proxy W 1.99x and
  // NPB FT.A 2.03x the plain program; on one node, where both spin on the same CPUs, 1.00x
  // (docs/benchmarks.md, "Session 42").
  const Machine m = spinning_nodes(true);
  const double blocking = mpi_blocking_ns(m, kSpinning, alltoall(kMiB));
  const double own = own_call_ns(m, kSpinning, alltoall(kMiB), Execution{});
  CHECK(own == Approx(tnbc_timeline(m, kSpinning, alltoall(kMiB), Execution{}, false).total_ns));
  CHECK(own < 0.55 * blocking);
  CHECK(own_call_pays(own, blocking, 0.45));
  CHECK_FALSE(own_call_pays(own, blocking, 1.0));          // a margin of 100 %: never
  CHECK_FALSE(own_call_pays(0.7 * blocking, blocking, 0.45));
  Execution x;
  x.margin_busy_poll = 0.45;
  x.margin_shared_node = 1.0;
  const SizeBands own_sizes = own_call_bands(m, kSpinning, Kind::Alltoall, x, m.page);
  CHECK(own_sizes.contains(kMiB));
  CHECK(own_call_bands(m, kSpinning, Kind::Bcast, x, m.page).ranges.empty());  // the exchange family only
  // Without the evidence the same ranks share the node's measured rate with the library: none.
  CHECK(own_call_bands(spinning_nodes(false), kSpinning, Kind::Alltoall, x, m.page).ranges.empty());
  // The run's route (Policy::route): such a size outside the sizes that return early takes tnbc's
  // schedule, which then completes in the call (early_return_pays: no). Calibrate's measure of
  // what the transfer takes from a computation on such a node (104 ms at 3 MiB received, the PVM
  // guest of session 41) keeps the early return from the sizes a program reading at once loses at.
  Settings s;
  auto in = std::make_shared<Inputs>();
  in->machine = m;
  in->machine.cpu_taken = fit_through({3 * kMiB}, {104 * kMs});
  in->world = kSpinning;
  auto p = make_policy(s, m.page, nullptr);
  p->start(in, 0, true);
  const SizeBands early = p->early_return_sizes(Kind::Alltoall, kSpinning);
  const SizeBands engine = engine_bands(in->machine, kSpinning, Kind::Alltoall, execution(s, 0), m.page);
  CHECK(engine.ranges ==
        unite(early, own_call_bands(in->machine, kSpinning, Kind::Alltoall, execution(s, 0), m.page)).ranges);
  int own_only = 0;
  for (std::size_t bytes = 16 * 1024; bytes <= 8 * kMiB; bytes *= 2) {
    const bool mine = engine.contains(bytes);
    CHECK((p->route(Kind::Alltoall, false, kSpinning, bytes) == Reason::None) == mine);
    if (mine && !early.contains(bytes)) {
      ++own_only;
      CHECK_FALSE(p->early_return_pays(Kind::Alltoall, 3 * bytes, kSpinning));
    }
  }
  INFO("early " << early.text() << " engine " << engine.text());
  CHECK(own_only > 0);
  // TNBC_MIN_BYTES set: its sizes alone.
  s.min_bytes = 8 * kMiB;
  auto q = make_policy(s, m.page, nullptr);
  q->start(in, 0, true);
  CHECK(q->route(Kind::Alltoall, false, kSpinning, kMiB) == Reason::BelowThreshold);
}

TEST_CASE("own call: an early return must beat tnbc's schedule in the call by its own margin, where that beats the library's") {
  // The same transposes, but the program computes past the whole transfer before it reads: the
  // early return hides nearly all of what tnbc's schedule in the call takes, more than
  // TNBC_EARLY_RETURN_MARGIN_OWN_PCT (5 %) of that schedule's time, though less than the
  // busy-poll margin (45 %) of the library's much slower call (the rule before session 61) or of
  // that schedule's time (before session 62: docs/benchmarks.md, "Session 62").
  const Machine m = spinning_nodes(true);
  auto at = [&](int own_pct, int busy_poll_pct) {
    Settings s;
    s.early_return_margin_own_pct = own_pct;
    s.early_return_margin_busy_poll_pct = busy_poll_pct;
    return trace::decide(site(4 * kMiB, 92 * kMs, 200 * kMs, 0.55 * kMs), Kind::Alltoall, 4, judge(m, kSpinning, s));
  };
  const trace::Decision d = at(5, 45);
  REQUIRE(d.saved_ns);
  REQUIRE(d.own_call_ns);
  REQUIRE(d.beyond_own_ns);
  const double early_total = *d.comm_ns + *d.overlap_ns - *d.saved_ns;
  CHECK(*d.beyond_own_ns == Approx(*d.own_call_ns + *d.overlap_ns - early_total));
  CHECK(d.margin_ns == Approx(0.15 * std::max(0.0, d.cost_ns) + 0.05 * *d.own_call_ns));
  CHECK(*d.beyond_own_ns > d.margin_ns);
  CHECK(*d.beyond_own_ns <= 0.15 * std::max(0.0, d.cost_ns) + 0.45 * 92 * kMs);
  CHECK(d.basis == trace::Basis::OverlapPays);
  CHECK(trace::describe(d).find("faster than the library's: an early return saves") != std::string::npos);
  // The placement's share only decides whether tnbc's schedule beats the library's call.
  CHECK(at(5, 40).margin_ns == Approx(d.margin_ns));
  // A margin of the whole schedule's time holds it in the call, and the decision names the
  // setting and the largest share at which it would return early.
  const trace::Decision held = at(100, 45);
  REQUIRE(held.beyond_own_ns);
  REQUIRE(*held.beyond_own_ns < *held.own_call_ns);
  CHECK(held.basis == trace::Basis::OwnCallFaster);
  REQUIRE(held.early_at_pct);
  CHECK(held.margin_setting == "TNBC_EARLY_RETURN_MARGIN_OWN_PCT");
  CHECK(at(*held.early_at_pct, 45).basis == trace::Basis::OverlapPays);
  CHECK(at(*held.early_at_pct + 1, 45).basis == trace::Basis::OwnCallFaster);
  // With a margin of nothing, the early return's predicted saving over it decides.
  Settings s;
  s.early_return_margin_own_pct = 0;
  s.early_return_margin_cost_pct = 0;
  const trace::Decision bare =
      trace::decide(site(4 * kMiB, 92 * kMs, 200 * kMs, 0.55 * kMs), Kind::Alltoall, 4, judge(m, kSpinning, s));
  REQUIRE(bare.own_call_ns);
  CHECK(*bare.own_call_ns + *bare.overlap_ns > *bare.comm_ns + *bare.overlap_ns - *bare.saved_ns);
  CHECK(bare.basis == trace::Basis::OverlapPays);
}

TEST_CASE("own call: sizes unite into sorted, disjoint ranges") {
  const SizeBands a{{{16, 64}, {1024, SIZE_MAX}}};
  const SizeBands b{{{32, 128}, {256, 512}}};
  CHECK(unite(a, b).ranges == std::vector<std::pair<std::size_t, std::size_t>>{{16, 128}, {256, 512}, {1024, SIZE_MAX}});
  CHECK(unite(a, {}).ranges == a.ranges);
  CHECK(unite({}, {}).ranges.empty());
  CHECK(unite(SizeBands{{{16, 32}}}, SizeBands{{{32, 48}}}).ranges == std::vector<std::pair<std::size_t, std::size_t>>{{16, 48}});
}

namespace {
// An Alltoallv over `t`'s ranks whose middle half receive `heavy` times the others' block from
// every peer (NPB IS's buckets), the mean block `mean`: the heaviest receiver's block as the
// profile gives it (`bytes`), with or without the blocks themselves.
Coll skewed_alltoallv(const Topology& t, double mean, double heavy, bool with_blocks) {
  const int n = t.n();
  auto is_heavy = [&](int j) { return j >= n / 4 && j < n / 4 + (n + 1) / 2; };
  int heavies = 0;
  for (int j = 0; j < n; ++j) heavies += is_heavy(j);
  const double light = n / (heavies * heavy + (n - heavies));
  auto b = std::make_shared<Blocks>();
  b->n = n;
  for (int to = 0; to < n; ++to)
    for (int from = 0; from < n; ++from) b->bytes.push_back((is_heavy(to) ? heavy : 1) * light * mean);
  Coll c = alltoall(heavy * light * mean);
  c.kind = Kind::Alltoallv;
  if (with_blocks) c.blocks = b;
  return c;
}
}  // namespace

TEST_CASE("model: tnbc's schedule of an Alltoallv moves the trace's blocks; the library's call follows its heaviest receiver") {
  // Measured, np 4 on 2 one-CPU nodes, 2 MiB mean block, the middle ranks receiving 11x the
  // others': the library's call 185 ms uniform, 332 skewed; tnbc's schedule in the call 88 and 87
  // (docs/benchmarks.md, "Session 54"): its messages all posted at once, it is bound by the bytes
  // through each node, which the skew leaves as they are here.
  for (bool spin : {true, false}) {
    INFO("ranks spin: " << spin);
    const Machine m = spinning_nodes(spin);
    const Coll heaviest = skewed_alltoallv(kSpinning, 2 * kMiB, 11, false);
    const Coll traced = skewed_alltoallv(kSpinning, 2 * kMiB, 11, true);
    Coll uniform = alltoall(2 * kMiB);
    uniform.kind = Kind::Alltoallv;
    CHECK(mpi_blocking_ns(m, kSpinning, traced) == Approx(mpi_blocking_ns(m, kSpinning, heaviest)));
    CHECK(mpi_blocking_ns(m, kSpinning, traced) > 1.5 * mpi_blocking_ns(m, kSpinning, uniform));
    const double own_heaviest = own_call_ns(m, kSpinning, heaviest, Execution{});
    const double own_traced = own_call_ns(m, kSpinning, traced, Execution{});
    const double own_uniform = own_call_ns(m, kSpinning, uniform, Execution{});
    INFO("tnbc's schedule in the call: heaviest " << own_heaviest / kMs << " ms, the blocks " << own_traced / kMs
                                                  << " ms, the mean block " << own_uniform / kMs << " ms");
    CHECK(own_traced < 0.75 * own_heaviest);
    CHECK(own_traced >= own_uniform);  // a rank's own messages and copies still the heaviest's
    CHECK(own_traced < 1.25 * own_uniform);
    // The early return's transfer alike; its time in the call is the heaviest receiver's.
    const Timeline early_heaviest = tnbc_timeline(m, kSpinning, heaviest, Execution{}, true);
    const Timeline early_traced = tnbc_timeline(m, kSpinning, traced, Execution{}, true);
    CHECK(early_traced.total_ns < early_heaviest.total_ns);
    CHECK(early_traced.in_call_ns == Approx(early_heaviest.in_call_ns));
    // Blocks of another communicator size are not this topology's: ignored.
    Coll other = heaviest;
    other.blocks = skewed_alltoallv(Topology::block(6, 3, 1, 1), 2 * kMiB, 11, true).blocks;
    CHECK(own_call_ns(m, kSpinning, other, Execution{}) == Approx(own_heaviest));
  }
  // One rank per node, full duplex: the busier direction binds, as the heaviest receiver's block does.
  const Machine two = two_nodes();
  auto b = std::make_shared<Blocks>();
  b->n = 2;
  b->bytes = {0, 4 * kMiB, 0.5 * kMiB, 0};  // rank 0 receives 4 MiB from rank 1, rank 1 0.5 MiB
  Coll c = alltoall(4 * kMiB);
  c.kind = Kind::Alltoallv;
  const double heaviest = own_call_ns(two, kTwoNodes, c, Execution{});
  c.blocks = b;
  CHECK(own_call_ns(two, kTwoNodes, c, Execution{}) == Approx(heaviest));
}

TEST_CASE("model: on one node whose ranks do not spin, the library's Alltoallv moves the bytes of all its pairs") {
  // Its basic linear posts every pair's messages at once and the node's CPUs copy each byte:
  // measured, np 4 on one node of 2 CPUs (TCP loopback), is-proxy A with two ranks receiving 11x
  // the others' blocks, its heavy ranks' calls 51.7-54.3 ms, priced 93.5 at the heaviest
  // receiver's block for every pair and 50.7 by the pairs' bytes (docs/benchmarks.md, "Session 66").
  Machine m = test::machine(500);
  m.mpi_library = "Open MPI v4.1.4";
  m.at(LevelKind::IntraNode).node_sweep = {{1048576, 4, 2.0, 1.9, 2.0}, {4194304, 4, 2.1, 2.0, 2.1}};
  const Topology node = Topology::block(4, 4, 2, 1);
  REQUIRE_FALSE(spins_on(m, node));
  const Coll heaviest = skewed_alltoallv(node, 2 * kMiB, 11, false);
  const Coll traced = skewed_alltoallv(node, 2 * kMiB, 11, true);
  double pairs = 0;
  for (int to = 0; to < 4; ++to)
    for (int from = 0; from < 4; ++from)
      if (to != from) pairs += traced.blocks->at(to, from);
  const Level& l = m.at(LevelKind::IntraNode);
  CHECK(mpi_blocking_ns(m, node, traced) == Approx(pairs * l.node_exchange(pairs / 12, 4) + l.L_ns));
  CHECK(mpi_blocking_ns(m, node, heaviest) == Approx(12 * heaviest.bytes * l.node_exchange(heaviest.bytes, 4) + l.L_ns));
  CHECK(mpi_blocking_ns(m, node, traced) < 0.7 * mpi_blocking_ns(m, node, heaviest));
  // Even blocks: the same as without them.
  Coll even = alltoall(2 * kMiB);
  even.kind = Kind::Alltoallv;
  const double without = mpi_blocking_ns(m, node, even);
  auto b = std::make_shared<Blocks>();
  b->n = 4;
  b->bytes.assign(16, 2 * kMiB);
  even.blocks = b;
  CHECK(mpi_blocking_ns(m, node, even) == Approx(without));
  // Where the ranks spin (a node of one CPU whose ping-pong took scheduler slices), or the library's
  // rules are unknown, the heaviest receiver's block as before.
  Machine unknown = m;
  unknown.mpi_library = "Test MPI 1.0";
  CHECK(mpi_blocking_ns(unknown, node, traced) == Approx(mpi_blocking_ns(unknown, node, heaviest)));
  Machine spinning = spinning_nodes(true);
  spinning.mpi_library = m.mpi_library;
  spinning.nodes = 1;
  const Topology one_cpu = Topology::block(4, 4, 1, 1);
  REQUIRE(spins_on(spinning, one_cpu));
  CHECK(mpi_blocking_ns(spinning, one_cpu, skewed_alltoallv(one_cpu, 2 * kMiB, 11, true)) ==
        Approx(mpi_blocking_ns(spinning, one_cpu, skewed_alltoallv(one_cpu, 2 * kMiB, 11, false))));
}

TEST_CASE("decision: an Alltoallv site's blocks price tnbc's schedule where the site's ranks are the world's") {
  const Machine m = spinning_nodes(true);
  const Coll traced = skewed_alltoallv(kSpinning, 2 * kMiB, 11, true);
  trace::SiteEstimate e = site(4 * traced.bytes, 330 * kMs, 1 * kMs, 5 * kMs);  // own block included
  const trace::Decision heaviest = trace::decide(e, Kind::Alltoallv, 4, judge(m, kSpinning));
  e.blocks = traced.blocks;
  const trace::Decision with_blocks = trace::decide(e, Kind::Alltoallv, 4, judge(m, kSpinning));
  REQUIRE(heaviest.own_call_ns);
  REQUIRE(with_blocks.own_call_ns);
  CHECK(*with_blocks.own_call_ns < 0.75 * *heaviest.own_call_ns);
  CHECK(*with_blocks.model_blocking_ns == Approx(*heaviest.model_blocking_ns));
  CHECK(with_blocks.by_blocks);
  CHECK_FALSE(heaviest.by_blocks);
  CHECK(trace::describe(with_blocks).find("priced from the trace's blocks per pair") != std::string::npos);
  CHECK(trace::describe(heaviest).find("blocks per pair") == std::string::npos);
  // A site over 4 of a world of 6 ranks: its profile ranks are not its communicator's places.
  const Topology six = Topology::block(6, 3, 1, 1);
  e.blocks = traced.blocks;
  const trace::Decision part = trace::decide(e, Kind::Alltoallv, 4, judge(m, six));
  e.blocks = nullptr;
  const trace::Decision part_heaviest = trace::decide(e, Kind::Alltoallv, 4, judge(m, six));
  REQUIRE(part.own_call_ns);
  CHECK(*part.own_call_ns == Approx(*part_heaviest.own_call_ns));
  CHECK_FALSE(part.by_blocks);
}

TEST_CASE("model: a broadcast's root returning early, and receivers waiting for a late root") {
  Machine m = two_nodes();
  m.cpus_per_node = 1;
  const Topology one_cpu = Topology::block(2, 1, 1, 1), spare = Topology::block(2, 1, 2, 2);
  const Coll b = bcast(2 * kMiB);
  const Program p{2 * kMs, 1 * kMs};  // X = 3 ms
  // A root whose blocking call was shorter than tnbc's time in its call loses the difference.
  const double in_call = bcast_root_in_call_ns(m, one_cpu, b, Execution{});
  const Overlap short_call = bcast_root_overlap(m, one_cpu, b, Execution{}, p, 0.5 * in_call);
  CHECK(short_call.hidden_ns == 0);
  CHECK(short_call.saved_ns == Approx(-0.5 * in_call));
  // A long one gains its call's time less Tinit, at most X (its next call on the buffer waits for the sends).
  const double spare_in_call = bcast_root_in_call_ns(m, spare, b, Execution{});
  CHECK(bcast_root_overlap(m, spare, b, Execution{}, p, spare_in_call + 50 * kMs).saved_ns == Approx(3 * kMs));
  CHECK(bcast_root_overlap(m, spare, b, Execution{}, p, spare_in_call + 2 * kMs).saved_ns == Approx(2 * kMs));
  // Where its node has no CPU to spare, the sends its call had made come out of the computation
  // after it: a root whose call was that work (its message buffered) saves nothing.
  m.cpu_taken_bcast = fit_through({2 * kMiB}, {10 * kMs});
  const Overlap one = bcast_root_overlap(m, one_cpu, b, Execution{}, p, in_call + 2 * kMs);
  CHECK(one.saved_ns == Approx(0).margin(1e3));
  CHECK(one.cost_ns == Approx(2 * kMs).epsilon(0.01));
  // The receivers' wait for a late root: in Tcomm and in the early return's call alike, not in
  // the transfer the measured time scales; without it the same time reads as a slower transfer.
  const double T = mpi_blocking_ns(m, one_cpu, b);
  const Overlap together = overlap(m, one_cpu, b, Execution{}, p, T);
  const Overlap late = overlap(m, one_cpu, b, Execution{}, p, T + 10 * kMs, 10 * kMs);
  CHECK(late.late_ns == Approx(10 * kMs));
  CHECK(late.scale == Approx(together.scale));
  CHECK(late.in_call_ns == Approx(together.in_call_ns + 10 * kMs));
  CHECK(late.hidden_ns == Approx(together.hidden_ns));
  CHECK(late.saved_ns == Approx(together.saved_ns));
  const Overlap unseen = overlap(m, one_cpu, b, Execution{}, p, T + 10 * kMs);
  CHECK(unseen.late_ns == 0);
  CHECK(unseen.scale > together.scale);
  CHECK(unseen.in_call_ns == Approx(together.in_call_ns));
  // A wait longer than the measured call is clamped to it.
  CHECK(overlap(m, one_cpu, b, Execution{}, p, T, 2 * T).late_ns == Approx(T));
}
