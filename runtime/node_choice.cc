#include "runtime/node_choice.hh"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <vector>

#include "runtime/coll/builders.hh"

namespace tnbc {

const char* node_basis_name(NodeBasis b) {
  switch (b) {
    case NodeBasis::Setting: return "setting";
    case NodeBasis::Gains: return "gains";
    case NodeBasis::NoGain: return "no_gain";
    case NodeBasis::OneSender: return "one_sender";
    case NodeBasis::NoProfile: return "no_profile";
    case NodeBasis::NoModel: return "no_model";
    case NodeBasis::Costs: return "costs";
  }
  return "?";
}

int link_senders(const model::Topology& t, int node, bool local_on_link) {
  const int m = t.ranks_on(node);
  return m >= 2 && (local_on_link || t.nodes() > 1) ? m : 0;
}

DriverCpu driver_cpu(int ranks, int cpus) {
  const double M = std::max(1, ranks), C = std::max(1, cpus);
  return {std::min(M, C / 2), std::min(1.0, C / (M + 1))};
}

namespace {

// A node resource's cost per byte that never bounds a stream (a level's node_out and node_bi
// when only one rank's own limits count).
constexpr double kUnsharedNsPerByte = 1e-9;

}  // namespace

Wakes wakes(const model::Machine& m, const model::Level& link, const model::Execution& x, int senders, int cpus,
            double sends, double bytes) {
  Wakes w;
  // The node's ranks compute and one driver runs (the held ones sleep): a wake-up waits for a
  // CPU where they outnumber the node's CPUs.
  if (senders < 2 || senders + 1 <= std::max(1, cpus)) return w;
  const double wake = unmeasured_wake(m) ? kUnmeasuredWakeNs : m.wake_loaded_ns;
  if (wake <= 0) return w;
  w.handoff_ns = wake;
  if (sends < 1) return w;
  const double piece = bytes / sends;
  const double cover = x.window > 0 ? (x.window - 1) * link.g(piece) : std::numeric_limits<double>::infinity();
  w.send_ns = std::max(0.0, wake - cover);
  w.rank_ns = sends * w.send_ns;
  return w;
}

namespace {

// When a reader of `n` sub-messages has read them all: it computes T_CURC from the return, reads
// the first-read one once it is complete, then the rest at its pace (T_CRC in all), and cannot
// finish before the last one is in and read (1/n of T_CRC).
double program_done(const model::Program& p, int n, double in_call, double first, double end) {
  const double read_last = p.crc_ns / std::max(1, n);
  return std::max(end + read_last, std::max(in_call + p.curc_ns, first) + p.crc_ns);
}

// The verdict from the two timelines' figures. Without the program: the first read's gain net
// of a later end; with it: when it has read everything, with against without.
NodeChoice judge(double first_on, double first_off, double end_on, double end_off, double margin,
                 const model::Program* program, double in_call, int n) {
  NodeChoice r;
  r.first_on_ns = first_on;
  r.first_off_ns = first_off;
  r.end_on_ns = end_on;
  r.end_off_ns = end_off;
  r.margin_ns = margin;
  const double gain = first_off - first_on;
  if (program) {
    r.done_on_ns = program_done(*program, n, in_call, first_on, end_on);
    r.done_off_ns = program_done(*program, n, in_call, first_off, end_off);
  }
  const double net = program ? r.done_off_ns - r.done_on_ns : gain - std::max(0.0, end_on - end_off);
  r.on = net > margin;
  r.basis = r.on ? NodeBasis::Gains : gain > margin ? NodeBasis::Costs : NodeBasis::NoGain;
  return r;
}

NodeChoice exchange_choice(const model::Machine& m, const model::Topology& comm, const model::Coll& c,
                           const model::Execution& plain, int senders, double margin, const model::Program* program) {
  const model::Timeline tl = model::tnbc_timeline(m, comm, c, plain, true);
  const double after = std::max(0.0, tl.total_ns - tl.in_call_ns);
  const double M = senders;
  // One rank's stream alone: the same call with every peer on another node, CPUs to spare and
  // no shared resource of a node in its way (its window, gaps and CPU: what a rank that has the
  // link to itself cannot do faster), times the share of its peers that are on the link (one
  // node: all of them). The link's own bound is `after`'s: charging it here again would count
  // the bytes a rank receives as its own sends (2x on one node's loopback, which carries both).
  const int n = comm.n();
  const model::Topology alone = model::Topology::block(n, 1, 2, 2);
  model::Machine unshared = m;
  for (model::Level& l : unshared.level) l.node_out_ns_per_byte = l.node_bi_ns_per_byte = kUnsharedNsPerByte;
  const model::Timeline one = model::tnbc_timeline(unshared, alone, c, plain, true);
  const double linked = comm.nodes() > 1 ? static_cast<double>(n - senders) / std::max(1, n - 1) : 1.0;
  const double serial = M * std::max(0.0, one.total_ns - one.in_call_ns) * linked;
  const DriverCpu cpu = driver_cpu(senders, comm.cpus_per_node);
  const double work = M * tl.driver_cpu_ns;
  const double cpu_off = work / cpu.off, cpu_on = work / cpu.on;
  const model::Level& top = m.at(model::LevelKind::InterNode).measured || !m.at(model::LevelKind::IntraNode).measured
                                ? m.at(model::LevelKind::InterNode)
                                : m.at(model::LevelKind::IntraNode);
  const Wakes w = wakes(m, top, plain, senders, comm.cpus_per_node, tl.messages * linked,
                        c.bytes * std::max(1, n - 1) * linked);
  const double handoffs = (M - 1) * (top.L_ns + m.O_r_ns() + w.handoff_ns);
  const double flow_on = std::max({after, serial, cpu_on});
  const double after_off = std::max(after, cpu_off), after_on = flow_on + handoffs + M * w.rank_ns;
  return judge(tl.in_call_ns + flow_on / M + w.rank_ns, tl.in_call_ns + after_off * (1.0 - tl.round_share / 2),
               tl.in_call_ns + after_on, tl.in_call_ns + after_off, margin, program, tl.in_call_ns, n);
}

// ---- broadcast: the tree's pieces through the nodes' links ----

struct BcastRun {
  double first_mean = 0;  // mean over the receivers: the first-read chunk complete
  double last = 0;        // the last rank has every piece
  bool complete = true;   // every piece reached every rank (else the figures mean nothing)
};

// Whether a message from rank a to rank b of `t` goes over a node's link: to another node, or
// on a single node at all (node_choice is asked there only where local sends use the link).
bool on_link(const model::Topology& t, int a, int b) {
  return t.nodes() == 1 || t.level(a, b) == model::LevelKind::InterNode;
}

struct Send {
  int from = 0, to = 0;
  std::size_t piece = 0;  // index into the sending order
  bool link = false;      // over from's node link
};

// `arbitrate`: a node's link sends start in key order (the piece's place in the sending order,
// then the tree order), each after the one before it ended; else in the order they become
// ready, at most `window` of a rank's in flight.
BcastRun run_bcast(const model::Machine& m, const model::Topology& t, int root, const std::vector<double>& sizes,
                   std::size_t first_piece, const model::Execution& x, const DriverCpu& cpu, double handoff_ns,
                   bool arbitrate) {
  const int n = t.n();
  const std::size_t P = sizes.size();
  const int M = t.max_per_node();
  const double notice = m.O_r_ns();
  // Every rank's sends in its own order: piece by piece, children largest subtree first.
  std::vector<std::vector<Send>> sends(static_cast<std::size_t>(n));
  for (int v = 0; v < n; ++v)
    for (std::size_t q = 0; q < P; ++q)
      for (int ch : bcast_children(v, n, root))
        sends[static_cast<std::size_t>(v)].push_back({v, ch, q, on_link(t, v, ch)});
  // A node's link sends in key order: piece, then parents before children (relative rank).
  std::vector<std::vector<std::pair<int, std::size_t>>> keyed(static_cast<std::size_t>(t.nodes()));
  for (int v = 0; v < n; ++v)
    for (std::size_t i = 0; i < sends[static_cast<std::size_t>(v)].size(); ++i)
      if (sends[static_cast<std::size_t>(v)][i].link)
        keyed[static_cast<std::size_t>(t.node[static_cast<std::size_t>(v)])].push_back({v, i});
  for (auto& k : keyed)
    std::stable_sort(k.begin(), k.end(), [&](const auto& a, const auto& b) {
      const Send& x1 = sends[static_cast<std::size_t>(a.first)][a.second];
      const Send& x2 = sends[static_cast<std::size_t>(b.first)][b.second];
      return std::make_tuple(x1.piece, (x1.from - root + n) % n) < std::make_tuple(x2.piece, (x2.from - root + n) % n);
    });
  std::vector<std::size_t> node_next(keyed.size(), 0);
  std::vector<std::vector<double>> have(static_cast<std::size_t>(n), std::vector<double>(P, -1));
  std::fill(have[static_cast<std::size_t>(root)].begin(), have[static_cast<std::size_t>(root)].end(), 0.0);
  std::vector<std::vector<double>> ends(static_cast<std::size_t>(n));
  std::vector<std::size_t> next(static_cast<std::size_t>(n), 0);
  std::vector<double> rank_free(static_cast<std::size_t>(n), 0), link_free(keyed.size(), 0);
  std::vector<int> link_owner(keyed.size(), -1);  // who sent last on the node's link
  std::vector<bool> queued(static_cast<std::size_t>(n), false);
  using Item = std::pair<double, int>;  // ready, rank
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  const std::size_t window = x.window > 0 ? static_cast<std::size_t>(x.window) : SIZE_MAX;
  auto offer = [&](int v) {
    const auto V = static_cast<std::size_t>(v);
    if (queued[V] || next[V] >= sends[V].size()) return;
    const Send& s = sends[V][next[V]];
    const double h = have[V][s.piece];
    if (h < 0) return;
    const auto node = static_cast<std::size_t>(t.node[V]);
    if (arbitrate && s.link && keyed[node][node_next[node]] != std::make_pair(v, next[V])) return;
    double r = h;
    if (!arbitrate && next[V] >= window) r = std::max(r, ends[V][next[V] - window]);
    queued[V] = true;
    ready.push({r, v});
  };
  for (int v = 0; v < n; ++v) offer(v);
  const model::Level& inter = m.at(model::LevelKind::InterNode).measured ? m.at(model::LevelKind::InterNode)
                                                                         : m.at(model::LevelKind::IntraNode);
  const model::Level& intra = m.at(model::LevelKind::IntraNode).measured ? m.at(model::LevelKind::IntraNode) : inter;
  // A driver's share of a CPU: all of the node's at once (off, and sends inside the node), or
  // the one whose turn it is.
  const double share_off = cpu.off / std::max(1, M), share_on = cpu.on;
  while (!ready.empty()) {
    const auto [r, v] = ready.top();
    ready.pop();
    const auto V = static_cast<std::size_t>(v);
    queued[V] = false;
    const Send s = sends[V][next[V]];
    const auto node = static_cast<std::size_t>(t.node[V]);
    const model::Level& l = s.link ? inter : intra;
    const double q = sizes[s.piece];
    double start = std::max(r, rank_free[V]);
    if (s.link) start = std::max(start, link_free[node]);
    // Arbitrated: another rank's driver had the link; this one wakes to its turn.
    if (s.link && arbitrate && link_owner[node] >= 0 && link_owner[node] != v) start += handoff_ns;
    if (s.link) link_owner[node] = v;
    const double share = s.link && arbitrate ? share_on : share_off;
    const double busy = std::max(l.g(q), l.o_s(q) / std::max(1e-3, share));
    const double end = start + busy;
    rank_free[V] = start + std::max(l.o_s(q) / std::max(1e-3, share), 0.0);
    if (s.link) link_free[node] = end;
    ends[V].push_back(end);
    const auto C = static_cast<std::size_t>(s.to);
    have[C][s.piece] = end + (l.T(q) - l.g(q) > 0 ? l.T(q) - l.g(q) : 0) + notice;
    ++next[V];
    if (s.link && arbitrate) {
      ++node_next[node];
      if (node_next[node] < keyed[node].size()) offer(keyed[node][node_next[node]].first);
    }
    offer(v);
    offer(s.to);
  }
  BcastRun out;
  double sum = 0;
  for (int v = 0; v < n; ++v) {
    if (v == root) continue;
    for (double h : have[static_cast<std::size_t>(v)]) {
      out.last = std::max(out.last, h);
      out.complete = out.complete && h >= 0;
    }
    sum += have[static_cast<std::size_t>(v)][std::min(first_piece, P - 1)];
  }
  out.first_mean = n > 1 ? sum / (n - 1) : 0;
  return out;
}

NodeChoice bcast_choice(const model::Machine& m, const model::Topology& comm, const model::Coll& c,
                        const model::Execution& plain, double margin, const model::Program* program) {
  NodeChoice r;
  const int n = comm.n();
  const int root = std::clamp(c.root, 0, std::max(0, n - 1));
  // Whether two ranks of some node forward over its link at all for this root.
  std::vector<int> forwarders(static_cast<std::size_t>(comm.nodes()), 0);
  for (int v = 0; v < n; ++v)
    for (int ch : bcast_children(v, n, root))
      if (on_link(comm, v, ch)) {
        ++forwarders[static_cast<std::size_t>(comm.node[static_cast<std::size_t>(v)])];
        break;
      }
  if (*std::max_element(forwarders.begin(), forwarders.end()) < 2) {
    r.basis = NodeBasis::OneSender;
    return r;
  }
  // The pieces in sending order: the edges (a page each), then the middle chunks in order.
  const auto chunks = bcast_chunks(static_cast<std::size_t>(c.bytes), c.page, std::max(1, c.segments));
  const auto order = bcast_chunk_order(chunks.size(), {});
  std::vector<double> sizes;
  for (int k : order) sizes.push_back(static_cast<double>(chunks[static_cast<std::size_t>(k)].length));
  const std::size_t first = sizes.size() > 2 ? 2 : 0;  // the first middle chunk: what a reader reads first
  const DriverCpu cpu = driver_cpu(comm.max_per_node(), comm.cpus_per_node);
  const model::Level& link = m.at(model::LevelKind::InterNode).measured ? m.at(model::LevelKind::InterNode)
                                                                        : m.at(model::LevelKind::IntraNode);
  const double handoff = wakes(m, link, plain, comm.max_per_node(), comm.cpus_per_node, 0, 0).handoff_ns;
  const BcastRun off = run_bcast(m, comm, root, sizes, first, plain, cpu, handoff, false);
  const BcastRun on = run_bcast(m, comm, root, sizes, first, plain, cpu, handoff, true);
  if (!off.complete || !on.complete) {  // cannot happen (keys follow every rank's own order): not judged
    r.basis = NodeBasis::NoGain;
    return r;
  }
  return judge(on.first_mean, off.first_mean, on.last, off.last, margin, program, 0.0, static_cast<int>(sizes.size()));
}

}  // namespace

NodeChoice node_choice(const model::Machine& m, const model::Topology& comm, const model::Coll& c,
                       const model::Execution& x, int senders, double margin_share, const model::Program* program) {
  NodeChoice r;
  if (senders < 2) {
    r.basis = NodeBasis::OneSender;
    return r;
  }
  model::Execution plain = x;
  plain.node_priorities = false;
  const double margin = margin_share * model::mpi_blocking_ns(m, comm, c);
  if (c.kind == Kind::Bcast) return bcast_choice(m, comm, c, plain, margin, program);
  return exchange_choice(m, comm, c, plain, senders, margin, program);
}

}  // namespace tnbc
