#include "tools/predict_sim.hh"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include "runtime/coll/builders.hh"
#include "runtime/model/topology.hh"
#include "runtime/node_arbiter.hh"

namespace sg = simgrid::s4u;

namespace tnbc::tools {

double SimSite::block(int dst, int src, int n) const {
  if (blocks0.empty() || np0 < 1 || n < 1) return bytes;
  const auto at = [&](int r) { return static_cast<std::size_t>(static_cast<long long>(r) * np0 / n); };
  return std::max(1.0, std::round(blocks0[at(dst) * static_cast<std::size_t>(np0) + at(src)] * block_scale));
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Blocking: return "blocking";
    case Variant::Nbc: return "nbc";
    case Variant::Optimize: return "optimize";
    case Variant::OptimizeNode: return "optimize+node";
  }
  return "?";
}

namespace {

constexpr int kEdgeWindow = 4;   // the calling thread's edge sends simulated at once (the link serializes them)
constexpr std::size_t kBlockingSegment = 128 * 1024;  // the blocking Bcast's pipeline segment
constexpr long long kNoHoldTimeout = std::numeric_limits<long long>::max() / 4;

// Which steps a driver runs: all of them (blocking, in the call), the edges (tnbc's calling
// thread), or the rest (tnbc's progress thread).
enum class Scope { All, Edges, Body };

struct World;

// One rank's collective in one phase: the schedule, its steps' states, what has landed.
struct RankCall {
  Schedule sched;
  std::vector<int> waiting;                   // dependencies not yet done, per step
  std::vector<std::vector<int>> dependents;   // reverse edges (empty when no step has any)
  std::vector<char> done;
  std::vector<std::pair<std::uint64_t, int>> recv_index;  // (peer << 32 | tag) -> Recv step, sorted
  std::vector<double> sub_left, sub_visible, sub_bytes;
  std::vector<int> sub_unpublished;           // per sub-message: landed body steps not yet published
  std::vector<std::pair<int, double>> pub_queue;  // landed body steps waiting for publication (step, ns)
  std::size_t pub_next = 0;
  int pub_left = 0;                           // body receive steps not yet published
  // Send steps whose dependencies are done, not started, by priority: per scope (0 edges and
  // blocking, 1 bodies), apart for the ones the node arbiter admits (arb).
  using Ready = std::set<std::pair<std::int64_t, int>>;
  Ready ready[2], ready_arb[2];
  std::vector<char> bucket;                   // per step: (scope 0/1) | 2 if arbitrated
  double publish_free = 0;
  int edge_recv_left = 0, recv_left = 0, sends_left = 0;
  bool publishes = false;                     // tnbc's early return: landing steps are published
  bool node = false;                          // node-level priorities
  int guard = 0;                              // the guard backend holding this call (kGuardNames)
  std::uint64_t sequence = 0;
};

struct Rank {
  int id = 0, node = 0;
  sg::Host* host = nullptr;
  sg::MutexPtr mu;
  sg::ConditionVariablePtr cv;
  RankCall call;
  std::unique_ptr<NodeArbiter> arbiter;
  // Busy-polling (a node with more ranks than cores, platform slice > 0): while the rank waits in
  // a call it spins, and a spinner actor holds one of the node's cores for a slice at a time.
  bool spinning = false, holding = false;
  int spin_generation = 0;
  sg::ExecPtr spin_exec;
};

struct World {
  const SimConfig* cfg = nullptr;
  std::vector<Rank> ranks;
  std::vector<std::unique_ptr<NodeSlot[]>> boards;
  std::vector<std::vector<int>> node_ranks;
  model::Topology topo;
  sg::BarrierPtr barrier;
  long long messages = 0;
  // per site, variant, rank
  std::vector<std::vector<std::vector<VariantTimes>>> times;
  std::vector<std::vector<VariantTimes>> own_call;  // per site, rank: tnbc's schedule in the call (SimSite::own_call)
  std::vector<std::vector<double>> comm_done;  // per site, rank (nbc)
  double notice_ns = 0;
  // Per node: its cores as the OS scheduler's run queue for busy-polling ranks (FIFO: round
  // robin), and whether its ranks busy-poll (more ranks than cores and a slice > 0).
  std::vector<sg::SemaphorePtr> cores;
  std::vector<char> spins;
  long long shm_transfers = 0;
};

World* g = nullptr;

// CPU work on this actor's host: SimGrid shares the host's cores between the actors computing
// at once (one core at most each), so an oversubscribed node stretches it. Hosts run 1e9
// flop/s per core: one flop is one nanosecond of a core.
void compute(double ns) {
  if (ns > 0) sg::this_actor::execute(ns);
}

template <class Pred>
void wait_until(Rank& me, Pred pred) {
  std::unique_lock lock(*me.mu);
  while (!pred()) me.cv->wait(lock);
}

// ---- busy polling on an oversubscribed node (docs/predict.md, "CPU") ----
//
// A rank that waits inside a call on a node with more ranks than cores, and whose MPI does not
// yield (platform slice > 0), spins: it keeps a core for as long as the OS scheduler lets it, one
// slice, then queues for a core again. Its spinner actor takes one of the node's cores (a
// semaphore with a token per core: the run queue, FIFO) and executes the slice on the node's host,
// so the spinning also takes CPU from the node's computing actors (SimGrid shares the host's cores
// between them). A rank is "on a core" (it can copy shared memory) while its spinner holds a core
// or while it does not spin at all (it computes, or its progress thread runs).

bool on_core(const Rank& r) { return !r.spinning || r.holding; }

void spin_loop(Rank& me, int generation) {
  const sg::SemaphorePtr& cores = g->cores[static_cast<std::size_t>(me.node)];
  const double slice_ns = g->cfg->platform.slice_s * 1e9;
  while (me.spinning && me.spin_generation == generation) {
    cores->acquire();
    if (!me.spinning || me.spin_generation != generation) {
      cores->release();
      return;
    }
    {
      std::unique_lock lock(*me.mu);
      me.holding = true;
      me.cv->notify_all();
    }
    me.spin_exec = sg::this_actor::exec_async(slice_ns);
    try {
      me.spin_exec->wait();
    } catch (const simgrid::Exception&) {  // the call ended during the slice (stop_spin cancels it)
    }
    me.spin_exec = nullptr;
    {
      std::unique_lock lock(*me.mu);
      me.holding = false;
    }
    cores->release();
  }
}

void start_spin(Rank& me) {
  if (!g->spins[static_cast<std::size_t>(me.node)]) return;
  std::unique_lock lock(*me.mu);
  me.spinning = true;
  const int generation = ++me.spin_generation;
  sg::Actor::create("spin-" + std::to_string(me.id), me.host, [&me, generation] { spin_loop(me, generation); })
      ->daemonize();
}

void stop_spin(Rank& me) {
  if (!me.spinning) return;
  {
    std::unique_lock lock(*me.mu);
    me.spinning = false;
    me.cv->notify_all();
  }
  if (me.spin_exec) me.spin_exec->cancel();
}

// Shared memory between two ranks of a spinning node: the sender copies a fragment in while it
// is on a core, the receiver copies it out while it is on a core; the next fragment waits for
// both (Open MPI vader's FIFO). Two spinning ranks on one core thus move one fragment per two
// slices each way. The copies themselves take the node's loopback. The sender's request
// completes once its last fragment is in the FIFO (`sent`: an eager send does not wait for the
// receiver), the receiver has the message once it has copied that fragment out: the transfer
// delivers it itself (deliver()).
void* g_sink = nullptr;
void deliver(int dst, int src, int tag, double now_s);

void shm_transfer(int src, int dst, int tag, double bytes, sg::Mailbox* sent) {
  Rank& s = g->ranks[static_cast<std::size_t>(src)];
  Rank& d = g->ranks[static_cast<std::size_t>(dst)];
  const double fragment = std::max(1.0, g->cfg->platform.shm_fragment_B);
  for (double left = std::max(1.0, bytes); left > 0;) {
    wait_until(s, [&] { return on_core(s); });
    const double n = std::min(fragment, left);
    sg::Comm::sendto(s.host, d.host, static_cast<std::uint64_t>(n));
    left -= n;
    if (left <= 0) sent->put(&g_sink, 0);
    wait_until(d, [&] { return on_core(d); });
  }
  deliver(dst, src, tag, sg::Engine::get_clock());
}

// Whether a message from `me` to `peer` goes through shared memory in fragments (both on one
// spinning node): then the transfer delivers it itself (shm_transfer); else the sender's driver
// delivers it when SimGrid's transfer completes.
bool through_shm(const Rank& me, int peer) {
  return g->ranks[static_cast<std::size_t>(peer)].node == me.node && g->spins[static_cast<std::size_t>(me.node)];
}

// A message from `me` to `peer`: on SimGrid's network, or through shared memory (through_shm;
// the returned comm is then the sender's completion).
sg::CommPtr start_send(Rank& me, int peer, int tag, std::size_t bytes) {
  Rank& to = g->ranks[static_cast<std::size_t>(peer)];
  ++g->messages;
  if (!through_shm(me, peer)) return sg::Comm::sendto_async(me.host, to.host, std::max<std::size_t>(bytes, 1));
  sg::Mailbox* sent = sg::Mailbox::by_name("shm-" + std::to_string(++g->shm_transfers));
  const int src = me.id;
  const auto b = static_cast<double>(bytes);
  sg::Actor::create("shm-" + std::to_string(src) + "-" + std::to_string(peer), me.host,
                    [src, peer, tag, b, sent] { shm_transfer(src, peer, tag, b, sent); });
  return sent->get_async<void>(&g_sink);
}

std::uint64_t recv_key(int peer, int tag) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(peer)) << 32) | static_cast<std::uint32_t>(tag);
}

