#include "runtime/node_gate.hh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/stats.hh"

namespace tnbc {

bool node_arbitrated(const InFlight& f, const Step& s) {
  const NodeLink* link = f.node.link.get();
  return link && s.kind == StepKind::Send && !s.edge && s.peer >= 0 &&
         static_cast<std::size_t>(s.peer) < link->same_node.size() && !link->same_node[static_cast<std::size_t>(s.peer)];
}

int node_link_senders(const NodeLink& link) {
  for (bool same : link.same_node)
    if (!same) return link.arbiter->ranks();
  return 0;
}

void node_register(InFlight& f, std::shared_ptr<NodeLink> link, const NodeChoice& why) {
  f.node.link = std::move(link);
  f.node.choice = why;
  const std::size_t n = f.schedule.size();
  f.node.held = std::make_unique<std::atomic<std::uint8_t>[]>(n);
  f.node.started_ns = std::make_unique<std::atomic<long long>[]>(n);
  const long long now = futex::now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = f.schedule[i];
    if (node_arbitrated(f, s)) f.node.link->arbiter->add(node_key(f.sequence, s.priority), now);
  }
}

SendGate::Verdict NodeGate::admit(const InFlight& f, const Step& s, int in_flight) {
  const Verdict v = inner_.admit(f, s, in_flight);
  if (v != Verdict::Start || !node_arbitrated(f, s)) return v;
  const auto i = static_cast<std::size_t>(&s - f.schedule.steps().data());
  auto& held = f.node.held[i];
  const NodeCall& counts = f.node;
  NodeArbiter& a = *f.node.link->arbiter;
  const long long now = futex::now_ns();
  switch (a.admit(node_key(f.sequence, s.priority), now)) {
    case NodeArbiter::Verdict::Start:
      a.moving(now);
      f.node.started_ns[i].store(now, std::memory_order_relaxed);
      return Verdict::Start;
    case NodeArbiter::Verdict::Hold:
      if (held.exchange(1, std::memory_order_relaxed) == 0) counts.holds.fetch_add(1, std::memory_order_relaxed);
      return Verdict::Later;
    case NodeArbiter::Verdict::TimedOut:
      if (held.exchange(2, std::memory_order_relaxed) != 2) counts.hold_timeouts.fetch_add(1, std::memory_order_relaxed);
      a.moving(now);
      f.node.started_ns[i].store(now, std::memory_order_relaxed);
      return Verdict::Start;
  }
  return Verdict::Start;
}

void NodeGate::sent(InFlight& f, int step, long long now_ns) {
  const auto i = static_cast<std::size_t>(step);
  const Step& s = f.schedule[i];
  if (!node_arbitrated(f, s)) return;
  NodeArbiter& a = *f.node.link->arbiter;
  // Every arbitrated send queues its bytes on the link (runtime/node_turn.hh); those below the
  // buffered-send size pass their turn only once those bytes can have left.
  const auto bytes = static_cast<double>(s.length);
  const long long leaves = a.leaves_ns(bytes, turn_.ns_per_byte, f.node.started_ns[i].load(std::memory_order_relaxed));
  a.remove(node_key(f.sequence, s.priority), now_ns, turn_.by_wire(bytes) ? leaves : 0);
}

namespace {

// TNBC_LOG=debug: when each received sub-message (an exchange's: its peer; a broadcast's: its
// chunk) was complete here (ms after the call), in the order the schedule starts them (lowest
// priority first: the read order), arbitrated or not — what node-level priorities move, for
// every call (the summary's `timelines` have the first calls' arrivals and first touches).
void log_arrivals(const InFlight& f) {
  struct Sub {
    std::int64_t priority;
    int sub;
    long long done;
  };
  std::vector<Sub> subs;
  for (std::size_t i = 0; i < f.schedule.size(); ++i) {
    const Step& s = f.schedule[i];
    if (!lands(s.kind) || s.sub < 0 || !f.done(i)) continue;
    auto it = std::find_if(subs.begin(), subs.end(), [&](const Sub& x) { return x.sub == s.sub; });
    if (it == subs.end()) it = subs.insert(subs.end(), {INT64_MAX, s.sub, f.done_ns[i]});
    if (!s.edge) it->priority = std::min(it->priority, s.priority);
    it->done = std::max(it->done, f.done_ns[i]);
  }
  std::sort(subs.begin(), subs.end(), [](const Sub& a, const Sub& b) { return a.priority < b.priority; });
  char line[512];
  int n = 0;
  for (const Sub& s : subs) {
    if (n >= static_cast<int>(sizeof line) - 32) break;
    n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), " %d:%.1f", s.sub,
                       static_cast<double>(s.done - f.times.called) / 1e6);
  }
  line[std::min(n, static_cast<int>(sizeof line) - 1)] = '\0';
  log(LogLevel::Debug, "%s #%llu arrivals (sub-message:ms after the call, read order)%s; node priorities %s, holds %u, "
      "hold timeouts %u", kind_name(f.kind), static_cast<unsigned long long>(f.sequence), line,
      f.node.link ? "on" : "off", f.node.holds.load(), f.node.hold_timeouts.load());
}

}  // namespace

void NodeGate::finished(InFlight& f) {
  const bool debug = log_enabled(LogLevel::Debug);
  if ((!f.node.link && !debug) || f.node.recorded.exchange(true)) return;  // once; nothing to do without either
  if (debug) log_arrivals(f);
  if (!f.node.link) return;
  if (stats_)
    stats_->record_node(f.kind, f.site, {true, f.node.choice, f.node.holds.load(), f.node.hold_timeouts.load(), first_read_ns(f)});
}

long long first_read_ns(const InFlight& f) {
  int sub = -1;
  std::int64_t best = 0;
  for (const Step& s : f.schedule)
    if (lands(s.kind) && !s.edge && (sub < 0 || s.priority < best)) {
      sub = s.sub;
      best = s.priority;
    }
  if (sub < 0) return -1;
  long long last = -1;
  for (std::size_t i = 0; i < f.schedule.size(); ++i) {
    const Step& s = f.schedule[i];
    if (!lands(s.kind) || s.sub != sub) continue;
    if (!f.done(i)) return -1;
    last = std::max(last, f.done_ns[i]);
  }
  return last < 0 ? -1 : std::max(0LL, last - f.times.called);
}

}  // namespace tnbc
