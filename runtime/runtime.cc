#include "runtime/runtime.hh"

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "runtime/engine.hh"
#include "runtime/fatal.hh"
#include "runtime/fnv1a.hh"
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
  init_ns_ = futex::now_ns();
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

namespace {
// The run's id, the same on every rank of one MPI_COMM_WORLD: summaries, traces and `tnbc merge`
// tell runs (and spawned worlds) apart by it. Drawn by rank 0 from its host, clock and pid.
std::uint64_t draw_run_id(int rank) {
  std::uint64_t id = 0;
  if (rank == 0) {
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    const long long t = futex::now_ns();
    const pid_t pid = ::getpid();
    const std::time_t wall = std::time(nullptr);
    std::uint64_t h = fnv1a64(host, std::strlen(host));
    h = fnv1a64(&t, sizeof t, h);
    h = fnv1a64(&pid, sizeof pid, h);
    id = fnv1a64(&wall, sizeof wall, h);
  }
  PMPI_Bcast(&id, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return id;
}

// The `tnbc` command next to this library: the build tree's tools/tnbc, or an installation's
// bin/tnbc; plain "tnbc" (from PATH) when neither is there.
std::string tnbc_command() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&draw_run_id), &info) && info.dli_fname) {
    std::string dir = info.dli_fname;
    dir = dir.find('/') == std::string::npos ? "." : dir.substr(0, dir.rfind('/'));
    for (const char* rel : {"/tools/tnbc", "/../bin/tnbc"}) {
      char real[PATH_MAX];
      if (::realpath((dir + rel).c_str(), real) && ::access(real, X_OK) == 0) return real;
    }
  }
  return "tnbc";
}

std::string absolute(const std::string& path) {
  char real[PATH_MAX];
  return ::realpath(path.c_str(), real) ? std::string(real) : path;
}
}  // namespace

void Runtime::begin() {
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  PMPI_Comm_size(MPI_COMM_WORLD, &size_);
  set_log_rank(rank_);
  set_abort_flush_us(settings_.abort_flush_us);  // a timeout at start-up ends the job like any other
  MPI_Comm parent = MPI_COMM_NULL;
  PMPI_Comm_get_parent(&parent);
  stats_.set_run({draw_run_id(rank_), parent != MPI_COMM_NULL, 0, absolute("/proc/self/exe")});
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
      end_job();  // pauses first: the launcher forwards the report before the abort
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
  Stats::Run run = stats_.run();
  run.wall_ns = futex::now_ns() - init_ns_;
  stats_.set_run(run);
  if (engine_) engine_->shutdown();
  write_summary();
  say_totals();
  started_.store(false, std::memory_order_release);
}

void Runtime::say_totals() {
  if (settings_.output_dir.empty() || settings_.mode == Mode::Off) return;
  const Stats::Totals t = stats_.totals();
  long long in[4] = {t.duration_ns, t.in_call_ns, t.hidden_ns, stats_.run().wall_ns}, out[4] = {0, 0, 0, 0};
  MPI_Request req;
  if (PMPI_Ireduce(in, out, 4, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS) return;
  const long long start = futex::now_ns();
  for (int done = 0; PMPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;) {
    if (futex::now_ns() - start > settings_.timeout_s * 1000000000LL) return;  // a rank did not finalize: say nothing
    sched_yield();
  }
  if (rank_ != 0) return;
  const double comm = static_cast<double>(out[0]), wall = static_cast<double>(out[3]);
  auto share = [](double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; };
  // The report of the directory shows every world (a spawned one's files are in a subdirectory).
  const std::string dir = absolute(settings_.output_dir);
  // docs/reports.md defines both figures; totals over the ranks of this world.
  std::fprintf(stderr, "tnbc: hidden: %.1f%% of the collectives' time (%.3f s over %d ranks; %.1f%% of the run)\n",
               share(static_cast<double>(out[2]), comm), comm / 1e9, size_, share(static_cast<double>(out[2]), wall));
  std::fprintf(stderr, "tnbc: Tinit (time inside the calls): %.1f%% of the collectives' time (%.1f%% of the run)\n",
               share(static_cast<double>(out[1]), comm), share(static_cast<double>(out[1]), wall));
  std::fprintf(stderr, "tnbc: report: %s report %s\n", tnbc_command().c_str(), dir.c_str());
}

void Runtime::write_summary() {
  if (settings_.mode == Mode::Off) return;
  const std::string json = stats_.summary_json(rank_, size_, std::string(mode_name(settings_.mode)));
  if (settings_.output_dir.empty()) {
    if (log_enabled(LogLevel::Info)) log(LogLevel::Info, "summary:\n%s", json.c_str());
    return;
  }
  const std::string name = "tnbc-summary." + std::to_string(rank_) + ".json";
  const std::string dir = world_output_dir(settings_.output_dir, stats_.run().id, stats_.run().spawned);
  if (const Status st = write_output_file(dir, name, json); !st.ok())
    log(LogLevel::Error, "%s; summary not written", st.message().c_str());
}

}  // namespace tnbc