bool arbitrated(const Rank& me, const Step& s) {
  return me.call.node && me.arbiter && s.kind == StepKind::Send && !s.edge &&
         g->ranks[static_cast<std::size_t>(s.peer)].node != me.node;
}

void wake_node(int node) {
  for (int r : g->node_ranks[static_cast<std::size_t>(node)]) g->ranks[static_cast<std::size_t>(r)].cv->notify_all();
}

void make_ready(RankCall& c, int i) {
  const int b = c.bucket[static_cast<std::size_t>(i)];
  (b & 2 ? c.ready_arb : c.ready)[b & 1].emplace(c.sched[static_cast<std::size_t>(i)].priority, i);
}

// A step is done: release what waits for it.
void step_done(Rank& me, int i) {
  RankCall& c = me.call;
  c.done[static_cast<std::size_t>(i)] = 1;
  if (c.dependents.empty()) return;
  for (int d : c.dependents[static_cast<std::size_t>(i)])
    if (--c.waiting[static_cast<std::size_t>(d)] == 0 && c.sched[static_cast<std::size_t>(d)].kind == StepKind::Send)
      make_ready(c, d);
}

// A message from `src` with `tag` lands at `dst` (called by the sender's driver when its transfer ends).
void deliver(int dst, int src, int tag, double now_s) {
  Rank& me = g->ranks[static_cast<std::size_t>(dst)];
  std::unique_lock lock(*me.mu);
  RankCall& c = me.call;
  const std::uint64_t key = recv_key(src, tag);
  auto it = std::lower_bound(c.recv_index.begin(), c.recv_index.end(), std::make_pair(key, -1));
  if (it == c.recv_index.end() || it->first != key) return;  // cannot happen: the builders match messages
  const int i = it->second;
  const Step& s = c.sched[static_cast<std::size_t>(i)];
  const double now_ns = now_s * 1e9;
  if (c.publishes && !s.edge) c.pub_queue.emplace_back(i, now_ns);  // the publisher actor publishes it
  if (s.edge) --c.edge_recv_left;
  --c.recv_left;
  if (s.sub >= 0) {
    auto sub = static_cast<std::size_t>(s.sub);
    c.sub_left[sub] -= static_cast<double>(s.length);
    if (!(c.publishes && !s.edge)) c.sub_visible[sub] = std::max(c.sub_visible[sub], now_ns);
  }
  step_done(me, i);
  me.cv->notify_all();
}

