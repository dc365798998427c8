#include "tools/calibrate_own_call.hh"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/engine.hh"
#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/machine.hh"
#include "runtime/model/measure.hh"
#include "runtime/model/topology.hh"
#include "runtime/output_file.hh"
#include "runtime/policy.hh"
#include "runtime/stats.hh"

namespace tnbc::tools {

namespace {

constexpr int kOwnCallReps = 7;                    // timed calls per size (median), after one warm-up
constexpr int kOwnCallPasses = 3;                  // passes over the sizes: per size the median of the passes
constexpr double kOwnCallSpreadNote = 2;           // a size's passes this far apart: say so (a note only)
constexpr std::size_t kOwnCallSmallest = 64 << 10;  // the sizes: 64 KiB x 4^k up to --max-bytes
constexpr std::uint64_t kOwnCallMinBytes = 4096;    // TNBC_MIN_BYTES for the engine here: every size returns early
constexpr int kRoot = 0;                            // the broadcasts' root
constexpr int kTakenReps = 3;                       // computations alone and after a call, per size and pass (medians)
constexpr double kTakenComputeShare = 1.5;          // the computation's length, of the call's whole time alone
// Before each warm call, a computation on registers this long (the caches keep the previous call's
// data): a program computes between its calls, and the progress thread sleeps meanwhile.
constexpr long long kWarmComputeNs = 3'000'000;

// Computes on registers for `ns` (a dependent floating-point chain; touches no memory).
void compute_for(long long ns) {
  const long long until = futex::now_ns() + ns;
  double x = 1.0;
  while (futex::now_ns() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  [[maybe_unused]] static volatile double sink;
  sink = x;
}

// The machine as the model prices a call once the rests are in, without them: at the warm
// figures where the call's data fits in the cache (`warm`: Machine::warm holds there), else cold.
model::Machine priced_without_rests(const model::Machine& m, bool warm) {
  model::Machine p = m;
  p.in_call_rest = p.in_call_rest_bcast = p.in_call_rest_bcast_warm = {};
  p.in_call_rest_bcast_root = p.in_call_rest_bcast_root_warm = {};
  p.in_call_rest_warm = warm ? model::fit_through({1}, {0}) : model::Line{};
  return p;
}

// The model's Tinit of the call measured, as `tnbc predict` prices it (the same Execution and
// piece rule), without the rests: an early-returning Alltoall of `bytes` per peer (the slowest
// rank's), or a broadcast's receiving rank, or its root (`root`). Where the library's ranks spin,
// without the scheduler slice the model adds to an early return's call less its rest: the rest
// measured here holds it (before session 50 the exchange's did not, so the model priced its call
// short by the rest, up to a slice).
double model_in_call_ns(const model::Machine& m, const model::Topology& t, Kind kind, double bytes, bool root = false) {
  const model::Execution x = execution(Settings{}, m.guard_measured[0] ? 0 : -1);
  const model::Coll c = model::run_coll(m, t, x, kind, bytes, Settings{}.piece_bytes);
  if (kind != Kind::Bcast) return model::exchange_in_call_ns(m, t, c, x);
  return root ? model::bcast_root_in_call_ns(m, t, c, x) : model::bcast_receiver_in_call_ns(m, t, c, x);
}

// The machine measured so far as a file the engine loads (TNBC_MACHINE), so that its calls are cut
// into the pieces and broadcast segments a program's are with the file calibrate writes (the
// start-up probe's machine cut them otherwise: 64 KiB per peer on 2 emulated nodes in 4 pieces
// against the file's 5). Every rank writes rank 0's text, for the engine uses a file only where
// every rank read the same; its path, or "" on every rank where any rank could not write it (the
// engine then runs on the start-up probe's machine, as before session 32).
std::string machine_so_far(MPI_Comm world, const model::Machine& m) {
  model::Machine copy = m;
  copy.others_cpu_share = copy.steal_share = -1;  // the load is calibrate's to report, not the engine's to warn of
  std::string text = model::machine_json(copy);
  unsigned long long length = text.size();
  PMPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, world);
  text.resize(length);
  PMPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, world);
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp", name = "tnbc-calibrate-" + std::to_string(::getpid()) + ".json";
  int written = write_output_file(dir, name, text).ok() ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &written, 1, MPI_INT, MPI_MIN, world);
  if (written) return dir + "/" + name;
  ::unlink((dir + "/" + name).c_str());
  return {};
}

