#include "runtime/model/estimate.hh"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/coll/builders.hh"
#include "runtime/model/bands.hh"
#include "runtime/model/busy_poll.hh"
#include "runtime/model/mpi_algorithms.hh"

namespace tnbc::model {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Sizes the decisions evaluate the transfer at: the per-byte time of a call (piece_scale) and
// the largest threshold searched.
constexpr double kReferenceBytes = kMiB;
constexpr double kLargestThreshold = 1024.0 * kMiB;
// A broadcast of Open MPI's and MPICH's own is a pipelined tree of segments this large (their
// tuned defaults for large messages); below it one message per tree edge.
constexpr double kMpiBcastSegment = 128 * 1024;
// Segment counts whose reader finish time is within this share of the best count's are as good:
// the fewest of them is taken (fewer messages; stable when measured costs move a little).
constexpr double kSegmentTolerance = 0.02;

// A level the machine measured: `k` if it was, else the other one (a one-level machine file or
// probe describes the machine's only level).
const Level& level(const Machine& m, LevelKind k) {
  if (m.at(k).measured) return m.at(k);
  return m.at(k == LevelKind::IntraNode ? LevelKind::InterNode : LevelKind::IntraNode);
}

// The guard backend `x` uses (its costs), or a free one; where the engine takes a second one per
// call by its size (x.guard_by_size), the cheaper of the two at each size (guard_envelope).
GuardCost guard_of(const Machine& m, const Execution& x) {
  auto usable = [&](int b) { return b >= 0 && b < kGuardBackends && m.guard_measured[b]; };
  if (usable(x.guard) && usable(x.guard_by_size) && x.guard_by_size != x.guard)
    return guard_envelope(m.guard[x.guard], m.guard[x.guard_by_size]);
  if (usable(x.guard)) return m.guard[x.guard];
  for (int b = 0; b < kGuardBackends; ++b)
    if (m.guard_measured[b]) return m.guard[b];
  return {};
}

// The peers of the rank of the busiest node, per level: a representative rank (the exchange
// family is symmetric; the busiest node shares its resources among the most ranks).
struct Peers {
  int n = 1, M = 1;
  double k[kLevels] = {0, 0};
};
Peers peers(const Topology& t) {
  Peers p;
  p.n = t.n();
  p.M = t.max_per_node();
  p.k[static_cast<int>(LevelKind::IntraNode)] = p.M - 1;
  p.k[static_cast<int>(LevelKind::InterNode)] = p.n - p.M;
  return p;
}

// Piece sizes of a sub-message of `s` bytes, as the builders cut it (split_points).
std::vector<double> pieces_of(double s, const PieceRule& rule, std::size_t page) {
  std::vector<double> out;
  if (s <= 0) return out;
  const auto len = static_cast<std::size_t>(s);
  const auto cuts = split_points(len, page, rule);
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) out.push_back(static_cast<double>(cuts[i + 1] - cuts[i]));
  return out;
}

// What an exchange moves through one node: bytes between its ranks, into it, out of it, and the
// largest block between two of its ranks.
struct NodeBytes {
  double inside = 0, into = 0, out = 0, pair = 0;
};

// Per node of `t`: every block `s` (pair `s`), or from `blocks` where they are `t`'s (one pass).
std::vector<NodeBytes> node_bytes(const Topology& t, double s, const Blocks* blocks) {
  const int n = t.n();
  std::vector<NodeBytes> nb(static_cast<std::size_t>(t.nodes()));
  if (blocks == nullptr || blocks->n != n) {
    for (std::size_t j = 0; j < nb.size(); ++j) {
      const double M = t.ranks_on(static_cast<int>(j));
      nb[j] = {M * (M - 1) * s, M * (n - M) * s, M * (n - M) * s, s};
    }
    return nb;
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      NodeBytes& to = nb[static_cast<std::size_t>(t.node[static_cast<std::size_t>(a)])];
      NodeBytes& from = nb[static_cast<std::size_t>(t.node[static_cast<std::size_t>(b)])];
      const double v = blocks->at(a, b);  // a receives from b
      if (&to == &from) to.inside += v, to.pair = std::max(to.pair, v);
      else to.into += v, from.out += v;
    }
  for (std::size_t j = 0; j < nb.size(); ++j)
    if (t.ranks_on(static_cast<int>(j)) <= 1) nb[j].pair = s;  // no pair inside: as without blocks
  return nb;
}

// Bytes through each node's shared resources for an exchange of `s` per peer, the slowest node.
// `stretch`: the copies inside a node take that much longer (Crowding), the wire not;
// `head_bytes`: what the node's link takes before its rate applies (an idle link's head start,
// Level::head_bytes; only mode nbc's weighing passes it: exchange_idle_link). `blocks` (tnbc's
// schedule of an Alltoallv with the trace's blocks): each node's bytes from them (node_bytes):
// its link bound by the busier direction, or both at the link's two-way rate.
double exchange_node_bound(const Machine& m, const Topology& t, double s, double stretch = 1, double head_bytes = 0,
                           const Blocks* blocks = nullptr) {
  const BusyPoll spin = spins_on(m, t) ? busy_poll(m) : BusyPoll{};
  const Level &in = level(m, LevelKind::IntraNode), &out = level(m, LevelKind::InterNode);
  const std::vector<NodeBytes> nodes = node_bytes(t, s, blocks);
  double worst = 0;
  for (int j = 0; j < t.nodes(); ++j) {
    const NodeBytes& b = nodes[static_cast<std::size_t>(j)];
    const int ranks = t.ranks_on(j);
    const double M = ranks;
    const double block = M > 1 ? b.inside / (M * (M - 1)) : s;  // the mean block between the node's ranks
    // Inside the node at the rate of this size with this many ranks exchanging (own blocks
    // included); where they spin on fewer CPUs, one fragment per hand-off for every pair at once.
    const double intra = spin.spins() ? handoff_ns(spin, b.pair, ranks, t.cpus_per_node)
                         : b.inside > 0 ? stretch * b.inside * in.node_exchange(block, ranks)
                                        : 0.0;
    const double v_in = std::max(0.0, b.into - head_bytes), v_out = std::max(0.0, b.out - head_bytes);  // past an idle link's head start
    const double inter = std::max(std::max(v_in, v_out) * out.node_out(), (v_in + v_out) * out.node_bi());
    worst = std::max(worst, std::max(intra, inter));
  }
  return worst;
}

// The largest latency of a level the topology uses.
double latency(const Machine& m, const Topology& t) {
  const Peers p = peers(t);
  double l = 0;
  for (int k = 0; k < kLevels; ++k)
    if (p.k[k] > 0) l = std::max(l, level(m, static_cast<LevelKind>(k)).L_ns);
  return l;
}

// What a sub-message's messages cost a representative rank: sending them one after another
// (sum of gaps), the CPU at both ends, and through a send window of `window`.
struct Stream {
  double gaps = 0, cpu = 0, windowed = 0;
  int messages = 0;
};
Stream exchange_stream(const Machine& m, const Topology& t, const std::vector<double>& sizes, int window, double notice) {
  const Peers p = peers(t);
  Stream st;
  for (int k = 0; k < kLevels; ++k) {
    if (p.k[k] <= 0) continue;
    const Level& l = level(m, static_cast<LevelKind>(k));
    for (double q : sizes) {
      st.gaps += p.k[k] * l.g(q);
      st.cpu += p.k[k] * (l.o_s(q) + l.o_r(q));
      st.windowed += p.k[k] * (window > 0 ? std::max(l.g(q), (l.T(q) + notice) / window) : l.g(q));
      st.messages += static_cast<int>(p.k[k]);
    }
  }
  return st;
}

// Per received byte and per region, what publishing costs with the guard in use.
double publication(const GuardCost& g, double regions, double bytes) {
  if (g.publish.points.empty()) return regions * g.publish.ns + bytes * g.publish.ns_per_byte;
  return g.publish.at(bytes) + std::max(0.0, regions - 1) * publish_per_region(g);
}

// The polls a driver makes while a collective is in flight for `duration`: each a test of the
// pending requests, one per sleep of TNBC_POLL_MIN_US (as long as traffic moves).
double poll_cpu(const Machine& m, double duration) {
  const double period = std::max(1.0, m.sleep_ns + m.test_ns);
  return duration / period * m.test_ns;
}

// Where a node's ranks outnumber its CPUs, tnbc's progress threads (one per rank; the program of
// a rank that waits for its data sleeps in the guard's fault) share the CPUs: a piece a thread
// receives is copied on a CPU it gets a share of only (the ranks per CPU), and each of its
// wake-ups waits for a CPU (the machine's measured wake_loaded_ns; not measured, the probe: none;
// the broadcast's forwards only: node-level priorities price the exchange's, node_choice.hh).
// Where the MPI library's ranks spin (busy_poll.hh), tnbc's timeline takes the yielding machine's
// rates, measured against tnbc's own runs there (ft-proxy W on 2 one-CPU nodes): no stretch.
struct Crowding {
  double stretch = 1;  // how much longer tnbc's copies inside a node take
  double wake_ns = 0;  // what each wake-up of a forwarding thread waits for a CPU
};
Crowding crowding(const Machine& m, const Topology& t) {
  Crowding c;
  if (spins_on(m, t) || t.cpu_stretch() <= 1) return c;
  c.stretch = t.cpu_stretch();
  c.wake_ns = std::max(0.0, m.wake_loaded_ns);
  return c;
}