// Runs the sends in `scope` of this rank's call: in priority order, at most `window` in flight
// (< 1: no limit), each inter-node send admitted by the node arbiter where it applies (a held
// send holds the later ones too: their keys are larger). Returns when every send of the scope
// is done.
void drive(Rank& me, Scope scope, int window) {
  RankCall& c = me.call;
  const int b = scope == Scope::Body ? 1 : 0;
  std::vector<sg::CommPtr> flight;
  std::vector<int> flight_step;
  int left = 0;
  for (std::size_t i = 0; i < c.sched.size(); ++i)
    if (c.sched[i].kind == StepKind::Send && (c.bucket[i] & 1) == b) ++left;
  const double poll_s = g->cfg->x.poll_min_ns * 1e-9;
  while (left > 0) {
    bool held = false;
    {
      std::unique_lock lock(*me.mu);
      auto& F = c.ready[b];
      auto& A = c.ready_arb[b];
      while (window < 1 || static_cast<int>(flight.size()) < window) {
        const bool take_a = !held && !A.empty() && (F.empty() || *A.begin() < *F.begin());
        if (!take_a && F.empty()) break;
        auto& from = take_a ? A : F;
        const int i = from.begin()->second;
        const Step& s = c.sched[static_cast<std::size_t>(i)];
        if (take_a) {
          const long long now = static_cast<long long>(sg::Engine::get_clock() * 1e9);
          if (me.arbiter->admit(node_key(c.sequence, s.priority), now) == NodeArbiter::Verdict::Hold) {
            held = true;
            continue;
          }
          me.arbiter->moving(now);
        }
        from.erase(from.begin());
        flight.push_back(start_send(me, s.peer, s.tag_offset, s.length));
        flight_step.push_back(i);
      }
      if (flight.empty()) {
        // Nothing in flight: wait for a receive that releases a send, or for the node's board.
        if (held) me.cv->wait_for(lock, poll_s);
        else me.cv->wait(lock);
        continue;
      }
    }
    // Something in flight: wait for its completion. A schedule whose sends wait for receives
    // (a broadcast's forwards) polls as the progress thread does (TNBC_POLL_MIN_US); a held send
    // is looked at again when one of the rank's own sends completes (polling every rank's
    // arbitration would cost the simulation more than it changes).
    const int ready_now = static_cast<int>(c.ready[b].size() + c.ready_arb[b].size());
    const bool may_change = !c.dependents.empty() && ready_now + static_cast<int>(flight.size()) < left;
    const ssize_t k = may_change ? sg::Comm::wait_any_for(flight, poll_s) : sg::Comm::wait_any(flight);
    if (k < 0) continue;
    const int i = flight_step[static_cast<std::size_t>(k)];
    flight.erase(flight.begin() + k);
    flight_step.erase(flight_step.begin() + k);
    const Step& s = c.sched[static_cast<std::size_t>(i)];
    if (!through_shm(me, s.peer)) deliver(s.peer, me.id, s.tag_offset, sg::Engine::get_clock());
    {
      std::unique_lock lock(*me.mu);
      step_done(me, i);
    }
    if (arbitrated(me, s)) {
      me.arbiter->remove(node_key(c.sequence, s.priority), static_cast<long long>(sg::Engine::get_clock() * 1e9));
      wake_node(me.node);
    }
    --left;
  }
}

