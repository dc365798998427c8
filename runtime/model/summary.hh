// The cost model's block of the per-rank summary (`model`, docs/formats.md): where the machine
// came from, the machine itself, the run's placement, the decisions taken for the whole run
// (thresholds, broadcast segments, piece rule) and, in mode optimize, per call site the model's
// predicted blocking time, hidden time and cost, and the decision. Written by this module, not by
// runtime/stats.cc: the summary asks for the block's text when it is written. `tnbc merge`
// reads the machine and placement back from a trace run's rank 0, `tnbc report` prints the
// per-site figures (tools/report_model.cc).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tnbc::model {

struct Inputs;

class Summary {
 public:
  // Once, at MPI_Init.
  void set_start(const Inputs& in, const std::string& problem, double ms);
  // A decision for the whole run, as a JSON value ("thresholds": {...}).
  void note(const std::string& key, const std::string& json_value);

  // Mode optimize: a site's decision (recorded once; again is a no-op) (this rank's call stack), with the model's figures.
  struct Site {
    std::uint64_t site = 0;
    std::string kind, where;
    std::string decision;  // "early_return", "in_call" (tnbc's schedule, completed in the call), "plain"
    std::string basis;     // trace::basis_name
    double blocking_ns = -1;        // Tcomm the trace measured (-1: unknown)
    double model_blocking_ns = -1;  // the model's blocking call
    double hidden_ns = -1, cost_ns = 0, saved_ns = 0, in_call_ns = -1;  // hidden_ns -1: not judged by figures
    // Not early by the margin alone: the largest whole share of Tcomm (%) at which it would be,
    // and the setting holding it (trace::Decision::early_at_pct; -1: none would do).
    int early_at_pct = -1;
    std::string margin_setting;
  };
  void record_site(const Site& s);

  std::string json() const;

 private:
  mutable std::mutex mutex_;
  std::string start_;  // the members written at start, JSON text
  std::vector<std::pair<std::string, std::string>> notes_;
  struct Entry {
    Site s;  // once per site and decision (the calls are counted in the summary's call sites)
  };
  std::vector<Entry> sites_;
};

}  // namespace tnbc::model
