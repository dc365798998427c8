#include "runtime/runtime.hh"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/engine.hh"
#include "runtime/log.hh"
#include "runtime/memory_hooks.hh"
#include "runtime/output_file.hh"
#include "runtime/report.hh"
#include "trace/profile_orders.hh"
#include "trace/tracer.hh"

extern char** environ;

namespace tnbc {

Runtime& Runtime::get() {
  // Never destroyed: atexit handlers and late signals may still ask for it.
  static Runtime* rt = new Runtime();
  return *rt;
}

Runtime::Runtime() = default;
Runtime::~Runtime() = default;

void Runtime::configure() {
  ConfigResult r = load_config(&tnbc::process_getenv);
  settings_ = r.settings;
  set_log_level(settings_.log);
  // Said once for all ranks in start(), when the rank is known (runtime/report.hh).
  pending_.clear();
  for (const auto& e : r.errors) pending_.push_back({LogLevel::Error, e.message});
  if (!r.errors.empty()) {
    pending_.push_back({LogLevel::Error, "invalid configuration: collectives run blocking (TNBC_MODE=passthrough); "
                                         "`tnbc config` lists the accepted values"});
    settings_.mode = Mode::Passthrough;
    blocking_reason_ = Reason::Disabled;
  }
  for (const auto& name : unknown_variables(environ))
    pending_.push_back({LogLevel::Warn, name + " is not a tnbc setting (ignored); `tnbc --help` lists them"});
  if (settings_.mode == Mode::Off) {  // start() does not run: say it now
    for (const Message& m : pending_) log(m.level, "%s", m.text.c_str());
    pending_.clear();
  }
}

void Runtime::start(int provided) {
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  PMPI_Comm_size(MPI_COMM_WORLD, &size_);
  set_log_rank(rank_);
  if (rank_ == 0 && log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, "effective settings:\n%s", dump(settings_).c_str());
  const Mode m = settings_.mode;
  std::unique_ptr<ReadOrderSource> orders;
  if (m == Mode::Optimize) {
    std::string problem;
    orders = trace::load_profile_orders(settings_, stats_, rank_, size_, problem);
    if (!orders) pending_.push_back({LogLevel::Warn, problem + "; running with default priorities (as TNBC_MODE=nbc)"});
  }
  std::string why;
  const bool munmap_fenced = !(m == Mode::Nbc || m == Mode::Optimize || m == Mode::Trace) || munmap_fence_holds(why);
  if (!munmap_fenced) pending_.push_back({LogLevel::Warn, why + "; collectives run blocking"});
  report_once(pending_, rank_);
  pending_.clear();
  if (!munmap_fenced) {
    blocking_reason_ = Reason::Disabled;
  } else if (m == Mode::Nbc || m == Mode::Optimize) {
    if (provided < MPI_THREAD_MULTIPLE) {
      blocking_reason_ = Reason::ThreadLevel;
      if (rank_ == 0)
        log(LogLevel::Warn, "the MPI library does not provide MPI_THREAD_MULTIPLE; collectives run blocking");
    } else {
      engine_ = Engine::create(settings_, stats_, rank_, size_, std::move(orders));
      if (engine_) blocking_reason_ = Reason::None;
      else blocking_reason_ = Reason::Disabled;
    }
  } else if (m == Mode::Trace) {
    engine_ = trace::make_tracer(settings_, stats_, rank_, size_);
    blocking_reason_ = engine_ ? Reason::None : Reason::Mode;
  }
  started_.store(true, std::memory_order_release);
}

void Runtime::stop() {
  if (!started_.load(std::memory_order_acquire)) return;
  if (engine_) engine_->shutdown();
  write_summary();
  started_.store(false, std::memory_order_release);
}

void Runtime::write_summary() {
  if (settings_.mode == Mode::Off) return;
  const std::string json = stats_.summary_json(rank_, size_, std::string(mode_name(settings_.mode)));
  if (settings_.output_dir.empty()) {
    if (log_enabled(LogLevel::Info)) log(LogLevel::Info, "summary:\n%s", json.c_str());
    return;
  }
  const std::string name = "tnbc-summary." + std::to_string(rank_) + ".json";
  if (const std::string err = write_output_file(settings_.output_dir, name, json); !err.empty())
    log(LogLevel::Error, "%s; summary not written", err.c_str());
}

}  // namespace tnbc