// tnbc's publication of landed body pieces (the progress thread's work, on the rank's host): it
// notices a message (the machine's O_r after its arrival), then publishes the pieces one after
// another at the guard's publish cost, as CPU work that competes with the node's other actors.
void publish(Rank& me) {
  RankCall& c = me.call;
  const model::GuardCost& gc = g->cfg->machine.guard[c.guard];
  for (;;) {
    std::pair<int, double> item;
    {
      std::unique_lock lock(*me.mu);
      while (c.pub_left > 0 && c.pub_next >= c.pub_queue.size()) me.cv->wait(lock);
      if (c.pub_left <= 0) return;
      item = c.pub_queue[c.pub_next++];
    }
    const double noticed = (item.second + g->notice_ns) * 1e-9;
    if (noticed > sg::Engine::get_clock()) sg::this_actor::sleep_until(noticed);
    const Step& s = c.sched[static_cast<std::size_t>(item.first)];
    compute(gc.publish.at(static_cast<double>(s.length)));
    std::unique_lock lock(*me.mu);
    const double now_ns = sg::Engine::get_clock() * 1e9;
    c.publish_free = now_ns;
    if (s.sub >= 0) {
      const auto sub = static_cast<std::size_t>(s.sub);
      --c.sub_unpublished[sub];
      c.sub_visible[sub] = std::max(c.sub_visible[sub], now_ns);
    }
    --c.pub_left;
    me.cv->notify_all();
  }
}

// The MPI library's pairwise exchange, step by step (MPI_Sendrecv with rank + k and rank - k):
// the schedule from blocking_exchange, run in its order without polling.
void pairwise(Rank& me) {
  RankCall& c = me.call;
  for (std::size_t i = 0; i + 1 < c.sched.size(); i += 2) {
    const Step& recv = c.sched[i];
    const Step& send = c.sched[i + 1];
    sg::CommPtr comm = start_send(me, send.peer, send.tag_offset, send.length);
    comm->wait();
    if (!through_shm(me, send.peer)) deliver(send.peer, me.id, send.tag_offset, sg::Engine::get_clock());
    std::unique_lock lock(*me.mu);
    c.done[i + 1] = 1;
    while (!c.done[i]) me.cv->wait(lock);
    (void)recv;
  }
}

// Prepares this rank's call in a phase (before the barrier that lets messages flow).
void setup(Rank& me, Schedule sched, const std::vector<double>& sub_bytes, bool publishes, bool node,
           std::uint64_t sequence) {
  RankCall& c = me.call;
  c = RankCall{};
  c.sched = std::move(sched);
  const std::size_t n = c.sched.size();
  c.waiting.assign(n, 0);
  c.done.assign(n, 0);
  c.bucket.assign(n, 0);
  c.publishes = publishes;
  c.node = node;
  c.sequence = sequence;
  c.sub_bytes = sub_bytes;
  c.sub_left.assign(sub_bytes.size(), 0);
  c.sub_visible.assign(sub_bytes.size(), 0);
  c.sub_unpublished.assign(sub_bytes.size(), 0);
  bool deps = false;
  for (std::size_t i = 0; i < n; ++i) deps = deps || !c.sched.after(i).empty();
  if (deps) c.dependents.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = c.sched[i];
    for (int d : c.sched.after(i)) {
      c.dependents[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
      ++c.waiting[i];
    }
    if (s.kind == StepKind::Recv) {
      c.recv_index.emplace_back(recv_key(s.peer, s.tag_offset), static_cast<int>(i));
      ++c.recv_left;
      if (s.edge) ++c.edge_recv_left;
      if (s.sub >= 0) c.sub_left[static_cast<std::size_t>(s.sub)] += static_cast<double>(s.length);
      if (publishes && !s.edge) {
        ++c.pub_left;
        if (s.sub >= 0) ++c.sub_unpublished[static_cast<std::size_t>(s.sub)];
      }
    } else if (s.kind == StepKind::Send) {
      ++c.sends_left;
      c.bucket[i] = static_cast<char>((publishes && !s.edge ? 1 : 0) | (arbitrated(me, s) ? 2 : 0));
      if (c.waiting[i] == 0) make_ready(c, static_cast<int>(i));
    } else {
      c.done[i] = 1;  // Copy: local, no time on the network
    }
  }
  std::sort(c.recv_index.begin(), c.recv_index.end());
  if (node && me.arbiter) {
    const long long now = static_cast<long long>(sg::Engine::get_clock() * 1e9);
    for (const Step& s : c.sched)
      if (arbitrated(me, s)) me.arbiter->add(node_key(sequence, s.priority), now);
  }
}

// ---- the schedules ----

std::vector<std::size_t> prefix(const std::vector<std::size_t>& b) {
  std::vector<std::size_t> off(b.size(), 0);
  for (std::size_t i = 1; i < b.size(); ++i) off[i] = off[i - 1] + b[i - 1];
  return off;
}

bool is_bcast(Kind k) { return k == Kind::Bcast; }

