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
#include <sched.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "runtime/engine.hh"
#include "runtime/log.hh"
#include "runtime/memory_hooks.hh"
#include "runtime/modules.hh"
#include "runtime/model/probe.hh"
#include "runtime/model/startup.hh"
#include "trace/callsite.hh"
#include "trace/plain_run.hh"
#include "trace/profile_orders.hh"
#include "trace/tracer.hh"

namespace tnbc::shim {

namespace {
trace::PlainRun g_plain;  // plain_before_init's verdict
bool g_plain_ran = false;  // start_runtime ran the plain program on it
}  // namespace

bool plain_before_init(Runtime& rt) {
  cpu_set_t own;
  CPU_ZERO(&own);
  const int cpus = sched_getaffinity(0, sizeof own, &own) == 0 ? CPU_COUNT(&own) : 1;
  // MPI_Get_library_version may be called before MPI_Init (MPI-3).
  g_plain = trace::judge_plain_run(rt.settings(), trace::executable_path(), model::mpi_library_version(), cpus);
  return g_plain.plain;
}

void start_runtime(Runtime& rt, int provided) {
  rt.begin();
  const Settings& s = rt.settings();
  const Mode m = s.mode;
  // Each rank judged the profile before MPI_Init from its own settings: they must agree (a rank
  // whose settings differ would run the engine against plain calls elsewhere and hang).
  int mine = g_plain.plain ? 1 : 0, all = mine, any = mine;
  if (m == Mode::Optimize) {
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  if (trace::agree_plain(all != 0, any != 0) == trace::PlainAgreement::Disagree) {
    // Some ranks asked MPI for their program's own thread level: none can run the engine.
    rt.say(LogLevel::Warn, "the ranks judged the profile " + s.profile +
                               " differently before MPI_Init (their TNBC_* settings or machine files differ): some "
                               "would run the plain program, others return early; every collective runs as the MPI "
                               "library's own");
    rt.run_blocking(Reason::Disabled);
    rt.flush_messages();
    rt.started();
    return;
  }
  if (g_plain.plain) {
    if (rt.size() == g_plain.np) {
      rt.stats().set_profile(s.profile, "loaded");
      // The summary's model block (machine, placement, the sites judged), as in mode trace.
      MPI_Comm dup = MPI_COMM_NULL;
      PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
      std::shared_ptr<const model::Inputs> in =
          model::start_model(s, dup, nullptr, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), rt.stats());
      PMPI_Comm_free(&dup);
      if (in && !s.machine.empty() && in->source != "file")
        rt.say(LogLevel::Warn, "mode optimize runs the plain program on the verdict of the machine file " + s.machine +
                                   ", which does not describe this run (above); run `tnbc calibrate` for this "
                                   "placement to judge the sites again");
      if (in && in->summary) {
        in->summary->note("plain_program", "true");
        for (const model::Summary::Site& site : g_plain.sites) in->summary->record_site(site);
      }
      rt.say(LogLevel::Info, "mode optimize runs the plain program: " + g_plain.because +
                                 "; MPI_Init asked for the program's own thread level (not MPI_THREAD_MULTIPLE) and "
                                 "every collective is the MPI library's own call");
      rt.run_blocking(Reason::NoOverlapToGain);
      g_plain_ran = true;
    } else {
      rt.stats().set_profile(s.profile, "rejected");
      rt.say(LogLevel::Warn, "the profile " + s.profile + " was recorded with " + std::to_string(g_plain.np) +
                                 " ranks, this run has " + std::to_string(rt.size()) + "; collectives run blocking");
      rt.run_blocking(Reason::Disabled);
    }
    rt.flush_messages();
    rt.started();
    return;
  }
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

void finish_runtime(Runtime& rt) {
  if (!g_plain_ran) return;
  std::vector<trace::RunSite> run;
  for (const Stats::SiteTotal& t : rt.stats().site_totals()) {
    const CodeLocation where = locate_return_address(t.address);
    run.push_back({kind_name(t.kind), where.module, where.offset, t.calls, t.bytes});
  }
  const trace::SizesNotRecorded n = trace::sizes_not_recorded(g_plain, rt.rank(), run);
  if (n.sites.empty()) return;
  rt.stats().record_profile(Stats::ProfileUse::UnknownSite, n.unknown_site_calls);
  rt.stats().record_profile(Stats::ProfileUse::OtherSizes, n.other_sizes_calls);
  if (rt.rank() != 0) return;  // each rank's summary counts its calls; rank 0 says it
  std::string list;
  for (const std::string& site : n.sites) list += (list.empty() ? "" : "; ") + site;
  log(LogLevel::Warn, "mode optimize ran the plain program on the verdict of the profile %s, which did not record "
                      "what rank 0 called here: %s. The verdict may not hold for these calls: trace the program "
                      "with these sizes (tnbc exec --mode trace) and merge again",
      rt.settings().profile.c_str(), list.c_str());
}

}  // namespace tnbc::shim
