// The send gate of node-level priorities (runtime/node_arbiter.hh): a send to another node
// starts only when the window allows it (the inner gate, WindowGate) and the node's board says
// nothing more urgent of another rank of the node is outstanding. Sends to ranks of the same
// node (shared memory) and heads and tails (a page each, what calls wait for) are not held.
//
//   engine, as a call starts        node_register(f): every arbitrated send's key on the board
//   executor, each ready send       NodeGate::admit -> inner verdict, then the arbiter's
//   executor, a send completed      NodeGate::sent  -> its key off the board (or leaving until its
//                                                      bytes can have left: runtime/node_turn.hh)
//   executor, the last step done    NodeGate::finished -> the call's counters into the summary
//
// Which calls are arbitrated is the policy's (Policy::node_priorities); the board exists only
// on communicators with more than one rank on the node (runtime/node_segment.hh).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/executor.hh"
#include "runtime/node_arbiter.hh"
#include "runtime/node_turn.hh"

namespace tnbc {

class Stats;

// Whether step `s` of `f` goes through the node's arbitration.
bool node_arbitrated(const InFlight& f, const Step& s);
// How many ranks of this node send over its link in a call on `link`'s communicator: the
// node's ranks of it when some rank of it is reached over the link, else 0.
int node_link_senders(const NodeLink& link);
// Puts every arbitrated send of `f` on the board (call it once the schedule is final, before
// any executor runs it); `why`: the policy's answer, for the summary.
void node_register(InFlight& f, std::shared_ptr<NodeLink> link, const NodeChoice& why);

class NodeGate final : public SendGate {
 public:
  // `stats`: where each arbitrated call's counters go (nullptr: nowhere; unit tests); `turn`:
  // when a completed send's turn passes (default: at MPI's completion).
  NodeGate(SendGate& inner, Stats* stats, NodeTurn turn = {}) : inner_(inner), stats_(stats), turn_(std::move(turn)) {}
  Verdict admit(const InFlight& f, const Step& s, int in_flight) override;
  void sent(InFlight& f, int step, long long now_ns) override;
  void finished(InFlight& f) override;

 private:
  SendGate& inner_;
  Stats* stats_;
  NodeTurn turn_;
};

// The time from the call until its first-read sub-message was complete here (all its steps
// done), or -1: the sub-message of the landing body step with the lowest priority (the
// exchange builder gives the sender read first the lowest), its last completion.
long long first_read_ns(const InFlight& f);

}  // namespace tnbc
