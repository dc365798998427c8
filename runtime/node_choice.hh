// Whether node-level priorities (runtime/node_gate.hh) pay for one call: the decision behind
// TNBC_NODE_PRIORITIES=auto (Policy::node_priorities). Arbitration only reorders the sends of a
// node's ranks on its link; it pays where several ranks of the node send over that link at once
// (else there is nothing to reorder) and the cost model says the readers get their first-read
// sub-message (all of it: what tests/bench/first_read.c measures) earlier by more than the
// model's error margin. From the model's timeline of tnbc's schedule (runtime/model/estimate.hh:
// `after` = total_ns - in_call_ns, the transfer after the return, bound by the node's link where
// M ranks share it; `last` = last_share, the share of the bytes in the last round of pieces):
//
//     first_off  = in_call + after x (1 - last / 2)   every rank sends piece k to every peer,
//                  then piece k+1: a sub-message's last piece comes in the last round
//     first_on   = in_call + after / M                the node's most urgent sender (the one every
//                  receiver reads first) has the link first: its share of the node's bytes
//     on  when   first_off - first_on > margin x the MPI library's blocking time
//
// with M the ranks of the node on its link and the margin TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT (the
// one the early-return decision uses). Rank-local: it changes when this rank's sends start,
// never which messages exist.
//
// Pure: no MPI (the policy, `tnbc merge` and the unit tests call it).
#pragma once

#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"

namespace tnbc {

// Why arbitration did or did not run for a call. Names are part of the summary format
// (`node_priorities.basis`, docs/formats.md).
enum class NodeBasis {
  Setting,      // TNBC_NODE_PRIORITIES=on (or off)
  Gains,        // on: the model's first read comes earlier by more than the margin
  NoGain,       // off: it does not
  OneSender,    // off: fewer than two ranks of the node send over its link in this call
  NoProfile,    // off: auto without a profile (no read order worth keeping node-wide)
  NoModel,      // on: auto in mode optimize, but no cost model to judge with
  NotModelled,  // off: the model has no estimate of the node's link order for this kind (Bcast)
};
const char* node_basis_name(NodeBasis b);

struct NodeChoice {
  bool on = false;
  NodeBasis basis = NodeBasis::Setting;
  double first_on_ns = -1, first_off_ns = -1;  // the model's first read with, without (-1: not judged)
  double margin_ns = 0;
};

// How many ranks of node `node` of `t` send over its link: its ranks when there are at least two
// and some rank of `t` is reached over the link (another node, or TNBC_NODE_LOCAL_SENDS=link),
// else 0. (A running rank counts its communicator's board: node_link_senders, node_gate.hh.)
int link_senders(const model::Topology& t, int node, bool local_on_link);

// The model's verdict for collective `c` over `comm` with `x` where `senders` ranks of this
// node send over its link; `margin_share` of the model's blocking time is the gain to exceed.
NodeChoice node_choice(const model::Machine& m, const model::Topology& comm, const model::Coll& c,
                       const model::Execution& x, int senders, double margin_share);

}  // namespace tnbc
