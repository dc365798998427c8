// The trace pass (TNBC_MODE=trace): collectives run blocking; before returning, the receive
// buffer is guarded per sub-message and the first touch of each is recorded (see docs/trace.md).
// The tracer implements the Engine interface, so the shim routes collectives to it unchanged.
#pragma once

#include <memory>

#include "runtime/config.hh"
#include "runtime/engine.hh"
#include "runtime/model/inputs.hh"
#include "runtime/stats.hh"

namespace tnbc::trace {

// nullptr (after a message) when tracing is not possible here; collectives then run blocking.
// `model`: the cost model's inputs (runtime/model/startup.hh), from which a broadcast is cut
// into segments exactly as the engine cuts it on this machine.
std::unique_ptr<Engine> make_tracer(const Settings& s, Stats& stats, int world_rank, int world_size,
                                    std::shared_ptr<const model::Inputs> model);

}  // namespace tnbc::trace
