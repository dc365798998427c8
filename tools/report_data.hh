// What `tnbc report` shows, computed once from a run's per-rank summaries (docs/formats.md); the
// text, JSON and HTML outputs (report_text.cc, report_json.cc, report_html.cc) only render it.
// Every figure is defined once, in docs/reports.md; the names below follow it:
//
//   duration   D: from the call to its collective's last step (the return, for a call that did
//              not return early)
//   Tinit      T: from the call to its return
//   blocked    B: waits for the collective after the return (faults, userfaultfd, fences, drains)
//   hidden     H: per call max(0, D - T - B): the part of D the program did not wait for
//   exposed    D - H
//   ideal      I: Eq. 1 per call, min(D, T_CURC + T_CRC), T_CURC and R_CRC from the trace profile
//              (T_CRC = bytes received per call / R_CRC), D the rank's mean duration at the site
//
// Shares are of the collective's duration (sums over calls and ranks), or of the run (the
// ranks' wall time from MPI_Init to MPI_Finalize, summed).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.hh"
#include "trace/json.hh"

namespace tnbc::tools::report {

inline constexpr const char* kReportFormat = "tnbc-report";
inline constexpr int kReportVersion = 1;

// A quantity over the ranks (or samples) that have it.
struct Spread {
  double min = 0, mean = 0, max = 0;
  int n = 0;  // 0: nobody has it
  bool operator==(const Spread&) const = default;
};
Spread spread_of(const std::vector<double>& values);
// part / whole; none where whole <= 0.
std::optional<double> share(double part, double whole);

// "0-3,5": ranks as ranges (sorted).
std::string ranks_text(std::vector<int> ranks);

// Node-level priorities at one call site on one rank (the summary's `node_priorities` block:
// only where its communicator had a node board, i.e. several of its ranks on this rank's node).
struct NodeFigures {
  double calls = 0, off_calls = 0;       // calls arbitrated, calls the policy left unarbitrated
  double holds = 0, hold_timeouts = 0;   // sends held back at least once; started past a stalled rank
  double first_read_calls = 0, first_read_ns_sum = 0, first_read_ns_max = 0;  // call -> first-read sub-message in
  std::string basis;                     // the policy's last answer (runtime/node_choice.hh)
  std::optional<double> model_on_ns, model_off_ns;  // the model's first read with and without (auto)
  bool operator==(const NodeFigures&) const = default;
};

// Mode nbc's trial at one call site on one rank (the summary's `trial` block, runtime/site_trial.hh):
// trials that reached a verdict, the last one's medians of an iteration after an early return and
// after a completion in the call, and its verdict.
struct TrialFigures {
  double trials = 0, early_ns = 0, in_call_ns = 0;
  bool in_call = false;
  bool leaned = false;  // in_call on the model's sign (a priced loss, neither way faster), not measured
  bool operator==(const TrialFigures&) const = default;
};

// One rank's calls at one call site: sums over its calls, times in ns.
struct RankFigures {
  int rank = 0;
  double calls = 0, bytes = 0, bytes_sent = 0;
  double early = 0, in_call = 0, plain = 0;  // how they ended: early return, completed in the call, plain MPI
  std::map<std::string, double> reasons;     // why not early, per reason
  double tinit_ns = 0, duration_ns = 0, blocked_ns = 0, hidden_ns = 0;
  std::map<std::string, double> blocked_by_ns, waits;  // per wait source (fault, userfault, fence, drain)
  double observe_ns = 0, observe_waits = 0;            // what observing first accesses cost
  std::optional<double> ideal_ns;                      // Eq. 1 over its calls
  std::optional<NodeFigures> node;                     // node-level priorities, where a board existed
  std::optional<TrialFigures> trial;                   // the site's trial, where one reached a verdict
  bool operator==(const RankFigures&) const = default;
};

// Adds r's sums into t (everything but the rank, the ideal and the trial).
void add_figures(RankFigures& t, const RankFigures& r);
void add_node_figures(NodeFigures& t, const NodeFigures& r);

// One sub-message over the observed calls of every rank (ns after the call).
struct SubTiming {
  double bytes = 0;   // mean bytes received
  Spread arrival_ns;  // its last piece in
  Spread access_ns;   // the program's first touch (n: how many calls saw one)
  bool operator==(const SubTiming&) const = default;
};

struct Timeline {
  int calls = 0;  // observed calls (over all ranks)
  Spread tinit_ns, duration_ns;
  std::vector<SubTiming> subs;
  std::vector<int> read_order;  // sub-messages by mean position in the calls' orders of first touches
  bool operator==(const Timeline&) const = default;
};

struct Site {
  std::string kind, lang, module, offset, symbol;  // as the summaries record it
  std::string function, file;                      // resolved (libdw); file "" when unknown
  int line = 0;
  std::string ideal_note;  // why there is no ideal, "" when there is
  std::vector<RankFigures> ranks;
  Timeline timeline;
  bool operator==(const Site&) const = default;