// An early return's work in the call where the node's ranks are crowded (crowded_call, below):
// all but the rest calibrate measured (`rest_ns`) at the ranks per CPU.
double crowded_work(const Crowding& crowd, double work_ns, double rest_ns) {
  return work_ns + (crowd.stretch - 1) * std::max(0.0, work_ns - rest_ns);
}

// How soon a calling thread that waits in its call (for the pieces that land in partial pages)
// sees one arrive: it polls back to back (runtime/policy.cc, waiting()); where the node's ranks
// outnumber its CPUs it yields between polls, and is priced as sleeping as the progress thread
// does (it also yields where its own progress thread shares its CPU: a system call a poll while
// that thread has nothing to run, within the back-to-back price).
double in_call_notice(const Machine& m, const Topology& t) { return t.cpu_stretch() > 1 ? m.O_r_ns() : m.test_ns; }

// ---- exchange family ----

Timeline exchange_timeline(const Machine& m, const Topology& t, const Coll& c, const Execution& x, bool early,
                           const Crowding& crowd) {
  Timeline tl;
  const Peers p = peers(t);
  const double s = c.bytes, n1 = p.n - 1;
  const double notice = m.O_r_ns();
  const GuardCost g = guard_of(m, x);
  const std::vector<double> sizes = pieces_of(s, c.pieces, c.page);
  const double pieces = static_cast<double>(sizes.size());
  const double body = pieces > 2 ? pieces - 2 : std::max(1.0, pieces);
  const double page = static_cast<double>(c.page);
  const Level& top = level(m, p.k[static_cast<int>(LevelKind::InterNode)] > 0 ? LevelKind::InterNode : LevelKind::IntraNode);
  const Line& copy = m.in_call_copy();  // the own block and the send staging, in the call
  // In the call: the own block into place; an early return also stages the data to send
  // (copied piece by piece, or its pages made read-only), holds the received pages back, starts
  // the heads and tails, waits for those that land in partial pages, and hands the rest over to
  // the progress thread (Machine::handover_ns); its bookkeeping besides, measured by calibrate
  // running tnbc's own early return (Machine::in_call_rest).
  const double own = copy.at(s);
  double post = 0;
  for (int k = 0; k < kLevels; ++k)
    if (p.k[k] > 0) post += p.k[k] * (pieces > 1 ? 2 : 1) * level(m, static_cast<LevelKind>(k)).o_s(std::min(s, page));
  if (early) {
    const bool warm = m.warm(Machine::exchange_touched(p.n, s));
    double stage = 0;
    if (!x.eager_copy) stage = m.guard_measured[2] ? m.guard[2].hold_at(n1 * s, warm) : 0;
    else
      for (double piece : sizes) stage += n1 * copy.at(piece);
    const double hold = g.hold_at(n1 * s, warm);
    const double wait = x.unaligned ? top.T(page) + in_call_notice(m, t) : 0;
    tl.in_call_rest_ns = m.rest(n1 * s, warm);
    tl.in_call_work_ns = own + stage + hold + post + m.handover(warm) + tl.in_call_rest_ns;
    tl.in_call_ns = tl.in_call_work_ns + wait;
  } else {
    tl.in_call_ns = tl.in_call_work_ns = own + post;
  }
  const Stream st = exchange_stream(m, t, sizes, early ? x.window : 0, notice);
  tl.regions = early ? n1 * (body + (x.unaligned && body > 1 ? body - 1 : 0)) : 0;
  tl.publish_ns = early ? publication(g, tl.regions, n1 * s) : 0;
  const double cpu = st.cpu + tl.publish_ns;
  // Read at once, the node's copies run on its progress threads, which share the CPUs where the
  // ranks outnumber them (crowding): measured, np 4 on 2 CPUs, tnbc's exchange read at
  // once took 2.0-2.4x PMPI_Alltoall at 1-4 MiB per peer, whose node rate is measured with its
  // ranks on the same CPUs (docs/benchmarks.md, "RMA broadcast", session 13).
  const double nodes = exchange_node_bound(m, t, s, early ? crowd.stretch : 1, 0, c.blocks.get());
  const double flow = std::max({nodes, st.windowed, st.gaps, cpu * t.cpu_stretch()});
  const double last = sizes.empty() ? 0 : sizes.back();
  const double tail = top.L_ns + notice + (early ? g.publish.at(last) : 0);
  tl.total_ns = tl.in_call_ns + flow + tail;
  tl.driver_cpu_ns = cpu + poll_cpu(m, flow + tail);
  for (int k = 0; k < kLevels; ++k)
    if (const Level& l = level(m, static_cast<LevelKind>(k)); p.k[k] > 0 && l.shared_cpu_measured())
      tl.shared_cpu_ns += l.shared_cpu.at(p.k[k] * s);  // each way, with the level's peers
  tl.messages = st.messages;
  // Sends in flight together share the link fragment by fragment (the MPI library interleaves
  // them, on one connection and across connections), so the pieces of a send window arrive
  // together: the first piece a reader needs comes with the first window (or, in ring order with
  // more peers than the window, half a round on average), and the last window's share of the data
  // is in the reader's hands only at the end. Measured on the emulated link, np 2, window 4: the
  // 208 KiB pieces of a 4 MiB Alltoall arrived in fours every ~6.8 ms (docs/benchmarks.md,
  // "Session 18"). With node-level priorities one piece at a time.
  const double all_pieces = std::max(1.0, n1 * body);
  const double together = x.window > 0 ? std::min(all_pieces, static_cast<double>(x.window)) : all_pieces;
  const double piece_time = flow / all_pieces;
  const double first_piece = sizes.size() > 2 ? sizes[1] : s;
  tl.first_ns = tl.in_call_ns + (x.node_priorities ? top.T(first_piece) : std::max(together, n1 / 2) * piece_time + top.L_ns) +
                notice + (early ? g.publish.at(first_piece) : 0);
  const double last_round = x.node_priorities ? 1.0 : n1;  // pieces: one from each peer
  tl.round_share = last_round / all_pieces;
  // (Of all the bytes a reader reads: its own block, copied in the call, is not in the stream.)
  tl.last_share = (x.node_priorities ? 1.0 : std::max(together, last_round)) / all_pieces * n1 / p.n;
  return tl;
}

// The exchange as the MPI library's call takes it on links that were idle before it (what mode
// nbc, with no measured Tcomm, weighs its sizes with: read_once_balance, exchange_floor): a rank's
// k messages to other nodes LogGP's T(m) + (k - 1) g(m), the first one alone on the link (the
// ping-pong's T: with the link's head start, Level::head_bytes), and the node's bound past the
// head start. On the emulated links (tbf's 256 KiB burst) 64 KiB per peer, np 2 on 2 nodes: 0.16
// ms where the rate gives 0.58, measured 0.09-0.22 (docs/benchmarks.md, "Session 20"). The
// estimates with a measured Tcomm (mode optimize) keep mpi_blocking_ns: its scale then carries
// the burst to tnbc's schedule alike, which predicted 128-512 KiB per peer within the measured
// sign and size, where this one, taken for both, did not.
double exchange_idle_link(const Machine& m, const Topology& t, const Coll& c) {
  const Stream st = exchange_stream(m, t, {c.bytes}, 0, 0);
  const Peers p = peers(t);
  double messages = 0;
  for (int k = 0; k < kLevels; ++k)
    if (p.k[k] > 0) {
      const Level& l = level(m, static_cast<LevelKind>(k));
      messages += static_cast<LevelKind>(k) == LevelKind::InterNode ? l.T(c.bytes) - l.L_ns + (p.k[k] - 1) * l.g(c.bytes)
                                                                    : p.k[k] * l.g(c.bytes);
    }
  const Level& out = level(m, LevelKind::InterNode);
  const double head = p.k[static_cast<int>(LevelKind::InterNode)] > 0 ? out.head_bytes() : 0;
  return std::max({exchange_node_bound(m, t, c.bytes, 1, head), messages, st.cpu * t.cpu_stretch()}) + latency(m, t);
}

double exchange_mpi(const Machine& m, const Topology& t, const Coll& c) {
  const Stream st = exchange_stream(m, t, {c.bytes}, 0, 0);
  const double flow = std::max({exchange_node_bound(m, t, c.bytes), st.gaps, st.cpu * t.cpu_stretch()});
  return flow + latency(m, t);
}

// ---- broadcast ----

