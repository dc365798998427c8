// When a rank's turn on the node's link passes (runtime/node_arbiter.hh): once the bytes of its
// send can have left the node, not when MPI says the send completed. Over TCP an MPI send below
// the socket's buffer completes as soon as the kernel holds it; passing the turn then lets every
// rank's data into the sockets at once, and TCP, not the board, orders the wire (docs/benchmarks.md,
// node priorities sessions 9 and 10). So for sends below the link's buffered-send size the turn
// passes at
//
//   leaves = max(start, when this rank's bytes queued before it can have left) + bytes x G
//
// (G: the link level's ns per byte from the machine file, runtime/model/machine.hh), or at MPI's
// completion if that is later. Larger sends keep MPI's completion: the kernel cannot hold them
// whole, so they complete only as their last buffered bytes go out.
//
// The buffered-send size: the machine file's (`buffered_send_bytes` of the link's level, measured
// by `tnbc calibrate`: model::Level) where it is above 0; else (0: not measured, or nothing
// buffered, where the rule costs nothing) the kernel's TCP send-buffer limit
// (net.ipv4.tcp_wmem's maximum, the size its autotuning may grow a socket's buffer to, read once at
// start-up: runtime/node_segment.hh); else (not readable) every send. Too large a size costs
// nothing: a send that really completed after its bytes left has `leaves` <= its completion. Too
// small a G (a faster link than the file says) passes the turn early, as before; too large a one
// holds the next rank longer, by at most the rank's own bytes' wire time (a time, not a wait for
// a rank: a stalled rank holds nobody past it).
//
// Pure: no MPI, no process state (the engine gives it the kernel's figure).
#pragma once

#include <string>

#include "runtime/model/machine.hh"

namespace tnbc {

struct NodeTurn {
  double ns_per_byte = 0;     // the link's G (0: not known: turns pass on MPI's completion)
  double buffered_bytes = 0;  // sends below it wait for their wire time (<= 0 with G known: every send)
  std::string source;         // where buffered_bytes came from (the summary's `node_turn`)
  // Whether a send of `bytes` passes its turn at its wire time (else at MPI's completion).
  bool by_wire(double bytes) const { return ns_per_byte > 0 && (buffered_bytes <= 0 || bytes < buffered_bytes); }
  std::string json() const;
};

// The rule for a link of level `link`; `kernel_bytes`: the kernel's TCP send-buffer limit (< 0:
// unknown).
NodeTurn node_turn(const model::Level& link, double kernel_bytes);

}  // namespace tnbc
