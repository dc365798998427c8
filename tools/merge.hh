// `tnbc merge`: combines the per-rank trace files of one run into a profile (format
// "tnbc-profile", version 1, JSON; docs/formats.md) and a readable summary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/function_ref.hh"
#include "runtime/status.hh"
#include "trace/format.hh"
#include "trace/profile.hh"

namespace tnbc::tools {

using trace::CallRecord;
using trace::Frame;
using trace::SiteInfo;
using trace::TraceFile;
using trace::LoadedProfile;

// Kendall's tau-b between two first-touch orders over sub-messages 0..n-1. An order lists
// sub-message indices, first touched first; sub-messages missing from an order are tied last.
// 1 = same order, -1 = reversed; 1 when there is nothing to compare.
double kendall_tau(const std::vector<int>& a, const std::vector<int>& b, int n);

// Consensus of several orders over 0..n-1: sub-messages sorted by their mean position (Borda
// count; missing = tied last), ties by index. Untouched everywhere -> last, by index.
std::vector<int> consensus_order(const std::vector<std::vector<int>>& orders, int n);

// The first-touch order of one call (FenceAll touches and untouched sub-messages left out).
std::vector<int> call_order(const CallRecord& c);

struct RankSite {
  int rank = 0;
  std::uint64_t calls = 0, traced = 0;
  std::vector<std::uint64_t> first_calls;  // the seq of its first kFirstCalls calls (rank's collectives, 0-based): trace::kFirstCalls
  bool receives = false;             // received bytes at this site (a bcast root does not)
  std::vector<int> order;            // the order seen most often on this rank (modal)
  std::uint64_t calls_with_order = 0;  // traced calls whose order equals `order`
  std::vector<int> untouched;        // guarded but in no call of this rank touched (never read)
  std::vector<int> unobserved;       // received, never touched, never observable: only in partial
                                     // pages, or hidden (its pages opened by a neighbour)
  double tau = 1.0;                  // vs the consensus (receivers only)
  std::vector<std::uint64_t> keys;   // instance keys (site + size signature) seen
  std::uint64_t bytes_per_call = 0;  // received bytes (median over calls)
  std::vector<double> sub_bytes;     // per sub-message (exchanges: per peer), bytes received per call (median)
  std::optional<double> curc_ns;     // median over calls of the first touch time
  std::vector<double> gaps_ns;       // median gap before the k+1-th first touch, per k
  std::optional<double> r_crc;       // median over calls, bytes/s
  bool crc_at_once = false;          // r_crc unbounded: the gaps were the trace's own page cost
  // Median blocking duration of the collective: a broadcast's over the calls in which the rank
  // received (where it did in any), its calls as the root apart (root_calls, root_dur_ns): a
  // rotating root's short calls and its receivers' long ones are priced apart (trace/gain.hh).
  double dur_ns = 0;
  std::uint64_t root_calls = 0;         // calls in which the rank was the broadcast's root
  std::optional<double> root_dur_ns;    // their median blocking duration
  std::uint64_t shared_attributions = 0, masked = 0, syscall_touches = 0, mpi_touches = 0, fence_all = 0;
  std::uint64_t send_written = 0, send_written_early = 0;  // calls
};

struct SiteProfile {
  SiteInfo info;
  int sub_messages = 0;
  std::vector<int> consensus;
  double tau_mean = 1.0, tau_min = 1.0;
  bool same_order_everywhere = true;
  std::vector<RankSite> ranks;
  std::optional<double> curc_ns_median, curc_ns_min, curc_ns_max;
  std::optional<double> r_crc_median;
  bool crc_at_once = false;  // the median rank's r_crc unbounded (RankSite::crc_at_once)
  std::uint64_t calls = 0, bytes = 0;  // over all ranks
  std::uint64_t send_written_early_calls = 0;
  std::vector<std::string> notes;
};

struct Profile {
  int np = 0;
  std::string executable, run_id;
  std::vector<std::string> files;
  std::vector<SiteProfile> sites;
  std::vector<std::string> notes;
};

// Checks that the traces are one complete run (same np, executable, run id; every rank once).
// `names` (parallel to `traces`, e.g. the file paths) appear in error messages.
Result<Profile> merge(const std::vector<TraceFile>& traces);
Result<Profile> merge(const std::vector<TraceFile>& traces, const std::vector<std::string>& names);
// Reads every tnbc-trace.*.txt in `dir` (errors name the file).
Result<std::vector<TraceFile>> load_trace_dir(const std::string& dir, std::vector<std::string>* names = nullptr);

std::string profile_json(const Profile& p);
// `verdicts` (optional, one per site): what mode optimize would do there (trace/gain.hh).
// `name`: a frame's name at its file:line (Symbolizer::name_call), "" where it has none: then
// "symbol (module+0xoffset)".
std::string profile_summary(const Profile& p, const std::vector<std::string>& verdicts,
                            FunctionRef<std::string(const Frame&)> name);

// The command `tnbc merge DIR [-o FILE] [--quiet]`: returns the exit status.
int cmd_merge(const std::vector<std::string>& args);

}  // namespace tnbc::tools