// The children of relative rank `v` (the root is 0): the binomial tree of runtime/coll/bcast.cc
// (largest subtree first), or all ranks from the root (linear).
std::vector<int> tree_children(int v, int n, BcastTree shape) {
  if (shape == BcastTree::Binomial) return bcast_children(v, n, 0);
  std::vector<int> all;
  if (shape == BcastTree::Chain) {
    if (v + 1 < n) all.push_back(v + 1);
  } else if (v == 0) {
    for (int c = 1; c < n; ++c) all.push_back(c);
  }
  return all;
}

struct TreeResult {
  double last = 0;        // the last piece published at the last rank
  double first_mean = 0;  // mean over the receivers of when piece `first_of_interest` is published
  double inner_cpu = 0;   // CPU of the busiest inner rank's driver
};

// Pieces `sizes` (in sending order) down a tree from the root, which has them all at `start`.
// A rank forwards a piece once it has it (noticed and published), to its children one after
// another, no faster than its gap; each message takes T(q) at its level, its copy (all but the
// latency) and gap `stretch` times longer where the copying threads share CPUs (tnbc's progress
// threads on a node with more ranks than CPUs: crowding; the MPI library's own: 1). From
// `first_of_interest` on, the pieces are in flight `together` at a time: the MPI library
// interleaves them fragment by fragment, so each group is in when its last piece is (1: one at
// a time). An inner rank publishes each piece with `publish`, a leaf with `leaf_publish`, and
// neither before `ready`: a receiver's pieces are its progress thread's to publish and forward
// once its own call has handed them over (an early return; 0: from the start).
TreeResult tree(const Machine& m, const Topology& t, int root, const std::vector<double>& sizes, BcastTree shape,
                double start, double notice, const Line& publish, const Line& leaf_publish, std::size_t first_of_interest,
                double stretch = 1, std::size_t together = 1, double ready = 0) {
  const int n = t.n();
  const std::size_t P = sizes.size();
  TreeResult r;
  if (n <= 1 || P == 0) return r;
  std::vector<std::vector<double>> have(static_cast<std::size_t>(n), std::vector<double>(P, 0));
  std::vector<double> cpu(static_cast<std::size_t>(n), 0);
  std::vector<int> order{0};  // relative ranks, parents before children
  std::vector<std::vector<int>> kids(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int v = order[i];
    kids[static_cast<std::size_t>(v)] = tree_children(v, n, shape);
    for (int c : kids[static_cast<std::size_t>(v)]) order.push_back(c);
  }
  std::fill(have[0].begin(), have[0].end(), start);
  for (int v : order) {
    const auto& ch = kids[static_cast<std::size_t>(v)];
    double free_at = have[static_cast<std::size_t>(v)][0];  // the rank's link: next send no sooner
    for (std::size_t q = 0; q < P; ++q) {
      for (int c : ch) {
        const Level& l = level(m, t.level((v + root) % n, (c + root) % n));
        const double send = std::max(have[static_cast<std::size_t>(v)][q], free_at);
        free_at = send + stretch * l.g(sizes[q]);
        const double arrive = send + stretch * (l.T(sizes[q]) - l.L_ns) + l.L_ns;
        const double published = (kids[static_cast<std::size_t>(c)].empty() ? leaf_publish : publish).at(sizes[q]);
        have[static_cast<std::size_t>(c)][q] = std::max(arrive + notice, ready) + published;
        cpu[static_cast<std::size_t>(v)] += l.o_s(sizes[q]);
        cpu[static_cast<std::size_t>(c)] += l.o_r(sizes[q]) + published;
      }
    }
    for (int c : ch) {
      std::vector<double>& h = have[static_cast<std::size_t>(c)];
      for (std::size_t g = first_of_interest; g < P; g += std::max<std::size_t>(1, together)) {
        const std::size_t end = std::min(P, g + std::max<std::size_t>(1, together));
        const double in = *std::max_element(h.begin() + static_cast<std::ptrdiff_t>(g), h.begin() + static_cast<std::ptrdiff_t>(end));
        std::fill(h.begin() + static_cast<std::ptrdiff_t>(g), h.begin() + static_cast<std::ptrdiff_t>(end), in);
      }
    }
  }
  double sum = 0;
  for (int v = 1; v < n; ++v) {
    r.last = std::max(r.last, have[static_cast<std::size_t>(v)][P - 1]);
    for (double h : have[static_cast<std::size_t>(v)]) r.last = std::max(r.last, h);
    sum += have[static_cast<std::size_t>(v)][std::min(first_of_interest, P - 1)];
  }
  r.first_mean = sum / (n - 1);
  for (double c : cpu) r.inner_cpu = std::max(r.inner_cpu, c);
  return r;
}

// Bytes a broadcast moves through each node's resources (every tree edge carries the message).
double bcast_node_bound(const Machine& m, const Topology& t, double bytes, int root, BcastTree shape) {
  const int n = t.n();
  std::vector<double> out(static_cast<std::size_t>(t.nodes()), 0), in(out.size(), 0), intra(out.size(), 0);
  for (int v = 0; v < n; ++v) {
    const std::vector<int> ch = tree_children(v, n, shape);
    for (int c : ch) {
      const int a = (v + root) % n, b = (c + root) % n;
      const auto na = static_cast<std::size_t>(t.node[static_cast<std::size_t>(a)]);
      const auto nb = static_cast<std::size_t>(t.node[static_cast<std::size_t>(b)]);
      if (na == nb) {
        intra[na] += bytes;
      } else {
        out[na] += bytes;
        in[nb] += bytes;
      }
    }
  }
  const Level &li = level(m, LevelKind::IntraNode), &lo = level(m, LevelKind::InterNode);
  const BusyPoll spin = spins_on(m, t) ? busy_poll(m) : BusyPoll{};
  double worst = 0, handoffs = 0;
  for (std::size_t j = 0; j < out.size(); ++j) {
    const int ranks = t.ranks_on(static_cast<int>(j));
    // Spinning ranks: the node's edges hand their fragments off in the same rounds, and the
    // hand-offs of different nodes add up rather than overlap: measured, np 4 on 2 one-CPU nodes,
    // the library's chain from 1 MiB (one edge through shared memory on each node) took 2.1-2.3x
    // one node's hand-offs (docs/benchmarks.md, the cost model, session 12).
    if (spin.spins()) handoffs += intra[j] > 0 ? handoff_ns(spin, bytes, ranks, t.cpus_per_node) : 0;
    const double shm = spin.spins() ? handoffs : intra[j] * li.node_ring(bytes, ranks);
    worst = std::max({worst, shm,
                      std::max(out[j], in[j]) * lo.node_out(), (out[j] + in[j]) * lo.node_bi()});
  }
  return worst;
}

std::vector<double> split(double bytes, double piece) {
  std::vector<double> out;
  if (bytes <= 0) return out;
  const double k = std::max(1.0, std::ceil(bytes / std::max(1.0, piece)));
  for (int i = 0; i < static_cast<int>(k); ++i) out.push_back(bytes / k);
  return out;
}

// The pieces of tnbc's broadcast in sending order: first page, last page, the middle pieces.
std::vector<double> bcast_pieces(const Coll& c) {
  const auto bytes = static_cast<std::size_t>(c.bytes);
  const auto chunks = bcast_chunks(bytes, c.page, std::max(1, c.segments));
  std::vector<double> out;
  if (chunks.size() <= 2) {
    for (const Chunk& ch : chunks) out.push_back(static_cast<double>(ch.length));
    return out;
  }
  out.push_back(static_cast<double>(chunks.front().length));
  out.push_back(static_cast<double>(chunks.back().length));
  const std::size_t middle = chunks.size() - 2;
  const std::size_t per = std::max<std::size_t>(1, kMaxBodyPieces / middle);
  const PieceSetting setting = c.pieces.setting ? c.pieces.setting : PieceSetting{0};
  for (std::size_t k = 1; k + 1 < chunks.size(); ++k) {
    const Chunk& ch = chunks[k];
    std::size_t at = ch.offset;
    for (std::size_t cut : body_cuts(ch.offset, ch.offset + ch.length, c.page, piece_limit(ch.length, c.page, setting), per)) {
      out.push_back(static_cast<double>(cut - at));
      at = cut;
    }
    out.push_back(static_cast<double>(ch.offset + ch.length - at));
  }
  return out;
}

int bcast_depth(const Topology& t) { return static_cast<int>(std::ceil(std::log2(std::max(1, t.n())))); }
const Level& bcast_level(const Machine& m, const Topology& t) {
  return level(m, t.nodes() > 1 ? LevelKind::InterNode : LevelKind::IntraNode);
}

// A receiving rank's early-returning call (every rank but the root): its work — the guard's hold,
// the hand-over, the rest calibrate measured (Machine::rest_bcast) — and its waits for the edge
// pieces that land in partial pages, one per stage of the tree.
struct ReceiverCall {
  double work_ns = 0, wait_ns = 0;
};
ReceiverCall receiver_call(const Machine& m, const Topology& t, const Coll& c, const Execution& x, std::size_t pieces) {
  const double S = c.bytes;
  const bool warm = m.warm(S);  // the message fits in the cache (Machine::warm)
  const Level& top = bcast_level(m, t);
  ReceiverCall r;
  r.work_ns = guard_of(m, x).hold_at(S, warm) + m.handover(warm) + m.rest_bcast(S, warm);
  if (x.unaligned && pieces > 1) r.wait_ns = bcast_depth(t) * (top.T(static_cast<double>(c.page)) + in_call_notice(m, t));
  return r;
}