  // "main (app.c:42)", "MAIN__ (ft-proxy+0x38d2)", or "app+0x1a2b".
  std::string where() const;
  RankFigures total() const;  // summed over the ranks
  // Per rank: duration per call, and T, B, H, I as shares of the rank's D (ideal: ranks with one).
  Spread duration_per_call_ns() const, tinit_share() const, blocked_share() const, hidden_share() const,
      ideal_share() const;
};

// The same call site in two runs (passes) of one program: kind and where.
inline bool same_site(const Site& a, const Site& b) { return a.kind == b.kind && a.where() == b.where(); }

// Calls per kind, over all ranks.
struct KindCounts {
  std::string kind;
  double calls = 0, early = 0, in_call = 0, plain = 0;
  std::map<std::string, double> reasons;
  bool operator==(const KindCounts&) const = default;
};

// Mode optimize: the profile's decision per (profile site, basis), with the ranks that made it.
struct Decision {
  std::string site, kind, where, decision, basis;
  double calls = 0;
  std::vector<int> ranks;
  std::optional<double> comm_ns, overlap_ns, cost_ns, saved_ns;
  std::optional<double> in_call_ns;  // the model's time in the call of an early return there (Tinit)
  std::string receivers;  // a broadcast root's own site: the receivers' site whose decision it took; else empty
  bool operator==(const Decision&) const = default;
};

struct Host {
  std::string host;
  std::vector<int> ranks;
  std::vector<std::string> cpus;  // per rank, its CPU list
  std::vector<int> cpu_counts;
  bool operator==(const Host&) const = default;
};

// A part of the report another module adds (tools/report_sections.hh): what it shows in each
// output. `data` is JSON text (a value) that goes into the report JSON under `key`.
struct Section {
  std::string key, title, text, data, html;
  bool operator==(const Section&) const = default;
};

// One MPI world: the job's MPI_COMM_WORLD, or one started by MPI_Comm_spawn.
struct World {
  std::string dir;              // where its summaries are
  std::string run_id, mode, executable;
  bool spawned = false;
  int size = 0;                 // ranks in the world
  std::vector<int> ranks;       // ranks whose summary was read
  int summary_version = 0;
  std::vector<double> wall_ns;  // per rank read, MPI_Init to MPI_Finalize (0: unknown)
  std::vector<Host> hosts;
  std::vector<KindCounts> kinds;
  double in_early_calls_s = 0, progress_cpu_s = 0, early_returns = 0;
  // Of in_early_calls_s, waiting for the peers' data the calls must have before returning (the
  // summaries' overhead.in_early_calls_waiting_s; 0 in summaries before session 75).
  double in_early_calls_waiting_s = 0;
  // tnbc's own copies inside its calls (the summaries' overhead.in_call_copies, all ranks): their
  // time and the cost model's price of the same copies (0 and 0: none, or summaries without them).
  double copies_s = 0, copies_priced_s = 0;
  std::string threshold;        // the size threshold, one line ("" without)
  std::string cpu_contention;   // the first rank's sentence, "" if none
  std::string profile_file, profile_status, profile_blocking;
  // Mode optimize: calls, over the ranks, at sites the profile does not hold and at sizes it did
  // not record (the summaries' calls_unknown_site, calls_other_sizes).
  double profile_unknown_site_calls = 0, profile_other_sizes_calls = 0;
  std::vector<Decision> decisions;
  std::vector<Site> sites;
  std::vector<Section> sections;   // tools/report_sections.hh
  std::vector<std::string> notes;  // what could not be read or resolved, one sentence each
  bool operator==(const World&) const = default;

  double wall_total_ns() const;
  RankFigures total() const;  // over every site and rank (ideal: sites that have one)
  double ideal_duration_ns() const;  // D of the sites that have an ideal
  // The cost model's time in the call (Tinit) over the calls the profile's decisions returned
  // early, weighted by their calls: what the run's Tinit per early return compares with. None
  // without such decisions (another mode, no estimate).
  std::optional<double> model_tinit_ns() const;
};

struct Run {
  std::string source;             // the directory (or report JSON) it came from
  std::string label;              // for comparisons: "nbc", "optimize", ... (the mode, or given)
  std::string profile;            // the trace profile that gave T_CURC and R_CRC ("" none)
  std::vector<World> worlds;      // the main world first, then spawned ones
  std::vector<std::string> notes; // about the directory as a whole
  bool operator==(const Run&) const = default;
};

struct LoadOptions {
  std::string profile;           // --profile FILE ("" : the one an optimize run used, if readable)
  bool resolve = true;           // file:line with libdw
};

// A run from DIR (TNBC_OUTPUT_DIR, or a harness run directory with tnbc/). Problems with single
// files are notes and the rest is reported; an error only when nothing can be reported.
Result<Run> load_run(const std::string& dir, const LoadOptions& opt);

}  // namespace tnbc::tools::report
