#include "tools/calibrate_own_call.hh"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/config.hh"
#include "runtime/engine.hh"
#include "runtime/futex.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/topology.hh"
#include "runtime/policy.hh"
#include "runtime/stats.hh"

namespace tnbc::tools {

namespace {

constexpr int kOwnCallReps = 7;                    // timed calls per size (median), after one warm-up
constexpr int kOwnCallPasses = 3;                  // passes over the sizes: per size the median of the passes
constexpr double kOwnCallSpreadNote = 2;           // a size's passes this far apart: say so (a note only)
constexpr std::size_t kOwnCallSmallest = 64 << 10;  // the sizes: 64 KiB x 4^k up to --max-bytes
constexpr std::uint64_t kOwnCallMinBytes = 4096;    // TNBC_MIN_BYTES for the engine here: every size returns early

// The model's Tinit of an early-returning Alltoall of `bytes` per peer on `t`, as `tnbc predict`
// prices it (the same Execution and piece rule), without in_call_rest.
double model_in_call_ns(const model::Machine& m, const model::Topology& t, double bytes) {
  const model::Execution x = execution(Settings{}, m.guard_measured[0] ? 0 : -1);
  const model::Coll c = model::run_coll(m, t, x, Kind::Alltoall, bytes, Settings{}.piece_bytes);
  return model::tnbc_timeline(m, t, c, x, true).in_call_ns;
}

}  // namespace

void measure_own_call(MPI_Comm world, model::Machine& m, std::size_t max_bytes, const std::function<void()>& empty_caches,
                      std::FILE* progress) {
  // Where ranks share a node the call's own polls run the shared-memory transport's copies of
  // the peers' data (Open MPI's single-copy CMA), which the model prices in the transfer after
  // the call: measured there, the rest (0.15-0.68 ms at 64 KiB-4 MiB on this VM) priced those
  // twice and put the total 44 % off where it was 26 % (docs/benchmarks.md, "Session 23").
  if (m.nodes < 2 || m.ranks_per_node != 1) {
    if (progress)
      std::fprintf(progress, "tnbc's own call: not measured (ranks share a node: their polls in the call move the "
                             "peers' data, which the model prices in the transfer)\n");
    return;
  }
  int n = 1;
  MPI_Comm_size(world, &n);
  std::vector<std::size_t> sizes;
  for (std::size_t b = kOwnCallSmallest; b <= max_bytes; b *= 4) sizes.push_back(b);
  if (sizes.empty()) return;  // --max-bytes below the smallest size: not measured
  // The user's TNBC_* settings (the guard, the poll), but every call returns early here and the
  // machine is the start-up probe's (the engine's decisions do not matter: mode nbc, any size).
  ConfigResult cfg = load_config(process_getenv);
  Settings s = cfg.settings;
  s.mode = Mode::Nbc;
  s.min_bytes = kOwnCallMinBytes;
  s.machine.clear();
  s.output_dir.clear();
  s.timeline_calls = 0;
  s.log = LogLevel::Warn;
  Stats stats;
  std::unique_ptr<Engine> engine = Engine::create(s, stats);
  if (!engine) {
    if (progress) std::fprintf(progress, "tnbc's own call: the engine cannot run here (not measured)\n");
    return;
  }
  std::vector<char> send(sizes.back() * static_cast<std::size_t>(n), 1), recv(sizes.back() * static_cast<std::size_t>(n), 0);
  const CallSite site{reinterpret_cast<const void*>(&measure_own_call), Lang::C};
  // This rank's median per size, ns: after emptying the caches, as the machine's other in-call
  // costs are measured; then, at the sizes whose calls the model prices warm (Machine::fits_cache: what
  // a rank sends and receives fits in the cache), with the caches as the previous call left them.
  auto median_call = [&](std::size_t b, bool cold) {
    const int count = static_cast<int>(b);
    std::vector<double> t;
    for (int r = 0; r <= kOwnCallReps; ++r) {
      if (cold) empty_caches();
      PMPI_Barrier(world);
      const CollCall call{Kind::Alltoall, site, world, {send.data(), count, nullptr, nullptr, MPI_BYTE},
                          {recv.data(), count, nullptr, nullptr, MPI_BYTE}, -1, false};
      const long long t0 = futex::now_ns();
      engine->run(call, [&] { return PMPI_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, world); });
      const long long t1 = futex::now_ns();
      engine->complete_all();
      if (r > 0) t.push_back(static_cast<double>(t1 - t0));
    }
    return model::median_of(t);
  };
  int warm_sizes = 0;  // the smallest ones; as few as any rank's cache allows, so all run the same calls
  for (std::size_t b : sizes) warm_sizes += m.fits_cache(model::Machine::exchange_touched(n, static_cast<double>(b))) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &warm_sizes, 1, MPI_INT, MPI_MIN, world);
  // The cold medians by size, then the warm ones; `at` holds each one's size.
  std::vector<std::size_t> at = sizes;
  at.insert(at.end(), sizes.begin(), sizes.begin() + warm_sizes);
  // Passes over every size, one after the other: a disturbance of a second or two (this VM's
  // hypervisor, a short job beside it) takes one pass, and the median outvotes it; the slowest
  // rank per pass (a busy process started for 1.2 s during one pass put that pass 2.9x over the
  // others at one size: docs/benchmarks.md, "Session 30").
  std::vector<std::vector<double>> passes;
  for (int k = 0; k < kOwnCallPasses; ++k) {
    std::vector<double> mine;
    for (std::size_t i = 0; i < at.size(); ++i) mine.push_back(median_call(at[i], i < sizes.size()));
    passes.emplace_back(mine.size());
    PMPI_Allreduce(mine.data(), passes.back().data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, world);
  }
  engine->shutdown();
  const KindCounters k = stats.kind(Kind::Alltoall);
  const std::uint64_t early = k.early_return, calls = k.calls;
  // Every rank's calls returned early, or the figures are not an early return's.
  int all_early = early == calls && calls > 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_early, 1, MPI_INT, MPI_MIN, world);
  if (!all_early) {
    if (progress) std::fprintf(progress, "tnbc's own call: not every call returned early here (not measured)\n");
    return;
  }
  const model::Topology topo = model::Topology::block(n, std::max(1, m.ranks_per_node), std::max(1, m.cpus_per_node), 1);
  std::vector<double> slowest;  // per entry of `at`: the median over the passes
  double spread = 1;           // the widest entry's passes, slowest over quickest
  for (std::size_t i = 0; i < at.size(); ++i) {
    std::vector<double> v;
    for (const auto& pass : passes) v.push_back(pass[i]);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    if (*lo > 0) spread = std::max(spread, *hi / *lo);
    slowest.push_back(model::median_of(v));
  }
  // The model's Tinit prices the warm sizes warm (its hold and hand-over), so each rest is the
  // part of its own kind of call the model leaves out.
  std::vector<double> rests;  // per entry of `at`
  for (std::size_t i = 0; i < at.size(); ++i)
    rests.push_back(std::max(0.0, slowest[i] - model_in_call_ns(m, topo, static_cast<double>(at[i]))));
  // The line through entries [from, to), by bytes received from the peers (what the model's hold is of).
  auto line = [&](std::size_t from, std::size_t to) {
    std::vector<double> x, y;
    for (std::size_t i = from; i < to; ++i) {
      x.push_back(static_cast<double>(at[i]) * (n - 1));
      y.push_back(rests[i]);
    }
    return model::fit_through(x, y);
  };
  m.in_call_rest = line(0, sizes.size());
  if (warm_sizes > 0) m.in_call_rest_warm = line(sizes.size(), at.size());
  if (progress) {
    std::fprintf(progress, "tnbc's own early return (MPI_Alltoall, the slowest rank; the median of %d passes), the model's "
                 "parts left out:", kOwnCallPasses);
    for (std::size_t i = 0; i < at.size(); ++i)
      std::fprintf(progress, " %zu KiB%s %.0f us (of %.0f)", at[i] >> 10, i < sizes.size() ? "" : " warm", rests[i] / 1e3,
                   slowest[i] / 1e3);
    std::fprintf(progress, "\n");
    if (spread > kOwnCallSpreadNote)
      std::fprintf(progress, "  its passes disagree (%.1fx at one size): the machine was disturbed during some (the median "
                   "is kept)\n", spread);
  }
}

}  // namespace tnbc::tools
