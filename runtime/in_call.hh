// Mode optimize, a call with no overlap to gain (InFlight::to_completion): the calling thread
// runs the collective's whole schedule itself and returns when every piece is done.
//
// The pieces are exactly those of an early return (same peers, lengths, tags, private
// communicator), so the other ranks of the collective may return early from it, or complete it
// the same way: a rank's choice changes no message. What differs is only who drives them:
//
//   early return:  caller posts the in-call pieces, progress thread the rest (priority order,
//                  TNBC_SEND_WINDOW, bodies after the return), regions published as they arrive
//   in the call:   caller posts every receive, then every send at once (a broadcast's forward
//                  as soon as its piece is in), and tests them until all are done
//
// No guard is up and the caller does not return before the last send is taken, so receives may
// land in the program's buffer and sends may read from it (engine.cc sets recv_data / send_data
// so); nothing is published. Without the progress thread in between there is no thread
// hand-off per completion and no send window: at 1 MiB per peer, np 4, about 1.7x PMPI_Alltoall
// where the progress thread took 2.8x and staging through the pool 4.5x (docs/trace.md).
#pragma once

namespace tnbc {

struct InFlight;

// Runs `f` to completion on the calling thread: marks each piece done as it completes (what a
// timeout report reads). Tests back to back for `poll_ns`, then sleeps that long between
// tests. False when `timeout_ns` passed first (the caller reports what is missing).
bool run_in_caller(InFlight& f, long long timeout_ns, long long poll_ns);

}  // namespace tnbc