// The broadcast's root starts every piece's send in its call (else the two edges' only) where its
// progress thread has no CPU of its own or no send window (runtime/policy.cc, caller_starts_sends),
// unless TNBC_BCAST_SEND_WINDOW gives its pieces a window of their own.
bool root_starts_all_sends(const Topology& t, const Execution& x) {
  return x.bcast_window < 1 && (t.spare_cpu() <= 0 || x.window < 1);
}
// The progress thread's window for a broadcast's pieces (TNBC_BCAST_SEND_WINDOW, else TNBC_SEND_WINDOW).
int bcast_window(const Execution& x) { return x.bcast_window > 0 ? x.bcast_window : x.window; }

// The root's early-returning call: its copy of the message (Machine::in_call_copy_alone, where
// the guard cannot hold its pages: Execution::eager_copy), the sends it starts in the call
// (root_starts_all_sends), to each of its children: measured, 1 MiB on 2 nodes, ~0.1 ms of
// MPI_Isend calls the model had not priced (docs/benchmarks.md, "Session 20") —, the hand-over
// and the rest calibrate measured of the root's own call (Machine::rest_bcast_root).
double root_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x,
                    const std::vector<double>& sizes) {
  const double S = c.bytes, page = static_cast<double>(c.page);
  const Level& top = bcast_level(m, t);
  const bool all_sends = root_starts_all_sends(t, x);
  double posts = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (all_sends || i < 2) posts += top.post(sizes[i], page);  // bcast_pieces: the two edges first
  const bool warm = m.warm(S);  // the message fits in the cache (Machine::warm)
  return (x.eager_copy ? m.in_call_copy_alone().at(S) : 0) + std::max(1, bcast_depth(t)) * posts + m.handover(warm) +
         m.rest_bcast_root(S, warm);
}

Timeline bcast_timeline(const Machine& m, const Topology& t, const Coll& c, const Execution& x, bool early,
                        const Crowding& crowd) {
  Timeline tl;
  const double S = c.bytes;
  const double notice = m.O_r_ns() + (early ? crowd.wake_ns : 0);
  const GuardCost g = guard_of(m, x);
  const std::vector<double> sizes = bcast_pieces(c);
  const int depth = bcast_depth(t);
  const Level& top = bcast_level(m, t);
  // Inner ranks forward from the receive staging, so they publish by copying (no page swap);
  // leaves publish as the guard does (uffd_backend.cc, can_swap: a leaf sends nothing). Priced
  // as inner ranks until session 27: np 2 on one node, 4-16 MiB, the model put the leaf's read at
  // once 0.8-2.1 ms after the measured one, about the copy publication it does not do.
  const GuardCost inner = m.guard_measured[1] ? m.guard[1] : g;
  double root_call = 0, leaf_call = 0, leaf_work = 0;
  const bool all_sends = root_starts_all_sends(t, x);
  if (early) {
    root_call = root_call_ns(m, t, c, x, sizes);  // (each early return ends with the hand-over: Machine::handover_ns)
    const ReceiverCall leaf = receiver_call(m, t, c, x, sizes.size());
    leaf_work = leaf.work_ns;
    leaf_call = leaf.work_ns + leaf.wait_ns;
  }
  tl.in_call_ns = std::max(root_call, leaf_call);
  tl.in_call_work_ns = std::max(root_call, leaf_work);
  if (early) tl.in_call_rest_ns = root_call >= leaf_call ? m.rest_bcast_root(S, m.warm(S)) : m.rest_bcast(S, m.warm(S));
  // After an early return the root's progress thread takes the sends over: it notices the
  // call (the hand-off) before the tree moves on from the root.
  const double handoff = early ? notice : 0;
  // Read at once, every rank's program sleeps while the progress threads move the pieces: on a
  // node with more ranks than CPUs they share them (crowding; session 12 measured tnbc's
  // broadcast read at once at np 4 on 2 CPUs about 2x what the timeline gave without it).
  // Sends in flight together share the link fragment by fragment (as the exchange's window, above):
  // the middle pieces arrive a send window (TNBC_SEND_WINDOW) at a time, and all together where
  // the root starts every send in its call. Measured there, np 2 on 2 nodes: 1 MiB in 5 pieces,
  // the first 4 in at 5.5 ms, the 5th at 7.7; a reader reading at once (Table 1 (b), (c), 1-16
  // MiB) gained nothing from the pieces (-1.7..+0.5 ms against blocking), which one group prices
  // and a window of 4 did not (+21..+25 % of Tcomm predicted; docs/benchmarks.md, "Session 20").
  // The reader gets the first with the first group and reads the last group's share after the end.
  const std::size_t mids = sizes.size() > 2 ? sizes.size() - 2 : 1;
  const std::size_t together = all_sends ? mids : std::min(mids, static_cast<std::size_t>(bcast_window(x)));
  // A receiver's progress thread publishes (and an inner rank's forwards) what arrived during the
  // receiver's own call once that call has handed its steps over (leaf_call). Before session 28
  // the tree let a piece be in as it arrived: where the call (its guard's hold) outlasts the
  // arrivals, nothing was left after the return and a reader reading at once paid no wake-up.
  const TreeResult r = tree(m, t, c.root, sizes, BcastTree::Binomial, root_call + handoff, notice,
                            early ? inner.publish : Line{}, early ? g.publish : Line{}, sizes.size() > 2 ? 2 : 0,
                            early ? crowd.stretch : 1, together, early ? leaf_call : 0);
  const double bound = bcast_node_bound(m, t, S, c.root, BcastTree::Binomial) + top.L_ns;
  tl.total_ns = std::max({r.last, root_call + bound, tl.in_call_ns});
  tl.first_ns = std::max(r.first_mean, leaf_call);
  const double middle = static_cast<double>(mids);
  const std::size_t last_group = mids % together == 0 ? together : mids % together;
  tl.round_share = 1.0 / middle;
  tl.last_share = static_cast<double>(last_group) / middle;
  tl.regions = early ? middle : 0;
  // The busiest receiver's: an inner rank's where the tree has one (more than 2 ranks), else the leaf's.
  tl.publish_ns = early ? publication(t.n() > 2 ? inner : g, tl.regions, S) : 0;
  tl.driver_cpu_ns = r.inner_cpu + poll_cpu(m, tl.total_ns - tl.in_call_ns);
  // A rank receives the message once (and an inner one forwards it): priced as one exchange of it.
  if (top.shared_cpu_measured()) tl.shared_cpu_ns = top.shared_cpu.at(S);
  tl.messages = static_cast<int>(sizes.size()) * std::max(1, depth);
  return tl;
}

// ---- the MPI library's own algorithm on one node (mpi_algorithms.hh) ----

// One round of `flows` whole messages of `bytes` copied at once inside a node (shared memory:
// each by its receiver's CPU): no faster than one pair's gap g(m) (PLogP's message train), nor
// than the node's copy rate with as many ranks copying at once as there are flows, at most one
// per CPU (node_sweep's ring: each of them sends one message to the next); a single flow gets
// at most the two-rank rate. Ranks spinning on fewer CPUs (busy_poll.hh): every flow hands its
// fragments off in the same rounds of the run queue.
double node_round_ns(const Level& l, const Topology& t, const BusyPoll& spin, double bytes, int flows) {
  if (spin.spins()) return handoff_ns(spin, bytes, t.max_per_node(), t.cpus_per_node);
  flows = std::max(1, flows);
  const int copying = std::max(2, std::min(flows, t.cpus_per_node));
  return std::max(l.g(bytes), l.node_ring(bytes, copying) * flows * bytes);
}

// The children of relative rank v in the library's broadcast tree.
std::vector<int> mpi_tree_children(MpiBcast a, int v, int n) {
  std::vector<int> out;
  switch (a) {
    case MpiBcast::Linear:
      if (v == 0)
        for (int c = 1; c < n; ++c) out.push_back(c);
      break;
    case MpiBcast::Binary:
      for (int c : {2 * v + 1, 2 * v + 2})
        if (c < n) out.push_back(c);
      break;
    case MpiBcast::Chain:
      if (v + 1 < n) out.push_back(v + 1);
      break;
    case MpiBcast::Binomial:
    case MpiBcast::Unknown:
      out = bcast_children(v, n, 0);
      break;
  }
  return out;
}