// One kind's measured calls: per entry its size and whether it ran after emptying the caches.
struct Entries {
  Kind kind;
  std::vector<std::size_t> at;
  std::size_t cold = 0;  // the first `cold` entries ran cold, the others warm
};

// Per entry the median of `passes` (per pass, per entry); `*spread` (if given): the widest entry's
// passes, largest over smallest (where the smallest is above 0).
std::vector<double> over_passes(const std::vector<std::vector<double>>& passes, double* spread = nullptr) {
  std::vector<double> median;
  for (std::size_t i = 0; !passes.empty() && i < passes.front().size(); ++i) {
    std::vector<double> v;
    for (const auto& pass : passes) v.push_back(pass[i]);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    if (spread && *lo > 0) *spread = std::max(*spread, *hi / *lo);
    median.push_back(model::median_of(v));
  }
  return median;
}

}  // namespace

void measure_own_call(MPI_Comm world, model::Machine& m, std::size_t max_bytes, const std::function<void()>& empty_caches,
                      std::FILE* progress) {
  // Where ranks share a node the call's own polls run the shared-memory transport's copies of
  // the peers' data (Open MPI's single-copy CMA), which the model prices in the transfer after
  // the call: measured there with the caches emptied, the rest (0.15-0.68 ms at 64 KiB-4 MiB on
  // this VM) priced those twice and put the total 44 % off where it was 26 % (docs/benchmarks.md,
  // "Session 23"). There only the warm calls are measured (since session 38), so that the calls that
  // fit in the cache are priced warm there too: shared memory's 64 KiB calls -14..+2 % against
  // +48..+116 % priced cold (docs/benchmarks.md, "Session 38").
  const bool shared = m.nodes < 2 || m.ranks_per_node != 1;
  if (shared && progress)
    std::fprintf(progress, "tnbc's own call: measured warm only (ranks share a node: with the caches emptied, their "
                           "polls in the call move the peers' data, which the model prices in the transfer)\n");
  int n = 1, rank = 0;
  MPI_Comm_size(world, &n);
  MPI_Comm_rank(world, &rank);
  std::vector<std::size_t> sizes;
  for (std::size_t b = kOwnCallSmallest; b <= max_bytes; b *= 4) sizes.push_back(b);
  if (sizes.empty()) return;  // --max-bytes below the smallest size: not measured
  // The user's TNBC_* settings (the guard, the poll), but every call returns early here (mode nbc,
  // any size, no trial) and the machine is the one measured so far.
  ConfigResult cfg = load_config(process_getenv);
  Settings s = cfg.settings;
  s.mode = Mode::Nbc;
  s.min_bytes = kOwnCallMinBytes;
  s.machine = machine_so_far(world, m);
  s.output_dir.clear();
  s.timeline_calls = 0;
  s.site_trial_calls = 0;  // every call an early return: no trial completes some in the call
  // The engine's log: warnings, or with TNBC_LOG=debug each call's parts (set-up, staging, guard,
  // arrivals) as a program's run logs them — for diagnosis: the log's own cost is in the figures.
  s.log = cfg.settings.log == LogLevel::Debug ? LogLevel::Debug : LogLevel::Warn;
  set_log_level(s.log);
  set_log_rank(rank);
  if (s.log == LogLevel::Debug && progress)
    std::fprintf(progress, "tnbc's own call: TNBC_LOG=debug: the engine logs each call (its figures include the log's "
                           "cost: for diagnosis, not for a machine file to use)\n");
  Stats stats;
  std::unique_ptr<Engine> engine = Engine::create(s, stats);
  if (!s.machine.empty()) ::unlink(s.machine.c_str());  // read at the engine's start
  if (!engine) {
    set_log_level(LogLevel::Warn);
    if (progress) std::fprintf(progress, "tnbc's own call: the engine cannot run here (not measured)\n");
    return;
  }
  std::vector<char> send(sizes.back() * static_cast<std::size_t>(n), 1), recv(sizes.back() * static_cast<std::size_t>(n), 0);
  const CallSite site{reinterpret_cast<const void*>(&measure_own_call), Lang::C};
  // One call of `kind` through the engine (an Alltoall of `b` bytes per peer, or a broadcast of `b`
  // from kRoot); it returns early, the transfer goes on.
  auto start_call = [&](Kind kind, std::size_t b) {
    const int count = static_cast<int>(b);
    const bool bcast = kind == Kind::Bcast;
    const BufferArg out{send.data(), count, nullptr, nullptr, MPI_BYTE}, in{recv.data(), count, nullptr, nullptr, MPI_BYTE};
    const CollCall call = bcast ? CollCall{Kind::Bcast, site, world, {}, in, kRoot, false}
                                : CollCall{Kind::Alltoall, site, world, out, in, -1, false};
    engine->run(call, [&] {
      return bcast ? PMPI_Bcast(recv.data(), count, MPI_BYTE, kRoot, world)
                   : PMPI_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, world);
    });
  };
  // This rank's median per size, ns: after emptying the caches, as the machine's other in-call
  // costs are measured; then, at the sizes whose calls the model prices warm (Machine::fits_cache: what
  // a rank sends and receives fits in the cache), with the caches as the previous call left them,
  // after kWarmComputeNs of computation. Called back to back, the progress thread had run the
  // previous call's transfer just before, and the call's wake-up of it never took the caller's
  // CPU (no involuntary switch in any call, np 2 on 2 emulated nodes), where in a program's calls,
  // and after the computation, it takes it in every call: the 64 KiB Alltoall took 41 us back
  // to back, 50-52 after the computation, a broadcast's 256 KiB receiver 30 against 81-86
  // (docs/benchmarks.md, "Session 37"). The cold calls, after milliseconds of emptying the caches,
  // were preempted in every call already.
  // A broadcast's root and its receivers are measured apart (their calls do different work).
  // A cold call's copies count at the copy line's price, not at what they took: the line carries
  // the copies, the rest tnbc's bookkeeping only. This VM's copy rate moves ~2x with the machine's
  // state for minutes at a time; a rest that takes in the copies' excess over the line prices it
  // again on top of every later call's copies (session 73's calibration: its own calls' copies
  // 2.04x the line, its rest at 4 MiB 0.94 ms against 0.12-0.26 ms in session 76's; NPB IS.A's
  // Alltoallv priced 6.0 ms in the call, measured 3.8: docs/benchmarks.md, "Session 76"). Warm
  // calls keep what they took: the line prices copies outside the caches.
  // This rank's cold calls: their copies' time less the line's price for them, and that price.
  double copies_off = 0, copies_priced = 0;
  auto median_call = [&](Kind kind, std::size_t b, bool cold) {
    std::vector<double> t;
    for (int r = 0; r <= kOwnCallReps; ++r) {
      if (cold) empty_caches();
      else compute_for(kWarmComputeNs);
      PMPI_Barrier(world);
      const Stats::CallCopies before = stats.call_copies();
      const long long t0 = futex::now_ns();
      start_call(kind, b);
      const long long t1 = futex::now_ns();
      const Stats::CallCopies after = stats.call_copies();
      engine->complete_all();
      const double priced = static_cast<double>(after.priced_ns - before.priced_ns);
      const double off = cold ? static_cast<double>(after.ns - before.ns) - priced : 0.0;
      if (r > 0 && cold) {
        copies_off += off;
        copies_priced += priced;
      }
      if (r > 0) t.push_back(static_cast<double>(t1 - t0) - off);
    }
    return model::median_of(t);
  };
  // The cold entries by size (none where ranks share a node), then the warm ones: the smallest
  // sizes, as few as any rank's cache allows, so all run the same calls. What a call touches: an
  // exchange's sends and receives, a broadcast's message.
  std::vector<Entries> kinds;
  for (Kind kind : {Kind::Alltoall, Kind::Bcast}) {
    Entries e{kind, shared ? std::vector<std::size_t>{} : sizes, shared ? 0 : sizes.size()};
    int warm_sizes = 0;
    for (std::size_t b : sizes) {
      const double bytes = static_cast<double>(b);
      const double touched = kind == Kind::Bcast ? bytes : model::Machine::exchange_touched(n, bytes);
      warm_sizes += m.fits_cache(touched) ? 1 : 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &warm_sizes, 1, MPI_INT, MPI_MIN, world);
    e.at.insert(e.at.end(), sizes.begin(), sizes.begin() + warm_sizes);
    kinds.push_back(e);
  }
  // What tnbc's own transfer takes from a computation on the rank's one CPU (Machine::cpu_taken):
  // where each rank has a node of one CPU, or ranks share a node with no more CPUs than ranks,
  // the progress thread moves the data on the CPU the program computes on
  // (model::cpu_taken_placement: where the model prices by it; calibrate only where a node's one
  // CPU, or one node's few, leave a rank none to spare). Per size: the call's whole time alone
  // sizes a computation kTakenComputeShare times as long; then kTakenReps times the computation
  // alone and the same computation right after the call returned early (the call completed
  // after it); the extra time, this rank's medians.
  const model::Topology topo = model::Topology::block(n, std::max(1, m.ranks_per_node), std::max(1, m.cpus_per_node), 1);
  const bool shares_cpu = (m.cpus_per_node == 1 || m.nodes < 2) && model::cpu_taken_placement(m, topo);
  model::Computation work;
  const double pass_ns = shares_cpu ? work.run(8) / 8 : 0;
  auto taken_by = [&](Kind kind, std::size_t b) {
    PMPI_Barrier(world);
    const long long t0 = futex::now_ns();
    start_call(kind, b);
    engine->complete_all();
    double whole = static_cast<double>(futex::now_ns() - t0);
    PMPI_Allreduce(MPI_IN_PLACE, &whole, 1, MPI_DOUBLE, MPI_MAX, world);
    const long passes = std::max(1L, static_cast<long>(kTakenComputeShare * whole / std::max(1.0, pass_ns)));
    std::vector<double> alone, after;
    for (int r = 0; r < kTakenReps; ++r) {
      PMPI_Barrier(world);
      alone.push_back(work.run(passes));
      PMPI_Barrier(world);
      start_call(kind, b);
      after.push_back(work.run(passes));
      engine->complete_all();
    }
    return std::max(0.0, model::median_of(after) - model::median_of(alone));
  };
  // Passes over every size of both kinds, one after the other: a disturbance of a second or two
  // (this VM's hypervisor, a short job beside it) takes one pass, and the median outvotes it; the
  // slowest rank per pass (a busy process started for 1.2 s during one pass put that pass 2.9x
  // over the others at one size: docs/benchmarks.md, "Session 30"), a broadcast's root among
  // them for what the transfer takes.
  std::vector<std::vector<std::vector<double>>> passes(kinds.size());  // per kind, per pass, per entry
  std::vector<std::vector<double>> root_passes;                        // the broadcast's root: per pass, per entry
  std::vector<std::vector<std::vector<double>>> taken(kinds.size());   // per kind, per pass, per size (`sizes`)
  auto slowest_of = [&](const std::vector<double>& mine, std::vector<std::vector<double>>& into) {
    into.emplace_back(mine.size());
    PMPI_Allreduce(mine.data(), into.back().data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, world);
  };
  for (int k = 0; k < kOwnCallPasses; ++k)
    for (std::size_t j = 0; j < kinds.size(); ++j) {
      const Entries& e = kinds[j];
      std::vector<double> mine;
      for (std::size_t i = 0; i < e.at.size(); ++i) mine.push_back(median_call(e.kind, e.at[i], i < e.cold));
      if (e.kind == Kind::Bcast) {  // the receivers' (the root's counts 0 there) and the root's apart
        std::vector<double> root(mine.size(), 0.0);
        if (rank == kRoot) std::swap(root, mine);  // the root's times to `root`, zeros to `mine`
        slowest_of(root, root_passes);
      }
      slowest_of(mine, passes[j]);
      if (!shares_cpu) continue;
      mine.clear();
      for (std::size_t b : sizes) mine.push_back(taken_by(e.kind, b));
      slowest_of(mine, taken[j]);
    }
  if (!shares_cpu && progress)
    std::fprintf(progress, "what tnbc's own transfer takes from a computation: not measured (a node here has %d CPUs for "
                           "%d ranks: a progress thread need not share the CPU its rank computes on)\n", m.cpus_per_node,
                 m.ranks_per_node);
  engine->shutdown();
  set_log_level(LogLevel::Warn);
  double copies[2] = {copies_off, copies_priced};
  PMPI_Allreduce(MPI_IN_PLACE, copies, 2, MPI_DOUBLE, MPI_SUM, world);
  if (progress && copies[1] > 0)
    std::fprintf(progress,
                 "tnbc's own calls (caches emptied): their copies took %.2fx the copy line's price, counted at the "
                 "price (the line prices them; the rests below are the rest)\n",
                 1 + copies[0] / copies[1]);
  // Each kind's rests: per entry the median over the passes less the model's Tinit for the same
  // call on the machine just measured (the calibrating run's placement), priced warm or cold as
  // the entry ran, >= 0; the lines through them by bytes received (what the model's hold is of).
  const model::Machine cold = priced_without_rests(m, false), warm = priced_without_rests(m, true);
  for (std::size_t j = 0; j < kinds.size(); ++j) {
    const Entries& e = kinds[j];
    const char* name = e.kind == Kind::Bcast ? "MPI_Bcast" : "MPI_Alltoall";
    // No entry (the same on every rank): the call's rest not measured, what its transfer takes
    // from a computation still (measured at every size).
    const bool rests = !e.at.empty();
    if (!rests && progress)
      std::fprintf(progress, "tnbc's own %s: its call not measured (ranks share a node, and no size fits in the cache)\n",
                   name);
    if (!rests && taken[j].empty()) continue;
    const KindCounters k = stats.kind(e.kind);
    // Every rank's calls returned early, or the figures are not an early return's.
    int all_early = k.early_return == k.calls && k.calls > 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_early, 1, MPI_INT, MPI_MIN, world);
    if (!all_early) {
      if (progress) std::fprintf(progress, "tnbc's own %s: not every call returned early here (not measured)\n", name);
      continue;
    }
    const double peers = e.kind == Kind::Bcast ? 1 : n - 1;  // whose bytes a rank receives (a root: sends)
    // The rests of the calls measured in `of` (per pass, per entry), priced as `root`'s or not;
    // their cold and warm lines into `cold_rest` and `warm_rest`, and what was measured on `progress`.
    auto rests_of = [&](const std::vector<std::vector<double>>& of, bool root, model::Line& cold_rest,
                        model::Line& warm_rest, const char* whose) {
      double spread = 1;  // the widest entry's passes, slowest over quickest
      const std::vector<double> slowest = over_passes(of, &spread);  // per entry: the median over the passes
      std::vector<double> rests;  // per entry of `at`
      for (std::size_t i = 0; i < e.at.size(); ++i)
        rests.push_back(std::max(0.0, slowest[i] - model_in_call_ns(i < e.cold ? cold : warm, topo, e.kind,
                                                                       static_cast<double>(e.at[i]), root)));
      auto line = [&](std::size_t from, std::size_t to) {
        std::vector<double> x, y;
        for (std::size_t i = from; i < to; ++i) {
          x.push_back(static_cast<double>(e.at[i]) * peers);
          y.push_back(rests[i]);
        }
        return model::fit_through(x, y);
      };
      cold_rest = line(0, e.cold);
      if (e.at.size() > e.cold) warm_rest = line(e.cold, e.at.size());
      if (!progress) return;
      std::fprintf(progress, "tnbc's own early return (%s, %s; the median of %d passes), the model's parts left out:",
                   name, whose, kOwnCallPasses);
      for (std::size_t i = 0; i < e.at.size(); ++i)
        std::fprintf(progress, " %zu KiB%s %.0f us (of %.0f)", e.at[i] >> 10, i < e.cold ? "" : " warm", rests[i] / 1e3,
                     slowest[i] / 1e3);
      std::fprintf(progress, "\n");
      if (spread > kOwnCallSpreadNote)
        std::fprintf(progress, "  its passes disagree (%.1fx at one size): the machine was disturbed during some (the median "
                     "is kept)\n", spread);
    };
    if (rests) {
      if (e.kind == Kind::Bcast) {
        rests_of(passes[j], false, m.in_call_rest_bcast, m.in_call_rest_bcast_warm, "the slowest receiver");
        rests_of(root_passes, true, m.in_call_rest_bcast_root, m.in_call_rest_bcast_root_warm, "its root");
      } else {
        rests_of(passes[j], false, m.in_call_rest, m.in_call_rest_warm, "the slowest rank");
      }
    }
    if (taken[j].empty()) continue;
    const std::vector<double> extra = over_passes(taken[j]);  // per size: the median over the passes
    std::vector<double> received;
    for (std::size_t b : sizes) received.push_back(static_cast<double>(b) * peers);
    (e.kind == Kind::Bcast ? m.cpu_taken_bcast : m.cpu_taken) = model::fit_through(received, extra);
    if (progress) {
      const model::Level& between = m.at(model::LevelKind::InterNode);
      std::fprintf(progress, "what tnbc's own %s takes from a computation on its CPU (the slowest rank; the median of %d "
                   "passes; the level's shared_cpu in brackets where measured):", name, kOwnCallPasses);
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::fprintf(progress, " %zu KiB %.0f us", sizes[i] >> 10, extra[i] / 1e3);
        if (between.shared_cpu_measured())
          std::fprintf(progress, " (%.0f)", between.shared_cpu.at(static_cast<double>(sizes[i])) / 1e3);
      }
      std::fprintf(progress, "\n");
    }
  }
}

}  // namespace tnbc::tools