// The MPI library's exchange: all pairs at once (a schedule without dependencies), or pairwise
// (step k: send to rank + k, receive from rank - k, after step k - 1 is done both ways).
// send[p] / recv[p]: the bytes sent to / received from rank p.
Schedule blocking_exchange(int rank, int n, const std::vector<std::size_t>& send, const std::vector<std::size_t>& recv) {
  Schedule s;
  auto step = [&](StepKind k, int peer, int d) {
    const std::size_t bytes = (k == StepKind::Send ? send : recv)[static_cast<std::size_t>(peer)];
    return Step{k, peer, 0, bytes, 0, 0, d, peer, false};
  };
  if (n < kPairwiseFrom) {
    for (int d = 1; d < n; ++d) {
      s.add(step(StepKind::Recv, (rank - d + n) % n, d));
      s.add(step(StepKind::Send, (rank + d) % n, d));
    }
    return s;
  }
  int prev_send = -1, prev_recv = -1;  // steps alternate Recv, Send (pairwise() runs them in pairs)
  for (int d = 1; d < n; ++d) {
    const int r = s.add(step(StepKind::Recv, (rank - d + n) % n, d));
    const int sd = prev_send < 0 ? s.add(step(StepKind::Send, (rank + d) % n, d))
                                 : s.add(step(StepKind::Send, (rank + d) % n, d), {prev_send, prev_recv});
    prev_send = sd;
    prev_recv = r;
  }
  return s;
}

struct Built {
  Schedule sched;
  std::vector<double> sub_bytes;
  double own = 0, sent = 0;  // exchanges: the own block (copied in place), the bytes sent to the others
};

Built build(const SimConfig& cfg, const SimSite& site, int rank, Variant v, const PieceRule& pieces, int segments) {
  const int n = cfg.np;
  const std::size_t page = cfg.machine.page;
  Built b;
  if (is_bcast(site.kind)) {
    const auto bytes = static_cast<std::size_t>(site.bytes);
    std::vector<Chunk> chunks;
    if (v == Variant::Blocking) {
      const int segs = static_cast<int>(std::max<std::size_t>(1, (bytes + kBlockingSegment - 1) / kBlockingSegment));
      chunks = bcast_chunks(bytes, page, segs);
      b.sched = build_bcast(rank, n, 0, chunks, bcast_chunk_order(chunks.size(), {}), page, PieceSetting{0});
    } else {
      chunks = bcast_chunks(bytes, page, segments);
      std::vector<int> read;
      if (v != Variant::Nbc && site.order.size() == chunks.size()) read = site.order;
      b.sched = build_bcast(rank, n, 0, chunks, bcast_chunk_order(chunks.size(), read), page, pieces.setting);
    }
    for (const Chunk& c : chunks) b.sub_bytes.push_back(rank == 0 ? 0.0 : static_cast<double>(c.length));
    return b;
  }
  std::vector<std::size_t> recv(static_cast<std::size_t>(n)), send(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    recv[static_cast<std::size_t>(p)] = static_cast<std::size_t>(site.block(rank, p, n));
    send[static_cast<std::size_t>(p)] = static_cast<std::size_t>(site.block(p, rank, n));
  }
  const auto me = static_cast<std::size_t>(rank);
  b.own = static_cast<double>(recv[me]);
  recv[me] = send[me] = 0;  // its own block: copied in the call
  b.sub_bytes.assign(recv.begin(), recv.end());
  for (std::size_t x : send) b.sent += static_cast<double>(x);
  if (v == Variant::Blocking) {
    b.sched = blocking_exchange(rank, n, send, recv);
    return b;
  }
  std::vector<int> order;
  if (v != Variant::Nbc) order = site.order;
  b.sched = build_exchange(rank, n, send, prefix(send), recv, prefix(recv), page, order, pieces);
  return b;
}

// ---- one rank's program ----

// This rank's T_CRC for a call built as `b`: T_CRC is the mean rank's, so a rank that receives
// more than the mean reads longer (a broadcast's: the site's).
double rank_crc_ns(const SimConfig& cfg, const SimSite& site, const Built& b) {
  double total_bytes = 0;
  for (double x : b.sub_bytes) total_bytes += x;
  return is_bcast(site.kind) || site.bytes <= 0 ? site.crc_ns
                                                : site.crc_ns * (total_bytes + b.own) / (site.bytes * cfg.np);
}

// tnbc's schedule completed in the call (SimSite::own_call; the exchange family only,
// model::own_call_bands): the own block copied into place, then every step driven by the calling
// thread, which yields between its polls (no busy polling, Policy::waiting) and sends without a
// window, as the cost model prices it (model::own_call_ns: tnbc's timeline without the early
// return); the data lands in place, nothing is held back or published. Then the program's CURC
// and CRC.
void own_call(Rank& me, const SimSite& site, std::size_t si, const PieceRule& pieces, int segments,
              std::uint64_t sequence) {
  const SimConfig& cfg = *g->cfg;
  Built b = build(cfg, site, me.id, Variant::Nbc, pieces, segments);
  const double crc_ns = rank_crc_ns(cfg, site, b);
  g->barrier->wait();
  setup(me, std::move(b.sched), b.sub_bytes, false, false, sequence);
  g->barrier->wait();
  const double t0 = sg::Engine::get_clock();
  compute(cfg.machine.in_call_copy().at(b.own));
  drive(me, Scope::All, 0);
  wait_until(me, [&] { return me.call.recv_left == 0; });
  VariantTimes& out = g->own_call[si][static_cast<std::size_t>(me.id)];
  out.call_ns = (sg::Engine::get_clock() - t0) * 1e9;
  compute(site.curc_ns + crc_ns);
  out.total_ns = (sg::Engine::get_clock() - t0) * 1e9;
  out.own_call = true;
}

