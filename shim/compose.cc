// The composition root (shim/compose.hh). Modes and their parts:
//
//   nbc       Engine (runtime/engine.hh), default read orders
//   optimize  Engine + the profile's read orders and blocking decisions (trace/profile_orders.hh)
//   trace     the tracer (trace/tracer.hh): blocking collectives, first touches recorded
//   passthrough, off: no engine (the entry points call PMPI_* and, passthrough, count)
//
// runtime/ never names trace/: the parts meet here, and only here.
#include "shim/compose.hh"

#include <mpi.h>
#include <unistd.h>

#include <string>

#include "runtime/engine.hh"
#include "runtime/log.hh"
#include "runtime/memory_hooks.hh"
#include "runtime/model/startup.hh"
#include "trace/profile_orders.hh"
#include "trace/tracer.hh"

namespace tnbc::shim {

void start_runtime(Runtime& rt, int provided) {
  rt.begin();
  const Settings& s = rt.settings();
  const Mode m = s.mode;
  const bool early_returns = m == Mode::Nbc || m == Mode::Optimize;
  std::unique_ptr<ReadOrderSource> orders;
  if (m == Mode::Optimize) {
    Result<std::unique_ptr<ReadOrderSource>> loaded = trace::load_profile_orders(s, rt.stats(), rt.rank(), rt.size());
    if (loaded.ok()) orders = std::move(loaded).value();
    else rt.say(LogLevel::Warn, loaded.status().message() + "; running with default priorities (as TNBC_MODE=nbc)");
  }
  const Status fence = early_returns || m == Mode::Trace ? munmap_fence_holds() : Status{};
  const bool munmap_fenced = fence.ok();
  if (!munmap_fenced) rt.say(LogLevel::Warn, fence.message() + "; collectives run blocking");
  rt.flush_messages();
  if (!munmap_fenced) {
    rt.run_blocking(Reason::Disabled);
  } else if (early_returns) {
    if (provided < MPI_THREAD_MULTIPLE) {
      rt.run_blocking(Reason::ThreadLevel);
      if (rt.rank() == 0)
        log(LogLevel::Warn, "the MPI library does not provide MPI_THREAD_MULTIPLE; collectives run blocking");
    } else {
      rt.attach(Engine::create(s, rt.stats(), std::move(orders)), Reason::Disabled);
    }
  } else if (m == Mode::Trace) {
    // The cost model's machine (TNBC_MACHINE, or the probe without a guard backend: the trace
    // pass holds nothing back), for cutting broadcasts as the engine does; on a private
    // duplicate of MPI_COMM_WORLD, where nothing else is in flight.
    MPI_Comm dup = MPI_COMM_NULL;
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
    std::shared_ptr<const model::Inputs> model =
        model::start_model(s, dup, nullptr, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), rt.stats());
    PMPI_Comm_free(&dup);
    rt.attach(trace::make_tracer(s, rt.stats(), rt.rank(), rt.size(), std::move(model)), Reason::Mode);
  }
  rt.started();
}

}  // namespace tnbc::shim
