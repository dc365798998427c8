#include "runtime/model/combine.hh"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>

namespace tnbc::model {

namespace {

// Sets field(out) to the median of field(each file); for the times the estimators lean on
// (`watched`: the sweeps' T, g and node rates, memcpy) remembers the one whose values spread the
// most ((max - min) / median; CPU overheads near 0 would name noise).
struct Median {
  const std::vector<Machine>& ms;
  Machine& out;
  Spread& widest;
  template <class Get>
  void operator()(const char* name, Get field, bool watched = false) {
    std::vector<double> v;
    v.reserve(ms.size());
    for (const Machine& m : ms) v.push_back(field(m));
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double spread_lo = *lo, spread_hi = *hi;
    field(out) = median_of(std::move(v));
    const double mid = field(out);
    if (watched && mid > 0 && (spread_hi - spread_lo) / mid > widest.relative) widest = {(spread_hi - spread_lo) / mid, name};
  }
  // A line's intercept, its slope and its measured points (the last two watched); `get` selects
  // the line (a generic lambda: the files' are const, the output's not).
  template <class Get>
  void line(const std::string& name, Get get) {
    (*this)((name + ".ns").c_str(), [&](auto& m) -> auto& { return get(m).ns; });
    (*this)((name + ".ns_per_byte").c_str(), [&](auto& m) -> auto& { return get(m).ns_per_byte; }, true);
    for (std::size_t i = 0; i < get(out).points.size(); ++i)
      (*this)((name + ".points[" + std::to_string(i) + "]").c_str(), [&, i](auto& m) -> auto& { return get(m).points[i].ns; },
              true);
  }
};

// True where `a` and `b` kept points at the same sizes (or neither kept any).
bool same_points(const Line& a, const Line& b) {
  if (a.points.size() != b.points.size()) return false;
  for (std::size_t i = 0; i < a.points.size(); ++i)
    if (a.points[i].bytes != b.points[i].bytes) return false;
  return true;
}

// The first way `b` describes another placement or another method than `a`; empty if none.
std::string differs(const Machine& a, const Machine& b) {
  if (a.method != b.method) return "method (\"" + a.method + "\" and \"" + b.method + "\")";
  if (a.mpi_library != b.mpi_library) return "mpi_library (\"" + a.mpi_library + "\" and \"" + b.mpi_library + "\")";
  if (a.mpi_transport != b.mpi_transport)
    return "mpi_transport (\"" + a.mpi_transport + "\" and \"" + b.mpi_transport + "\")";
  if (a.ranks != b.ranks) return "ranks (" + std::to_string(a.ranks) + " and " + std::to_string(b.ranks) + ")";
  if (a.nodes != b.nodes) return "nodes (" + std::to_string(a.nodes) + " and " + std::to_string(b.nodes) + ")";
  if (a.ranks_per_node != b.ranks_per_node) return "ranks_per_node";
  if (a.cpus_per_node != b.cpus_per_node) return "cpus_per_node";
  if (a.page != b.page) return "page";
  for (int k = 0; k < kLevels; ++k) {
    const Level &x = a.level[k], &y = b.level[k];
    const std::string at = std::string("levels.") + level_name(static_cast<LevelKind>(k));
    if (x.measured != y.measured) return at + " (measured in one, not in the other)";
    if (x.flows != y.flows) return at + ".flows";
    if (x.shared_cpu_measured() != y.shared_cpu_measured()) return at + ".shared_cpu (measured in one only)";
    if (x.sweep.size() != y.sweep.size()) return at + ".sweep (other sizes: calibrate with the same --max-bytes)";
    for (std::size_t i = 0; i < x.sweep.size(); ++i)
      if (x.sweep[i].bytes != y.sweep[i].bytes) return at + ".sweep (other sizes: calibrate with the same --max-bytes)";
    for (std::size_t i = 0; i < x.sweep.size(); ++i)
      if ((x.sweep[i].post_ns >= 0) != (y.sweep[i].post_ns >= 0)) return at + ".sweep's post_ns (measured in one only)";
    if (x.node_sweep.size() != y.node_sweep.size()) return at + ".node_sweep (other sizes or rank counts)";
    for (std::size_t i = 0; i < x.node_sweep.size(); ++i)
      if (x.node_sweep[i].bytes != y.node_sweep[i].bytes || x.node_sweep[i].ranks != y.node_sweep[i].ranks)
        return at + ".node_sweep (other sizes or rank counts)";
    if (x.mpi_alltoall_measured() != y.mpi_alltoall_measured())
      return at + ".node_sweep's mpi_alltoall_ns_per_byte (measured in one only)";
  }
  for (int g = 0; g < kGuardBackends; ++g)
    if (a.guard_measured[g] != b.guard_measured[g]) return "guard." + std::string(kGuardNames[g]) + " (measured in one only)";
  if (a.memcpy_cold_measured() != b.memcpy_cold_measured()) return "guard.memcpy_cold (measured in one only)";
  if (a.memcpy_cold_huge_measured() != b.memcpy_cold_huge_measured() || a.huge_page_bytes != b.huge_page_bytes)
    return "guard.memcpy_cold_huge (measured in one only, or other huge pages)";
  if (a.memcpy_in_call_measured() != b.memcpy_in_call_measured()) return "guard.memcpy_in_call (measured in one only)";
  if (!same_points(a.memcpy_in_call, b.memcpy_in_call)) return "guard.memcpy_in_call.points (other sizes)";
  if (a.memcpy_in_call_alone_measured() != b.memcpy_in_call_alone_measured())
    return "guard.memcpy_in_call_alone (measured in one only)";
  if (!same_points(a.memcpy_in_call_alone, b.memcpy_in_call_alone)) return "guard.memcpy_in_call_alone.points (other sizes)";
  // tnbc's own calls' rests (tools/calibrate_own_call.hh): measured in both or neither, at the
  // same sizes, and their warm lines at the same sizes.
  struct RestLines {
    const char* key;
    Line Machine::*cold;
    Line Machine::*warm;
  };
  for (const RestLines& r : {RestLines{"guard.in_call_rest", &Machine::in_call_rest, &Machine::in_call_rest_warm},
                             RestLines{"guard.in_call_rest_bcast", &Machine::in_call_rest_bcast,
                                       &Machine::in_call_rest_bcast_warm},
                             RestLines{"guard.in_call_rest_bcast_root", &Machine::in_call_rest_bcast_root,
                                       &Machine::in_call_rest_bcast_root_warm}}) {
    const std::string key = r.key;
    if ((a.*r.cold).measured() != (b.*r.cold).measured()) return key + " (measured in one only)";
    if (!same_points(a.*r.cold, b.*r.cold)) return key + ".points (other sizes)";
    if (!same_points(a.*r.warm, b.*r.warm)) return key + "_warm.points (other sizes)";
  }
  if (a.cpu_taken.measured() != b.cpu_taken.measured()) return "progress.cpu_taken (measured in one only)";
  if (!same_points(a.cpu_taken, b.cpu_taken)) return "progress.cpu_taken.points (other sizes)";
  if (a.cpu_taken_bcast.measured() != b.cpu_taken_bcast.measured()) return "progress.cpu_taken_bcast (measured in one only)";
  if (!same_points(a.cpu_taken_bcast, b.cpu_taken_bcast)) return "progress.cpu_taken_bcast.points (other sizes)";
  if (a.warm_below_bytes != b.warm_below_bytes) return "guard.warm_below_bytes (another cache size)";
  for (int g = 0; g < kGuardBackends; ++g) {
    if (!same_points(a.guard[g].hold, b.guard[g].hold)) return "guard." + std::string(kGuardNames[g]) + ".hold.points (other sizes)";
    if (!same_points(a.guard[g].hold_warm, b.guard[g].hold_warm))
      return "guard." + std::string(kGuardNames[g]) + ".hold_warm.points (other sizes)";
    if (!same_points(a.guard[g].publish, b.guard[g].publish))
      return "guard." + std::string(kGuardNames[g]) + ".publish.points (other sizes)";
    if (a.guard[g].first_read.measured() != b.guard[g].first_read.measured())
      return "guard." + std::string(kGuardNames[g]) + ".first_read (measured in one only)";
    if (!same_points(a.guard[g].first_read, b.guard[g].first_read))
      return "guard." + std::string(kGuardNames[g]) + ".first_read.points (other sizes)";
  }
  if ((a.wake_loaded_ns >= 0) != (b.wake_loaded_ns >= 0)) return "progress.wake_loaded_ns (measured in one only)";
  if ((a.handover_ns >= 0) != (b.handover_ns >= 0)) return "progress.handover_ns (measured in one only)";
  if ((a.handover_warm_ns >= 0) != (b.handover_warm_ns >= 0)) return "progress.handover_warm_ns (measured in one only)";
  if ((a.first_round_ns >= 0) != (b.first_round_ns >= 0)) return "progress.first_round_ns (measured in one only)";
  return {};
}

}  // namespace

Result<Combined> combine_machines(const std::vector<Machine>& ms, const std::vector<std::string>& names) {
  if (ms.size() < 2 || names.size() != ms.size())
    return Status::error("calibrate --combine: give at least 2 machine files (the median of each field is kept)");
  for (std::size_t i = 1; i < ms.size(); ++i)
    if (std::string d = differs(ms[0], ms[i]); !d.empty())
      return Status::error("calibrate --combine: " + names[i] + " differs from " + names[0] + " in " + d +
                           "; combine only calibrations of the same placement, MPI library and options");
  Combined c{ms[0], {}};
  Machine& out = c.machine;
  out.created = std::max_element(ms.begin(), ms.end(), [](const Machine& a, const Machine& b) {
                  return a.created < b.created;
                })->created;  // ISO times: the newest
  Median med{ms, out, c.widest};
  for (int k = 0; k < kLevels; ++k) {
    if (!out.level[k].measured) continue;
    const std::string at = std::string("levels.") + level_name(static_cast<LevelKind>(k)) + ".";
    med((at + "L_ns").c_str(), [k](auto& m) -> auto& { return m.level[k].L_ns; });
    med((at + "o_s_ns").c_str(), [k](auto& m) -> auto& { return m.level[k].os_ns; });
    med((at + "o_r_ns").c_str(), [k](auto& m) -> auto& { return m.level[k].or_ns; });
    med((at + "g_ns").c_str(), [k](auto& m) -> auto& { return m.level[k].g_ns; });
    med((at + "G_ns_per_byte").c_str(), [k](auto& m) -> auto& { return m.level[k].G_ns_per_byte; });
    med((at + "O_s_ns_per_byte").c_str(), [k](auto& m) -> auto& { return m.level[k].Os_ns_per_byte; });
    med((at + "O_r_ns_per_byte").c_str(), [k](auto& m) -> auto& { return m.level[k].Or_ns_per_byte; });
    med((at + "node_out_ns_per_byte").c_str(), [k](auto& m) -> auto& { return m.level[k].node_out_ns_per_byte; });
    med((at + "node_bi_ns_per_byte").c_str(), [k](auto& m) -> auto& { return m.level[k].node_bi_ns_per_byte; });
    med((at + "buffered_send_bytes").c_str(), [k](auto& m) -> auto& { return m.level[k].buffered_send_bytes; });
    med((at + "shared_cpu.ns").c_str(), [k](auto& m) -> auto& { return m.level[k].shared_cpu.ns; });
    med((at + "shared_cpu.ns_per_byte").c_str(), [k](auto& m) -> auto& { return m.level[k].shared_cpu.ns_per_byte; }, true);
    for (std::size_t i = 0; i < out.level[k].sweep.size(); ++i) {
      const std::string p = at + "sweep[" + std::to_string(i) + "].";
      med((p + "T_ns").c_str(), [k, i](auto& m) -> auto& { return m.level[k].sweep[i].t_ns; }, true);
      med((p + "o_s_ns").c_str(), [k, i](auto& m) -> auto& { return m.level[k].sweep[i].os_ns; });
      med((p + "o_r_ns").c_str(), [k, i](auto& m) -> auto& { return m.level[k].sweep[i].or_ns; });
      med((p + "g_ns").c_str(), [k, i](auto& m) -> auto& { return m.level[k].sweep[i].g_ns; }, true);
      med((p + "post_ns").c_str(), [k, i](auto& m) -> auto& { return m.level[k].sweep[i].post_ns; });
    }
    for (std::size_t i = 0; i < out.level[k].node_sweep.size(); ++i) {
      const std::string p = at + "node_sweep[" + std::to_string(i) + "].";
      med((p + "exchange_ns_per_byte").c_str(),
          [k, i](auto& m) -> auto& { return m.level[k].node_sweep[i].exchange_ns_per_byte; }, true);
      med((p + "ring_ns_per_byte").c_str(), [k, i](auto& m) -> auto& { return m.level[k].node_sweep[i].ring_ns_per_byte; }, true);
      med((p + "mpi_alltoall_ns_per_byte").c_str(),
          [k, i](auto& m) -> auto& { return m.level[k].node_sweep[i].mpi_alltoall_ns_per_byte; }, true);
    }
  }
  for (int g = 0; g < kGuardBackends; ++g) {
    if (!out.guard_measured[g]) continue;
    const std::string p = "guard." + std::string(kGuardNames[g]) + ".";
    med((p + "hold.ns").c_str(), [g](auto& m) -> auto& { return m.guard[g].hold.ns; });
    med((p + "hold.ns_per_byte").c_str(), [g](auto& m) -> auto& { return m.guard[g].hold.ns_per_byte; });
    for (std::size_t i = 0; i < out.guard[g].hold.points.size(); ++i)
      med((p + "hold.points[" + std::to_string(i) + "]").c_str(),
          [g, i](auto& m) -> auto& { return m.guard[g].hold.points[i].ns; });
    med((p + "hold_warm.ns").c_str(), [g](auto& m) -> auto& { return m.guard[g].hold_warm.ns; });
    med((p + "hold_warm.ns_per_byte").c_str(), [g](auto& m) -> auto& { return m.guard[g].hold_warm.ns_per_byte; }, true);
    for (std::size_t i = 0; i < out.guard[g].hold_warm.points.size(); ++i)
      med((p + "hold_warm.points[" + std::to_string(i) + "]").c_str(),
          [g, i](auto& m) -> auto& { return m.guard[g].hold_warm.points[i].ns; });
    med((p + "publish.ns").c_str(), [g](auto& m) -> auto& { return m.guard[g].publish.ns; });
    med((p + "publish.ns_per_byte").c_str(), [g](auto& m) -> auto& { return m.guard[g].publish.ns_per_byte; });
    for (std::size_t i = 0; i < out.guard[g].publish.points.size(); ++i)
      med((p + "publish.points[" + std::to_string(i) + "]").c_str(),
          [g, i](auto& m) -> auto& { return m.guard[g].publish.points[i].ns; });
    med((p + "first_read.ns").c_str(), [g](auto& m) -> auto& { return m.guard[g].first_read.ns; });
    med((p + "first_read.ns_per_byte").c_str(), [g](auto& m) -> auto& { return m.guard[g].first_read.ns_per_byte; });
    for (std::size_t i = 0; i < out.guard[g].first_read.points.size(); ++i)
      med((p + "first_read.points[" + std::to_string(i) + "]").c_str(),
          [g, i](auto& m) -> auto& { return m.guard[g].first_read.points[i].ns; });
    med((p + "fault_ns").c_str(), [g](auto& m) -> auto& { return m.guard[g].fault_ns; });
  }
  med("guard.memcpy.ns", [](auto& m) -> auto& { return m.memcpy_cost.ns; });
  med("guard.memcpy.ns_per_byte", [](auto& m) -> auto& { return m.memcpy_cost.ns_per_byte; }, true);
  med("guard.memcpy_cold.ns", [](auto& m) -> auto& { return m.memcpy_cold.ns; });
  med("guard.memcpy_cold.ns_per_byte", [](auto& m) -> auto& { return m.memcpy_cold.ns_per_byte; });
  med("guard.memcpy_cold_huge.ns", [](auto& m) -> auto& { return m.memcpy_cold_huge.ns; });
  med("guard.memcpy_cold_huge.ns_per_byte", [](auto& m) -> auto& { return m.memcpy_cold_huge.ns_per_byte; });
  med.line("guard.memcpy_in_call", [](auto& m) -> auto& { return m.memcpy_in_call; });
  med.line("guard.memcpy_in_call_alone", [](auto& m) -> auto& { return m.memcpy_in_call_alone; });
  med.line("guard.in_call_rest", [](auto& m) -> auto& { return m.in_call_rest; });
  med.line("guard.in_call_rest_warm", [](auto& m) -> auto& { return m.in_call_rest_warm; });
  med.line("guard.in_call_rest_bcast", [](auto& m) -> auto& { return m.in_call_rest_bcast; });
  med.line("guard.in_call_rest_bcast_warm", [](auto& m) -> auto& { return m.in_call_rest_bcast_warm; });
  med.line("guard.in_call_rest_bcast_root", [](auto& m) -> auto& { return m.in_call_rest_bcast_root; });
  med.line("guard.in_call_rest_bcast_root_warm", [](auto& m) -> auto& { return m.in_call_rest_bcast_root_warm; });
  med("progress.test_ns", [](auto& m) -> auto& { return m.test_ns; });
  med("progress.sleep_ns", [](auto& m) -> auto& { return m.sleep_ns; });
  med("progress.wake_loaded_ns", [](auto& m) -> auto& { return m.wake_loaded_ns; });
  med("progress.handover_ns", [](auto& m) -> auto& { return m.handover_ns; });
  med("progress.handover_warm_ns", [](auto& m) -> auto& { return m.handover_warm_ns; });
  med("progress.first_round_ns", [](auto& m) -> auto& { return m.first_round_ns; });
  med.line("progress.cpu_taken", [](auto& m) -> auto& { return m.cpu_taken; });
  med.line("progress.cpu_taken_bcast", [](auto& m) -> auto& { return m.cpu_taken_bcast; });
  // The load beside the calibrations, where every file knows it: its median, as the figures.
  if (std::all_of(ms.begin(), ms.end(), [](const Machine& m) { return m.load_known(); })) {
    med("load.others_cpu_share", [](auto& m) -> auto& { return m.others_cpu_share; });
    med("load.steal_share", [](auto& m) -> auto& { return m.steal_share; });
  } else {
    out.others_cpu_share = out.steal_share = -1;
  }
  return c;
}

}  // namespace tnbc::model