void rank_main(int r, std::vector<SimSite> sites) {
  Rank& me = g->ranks[static_cast<std::size_t>(r)];
  const SimConfig& cfg = *g->cfg;
  const model::Machine& m = cfg.machine;
  std::uint64_t sequence = 0;
  for (std::size_t si = 0; si < sites.size(); ++si) {
    const SimSite& site = sites[si];
    model::Coll coll;
    coll.kind = site.kind;
    coll.bytes = site.bytes;
    coll.page = m.page;
    const PieceRule pieces(std::nullopt, model::piece_scale(m, g->topo, cfg.x, m.page));
    const int segments = is_bcast(site.kind) ? model::bcast_segments(m, g->topo, site.bytes, cfg.x,
                                                                       cfg.bcast_max_segments, m.page)
                                             : 1;
    for (int vi = 0; vi < kVariants; ++vi) {
      // Below the size threshold the policy routes the call to the MPI library (Policy::route).
      const auto v = site.mpi ? Variant::Blocking : static_cast<Variant>(vi);
      Built b = build(cfg, site, r, v, pieces, segments);
      double total_bytes = 0;
      for (double x : b.sub_bytes) total_bytes += x;
      const double send_bytes = is_bcast(site.kind) ? (r == 0 ? site.bytes : 0) : b.sent;
      const double crc_ns = rank_crc_ns(cfg, site, b);
      ++sequence;
      g->barrier->wait();
      setup(me, std::move(b.sched), b.sub_bytes, v != Variant::Blocking, v == Variant::OptimizeNode, sequence);
      // The guard the engine takes for this call: PROT_NONE where it takes it per call and the
      // machine file prices it cheaper at the bytes this rank receives (model::by_size_pays).
      const int guard = model::by_size_pays(m, cfg.x.guard, cfg.x.guard_by_size, total_bytes) ? cfg.x.guard_by_size
                                                                                              : std::max(0, cfg.x.guard);
      me.call.guard = guard;
      g->barrier->wait();
      const double t0 = sg::Engine::get_clock();
      VariantTimes& out = g->times[si][static_cast<std::size_t>(vi)][static_cast<std::size_t>(r)];
      if (v == Variant::Blocking) {
        start_spin(me);
        if (!is_bcast(site.kind) && cfg.np >= kPairwiseFrom) pairwise(me);
        else drive(me, Scope::All, 0);
        wait_until(me, [&] { return me.call.recv_left == 0; });
        stop_spin(me);
        out.call_ns = (sg::Engine::get_clock() - t0) * 1e9;
        compute(site.curc_ns + crc_ns);
        out.total_ns = (sg::Engine::get_clock() - t0) * 1e9;
      } else {
        // Tinit's work (runtime/coll/exchange.cc, bcast.cc): the own block copied into place, the
        // staging copy of what is sent, holding back the received pages (emptied and registered).
        // The staging copy: a site's share of calls into untouched pages (SimSite::cold_calls) at
        // the cold line; the figure is one call x calls, so each call carries that share.
        // Copies into touched pages at the machine's in-call line (Machine::in_call_copy). Besides,
        // tnbc's bookkeeping (Machine::in_call_rest, by the bytes received; a broadcast's
        // receivers' and root's their own, Machine::rest_bcast, rest_bcast_root), and at the end
        // the hand-over to the progress thread (Machine::handover_ns); the hold, the bookkeeping
        // and the hand-over at their warm figures where what the call sends and receives fits in
        // the cache (Machine::warm), as the model prices them. A broadcast's root copies alone
        // (Machine::in_call_copy_alone).
        const model::Line& in_call = is_bcast(site.kind) ? m.in_call_copy_alone() : m.in_call_copy();
        const model::Line& cold = m.memcpy_cold_measured() ? m.fresh_staging(staging_size_class(send_bytes)) : in_call;
        const double cold_share = site.calls > 0 ? std::min(1.0, site.cold_calls / site.calls) : 0.0;
        const double staging_ns = (1 - cold_share) * in_call.at(send_bytes) + cold_share * cold.at(send_bytes);
        const bool warm = m.warm(2 * b.own + send_bytes + total_bytes);
        const double rest_ns = !is_bcast(site.kind) ? m.rest(total_bytes, warm)
                               : r == 0             ? m.rest_bcast_root(send_bytes, warm)
                                                    : m.rest_bcast(total_bytes, warm);
        const double work_ns = in_call.at(b.own) + staging_ns +
                               (cfg.x.guard >= 0 ? m.guard[guard].hold_at(total_bytes, warm) : 0.0) + rest_ns;
        compute(work_ns);
        // tnbc's calling thread does not busy-poll where the node's ranks outnumber its CPUs: it
        // yields between its polls (Policy::waiting), as its progress thread does, so its edges
        // move without waiting for scheduler slices (the cost model's busy_poll says the same).
        drive(me, Scope::Edges, kEdgeWindow);
        wait_until(me, [&] { return me.call.edge_recv_left == 0; });
        compute(m.handover(warm));
        out.call_ns = (sg::Engine::get_clock() - t0) * 1e9;
        // Where the progress thread shares the rank's CPU (no more cores on the node than ranks)
        // and the program computes after the call, its first round comes late
        // (Machine::first_round_ns), as the model prices it.
        const bool shares = me.host->get_core_count() <= static_cast<int>(g->node_ranks[static_cast<std::size_t>(me.node)].size());
        // The body's window as the runtime's policy sets it (Policy::send_window and
        // caller_starts_sends): a broadcast's own where it has one (TNBC_BCAST_SEND_WINDOW, auto
        // by the machine file's transport); else, on a CPU the thread shares, none, and there the
        // root's call starts its sends, so no first round comes late.
        const bool bcast = is_bcast(site.kind);
        const int body_window = !bcast || (cfg.x.bcast_window < 1 && !shares) ? cfg.x.window
                                : cfg.x.bcast_window > 0                     ? cfg.x.bcast_window
                                                                              : 0;
        const bool sends_in_call = bcast && r == 0 && shares && cfg.x.bcast_window < 1;
        const double late_s = shares && !sends_in_call ? std::min(site.curc_ns, m.first_round()) / 1e9 : 0.0;
        sg::ActorPtr progress = sg::Actor::create("progress-" + std::to_string(r), me.host, [&me, body_window, late_s] {
          sg::this_actor::sleep_for(late_s);
          drive(me, Scope::Body, body_window);
        });
        sg::ActorPtr publisher = sg::Actor::create("publish-" + std::to_string(r), me.host, [&me] { publish(me); });
        compute(site.curc_ns);
        const double first_reads = cfg.x.guard >= 0 ? m.guard[guard].first_read.at(total_bytes) : 0.0;
        std::vector<int> order = is_bcast(site.kind) && site.order.size() != b.sub_bytes.size() ? std::vector<int>{}
                                                                                                 : site.order;
        if (order.size() != b.sub_bytes.size()) {
          order.resize(b.sub_bytes.size());
          for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
        }
        for (int sub : order) {
          const auto su = static_cast<std::size_t>(sub);
          if (me.call.sub_bytes[su] <= 0) continue;
          bool waited = false;
          wait_until(me, [&] {
            const bool in = me.call.sub_left[su] <= 0 && me.call.sub_unpublished[su] == 0;
            waited = waited || !in;
            return in;
          });
          if (waited && cfg.x.guard >= 0) compute(m.guard[guard].fault_ns);
          // The reading, and the reader's first accesses to the published pages (first_read).
          if (total_bytes > 0) compute((crc_ns + first_reads) * me.call.sub_bytes[su] / total_bytes);
        }
        out.total_ns = (sg::Engine::get_clock() - t0) * 1e9;
        progress->join();
        wait_until(me, [&] { return me.call.recv_left == 0; });
        publisher->join();
        if (v == Variant::Nbc)
          g->comm_done[si][static_cast<std::size_t>(r)] =
              (std::max(sg::Engine::get_clock(), me.call.publish_free * 1e-9) - t0) * 1e9;
      }
    }
    if (site.own_call) own_call(me, site, si, pieces, segments, ++sequence);
  }
  g->barrier->wait();
}