// A round of a broadcast whose senders forward what they received in the round before: their
// data is still in the cache, so a flow takes the ping-pong's T(m) (a message from a buffer in
// cache) rather than the message train's g(m) (from memory), one flow per CPU at a time; several
// flows no faster than the node's copy rate (the 2-rank ring: two flows at once, so not a bound
// on one flow alone, and at np 4 measured with the other ranks asleep: 0.10-0.25 ns/B at 4 MiB
// between calibrations). Measured (docs/benchmarks.md, session 10): a chain of
// MPI_Send/MPI_Recv at np 4 moved 0.086-0.092 ns/B per hop at 1-4 MiB, one flow from the root's
// buffer 0.10-0.16; session 9 costed every hop at g(m) and predicted MPI's chain +45-54 % slow.
double forwarded_round_ns(const Level& l, const Topology& t, const BusyPoll& spin, double bytes, int flows) {
  if (spin.spins()) return node_round_ns(l, t, spin, bytes, flows);
  flows = std::max(1, flows);
  const int cpus = std::max(1, t.cpus_per_node);
  const int copying = std::max(2, std::min(flows, cpus));
  const double one_at_a_time = l.T(bytes) * ((flows + cpus - 1) / cpus);
  return flows == 1 ? one_at_a_time : std::max(one_at_a_time, l.node_ring(bytes, copying) * flows * bytes);
}

// The root's round when it sends to several ranks at once (the linear broadcast, a binary tree's
// first round): over shared memory each receiver copies the message out of the root's buffer
// (vader's single copy), and that buffer is in the cache (the program broadcasts what it has
// just written, or reuses the buffer): each copy takes the ping-pong's T(m) (a message from a
// buffer in cache), and the copies run at once on the CPUs the root leaves free (it waits in
// MPI on a CPU of its own), the others after them. Measured (docs/benchmarks.md, session 11,
// tests/bench/node_patterns.c, np 4 on 2 CPUs): the root's three MPI_Isend at 64 KiB took 39 us
// with the program's buffers (MPI_Bcast 40 us), 29 us without the idle ranks' sleeping waits,
// and 74 us after the caches were emptied: the node sweep's 2-rank ring, measured after
// emptying them (0.31-0.84 ns/B at 64 KiB between launches), priced these rounds 1.4-3.5x slow.
//
// A lone flow (np 2, a chain's first hop) copied by its receiver out of that buffer (a
// rendezvous: more bytes than a send leaves buffered) is no faster than the ping-pong's T(m) (the
// buffer hot at both ends), at the rate one flow got in the node's one-way train (Level::one_flow:
// distinct buffers, from memory). Measured (docs/benchmarks.md, session 16): MPI_Bcast at np 2 on
// one node, random predecessors, 0.13-0.16 ns/B from 256 KiB, the train 0.14-0.16; the 2-rank ring
// after emptying the caches (node_round_ns' bound) priced 64 KiB +69..+115 % and the message
// train's g(m) 4-16 MiB +15..+51 %. A message the transport buffers (TCP inside an emulated
// node) keeps node_round_ns: its time is the link's, which the train's gap measured.
double root_round_ns(const Level& l, const Topology& t, const BusyPoll& spin, double bytes, int flows) {
  if (spin.spins()) return node_round_ns(l, t, spin, bytes, flows);
  if (flows <= 1)
    return bytes > l.buffered_send_bytes ? std::max(l.T(bytes), l.one_flow() * bytes)
                                         : node_round_ns(l, t, spin, bytes, flows);
  const int at_once = std::max(1, std::min(flows, t.cpus_per_node - 1));
  return std::max(l.g(bytes), l.T(bytes) * ((flows + at_once - 1) / at_once));
}

// The whole message down the tree in rounds: every rank that has it sends to all its children
// at once (the library's generic tree code waits for all of a segment's sends), so a round's
// flows are the edges leaving the ranks that received in the round before. The first round
// reads the root's buffer (root_round_ns); later ones forward (forwarded_round_ns).
double mpi_bcast_one_node(const Level& l, const Topology& t, const BusyPoll& spin, double bytes, MpiBcast a) {
  const int n = t.n();
  double total = 0;
  std::vector<int> frontier{0};
  for (bool first = true; !frontier.empty(); first = false) {
    std::vector<int> next;
    for (int v : frontier)
      for (int c : mpi_tree_children(a, v, n)) next.push_back(c);
    if (next.empty()) break;
    const int flows = static_cast<int>(next.size());
    total += (first ? root_round_ns(l, t, spin, bytes, flows) : forwarded_round_ns(l, t, spin, bytes, flows)) + l.L_ns;
    frontier = std::move(next);
  }
  return total;
}

// The library's broadcast tree across nodes, where its rules are known (they do not look at the
// nodes): a linear broadcast or a chain as such, every other tree as the binomial one. Used where
// the ranks spin (the shared-memory edges decide the time there: which node holds them).
BcastTree mpi_tree_shape(const Machine& m, const Topology& t, double bytes) {
  switch (mpi_bcast_algorithm(m.mpi_library, t.n(), bytes)) {
    case MpiBcast::Linear: return BcastTree::Linear;
    case MpiBcast::Chain: return BcastTree::Chain;
    default: return BcastTree::Binomial;
  }
}

// Linear: every pair at once, the own block copied too: MPI_Alltoall at the rate calibrate
// measured for the library's own call (`own_call`; node_mpi_alltoall), Alltoallv at the node
// sweep's exchange pattern (its basic linear posts the same messages); pairwise: n - 1 rounds of a
// shifted ring (n flows), then the own block. An Alltoallv with the trace's blocks (`blocks`, the
// world's), linear, its ranks not spinning: the node's CPUs copy every byte between its ranks, so
// the bytes of all its pairs bind it, at the rate of their mean block — not every pair at the
// heaviest receiver's block, which between nodes where the ranks spin the library's call follows
// (docs/benchmarks.md, "Session 54"). Measured, np 4 on one node of 2 CPUs (TCP loopback),
// is-proxy A (two ranks receive 11x the others' blocks): the heavy ranks' calls 51.7-54.3 ms, the
// heaviest receiver's price 93.5 ms, the pairs' bytes' 50.7; is-proxy W 7.9-9.1 ms, 11.3 -> 6.1
// (its blocks of ~0.6 MiB: the heavy ranks' own messages count there; docs/benchmarks.md,
// "Session 66").
double mpi_exchange_one_node(const Machine& m, const Level& l, const Topology& t, const BusyPoll& spin, double bytes,
                             MpiExchange a, bool own_call, const Blocks* blocks) {
  const int n = t.n();
  if (a == MpiExchange::Pairwise)
    return (n - 1) * (node_round_ns(l, t, spin, bytes, n) + l.L_ns) + bytes * m.memcpy_cost.ns_per_byte;
  if (spin.spins()) return node_round_ns(l, t, spin, bytes, n * (n - 1)) + l.L_ns;
  const double pairs = node_bytes(t, bytes, blocks).front().inside;  // the bytes between the node's ranks
  const double block = pairs / (n * (n - 1.0));
  return pairs * (own_call ? l.node_mpi_alltoall(block, n) : l.node_exchange(block, n)) + l.L_ns;
}

}  // namespace

bool cpu_taken_placement(const Machine& m, const Topology& t) {
  if (t.nodes() >= 2) return t.max_per_node() == 1 || t.cpu_stretch() > 1;
  return m.nodes <= 1 && t.n() >= 2 && t.cpus_per_node <= t.max_per_node();
}

namespace {

// What the transfer after an early return takes from a computation on the rank's CPU (before the
// CPU the rank has to spare): between nodes, where calibrate ran tnbc's own transfer (one rank per
// node of one CPU: Machine::cpu_taken), what it measured; else the driving thread's CPU or the
// levels' shared_cpu, whichever is more. The measured line replaces both: it is the driver's CPU,
// and what a plain exchange's line stands in for, measured on tnbc's own transfer (Table 1 on 2
// one-CPU emulated nodes, four launches: nearer what its computation lost than shared_cpu at 6 of
// 8 of the exchange's 1 and 4 MiB points and at each broadcast's 1 MiB; docs/benchmarks.md,
// "Session 33"). On one node whose ranks have a CPU each at most, the progress thread shares the
// CPU its rank computes on too, and calibrate measures the line there (since session 63); there
// it is a floor, not a replacement: calibrate's computation, on registers beside warm buffers,
// lost less than Table 1's programs did (np 2 on one node of 2 CPUs: 0.84-1.50 ms at a 4 MiB
// broadcast against the receiving thread's 2.2-3.1 ms of CPU a call, under the driver's price),
// while with 4 ranks on the 2 CPUs a 4 MiB broadcast took 6.6-10.5 ms, and Table 1's
// broadcasts there, measured losing 2-8 ms a call and priced as gains of 1-4 ms before, came out
// losses but one (the total's median error, the same launches priced both ways: 16 -> 8 % and
// 42 -> 28 %; docs/benchmarks.md, "Session 63"). The line also prices placements where a node's
// ranks outnumber its CPUs (by all the bytes a rank receives, its node's peers' too), unscaled:
// the trace measured the computation sharing the CPU already. Before session 41 those took the
// driver's CPU alone: on a PVM guest with 2 ranks per one-CPU node at np 4, 10.5 ms at 1 MiB per
// peer where the line says 104 ms, and optimize ran ft-proxy W at 0.84x; scaled by the ranks per
// CPU (x2), it priced out is-proxy W's Alltoallv, which ran at 1.00x instead of 4.4x
// (docs/benchmarks.md, "Session 41").
double cpu_taken_ns(const Machine& m, const Topology& t, const Coll& c, const Timeline& tl) {
  const double priced = std::max(tl.driver_cpu_ns, tl.shared_cpu_ns);
  if (cpu_taken_placement(m, t)) {
    const bool bcast = c.kind == Kind::Bcast;
    const Line& own = bcast ? m.cpu_taken_bcast : m.cpu_taken;
    if (own.measured()) {
      const double measured = own.at(bcast ? c.bytes : c.bytes * (t.n() - 1));
      return t.nodes() >= 2 ? measured : std::max(measured, priced);
    }
  }
  return priced;
}

}  // namespace

