#include "runtime/runtime.hh"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/engine.hh"
#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/output_file.hh"
#include "runtime/report.hh"

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

void Runtime::begin() {
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  PMPI_Comm_size(MPI_COMM_WORLD, &size_);
  set_log_rank(rank_);
  if (rank_ == 0 && log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, "effective settings:\n%s", dump(settings_).c_str());
  check_uniform_settings();
}

void Runtime::flush_messages() {
  report_once(pending_, rank_);
  pending_.clear();
}

void Runtime::attach(std::unique_ptr<Engine> engine, Reason reason_if_none) {
  engine_ = std::move(engine);
  blocking_reason_ = engine_ ? Reason::None : reason_if_none;
}

// The settings that decide which messages a collective consists of (config.hh, Option::uniform)
// and the page size (the cuts are whole pages) must be equal on every rank, or ranks would wait
// for messages that are never sent. The launcher normally passes the same environment to every
// rank; a rank-local value (a wrapper script, a per-node default) is caught here, by one
// reduction over MPI_COMM_WORLD: then every rank runs blocking, as with an invalid value.
void Runtime::check_uniform_settings() {
  const std::string mine = uniform_settings(settings_) + "page size=" + std::to_string(sysconf(_SC_PAGESIZE));
  const std::uint64_t h = std::hash<std::string>()(mine);
  std::uint64_t in[2] = {h, ~h}, out[2] = {0, 0};  // min of h and of ~h: the smallest and the largest h
  MPI_Request req;
  PMPI_Iallreduce(in, out, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD, &req);
  const long long start = futex::now_ns();
  for (int done = 0; PMPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;) {
    if (futex::now_ns() - start > settings_.timeout_s * 1000000000LL) {
      log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) in MPI_Init: some rank did not take part in tnbc's "
                           "start-up (is tnbc not preloaded there, or TNBC_MODE=off?)",
          static_cast<long long>(settings_.timeout_s));
      PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    sched_yield();
  }
  if (out[0] == ~out[1]) return;
  std::string values = mine;
  for (char& c : values)
    if (c == '\n') c = ' ';
  pending_.push_back({LogLevel::Error, "settings that shape the messages differ between ranks (this rank: " + values +
                                           "): collectives run blocking (TNBC_MODE=passthrough)"});
  settings_.mode = Mode::Passthrough;
  blocking_reason_ = Reason::Disabled;
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
  if (const Status st = write_output_file(settings_.output_dir, name, json); !st.ok())
    log(LogLevel::Error, "%s; summary not written", st.message().c_str());
}

}  // namespace tnbc