Status build_platform(sg::Engine& e, const SimConfig& c, std::vector<sg::Host*>& hosts) {
  const int nodes = (c.np + c.per_node - 1) / c.per_node;
  if (!c.platform.xml.empty()) {
    try {
      e.load_platform(c.platform.xml);
    } catch (const std::exception& ex) {
      return Status::error("SimGrid could not load the platform " + c.platform.xml + ": " + ex.what());
    }
    hosts = e.get_all_hosts();
    if (static_cast<int>(hosts.size()) < nodes)
      return Status::error("the platform " + c.platform.xml + " has " + std::to_string(hosts.size()) +
                           " hosts: " + std::to_string(c.np) + " processes at " + std::to_string(c.per_node) +
                           " per node need " + std::to_string(nodes));
    hosts.resize(static_cast<std::size_t>(nodes));
    return Status{};
  }
  const Platform& p = c.platform;
  auto* zone = sg::create_star_zone("cluster");
  sg::Link* backbone = nullptr;
  if (p.backbone_Bps > 0) backbone = zone->create_link("backbone", p.backbone_Bps)->set_latency(p.backbone_lat_s)->seal();
  for (int i = 0; i < nodes; ++i) {
    const std::string n = std::to_string(i);
    sg::Host* h = zone->create_host("node-" + n, 1e9)->set_core_count(std::max(1, p.cores))->seal();
    // A node's link is a constraint on what leaves the node only: in a full-duplex network that
    // does not block, balanced exchanges load each node's two directions alike, and a broadcast
    // tree sends each rank one stream. Flows then share constraints per node only, which keeps
    // SimGrid's max-min solution local to the node at every completion (a constraint on the
    // receiving side links every flow to every other: 1024 ranks would take hours).
    sg::Link* up = zone->create_link("up-" + n, p.link_Bps)->set_latency(p.link_lat_s)->seal();
    sg::Link* loop = zone->create_link("loop-" + n, p.loopback_Bps)->set_latency(p.loopback_lat_s)->seal();
    std::vector<sg::LinkInRoute> out{sg::LinkInRoute(up)};
    if (backbone) out.emplace_back(backbone);
    zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, out, false);
    zone->add_route(nullptr, h->get_netpoint(), nullptr, nullptr, {}, false);
    zone->add_route(h->get_netpoint(), h->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(loop)}, false);
    hosts.push_back(h);
  }
  zone->seal();
  return Status{};
}

}  // namespace