double bcast_tree_ns(const Machine& m, const Topology& t, double bytes, int root, int pieces, BcastTree shape,
                     double notice_ns, const Line& publish, std::size_t page) {
  (void)page;
  const std::vector<double> sizes = split(bytes, bytes / std::max(1, pieces));
  const TreeResult r = tree(m, t, root, sizes, shape, 0, notice_ns, publish, publish, 0);
  const Level& top = level(m, t.nodes() > 1 ? LevelKind::InterNode : LevelKind::IntraNode);
  return std::max(r.last, bcast_node_bound(m, t, bytes, root, shape) + top.L_ns);
}

double bcast_receiver_in_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x) {
  const ReceiverCall r = receiver_call(m, t, c, x, bcast_pieces(c).size());
  return crowded_work(crowding(m, t), r.work_ns, m.rest_bcast(c.bytes, m.warm(c.bytes))) + r.wait_ns;
}

double bcast_root_in_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x) {
  return crowded_work(crowding(m, t), root_call_ns(m, t, c, x, bcast_pieces(c)), m.rest_bcast_root(c.bytes, m.warm(c.bytes)));
}

double nbc_blocking_ns(const Machine& m, const Topology& t, const Coll& c) {
  const double blocking = mpi_blocking_ns(m, t, c);
  if (c.kind == Kind::Bcast || t.nodes() <= 1) return blocking;
  return std::min(blocking, exchange_idle_link(m, t, c));
}

double mpi_blocking_ns(const Machine& m, const Topology& t, const Coll& c) {
  if (t.n() <= 1) return 0;
  if (t.nodes() == 1) {  // the library's own algorithm where its rules are known
    const Level& l = level(m, LevelKind::IntraNode);
    const BusyPoll spin = spins_on(m, t) ? busy_poll(m) : BusyPoll{};
    if (c.kind == Kind::Bcast) {
      const MpiBcast a = mpi_bcast_algorithm(m.mpi_library, t.n(), c.bytes);
      if (a != MpiBcast::Unknown) return mpi_bcast_one_node(l, t, spin, c.bytes, a);
    } else if (c.kind == Kind::Alltoall || c.kind == Kind::Alltoallv) {
      // Alltoallv: the heaviest receiver's block per peer, or the node's pairs' bytes from the trace's blocks.
      const MpiExchange a = c.kind == Kind::Alltoall ? mpi_alltoall_algorithm(m.mpi_library, t.n(), c.bytes)
                                                     : mpi_alltoallv_algorithm(m.mpi_library, t.n());
      if (a != MpiExchange::Unknown)
        return mpi_exchange_one_node(m, l, t, spin, c.bytes, a, c.kind == Kind::Alltoall, c.blocks.get());
    }
  }
  if (c.kind == Kind::Bcast) {
    const int pieces = c.bytes >= 2 * kMpiBcastSegment ? static_cast<int>(std::ceil(c.bytes / kMpiBcastSegment)) : 1;
    return bcast_tree_ns(m, t, c.bytes, c.root, pieces, spins_on(m, t) ? mpi_tree_shape(m, t, c.bytes) : BcastTree::Binomial,
                         0, Line{}, c.page);
  }
  return exchange_mpi(m, t, c);
}

namespace {
// An early return's call where the node's ranks spin on fewer CPUs than ranks: its thread waits in
// the call (for the pieces that land in partial pages, for a node-mate's part, for the hand-over)
// and the CPU it gives up goes to the node's other runnable thread — a rank spinning in the MPI
// library or computing — for a scheduler slice (BusyPoll::slice_ns, the slice calibrate's
// ping-pong measured), once: where calibrate's own calls met it, the rest it measured holds it
// already (Timeline::in_call_rest_ns; there a broadcast receiver's rest at 64 KiB, 3.7 ms; calibrate
// subtracts the call without it: exchange_in_call_ns, bcast_receiver_in_call_ns). The transfer runs
// meanwhile, so the call ends later but the transfer does not (the total and the first piece no
// earlier than the call's end; Timeline::in_call_shared_ns: overlap() does not scale that part by
// a measured Tcomm, as crowded_call's). Measured, np 4 on 2 one-CPU emulated nodes (Table
// 1's five scenarios, Alltoall and Bcast 64 KiB-16 MiB, 8 iterations): Tinit 1.3-17 ms against the
// model's 0.36-12.7 ms without it, +1-5 ms (median ~3) at every size, a slice 2.03 ms there
// (docs/benchmarks.md, "Session 48").
void held_by_slice(Timeline& tl, double slice_ns) {
  const double held = std::max(0.0, slice_ns - tl.in_call_rest_ns);
  tl.in_call_ns += held;
  tl.in_call_shared_ns += held;
  tl.total_ns = std::max(tl.total_ns, tl.in_call_ns);
  tl.first_ns = std::max(tl.first_ns, tl.in_call_ns);
}

// An early return's call on a node whose ranks outnumber its CPUs and do not spin (above): the
// node's ranks are in the collective's call together, so the call's work runs on a share of a CPU,
// Topology::cpu_stretch() as long — its copies (calibrate's in-call line, the node's ranks copying
// at once, came within 12 % of one rank copying alone there at 64 KiB-16 MiB), the guard's hold,
// the posts and the hand-over (measured by one rank while the others sleep). Not its rest
// (Timeline::in_call_rest_ns): calibrate measures that from tnbc's own call on every rank at once,
// less this stretched work (for the broadcast: bcast_receiver_in_call_ns, bcast_root_in_call_ns).
// The transfer is not moved (the total and the first piece no earlier than the call's end): the
// node's transfer already shares the CPUs (Crowding::stretch), and runs beside the longer call
// (Timeline::in_call_shared_ns: overlap() does not scale that part by a measured Tcomm). Measured,
// np 4 on one node of 2 CPUs (Table 1's five scenarios, Alltoall 64 KiB-16 MiB and Bcast 64 KiB-4
// MiB, 8 iterations, three launches): Tinit median error 68 % -> 51 %, 73 % -> 53 % and 52 %;
// the early return's total 21 % -> 20 %, 34 % -> 34 % and 26 % (docs/benchmarks.md, "Session 49").
void crowded_call(Timeline& tl, const Machine& m, const Topology& t, const Coll& c, const Execution& x, const Crowding& crowd) {
  // The broadcast's slowest call, its root's or a receiver's, each stretched by its own rest.
  const double call = c.kind == Kind::Bcast ? std::max(bcast_root_in_call_ns(m, t, c, x), bcast_receiver_in_call_ns(m, t, c, x))
                                            : tl.in_call_ns + crowded_work(crowd, tl.in_call_work_ns, tl.in_call_rest_ns) - tl.in_call_work_ns;
  const double more = std::max(0.0, call - tl.in_call_ns);
  tl.in_call_work_ns += more;
  tl.in_call_ns += more;
  tl.in_call_shared_ns += more;
  tl.total_ns = std::max(tl.total_ns, tl.in_call_ns);
  tl.first_ns = std::max(tl.first_ns, tl.in_call_ns);
}

// tnbc_timeline, with or without the scheduler slice an early return's call waits where the
// library's ranks spin (`slice`; exchange_in_call_ns leaves it out).
Timeline timeline(const Machine& m, const Topology& t, const Coll& c, const Execution& x, bool early, bool slice) {
  if (t.n() <= 1) return {};
  // Where the MPI library's ranks spin on fewer CPUs than ranks, tnbc's threads still yield (the
  // calling thread there, the progress thread always): its messages inside a node move at the
  // memory's rate, not one fragment per scheduler slice (busy_poll.hh).
  const Crowding crowd = crowding(m, t);
  if (spins_on(m, t)) {
    const Machine y = yielding(m);
    Timeline tl = c.kind == Kind::Bcast ? bcast_timeline(y, t, c, x, early, crowd) : exchange_timeline(y, t, c, x, early, crowd);
    if (early && slice) held_by_slice(tl, busy_poll(m).slice_ns);
    return tl;
  }
  Timeline tl = c.kind == Kind::Bcast ? bcast_timeline(m, t, c, x, early, crowd) : exchange_timeline(m, t, c, x, early, crowd);
  if (early && crowd.stretch > 1) crowded_call(tl, m, t, c, x, crowd);
  return tl;
}
}  // namespace

