// The trace pass (TNBC_MODE=trace): collectives run blocking; before returning, the receive
// buffer is guarded per sub-message and the first touch of each is recorded (see docs/trace.md).
// The tracer implements the Engine interface, so the shim routes collectives to it unchanged.
#pragma once

#include <memory>

#include "runtime/config.hh"
#include "runtime/engine.hh"
#include "runtime/stats.hh"

namespace tnbc::trace {

// nullptr (after a message) when tracing is not possible here; collectives then run blocking.
std::unique_ptr<Engine> make_tracer(const Settings& s, Stats& stats, int world_rank, int world_size);

}  // namespace tnbc::trace
