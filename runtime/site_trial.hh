// Mode nbc: does returning early pay at a call site? Measured, per site and rank
// (docs/architecture.md, "Mode nbc's trial per site").
//
// Without a profile nothing tells the library what the program does after a call. Where it reads
// the data at once there is nothing to overlap, and an early return only costs (guards, faults,
// the progress thread's CPU): the README's demo, is-proxy W at np 2 on 2 nodes, ran 0.888x the
// plain program in mode nbc, 0.971x with every call completed in the call through tnbc's schedule
// (docs/benchmarks.md, "Session 70"). So a site tries both: after its first call (the warm-up;
// later where another site of the rank is trying, TrialTurn), TNBC_SITE_TRIAL_CALLS calls alternate early return (E) and completion in the call (C) as
// E C C E E C C E ... (a drift over the trial weighs on both alike), each timed from its entry to
// the entry of the site's next call (the program's iteration: the call, what it does with the
// data, and everything until it comes back). Where the completions' median is shorter than the
// early returns' by more than TNBC_SITE_TRIAL_MARGIN_PCT, the site's later calls complete in the
// call (reason early_return_slower); else they return early — but at a site mode optimize tries
// with a predicted loss (TrialRule::lean_in_call), early returns must be faster by the margin:
// where they are not, and before its first trial, its calls complete in the call (reason
// priced_loss: the model's sign, not a measurement).
// The trial runs again from the site's 16th call, then from 8 times the call the last one started
// at (128th, 1024th, ... for a site that got its turn at once), so that a site whose program
// changes can go back.
//
// Completing in the call runs the same schedule as an early return (the same messages, on tnbc's
// private communicator): ranks may decide differently and still match. It is not the MPI
// library's own call, which every rank would have to choose together.
//
// An interval counts only where the next call at the site comes right after (the site's next
// call index; a call the engine passes to MPI, or one too small to return early, leaves the
// sample out). A trial that ends without a sample of each kind decides nothing (the site returns
// early). Trial calls are never observed (runtime/observe.hh): an observed call costs more.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "runtime/config.hh"

namespace tnbc {

struct TrialRule {
  int calls = 0;       // TNBC_SITE_TRIAL_CALLS (0: no trial; modes nbc and optimize only)
  double margin = 0;   // TNBC_SITE_TRIAL_MARGIN_PCT / 100
  // Where the trial cannot tell (neither way faster by the margin, or no sample of each kind),
  // and before its first trial (waiting for the turn, after the warm-up), complete the calls in
  // the call: a site mode optimize tries because its predicted saving lies inside the model's
  // margins, priced at a loss (ReadOrderSource::leans_in_call_last): the model's sign stands.
  // Without it (mode nbc's bet) they return early. ft-proxy A (session 76): predicted -1.4 ms a
  // call, measured -3.5, 1.2 % of its iteration, under the trial's margin: it returned early at
  // every call but the trial's C, 0.988x the plain program.
  bool lean_in_call = false;
};
// The rule the settings give: modes nbc and optimize (there at the sites its profile cannot judge,
// Policy::judged_last; every site where no profile could be used).
TrialRule trial_rule(const Settings& s);
// How many of a trial's `calls` complete in the call (its C calls: E C C E E C C E ...).
int trial_completions(int calls);

// How one call at the site runs.
enum class TrialRun : std::uint8_t {
  Early,       // returns early (as the engine would without a trial)
  TrialCall,   // completes in the call: a trial's C
  Verdict,     // completes in the call: the last trial found early returns slower
  Lean,        // completes in the call: the model priced a loss (TrialRule::lean_in_call), and no
               // trial has found early returns faster by the margin (none yet, or neither faster)
};

// One site of a rank tries at a time: a site's interval spans the program's other calls, and a
// trial elsewhere in the same loop would weigh on both sites' samples. A site whose trial is due
// waits for the turn, and takes it over where the site holding it was not called between two of
// its own calls (not in the same loop: NPB FT.A's forward transform, 2 calls before the loop's 6).
class TrialTurn {
 public:
  // Whether `site` has the turn (taking it where it is free or stale); `seen`: the site's record
  // of the holder's calls at its last try (kNotSeen before any).
  bool take(const void* site, std::uint64_t& seen);
  // The holder entered a call: it is still in the program's loop.
  void tick(const void* site);
  void release(const void* site);
  static constexpr std::uint64_t kNotSeen = ~std::uint64_t{0};

 private:
  std::atomic<const void*> holder_{nullptr};
  std::atomic<std::uint64_t> ticks_{0};
};

class SiteTrial {
 public:
  // At the entry (`now_ns`, monotonic) of the call with `index` at the site (0 = first), for every
  // call that reaches the engine's choice between an early return and completion in the call;
  // `eligible`: the engine would return early (else the call completes in the call anyway and
  // takes no part). Closes the previous call's interval.
  TrialRun enter(std::uint64_t index, long long now_ns, bool eligible, const TrialRule& rule, TrialTurn& turn);
  // Whether the call enter() was last asked about is a trial's (timed) call.
  bool timing() const { return timing_; }

  // For the summary: trials that reached a verdict, the last one's medians (-1: none yet), whether
  // its verdict is to complete the calls in the call, and whether that rests on the model's sign
  // (the rule leaned to the call, and early returns were not measured slower by the margin).
  std::uint32_t trials = 0;
  long long early_ns = -1, in_call_ns = -1;
  bool in_call = false;
  bool leaned = false;

  // Where the trial after one that started at `start` is due.
  static std::uint64_t next_start(std::uint64_t start);

 private:
  void conclude(const TrialRule& rule);

  static constexpr std::uint64_t kFirstStart = 1;  // after the warm-up call
  std::uint64_t start_ = kFirstStart;  // the call index at which the next trial is due, or the current one started
  bool active_ = false;      // a trial is under way (this site holds the turn)
  std::uint64_t seen_ = TrialTurn::kNotSeen;  // the holder's calls when this site last waited for the turn
  std::uint64_t last_index_ = 0;
  long long last_ns_ = 0;
  TrialRun last_ = TrialRun::Early;
  bool timing_ = false;      // the previous call is a trial call whose interval is open
  bool decided_ = false;     // a trial concluded (in_call is its verdict)
  std::vector<long long> early_, call_;  // the current trial's intervals
};

}  // namespace tnbc
