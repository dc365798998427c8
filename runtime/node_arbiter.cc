#include "runtime/node_arbiter.hh"

#include <algorithm>

namespace tnbc {

std::uint64_t node_key(std::uint64_t sequence, std::int64_t priority) {
  // 32 bits each: a schedule's priorities are far below 2^32 (runtime/coll/exchange.cc), and a
  // communicator's sequence wraps after 2^32 collectives, long after any call in flight.
  const auto p = static_cast<std::uint64_t>(std::clamp<std::int64_t>(priority, 0, 0xffffffffLL));
  return ((sequence & 0xffffffffULL) << 32) | p;
}

NodeArbiter::NodeArbiter(NodeSlot* board, int ranks, int me, long long hold_ns)
    : board_(board), ranks_(ranks), me_(me), hold_ns_(hold_ns) {
  board_[me_].key.store(kNoKey, std::memory_order_release);
}

void NodeArbiter::publish(long long now_ns) {
  const std::uint64_t least = outstanding_.empty() ? kNoKey : outstanding_.begin()->first;
  NodeSlot& mine = board_[me_];
  if (mine.key.load(std::memory_order_relaxed) == least) return;
  // since_ns first: a reader that sees the new key must not judge it by the old key's age.
  mine.since_ns.store(now_ns, std::memory_order_release);
  mine.key.store(least, std::memory_order_release);
}

void NodeArbiter::add(std::uint64_t key, long long now_ns) {
  std::lock_guard lock(mutex_);
  ++outstanding_[key];
  publish(now_ns);
}

void NodeArbiter::remove(std::uint64_t key, long long now_ns) {
  std::lock_guard lock(mutex_);
  auto it = outstanding_.find(key);
  if (it == outstanding_.end()) return;
  if (--it->second == 0) outstanding_.erase(it);
  publish(now_ns);
  moving(now_ns);  // a send completed: the rank moves, even while its least key stays (a long piece)
}

NodeArbiter::Verdict NodeArbiter::admit(std::uint64_t key, long long now_ns) {
  bool stale_only = false;
  for (int r = 0; r < ranks_; ++r) {
    if (r == me_) continue;
    const NodeSlot& s = board_[r];
    const std::uint64_t k = s.key.load(std::memory_order_acquire);
    if (k > key || (k == key && r > me_) || k == kNoKey) continue;
    if (now_ns - s.since_ns.load(std::memory_order_acquire) > hold_ns_) {
      stale_only = true;
      continue;
    }
    moving(now_ns);
    return Verdict::Hold;
  }
  return stale_only ? Verdict::TimedOut : Verdict::Start;
}

}  // namespace tnbc