Timeline tnbc_timeline(const Machine& m, const Topology& t, const Coll& c, const Execution& x, bool early) {
  return timeline(m, t, c, x, early, true);
}

double exchange_in_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x) {
  return timeline(m, t, c, x, true, false).in_call_ns;
}

Overlap overlap(const Machine& m, const Topology& t, const Coll& c, const Execution& x, const Program& p,
                double measured_blocking_ns, double late_ns) {
  Overlap o;
  o.model_blocking_ns = mpi_blocking_ns(m, t, c);
  o.blocking_ns = measured_blocking_ns > 0 ? measured_blocking_ns : o.model_blocking_ns;
  const double late = measured_blocking_ns > 0 ? std::clamp(late_ns, 0.0, measured_blocking_ns) : 0;
  const double scale = measured_blocking_ns > late && o.model_blocking_ns > 0 && !spins_on(m, t)
                           ? (measured_blocking_ns - late) / o.model_blocking_ns
                           : 1;
  o.scale = scale;
  const Timeline tl = tnbc_timeline(m, t, c, x, true);
  const GuardCost g = guard_of(m, x);
  const double X = p.curc_ns + p.crc_ns;
  o.in_call_ns = tl.in_call_ns + late;
  o.late_ns = late;
  o.ideal_ns = std::min(o.blocking_ns, X);
  o.hidden_ns = std::max(0.0, std::min(o.blocking_ns - o.in_call_ns, X));
  // After the return: the communication goes on for `after`; its CPU (the progress thread:
  // messages, publication, polls) comes out of the computation where the rank has no CPU to
  // spare, for the part of it that overlaps the computation; a reader that touches a region
  // still held back waits for it and pays a wake-up (fault round trip).
  // Where the progress thread shares the caller's CPU and the program computes after the call,
  // its first round, and with it the bodies, comes late (Machine::first_round_ns); a reader that
  // touches a region first sleeps in the fault and lets it in at once.
  const double first_late = (1 - t.spare_cpu()) * std::min(p.curc_ns, m.first_round());
  // The transfer's time scales with the measured blocking time; the part of the call it ran
  // beside (Timeline::in_call_shared_ns) does not: a longer call leaves less of it after.
  const double shared = tl.in_call_shared_ns;
  const double after = std::max(0.0, (tl.total_ns - tl.in_call_ns + shared) * scale - shared) + first_late;
  const double first = std::max(0.0, (tl.first_ns - tl.in_call_ns + shared) * scale - shared) + first_late;
  const double overlapped = after > 0 ? std::min(1.0, X / after) : 1.0;
  // The CPU the transfer takes (cpu_taken_ns: what calibrate measured a computation on the
  // transfer's CPU losing, its kernel work and evicted caches too, or the driving thread's own).
  const double stolen = (1 - t.spare_cpu()) * cpu_taken_ns(m, t, c, tl) * overlapped;
  const double waiting = after > 0 ? std::clamp(1.0 - p.curc_ns / after, 0.0, 1.0) : 0.0;
  // Both timelines publish every region after the return (the progress thread's, after the
  // hand-over), so a reader reading at the return (X = 0, read_once_balance's worst case) meets
  // one at least (as exchange_floor prices one).
  const double wakeups = g.fault_ns * std::min(tl.regions, std::max(1.0, tl.regions * waiting)) * (X < after ? 1 : 0);
  // A reader that reads its own block last reads it after the stream's last piece (Program::own_last).
  const double own_after = p.own_last && c.kind != Kind::Bcast ? p.crc_ns / std::max(1, t.n()) : 0;
  // The reader's first accesses to the published pages (GuardCost::first_read): its own CPU,
  // whenever it reads (after the transfer too), by the bytes it receives.
  const double received = c.kind == Kind::Bcast ? c.bytes : c.bytes * std::max(0, t.n() - 1);
  const double first_reads = g.first_read.at(received);
  const double reader = std::max({X + stolen + first_reads, after + tl.last_share * (p.crc_ns + first_reads) + own_after,
                                  first + p.crc_ns + first_reads});
  o.early_total_ns = o.in_call_ns + reader + wakeups;
  o.saved_ns = o.blocking_ns + X - o.early_total_ns;
  o.cost_ns = o.hidden_ns - o.saved_ns;
  return o;
}

Overlap bcast_root_overlap(const Machine& m, const Topology& t, const Coll& c, const Execution& x, const Program& p,
                           double measured_blocking_ns) {
  Overlap o;
  o.model_blocking_ns = mpi_blocking_ns(m, t, c);
  o.blocking_ns = measured_blocking_ns > 0 ? measured_blocking_ns : o.model_blocking_ns;
  o.in_call_ns = bcast_root_in_call_ns(m, t, c, x);
  const double X = p.curc_ns + p.crc_ns;
  const double span = std::max(0.0, o.blocking_ns - o.in_call_ns);  // the call's time an early return frees
  o.ideal_ns = std::min(o.blocking_ns, X);
  o.hidden_ns = std::min(span, X);
  const double overlapped = span > 0 ? std::min(1.0, X / span) : 1.0;
  const Timeline tl = tnbc_timeline(m, t, c, x, true);
  const double stolen = (1 - t.spare_cpu()) * std::min(span, cpu_taken_ns(m, t, c, tl)) * overlapped;
  o.early_total_ns = std::max(o.in_call_ns + X + stolen, o.blocking_ns);
  o.saved_ns = o.blocking_ns + X - o.early_total_ns;
  o.cost_ns = o.hidden_ns - o.saved_ns;
  return o;
}

double own_call_ns(const Machine& m, const Topology& t, const Coll& c, const Execution& x) {
  return tnbc_timeline(m, t, c, x, false).total_ns;
}

bool own_call_pays(double own_ns, double blocking_ns, double margin) {
  return margin < 1 && blocking_ns > 0 && own_ns <= (1 - margin) * blocking_ns;
}

ReadOnceBalance read_once_balance(const Machine& m, const Topology& t, const Execution& x, const Coll& c) {
  ReadOnceBalance b;
  if (t.n() <= 1 || c.bytes <= 0) return b;
  b.blocking_ns = nbc_blocking_ns(m, t, c);
  // Reading at once: the reader waits for every region (a wake-up each), after the whole
  // transfer; computing past it: only the time in the call and the driver's CPU remain. Against
  // the library's call on idle links, taken as the Tcomm a trace would have measured.
  const Overlap at_once = overlap(m, t, c, x, Program{0, 0}, b.blocking_ns);
  const Overlap hidden = overlap(m, t, c, x, Program{at_once.early_total_ns, 0}, b.blocking_ns);
  b.read_at_once_ns = at_once.early_total_ns;
  b.loss_ns = std::max(0.0, -at_once.saved_ns);
  b.gain_ns = std::max(0.0, hidden.saved_ns);
  return b;
}

ReadOnceBalance bcast_balance(const Machine& m, const Topology& t, const Execution& x, double bytes, int segments,
                              std::size_t page) {
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = bytes;
  c.segments = std::max(1, segments);
  c.page = page;
  return read_once_balance(m, t, x, c);
}

Coll exchange_coll(const Machine& m, const Topology& t, Kind k, const Execution& x, double bytes, std::size_t page) {
  Coll c;
  c.kind = k;
  c.bytes = bytes;
  c.page = page;
  c.pieces = PieceRule(std::nullopt, piece_scale(m, t, x, page));
  return c;
}

ReadOnceBalance exchange_balance(const Machine& m, const Topology& t, Kind k, const Execution& x, double bytes,
                                 std::size_t page) {
  return read_once_balance(m, t, x, exchange_coll(m, t, k, x, bytes, page));
}

std::size_t exchange_floor(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page) {
  const std::size_t floor = kMinGuardablePages * page;
  if (t.n() <= 1) return floor;
  const GuardCost g = guard_of(m, x);
  auto pays = [&](std::size_t bytes) {
    Coll c;
    c.kind = k;
    c.bytes = static_cast<double>(bytes);
    c.page = page;
    const Timeline tl = tnbc_timeline(m, t, c, x, true);
    return nbc_blocking_ns(m, t, c) >= tl.in_call_work_ns + tl.publish_ns + g.fault_ns;
  };
  if (pays(floor)) return floor;
  std::size_t lo = floor, hi = floor;
  while (!pays(hi)) {
    lo = hi;
    if (static_cast<double>(hi) > kLargestThreshold) return SIZE_MAX;
    hi *= 2;
  }
  while (hi - lo > page) {
    const std::size_t mid = (lo + hi) / 2 / page * page;
    if (mid <= lo) break;
    (pays(mid) ? hi : lo) = mid;
  }
  return hi;
}

