// Node-level priorities (T-NBC mechanism 8, paper section 5.2): the ranks of a node share one
// network link, so they agree, through a board in shared memory, that the sends on that link
// are the node's most urgent ones. This file is the arbitration itself, over plain memory: no
// MPI, no shared-memory set-up (runtime/node_segment.cc maps the board; runtime/node_gate.cc
// asks it for each send; tests/unit/test_node_arbiter.cc runs it with threads as ranks).
//
//   board (one per node and communicator)        rank r of the node (one NodeArbiter)
//   slot 0: key, since_ns                        outstanding: the keys of its sends to other
//   slot 1: key, since_ns                          nodes, registered when its call starts,
//   ...                                            removed when each send completes
//   slot M-1                                     slot[r].key = the smallest of them
//                                                          (kNoKey: none), since_ns = when it
//                                                          became the smallest
//
// A send with key k (lower = more urgent: the collective's sequence number, then the step's
// priority, which for an exchange is the sender's place in the receivers' read order) may start
// when no other slot holds a smaller (key, rank) pair. Keys are compared as published: whatever
// order each rank derived its keys from, all ranks compare the same numbers, ties broken by the
// rank, so exactly one rank holds the node's smallest pair and no two ranks wait for each other
// (ranks that read in different orders still arbitrate consistently; none can deadlock).
//
// The turn passes when the bytes can have left the node, not when MPI says the send completed:
// over TCP a send below the socket's buffer completes once the kernel holds it, and the next
// rank's sends would join it on the wire (docs/benchmarks.md, node priorities session 9). So a
// send that completes before its bytes can have left (`leaves_ns`: the model's wire time of the
// rank's bytes queued so far, runtime/node_turn.hh) stays on the board as *leaving* until then:
//
//   slot r: leaving_key, leaving_until_ns   the least key of rank r's sends still leaving, and
//                                           when the last of them has left
//
// A send is held by slot r's leaving pair while `now < leaving_until_ns` and the pair is more
// urgent; it ends by itself (no stale-rank judgement: it is a time, not a rank's progress), so
// a rank that goes to sleep with sends leaving holds nobody after their wire time.
//
// Bounded hold: a slot whose key has not changed and whose rank started, completed or was held
// back on no send for `hold_ns` belongs to a rank that does not move (dead, stalled, in its call
// waiting for another rank, or one piece that takes that long) and is ignored; the send starts
// and is counted as a hold that timed out. A rank that is held back is alive: it waits for the
// rank ahead of it, which alone is judged, so the ranks behind a dead one keep their order.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/node_choice.hh"

namespace tnbc {

inline constexpr std::uint64_t kNoKey = UINT64_MAX;

// One rank's entry on the board (a cache line of its own: ranks write only their own slot).
struct alignas(64) NodeSlot {
  std::atomic<std::uint64_t> key{kNoKey};
  std::atomic<long long> since_ns{0};
  std::atomic<std::uint64_t> leaving_key{kNoKey};  // sends completed in MPI whose bytes may still be on their way
  std::atomic<long long> leaving_until_ns{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<long long>::is_always_lock_free,
              "the board is shared between processes: its atomics must be lock-free");

// The key of a send: earlier collectives first, then the step's priority.
std::uint64_t node_key(std::uint64_t sequence, std::int64_t priority);

class NodeArbiter {
 public:
  // `board`: `ranks` slots (zero-initialized memory or slots already in use); `me`: this rank's.
  NodeArbiter(NodeSlot* board, int ranks, int me, long long hold_ns);
  NodeArbiter(const NodeArbiter&) = delete;
  NodeArbiter& operator=(const NodeArbiter&) = delete;

  // A send with `key` is outstanding (from the start of its call until it completes).
  void add(std::uint64_t key, long long now_ns);
  // The send with `key` completed in MPI; its bytes can have left at `leaves_ns` (<= now_ns, or
  // 0: they have: the turn passes now; later: it passes then, runtime/node_turn.hh).
  void remove(std::uint64_t key, long long now_ns, long long leaves_ns = 0);
  // A send of `bytes` starts at `now_ns` on a link of `ns_per_byte`: when its bytes can have left,
  // after this rank's bytes queued before it (0 where `ns_per_byte` is 0: no wire time known).
  long long leaves_ns(double bytes, double ns_per_byte, long long now_ns);
  // One of its sends starts (or completes: remove): the rank moves (its slot is not stale,
  // whatever its key).
  void moving(long long now_ns) { board_[me_].since_ns.store(now_ns, std::memory_order_release); }

  enum class Verdict {
    Start,     // nothing more urgent on the node
    Hold,      // another rank has a more urgent send outstanding
    TimedOut,  // only ranks that did not move for hold_ns have: start anyway
  };
  // A held rank is alive and waiting for another: it marks itself as moving, so that the rank
  // behind it does not take it for stale (only the rank that holds the node up is judged).
  Verdict admit(std::uint64_t key, long long now_ns);

  int ranks() const { return ranks_; }
  int me() const { return me_; }
  long long hold_ns() const { return hold_ns_; }
  std::uint64_t published() const { return board_[me_].key.load(std::memory_order_acquire); }

 private:
  void publish(long long now_ns);  // under mutex_
  void publish_leaving(long long now_ns);  // under mutex_

  NodeSlot* board_;
  int ranks_, me_;
  long long hold_ns_;
  std::mutex mutex_;                                // this process's threads (caller, progress)
  std::map<std::uint64_t, int> outstanding_;        // key -> sends with that key
  std::multimap<std::uint64_t, long long> leaving_;  // key -> when its bytes can have left
  long long wire_free_ns_ = 0;                       // when this rank's bytes queued so far can have left
};

// A communicator's node link: the board's mapping (its deleter unmaps it: runtime/node_segment.cc;
// declared first, so it goes last), the arbiter on it, and which ranks share this node.
struct NodeLink {
  std::shared_ptr<void> board;
  std::unique_ptr<NodeArbiter> arbiter;
  std::vector<bool> same_node;  // by rank of the communicator
};

// Per call (InFlight::node): set by node_register (runtime/node_gate.hh) when it is arbitrated.
// The counters are `mutable`: the gate counts while it judges a send (SendGate::admit sees the
// call as const: it may not change the schedule), and they are atomics of their own.
struct NodeCall {
  std::shared_ptr<NodeLink> link;                     // nullptr: not arbitrated
  NodeChoice choice;                                  // why it is (Policy::node_priorities)
  std::unique_ptr<std::atomic<std::uint8_t>[]> held;  // per step: 1 held back once, 2 started past a stale rank
  std::unique_ptr<std::atomic<long long>[]> started_ns;  // per step: when the gate last let it start
  mutable std::atomic<std::uint32_t> holds{0}, hold_timeouts{0};
  std::atomic<bool> recorded{false};
};

}  // namespace tnbc
