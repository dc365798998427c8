#include "runtime/inflight.hh"

#include <cstdio>

#include "runtime/log.hh"

namespace tnbc {

void report_missing(const InFlight& f) {
  char line[256];
  std::snprintf(line, sizeof line, "  collective: %s #%llu on a communicator of %d ranks (tnbc tag base %d)",
                kind_name(f.kind), static_cast<unsigned long long>(f.sequence), f.comm_size, f.base_tag);
  log_raw(line);
  if (!f.state) return;
  const auto steps = f.schedule.steps();
  // Peers nothing was received from (or, for a peer we only send to, none of whose sends was
  // taken): those have most likely not called the collective, since a peer that did sends its
  // edge steps at once. Sends that completed say little (an eager send completes locally), so
  // they only count where nothing is to be received. Said first: MPI_Abort may cut the list
  // below short.
  int suspects = 0;
  for (std::size_t i = 0; i < steps.size() && suspects < 16; ++i) {
    const int peer = steps[i].peer;
    bool seen_before = false, receives = false, received = false, delivered = false;
    for (std::size_t j = 0; j < steps.size() && !seen_before; ++j) {
      const Step& s = steps[j];
      if (s.peer != peer) continue;
      seen_before = j < i;
      const bool done = f.done(j);
      if (s.kind == StepKind::Recv || s.kind == StepKind::Await) {
        receives = true;
        received = received || done;
      } else if (delivers(s.kind)) {
        delivered = delivered || done;
      }
    }
    if (seen_before || peer < 0 || (receives ? received : delivered)) continue;
    std::snprintf(line, sizeof line, "  rank %d: nothing %s in this collective (it has most likely not called it, or died)",
                  peer, receives ? "received from it" : "delivered to it");
    log_raw(line);
    ++suspects;
  }
  int shown = 0;
  for (std::size_t i = 0; i < steps.size() && shown < 16; ++i) {
    const Step& s = steps[i];
    if (f.done(i)) continue;
    if (s.kind == StepKind::Recv || s.kind == StepKind::Await)
      std::snprintf(line, sizeof line, "  missing: %zu bytes at offset %zu from rank %d (sub-message %d)", s.length,
                    s.offset, s.peer, s.sub);
    else
      std::snprintf(line, sizeof line, "  not delivered: %zu bytes to rank %d (sub-message %d)", s.length, s.peer, s.sub);
    log_raw(line);
    ++shown;
  }
}

}  // namespace tnbc