std::size_t threshold_bytes(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page) {
  if (t.n() <= 1) return kMinGuardablePages * page;
  // The most an early return can gain must outweigh what it loses read at once (the balances),
  // which may hold in a band of sizes only (bands.hh): its smallest size.
  return early_return_bands(m, t, k, x, page).first();
}

int bcast_segments(const Machine& m, const Topology& t, double bytes, const Execution& x, int max_segments,
                   std::size_t page) {
  max_segments = std::max(1, max_segments);
  if (t.n() <= 1 || bytes <= 3.0 * static_cast<double>(page)) return 1;
  Coll c;
  c.kind = Kind::Bcast;
  c.bytes = bytes;
  c.page = page;
  auto finish = [&](int seg) {
    c.segments = seg;
    return tnbc_timeline(m, t, c, x, true).total_ns;
  };
  const double one = finish(1);
  // A reader waiting on a segment is woken once for it (the guard's fault round trip).
  const double wake = guard_of(m, x).fault_ns;
  std::vector<double> f(static_cast<std::size_t>(max_segments) + 1, 0);
  double best = 0;
  for (int s = 1; s <= max_segments; ++s) {
    // A reader that reads as fast as the whole message arrives still reads the last segment
    // after it, and waits for each segment in turn.
    f[static_cast<std::size_t>(s)] = finish(s) + one / s + s * wake;
    if (s == 1 || f[static_cast<std::size_t>(s)] < best) best = f[static_cast<std::size_t>(s)];
  }
  for (int s = 1; s <= max_segments; ++s)
    if (f[static_cast<std::size_t>(s)] <= best * (1 + kSegmentTolerance)) return s;
  return 1;
}

double piece_scale(const Machine& m, const Topology& t, const Execution& x, std::size_t page) {
  if (t.n() <= 1) return 0;
  Coll c;
  c.kind = Kind::Alltoall;
  c.bytes = kReferenceBytes;
  c.page = page;
  const double per_byte = mpi_blocking_ns(m, t, c) / ((t.n() - 1) * kReferenceBytes);
  if (per_byte <= 0) return 0;
  const Level& l = level(m, t.nodes() > 1 ? LevelKind::InterNode : LevelKind::IntraNode);
  const double q = 64 * 1024;
  const double fixed = l.o_s(q) + l.o_r(q) + m.O_r_ns() + publish_per_region(guard_of(m, x));
  return std::max(static_cast<double>(page), fixed / per_byte);
}

PieceRule run_pieces(const Machine& m, const Topology& t, const Execution& x, std::size_t page, PieceSetting setting) {
  return setting ? PieceRule(setting) : PieceRule(std::nullopt, piece_scale(m, t, x, page));
}

MarginPlace margin_place(const Machine& m, const Topology& t) {
  return t.max_per_node() <= 1 ? MarginPlace::OnePerNode : spins_on(m, t) ? MarginPlace::BusyPoll : MarginPlace::SharedNode;
}

double node_transfer_cpu_share(const Machine& m) { return m.at(LevelKind::IntraNode).cpu_share(); }

double margin_of_tcomm(const Machine& m, const Topology& t, double one_per_node, double busy_poll, double shared_node) {
  switch (margin_place(m, t)) {
    case MarginPlace::OnePerNode: return one_per_node;
    case MarginPlace::BusyPoll: return busy_poll;
    case MarginPlace::SharedNode: {
      const double cpu = t.max_per_node() > std::max(1, t.cpus_per_node) ? 1 : node_transfer_cpu_share(m);
      return cpu * shared_node + (1 - cpu) * one_per_node;
    }
  }
  return shared_node;
}

double margin_of_tcomm(const Machine& m, const Topology& t, const Execution& x) {
  return margin_of_tcomm(m, t, x.margin_one_per_node, x.margin_busy_poll, x.margin_shared_node);
}

int run_segments(const Machine& m, const Topology& t, const Execution& x, double bytes, std::size_t page) {
  return bcast_segments(m, t, bytes, x, x.bcast_max_segments, page);
}

Coll run_coll(const Machine& m, const Topology& t, const Execution& x, Kind kind, double bytes, PieceSetting setting) {
  Coll c;
  c.kind = kind;
  c.bytes = bytes;
  c.page = m.page;
  if (kind != Kind::Bcast) c.pieces = run_pieces(m, t, x, m.page, setting);
  else c.segments = run_segments(m, t, x, bytes, m.page);
  return c;
}

namespace {
// The sizes both backends' hold lines were measured at.
std::vector<double> shared_sizes(const GuardCost& a, const GuardCost& b) {
  std::vector<double> out;
  for (const CostPoint& p : a.hold.points)
    if (std::any_of(b.hold.points.begin(), b.hold.points.end(), [&](const CostPoint& q) { return q.bytes == p.bytes; }))
      out.push_back(p.bytes);
  return out;
}
}  // namespace

double publish_per_region(const GuardCost& g) {
  return g.publish.points.empty() ? g.publish.ns : g.publish.points.front().ns;
}

double guard_cycle_ns(const GuardCost& g, double bytes) {
  return g.hold.at(bytes) + publication(g, 1, bytes) + g.first_read.at(bytes);
}

GuardCost guard_envelope(const GuardCost& a, const GuardCost& b) {
  const std::vector<double> sizes = shared_sizes(a, b);
  if (sizes.empty()) return a;
  std::vector<double> hold, publish, first_read, warm_x, warm;
  for (double s : sizes) {
    const GuardCost& g = guard_cycle_ns(b, s) < guard_cycle_ns(a, s) ? b : a;
    hold.push_back(g.hold.at(s));
    publish.push_back(g.publish.at(s));
    first_read.push_back(g.first_read.at(s));
    if (!a.hold_warm.points.empty() && !b.hold_warm.points.empty() && s <= a.hold_warm.points.back().bytes &&
        s <= b.hold_warm.points.back().bytes) {
      warm_x.push_back(s);
      warm.push_back(g.hold_warm.at(s));
    }
  }
  GuardCost e = a;
  e.hold = fit_through(sizes, hold);
  e.publish = fit_through(sizes, publish);
  e.first_read = a.first_read.measured() || b.first_read.measured() ? fit_through(sizes, first_read) : Line{};
  e.hold_warm = warm_x.empty() ? a.hold_warm : fit_through(warm_x, warm);
  e.fault_ns = std::min(a.fault_ns, b.fault_ns);
  return e;
}

bool guard_costs_no_more(const Machine& m, int a, int b) {
  if (a < 0 || b < 0 || !m.guard_measured[a] || !m.guard_measured[b]) return true;
  // The geometric mean of the ratios, size by size: every size weighs alike (a sum would be the
  // largest size's verdict alone; with calibrate's 32 MiB point it put moving ahead of copying,
  // which then lost 4-6 ms a 1 MiB call: docs/benchmarks.md, "Session 56").
  double log_ratio = 0;
  for (double s : shared_sizes(m.guard[a], m.guard[b])) {
    const double x = guard_cycle_ns(m.guard[a], s), y = guard_cycle_ns(m.guard[b], s);
    if (x > 0 && y > 0) log_ratio += std::log(x / y);
  }
  return log_ratio <= 0;
}

bool page_moves_pay(const Machine& m) {
  return guard_costs_no_more(m, guard_index("userfaultfd_move"), guard_index("userfaultfd_copy"));
}

int guard_that_runs(const Machine& m, int first) {
  return first >= 0 && first == guard_index("userfaultfd_move") && !page_moves_pay(m) ? guard_index("userfaultfd_copy")
                                                                                        : first;
}

int guard_by_size(const Machine& m, int runs, bool protect_usable) {
  const int prot = guard_index("prot_none");
  if (!protect_usable || runs < 0 || runs == prot || !m.guard_measured[runs] || !m.guard_measured[prot]) return -1;
  for (double s : shared_sizes(m.guard[runs], m.guard[prot]))
    if (guard_cycle_ns(m.guard[prot], s) < guard_cycle_ns(m.guard[runs], s)) return prot;
  return -1;
}

bool by_size_pays(const Machine& m, int runs, int by_size, double bytes) {
  if (by_size < 0 || runs < 0 || !m.guard_measured[runs] || !m.guard_measured[by_size]) return false;
  return guard_cycle_ns(m.guard[by_size], bytes) < guard_cycle_ns(m.guard[runs], bytes);
}

PricedGuards priced_guards(const Machine& m) {
  int g = -1;
  for (int b = 0; b < kGuardBackends && g < 0; ++b)
    if (m.guard_measured[b]) g = b;
  const int runs = guard_that_runs(m, g);
  return {runs, guard_by_size(m, runs, true)};
}


bool lazy_copy_pays(const Machine& m, double bytes, bool written_early, std::size_t page) {
  const int prot = guard_index("prot_none");
  if (!m.guard_measured[prot] || bytes < static_cast<double>(page)) return false;
  const double eager = m.in_call_copy().at(bytes);
  double lazy = m.guard[prot].hold.at(bytes);
  if (written_early) lazy += m.guard[prot].fault_ns + eager;
  return lazy < eager;
}

}  // namespace tnbc::model
