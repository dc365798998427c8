// `tnbc report` as text: per call site, mpiP-style (docs/reports.md shows an example).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "runtime/config.hh"
#include "tools/report_render.hh"

namespace tnbc::tools::report {

std::string percent(std::optional<double> share) {
  if (!share) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100.0 * *share);
  return b;
}

std::string milliseconds(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", ns / 1e6);
  return b;
}

namespace {

// The wait for the peers' data in the early-returning calls is named where it is at least this
// share of their time in the call (a few percent is the transfer of the edge pieces itself).
constexpr double kWaitingShown = 0.25;

std::string fmt(const char* f, double v) {
  char b[256];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// "12/35/61" (percent) or "0.41/0.44/0.47" (ms), "n/a" without values.
std::string spread_text(const Spread& s, double scale, const char* f) {
  if (s.n == 0) return "n/a";
  return fmt(f, s.min * scale) + "/" + fmt(f, s.mean * scale) + "/" + fmt(f, s.max * scale);
}

std::string pad(const std::string& s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// " on ranks 0,2" when not every rank of the world is in `ranks`.
std::string on_ranks(const std::vector<int>& ranks, int size) {
  if (static_cast<int>(ranks.size()) >= size) return "";
  return std::string(ranks.size() == 1 ? " on rank " : " on ranks ") + ranks_text(ranks);
}

std::string outcome_line(double calls, double early, double in_call, double plain, const std::map<std::string, double>& why) {
  std::string s = fmt("calls %.0f: ", calls) + fmt("early return %.0f, ", early) +
                  fmt("completed in the call %.0f, ", in_call) + fmt("plain MPI %.0f", plain);
  if (!why.empty()) {
    s += "; why not early:";
    for (const auto& [k, n] : why) s += " " + k + fmt(" %.0f", n);
  }
  return s;
}

std::string read_order(const Timeline& t) {
  if (t.read_order.empty()) return "-";
  std::string s;
  const std::size_t shown = std::min<std::size_t>(t.read_order.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) s += (i ? " " : "") + std::to_string(t.read_order[i]);
  if (t.read_order.size() > shown) s += " ...";
  return s;
}

}  // namespace

std::string placement_text(const World& w) {
  std::string o;
  if (w.hosts.empty()) return o;
  o += "placement: " + std::to_string(w.hosts.size()) + (w.hosts.size() == 1 ? " host\n" : " hosts\n");
  for (const Host& h : w.hosts) {
    bool same = true;
    for (std::size_t i = 0; i < h.cpus.size(); ++i) same = same && h.cpus[i] == h.cpus[0] && h.cpu_counts[i] == h.cpu_counts[0];
    const auto cpus = [&](std::size_t i) {
      return h.cpus[i] + " (" + std::to_string(h.cpu_counts[i]) + (h.cpu_counts[i] == 1 ? " CPU)" : " CPUs)");
    };
    o += "  " + h.host + ": " + std::to_string(h.ranks.size()) + (h.ranks.size() == 1 ? " rank" : " ranks");
    if (same && !h.cpus.empty()) {
      o += " (" + ranks_text(h.ranks) + "), each on CPUs " + cpus(0) + "\n";
    } else {
      for (std::size_t i = 0; i < h.ranks.size(); ++i)
        o += (i ? "; rank " : ": rank ") + std::to_string(h.ranks[i]) + " on CPUs " + cpus(i);
      o += "\n";
    }
  }
  return o;
}

std::string collectives_text(const World& w) {
  std::string o = "collectives (all ranks):\n";
  for (const KindCounts& k : w.kinds)
    o += "  " + pad(k.kind, 11) + outcome_line(k.calls, k.early, k.in_call, k.plain, k.reasons) + "\n";
  // Mode optimize: against the cost model's Tinit of the sites it returned early at (where a
  // node's ranks outnumber its CPUs, the scheduler makes the calls several times the model's: a
  // reader weighing the verdicts needs to see that; docs/benchmarks.md, "Session 28").
  if (w.early_returns > 0) {
    const double tinit = w.in_early_calls_s / w.early_returns;
    o += fmt("  time inside the early-returning calls (Tinit): %.3f ms per early return", tinit * 1e3);
    if (const std::optional<double> model = w.model_tinit_ns(); model && *model > 0)
      o += fmt(", %.2fx", tinit * 1e9 / *model) + fmt(" the cost model's %.3f ms for them", *model / 1e6);
    o += fmt("; progress threads' CPU %.3f s (all ranks)\n", w.progress_cpu_s);
    // A call that must have a peer's data before it returns (the pieces of partial pages at its
    // buffers' ends), or in which the ranks vote, waits there for a peer that calls later: the
    // program's skew between the ranks, which the model prices only where the profile shows it
    // (a broadcast's receivers waiting for a late root: docs/trace.md, "A broadcast's roles").
    if (const double waiting = w.in_early_calls_waiting_s / w.early_returns; waiting > 0 && waiting >= kWaitingShown * tinit)
      o += fmt("    of it %.3f ms waiting for peers that called later (the partial pages at the buffers' ends, the "
               "ranks' votes); the model prices it only as a broadcast's receivers' wait for a late root\n",
               waiting * 1e3);
  }
  // The copies' rate against the machine the model priced them with: a run whose memory was
  // slower than at calibration (this VM's copy rate changes ~2x with the machine's state) has a
  // Tinit the model could not foresee, and a reader comparing its verdicts with the run needs that.
  // Every call that ran tnbc's schedule copies (an early return, and one completed in the call).
  double scheduled = 0;
  for (const KindCounts& k : w.kinds) scheduled += k.early + k.in_call;
  if (scheduled > 0 && w.copies_priced_s > 0)
    o += fmt("  tnbc's copies in its calls: %.3f ms per call on its schedule, ", w.copies_s / scheduled * 1e3) +
         fmt("%.2fx the cost model's price for them (the machine's in-call copy rate)\n", w.copies_s / w.copies_priced_s);
  if (!w.threshold.empty()) o += "  " + w.threshold + "\n";
  if (!w.cpu_contention.empty()) o += "  CPUs (" + w.cpu_contention + ")\n";
  return o;
}

namespace {

void world_text(std::string& o, const World& w) {
  const bool times = w.summary_version >= 2;
  o += "tnbc report: " + w.dir + ": " + std::to_string(w.ranks.size()) + " of " + std::to_string(w.size) + " ranks, mode " +
       w.mode + (w.spawned ? ", a world started by MPI_Comm_spawn" : "") +
       (w.run_id.empty() ? "" : ", run " + w.run_id) + "\n";
  o += placement_text(w);
  if (!w.notes.empty()) {
    o += "notes:\n";
    for (const std::string& n : w.notes) o += "  - " + n + "\n";
  }

  o += "\n" + collectives_text(w);

  const RankFigures t = w.total();
  const double wall = w.wall_total_ns();
  if (times) {
    o += "\nrun (all ranks; shares of the collectives' time, and of the run: MPI_Init to MPI_Finalize):\n";
    o += "  wall time " + fmt("%.3f s", wall / 1e9) + (w.ranks.size() == 1 ? std::string(" (1 rank)") : fmt(" (%.0f ranks)", static_cast<double>(w.ranks.size()))) + "; collectives " +
         fmt("%.3f s", t.duration_ns / 1e9) + " = " + percent(share(t.duration_ns, wall)) + " of the run\n";
    o += "  hidden " + percent(share(t.hidden_ns, t.duration_ns)) + " (" + percent(share(t.hidden_ns, wall)) +
         " of the run); exposed " + percent(share(t.duration_ns - t.hidden_ns, t.duration_ns)) + ": Tinit " +
         percent(share(t.tinit_ns, t.duration_ns)) + " (" + percent(share(t.tinit_ns, wall)) + " of the run), blocked " +
         percent(share(t.blocked_ns, t.duration_ns)) + " (" + percent(share(t.blocked_ns, wall)) + " of the run)\n";
    if (t.ideal_ns)
      o += "  ideal (Eq. 1, the sites in the profile): " + percent(share(*t.ideal_ns, w.ideal_duration_ns())) +
           " of their time (" + percent(share(*t.ideal_ns, wall)) + " of the run)\n";
  }

  if (w.sites.empty()) return;
  o += "\ncall sites (all ranks; duration per call; Tinit, blocked, hidden, ideal: shares of the duration):\n";
  o += "  #  " + pad("kind", 10) + pad("calls", 7, true) + pad("bytes/call", 12, true) + pad("duration", 11, true) +
       pad("Tinit", 8, true) + pad("blocked", 8, true) + pad("hidden", 8, true) + pad("ideal", 8, true) + "  " +
       pad("where", 40) + "  read order (observed)\n";
  for (std::size_t i = 0; i < w.sites.size(); ++i) {
    const Site& s = w.sites[i];
    const RankFigures r = s.total();
    const double per_call = r.calls > 0 ? r.duration_ns / r.calls : 0;
    o += "  " + pad(std::to_string(i + 1), 3) + pad(s.kind, 10) + pad(fmt("%.0f", r.calls), 7, true) +
         pad(r.calls > 0 ? format_bytes(r.bytes / r.calls) : "-", 12, true) +
         pad(times ? milliseconds(per_call) : "n/a", 11, true) +
         pad(times ? percent(share(r.tinit_ns, r.duration_ns)) : "n/a", 8, true) +
         pad(times ? percent(share(r.blocked_ns, r.duration_ns)) : "n/a", 8, true) +
         pad(times ? percent(share(r.hidden_ns, r.duration_ns)) : "n/a", 8, true) +
         pad(r.ideal_ns ? percent(share(*r.ideal_ns, r.duration_ns)) : "n/a", 8, true) + "  " + pad(s.where(), 40) + "  " +
         read_order(s.timeline) + "\n";
  }
  if (times) {
    o += "\nper rank (min/mean/max over the ranks that called the site):\n";
    o += "  #  " + pad("calls", 14) + pad("duration/call ms", 22) + pad("Tinit %", 17) + pad("blocked %", 17) +
         pad("hidden %", 17) + pad("ideal %", 17) + "share of the run\n";
    for (std::size_t i = 0; i < w.sites.size(); ++i) {
      const Site& s = w.sites[i];
      std::vector<double> calls;
      for (const RankFigures& r : s.ranks) calls.push_back(r.calls);
      o += "  " + pad(std::to_string(i + 1), 3) + pad(spread_text(spread_of(calls), 1, "%.0f"), 14) +
           pad(spread_text(s.duration_per_call_ns(), 1e-6, "%.3f"), 22) + pad(spread_text(s.tinit_share(), 100, "%.0f"), 17) +
           pad(spread_text(s.blocked_share(), 100, "%.0f"), 17) + pad(spread_text(s.hidden_share(), 100, "%.0f"), 17) +
           pad(spread_text(s.ideal_share(), 100, "%.0f"), 17) + percent(share(s.total().duration_ns, wall)) + "\n";
    }
  }
  o += "\nhow the calls ended (early return, completed in the call, plain MPI) and why:\n";
  for (std::size_t i = 0; i < w.sites.size(); ++i) {
    const Site& s = w.sites[i];
    const RankFigures r = s.total();
    std::vector<int> ranks;
    for (const RankFigures& x : s.ranks) ranks.push_back(x.rank);
    o += "  " + pad(std::to_string(i + 1), 3) + outcome_line(r.calls, r.early, r.in_call, r.plain, r.reasons) +
         on_ranks(ranks, w.size) + "\n";
  }
  // Without a profile no site has an ideal: said once.
  const bool no_profile = std::all_of(w.sites.begin(), w.sites.end(), [&](const Site& s) {
    return s.ideal_note == w.sites.front().ideal_note && !s.ideal_note.empty();
  });
  if (no_profile && times) o += "\nideal (Eq. 1): " + w.sites.front().ideal_note + "\n";
  if (times) {
    o += "\nwaits after the return (faults and wake-ups, all ranks; the time in them is 'blocked'):\n";
    for (std::size_t i = 0; i < w.sites.size(); ++i) {
      const RankFigures r = w.sites[i].total();
      std::string line;
      for (const auto& [source, n] : r.waits)
        if (n > 0) line += (line.empty() ? "" : ", ") + source + fmt(" %.0f", n) + " (" + milliseconds(r.blocked_by_ns.at(source)) + ")";
      if (line.empty()) line = "none";
      if (r.observe_waits > 0)
        line += fmt("; observing first accesses: %.0f waits", r.observe_waits) + " (" + milliseconds(r.observe_ns) + ", not blocked)";
      const Timeline& tl = w.sites[i].timeline;
      if (tl.calls > 0) line += fmt("; timeline of %.0f observed calls", tl.calls);
      if (!w.sites[i].ideal_note.empty() && !no_profile) line += "; no ideal: " + w.sites[i].ideal_note;
      o += "  " + pad(std::to_string(i + 1), 3) + line + "\n";
    }
  }

  if (!w.profile_status.empty()) {
    o += "\nprofile " + w.profile_file + ": " + w.profile_status;
    if (!w.profile_blocking.empty()) o += ", blocking decisions " + w.profile_blocking;
    o += "\n";
    if (w.profile_unknown_site_calls > 0 || w.profile_other_sizes_calls > 0)
      o += "  it does not describe " + fmt("%.0f calls", w.profile_unknown_site_calls + w.profile_other_sizes_calls) +
           " over all ranks (" + fmt("%.0f at sites it does not hold", w.profile_unknown_site_calls) + ", " +
           fmt("%.0f at sizes it did not record", w.profile_other_sizes_calls) + "): trace the program as it ran here\n";
    if (!w.decisions.empty()) o += "  per site (profile site id; calls over all ranks):\n";
    for (const Decision& d : w.decisions) {
      const std::string ranks = on_ranks(d.ranks, w.size);
      o += "  " + d.kind + " at " + d.where + " [" + d.site + "]: " +
           (d.decision == "blocking"       ? "COMPLETED IN THE CALL"
            : d.basis == "within_margin" ? "on trial"
                                         : "returned early") +
           " (" + d.basis + "), " + fmt("%.0f calls", d.calls) + (ranks.empty() ? " on all ranks" : ranks);
      if (d.saved_ns && d.comm_ns && d.overlap_ns && d.cost_ns)
        o += "; min(Tcomm " + fmt("%.2f ms", *d.comm_ns / 1e6) + ", T_CURC + T_CRC " + fmt("%.2f ms", *d.overlap_ns / 1e6) +
             ") - cost " + fmt("%.2f ms", *d.cost_ns / 1e6) + " = " + fmt("%.2f ms", *d.saved_ns / 1e6);
      if (!d.receivers.empty()) o += "; the root's own call site: as its receivers' at " + d.receivers;
      o += "\n";
    }
  }
  for (const Section& s : w.sections) o += "\n" + s.title + ":\n" + s.text;
}

// --compare: per run (pass) its totals, then per site its hidden share in each.
void comparison_text(std::string& o, const std::vector<Run>& runs) {
  o += "\ncomparison (main worlds; shares of each pass's collective time):\n";
  o += "  " + pad("pass", 16) + pad("collectives", 13, true) + pad("hidden", 9, true) + pad("exposed", 9, true) +
       pad("Tinit", 8, true) + pad("blocked", 9, true) + pad("ideal", 8, true) + pad("of the run", 12, true) + "  source\n";
  for (const Run& r : runs) {
    if (r.worlds.empty()) continue;
    const World& w = r.worlds.front();
    const RankFigures t = w.total();
    const bool times = w.summary_version >= 2;
    auto sh = [&](double part) { return times ? percent(share(part, t.duration_ns)) : std::string("n/a"); };
    o += "  " + pad(r.label, 16) + pad(times ? fmt("%.3f s", t.duration_ns / 1e9) : "n/a", 13, true) +
         pad(sh(t.hidden_ns), 9, true) + pad(sh(t.duration_ns - t.hidden_ns), 9, true) + pad(sh(t.tinit_ns), 8, true) +
         pad(sh(t.blocked_ns), 9, true) +
         pad(t.ideal_ns ? percent(share(*t.ideal_ns, w.ideal_duration_ns())) : "n/a", 8, true) +
         pad(times ? percent(share(t.duration_ns, w.wall_total_ns())) : "n/a", 12, true) + "  " + r.source + "\n";
  }
  // Sites of the first run, hidden share per pass (matched by kind, module file and offset).
  const World& main = runs.front().worlds.front();
  o += "  hidden per call site:\n";
  for (const Site& s : main.sites) {
    std::string line = "    " + pad(s.kind, 10) + pad(s.where(), 40);
    for (const Run& r : runs) {
      std::string v = "-";
      if (!r.worlds.empty())
        for (const Site& x : r.worlds.front().sites)
          if (same_site(x, s)) {
            const RankFigures t = x.total();
            v = r.worlds.front().summary_version >= 2 ? percent(share(t.hidden_ns, t.duration_ns)) : "n/a";
          }
      line += "  " + r.label + " " + v;
    }
    o += line + "\n";
  }
}

}  // namespace

std::string render_text(const std::vector<Run>& runs) {
  std::string o;
  if (runs.empty()) return o;
  const Run& run = runs.front();
  for (const std::string& n : run.notes) o += "note: " + n + "\n";
  for (std::size_t i = 0; i < run.worlds.size(); ++i) {
    if (i) o += "\n";
    world_text(o, run.worlds[i]);
  }
  if (runs.size() > 1) comparison_text(o, runs);
  return o;
}

}  // namespace tnbc::tools::report