Result<std::vector<SimResult>> simulate(const SimConfig& c, const std::vector<SimSite>& sites) {
  static bool ran = false;
  if (ran) return Status::error("internal error: SimGrid runs one simulation per process");
  ran = true;
  int argc = 5;
  char a0[] = "tnbc-predict", a1[] = "--cfg=network/model:CM02", a2[] = "--cfg=network/crosstraffic:0",
       a3[] = "--log=root.thresh:critical", a4[] = "--cfg=contexts/stack-size:256";
  char* argv[] = {a0, a1, a2, a3, a4, nullptr};
  sg::Engine e(&argc, argv);
  std::vector<sg::Host*> hosts;
  if (Status st = build_platform(e, c, hosts); !st.ok()) return st;

  World w;
  g = &w;
  w.cfg = &c;
  w.topo = model::Topology::block(c.np, c.per_node, std::max(c.platform.cores, c.per_node), 1);
  w.notice_ns = c.machine.O_r_ns();
  w.barrier = sg::Barrier::create(static_cast<unsigned>(c.np));
  w.ranks.resize(static_cast<std::size_t>(c.np));
  const int nodes = (c.np + c.per_node - 1) / c.per_node;
  w.node_ranks.resize(static_cast<std::size_t>(nodes));
  w.boards.resize(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    const int first = n * c.per_node, count = std::min(c.per_node, c.np - first);
    w.boards[static_cast<std::size_t>(n)] = std::make_unique<NodeSlot[]>(static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) w.node_ranks[static_cast<std::size_t>(n)].push_back(first + k);
  }
  w.times.assign(sites.size(), std::vector<std::vector<VariantTimes>>(
                                   kVariants, std::vector<VariantTimes>(static_cast<std::size_t>(c.np))));
  w.own_call.assign(sites.size(), std::vector<VariantTimes>(static_cast<std::size_t>(c.np)));
  w.comm_done.assign(sites.size(), std::vector<double>(static_cast<std::size_t>(c.np), 0));
  w.cores.resize(static_cast<std::size_t>(nodes));
  w.spins.assign(static_cast<std::size_t>(nodes), 0);
  for (int n = 0; n < nodes; ++n) {
    const int cores = hosts[static_cast<std::size_t>(n)]->get_core_count();
    w.cores[static_cast<std::size_t>(n)] = sg::Semaphore::create(static_cast<unsigned>(cores));
    w.spins[static_cast<std::size_t>(n)] =
        c.platform.slice_s > 0 && static_cast<int>(w.node_ranks[static_cast<std::size_t>(n)].size()) > cores;
  }
  for (int r = 0; r < c.np; ++r) {
    Rank& rk = w.ranks[static_cast<std::size_t>(r)];
    rk.id = r;
    rk.node = r / c.per_node;
    rk.host = hosts[static_cast<std::size_t>(rk.node)];
    rk.mu = sg::Mutex::create();
    rk.cv = sg::ConditionVariable::create();
    const int local = r - rk.node * c.per_node;
    const int count = static_cast<int>(w.node_ranks[static_cast<std::size_t>(rk.node)].size());
    rk.arbiter = std::make_unique<NodeArbiter>(w.boards[static_cast<std::size_t>(rk.node)].get(), count, local,
                                               kNoHoldTimeout);
  }
  for (int r = 0; r < c.np; ++r)
    sg::Actor::create("rank-" + std::to_string(r), w.ranks[static_cast<std::size_t>(r)].host,
                      [r, sites] { rank_main(r, sites); });
  try {
    e.run();
  } catch (const std::exception& ex) {
    g = nullptr;
    return Status::error(std::string("the simulation failed: ") + ex.what());
  }
  std::vector<SimResult> out(sites.size());
  for (std::size_t s = 0; s < sites.size(); ++s) {
    for (int v = 0; v < kVariants; ++v)
      for (const VariantTimes& t : w.times[s][static_cast<std::size_t>(v)]) {
        out[s].v[v].call_ns = std::max(out[s].v[v].call_ns, t.call_ns);
        out[s].v[v].total_ns = std::max(out[s].v[v].total_ns, t.total_ns);
      }
    for (double d : w.comm_done[s]) out[s].comm_done_ns = std::max(out[s].comm_done_ns, d);
    for (const VariantTimes& t : w.own_call[s]) {
      out[s].own.call_ns = std::max(out[s].own.call_ns, t.call_ns);
      out[s].own.total_ns = std::max(out[s].own.total_ns, t.total_ns);
      out[s].own.own_call = out[s].own.own_call || t.own_call;
    }
    out[s].messages = w.messages;
    // How a call that does not return early completes: tnbc's schedule in the call where it beats
    // the library's (SimSite::own_call), else the MPI library's call.
    const VariantTimes library{out[s].v[0].call_ns, out[s].v[0].total_ns, true};
    const VariantTimes& in_call = sites[s].own_call ? out[s].own : library;
    // optimize: a site whose early return does not pay completes in the call.
    for (Variant v : {Variant::Optimize, Variant::OptimizeNode}) {
      VariantTimes& t = out[s].v[static_cast<int>(v)];
      if (t.total_ns >= in_call.total_ns) t = in_call;
    }
    if (sites[s].mpi || sites[s].in_call)
      for (int v = 1; v < kVariants; ++v) out[s].v[v] = sites[s].mpi ? library : in_call;
  }
  g = nullptr;
  return out;
}

}  // namespace tnbc::tools
