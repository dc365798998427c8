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

void NodeArbiter::publish_leaving(long long now_ns) {
  std::uint64_t least = kNoKey;
  long long until = 0;
  for (auto it = leaving_.begin(); it != leaving_.end();) {
    if (it->second <= now_ns) {
      it = leaving_.erase(it);
      continue;
    }
    least = std::min(least, it->first);
    until = std::max(until, it->second);
    ++it;
  }
  NodeSlot& mine = board_[me_];
  // The time first: a reader that sees a more urgent key must not judge it by an old, passed time
  // (it may see the new time with the old key: a moment's hold more, never one less).
  mine.leaving_until_ns.store(until, std::memory_order_release);
  mine.leaving_key.store(least, std::memory_order_release);
}

long long NodeArbiter::leaves_ns(double bytes, double ns_per_byte, long long now_ns) {
  if (ns_per_byte <= 0) return 0;
  std::lock_guard lock(mutex_);
  wire_free_ns_ = std::max(now_ns, wire_free_ns_) + static_cast<long long>(bytes * ns_per_byte);
  return wire_free_ns_;
}

void NodeArbiter::add(std::uint64_t key, long long now_ns) {
  std::lock_guard lock(mutex_);
  ++outstanding_[key];
  publish(now_ns);
}

void NodeArbiter::remove(std::uint64_t key, long long now_ns, long long leaves_ns) {
  std::lock_guard lock(mutex_);
  auto it = outstanding_.find(key);
  if (it == outstanding_.end()) return;
  // Leaving before it is off the outstanding keys: a reader never sees neither.
  if (leaves_ns > now_ns) {
    leaving_.emplace(key, leaves_ns);
    publish_leaving(now_ns);
  }
  if (--it->second == 0) outstanding_.erase(it);
  publish(now_ns);
  moving(now_ns);  // a send completed: the rank moves, even while its least key stays (a long piece)
}

NodeArbiter::Verdict NodeArbiter::admit(std::uint64_t key, long long now_ns) {
  bool stale_only = false;
  for (int r = 0; r < ranks_; ++r) {
    if (r == me_) continue;
    const NodeSlot& s = board_[r];
    const auto before = [&](std::uint64_t k) { return k != kNoKey && (k < key || (k == key && r < me_)); };
    // Its more urgent bytes may still be on the link: a time, judged without the rank.
    if (before(s.leaving_key.load(std::memory_order_acquire)) && now_ns < s.leaving_until_ns.load(std::memory_order_acquire)) {
      moving(now_ns);
      return Verdict::Hold;
    }
    const std::uint64_t k = s.key.load(std::memory_order_acquire);
    if (!before(k)) continue;
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
