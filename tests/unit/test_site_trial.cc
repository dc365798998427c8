// Mode nbc's trial per site (runtime/site_trial.hh): which calls it completes in the call, the
// intervals it times, its verdict and when it tries again. Times are synthetic: nothing is timed.
#include <catch2/catch.hpp>

#include <vector>

#include "runtime/site_trial.hh"

using namespace tnbc;

namespace {

constexpr long long kMs = 1000 * 1000;
const TrialRule kRule{4, 0.03};

// Runs calls `from`..`to`-1 at a site, each lasting `early` ms after an early return and `in_call`
// ms after a completion in the call (to the next call's entry), from time `t`; returns how each ran.
std::vector<TrialRun> run(SiteTrial& s, std::uint64_t from, std::uint64_t to, long long early, long long in_call,
                          long long& t, const TrialRule& rule = kRule) {
  TrialTurn turn;
  std::vector<TrialRun> out;
  for (std::uint64_t i = from; i < to; ++i) {
    const TrialRun r = s.enter(i, t, true, rule, turn);
    out.push_back(r);
    t += (r == TrialRun::Early ? early : in_call) * kMs;
  }
  return out;
}

constexpr TrialRun E = TrialRun::Early, C = TrialRun::TrialCall, V = TrialRun::Verdict, L = TrialRun::Lean;

}  // namespace

TEST_CASE("site trial: after the first call, E C C E; a site that reads at once completes in the call after it") {
  SiteTrial s;
  long long t = 0;
  CHECK(run(s, 0, 8, 10, 8, t) == std::vector<TrialRun>{E, E, C, C, E, V, V, V});
  CHECK(s.trials == 1);
  CHECK(s.early_ns == 10 * kMs);
  CHECK(s.in_call_ns == 8 * kMs);
  CHECK(s.in_call);
  CHECK_FALSE(s.leaned);  // measured: early returns slower by the margin
}

TEST_CASE("site trial: a site where early returns are faster, or not faster beyond the margin, keeps returning early") {
  long long t = 0;
  SiteTrial faster;
  CHECK(run(faster, 0, 8, 8, 10, t) == std::vector<TrialRun>{E, E, C, C, E, E, E, E});
  CHECK(faster.trials == 1);
  CHECK_FALSE(faster.in_call);
  TrialTurn turn;
  SiteTrial close;  // 2 % shorter in the call: inside the 3 % margin
  for (std::uint64_t i = 0; i < 8; ++i) {
    const TrialRun r = close.enter(i, t, true, kRule, turn);
    CHECK(r != V);
    t += r == C ? 98 * kMs / 10 : 10 * kMs;
  }
  CHECK(close.trials == 1);
  CHECK_FALSE(close.in_call);
}

TEST_CASE("site trial: leaning to the call (optimize's predicted loss), only early returns faster by the margin stay") {
  TrialRule lean = kRule;
  lean.lean_in_call = true;
  long long t = 0;
  // ft-proxy A (session 76): early returns 1.2 % slower, inside the margin: completes in the call.
  SiteTrial close;
  // Neither way faster by the margin: the model's sign (Lean, reason priced_loss), not a measurement.
  CHECK(run(close, 0, 8, 1012, 1000, t, lean) == std::vector<TrialRun>{E, E, C, C, E, L, L, L});
  CHECK(close.in_call);
  CHECK(close.leaned);
  // Early returns 2 % faster: still inside the margin, so the model's sign stands.
  SiteTrial slight;
  CHECK(run(slight, 0, 8, 980, 1000, t, lean) == std::vector<TrialRun>{E, E, C, C, E, L, L, L});
  CHECK(slight.in_call);
  CHECK(slight.leaned);
  // Early returns 5 % slower: measured so (Verdict, reason early_return_slower), as mode nbc's.
  SiteTrial slower;
  CHECK(run(slower, 0, 8, 1050, 1000, t, lean) == std::vector<TrialRun>{E, E, C, C, E, V, V, V});
  CHECK(slower.in_call);
  CHECK_FALSE(slower.leaned);
  // 5 % faster: they return early (mode nbc's rule would say the same).
  SiteTrial faster;
  CHECK(run(faster, 0, 8, 950, 1000, t, lean) == std::vector<TrialRun>{E, E, C, C, E, E, E, E});
  CHECK_FALSE(faster.in_call);
  // Without the lean the slightly slower early returns keep returning early.
  SiteTrial bet;
  CHECK(run(bet, 0, 8, 1012, 1000, t) == std::vector<TrialRun>{E, E, C, C, E, E, E, E});
  // A trial without a sample of each kind: the lean decides (in the call), nbc's returns early.
  TrialTurn turn, turn_nbc;
  SiteTrial none, none_nbc;
  std::vector<TrialRun> lean_runs, nbc_runs;
  for (std::uint64_t i : {0, 2, 4, 6, 8, 10}) {  // never the site's next call: no interval counts
    lean_runs.push_back(none.enter(i, t, true, lean, turn));
    nbc_runs.push_back(none_nbc.enter(i, t, true, kRule, turn_nbc));
    t += 10 * kMs;
  }
  CHECK(lean_runs == std::vector<TrialRun>{E, E, C, L, L, L});  // the trial at 2-5: calls 2 and 4
  CHECK(nbc_runs == std::vector<TrialRun>{E, E, C, E, E, E});
  CHECK(none.trials == 0);
  CHECK(none.in_call);
  CHECK(none.leaned);
  CHECK_FALSE(none_nbc.in_call);
  // Waiting for the turn (another site holds it), a leaning site completes its calls in the call
  // after its warm-up; mode nbc's returns early.
  TrialTurn held;
  std::uint64_t seen = TrialTurn::kNotSeen;
  int other = 0;
  REQUIRE(held.take(&other, seen));
  SiteTrial waiting, waiting_nbc;
  std::vector<TrialRun> w, w_nbc;
  for (std::uint64_t i = 0; i < 4; ++i) {
    held.tick(&other);  // the holder is called between this site's calls: it keeps the turn
    w.push_back(waiting.enter(i, t, true, lean, held));
    w_nbc.push_back(waiting_nbc.enter(i, t, true, kRule, held));
    t += 10 * kMs;
  }
  CHECK(w == std::vector<TrialRun>{E, L, L, L});
  CHECK(w_nbc == std::vector<TrialRun>{E, E, E, E});
  CHECK(waiting.trials == 0);
}

TEST_CASE("site trial: tries again at the 16th call, then at 8 times the last start; the verdict can go back") {
  CHECK(SiteTrial::next_start(1) == 16);
  CHECK(SiteTrial::next_start(16) == 128);
  CHECK(SiteTrial::next_start(128) == 1024);
  CHECK(SiteTrial::next_start(9) == 72);  // a trial that waited for its turn: 8 times its start
  SiteTrial s;
  long long t = 0;
  run(s, 0, 16, 10, 8, t);
  REQUIRE(s.in_call);
  // The program changed: now early returns pay. Calls 16-19 are the second trial.
  CHECK(run(s, 16, 22, 8, 10, t) == std::vector<TrialRun>{E, C, C, E, E, E});
  CHECK(s.trials == 2);
  CHECK_FALSE(s.in_call);
}

TEST_CASE("site trial: an interval counts only up to the site's next call; a trial without both kinds decides nothing") {
  SiteTrial s;
  TrialTurn turn;
  long long t = 0;
  CHECK(s.enter(0, t, true, kRule, turn) == E);
  CHECK(s.enter(1, t += 10 * kMs, true, kRule, turn) == E);
  // Calls 2 and 3 passed to MPI (the engine asks nothing): call 1's interval spans them, left out.
  CHECK(s.enter(4, t += 30 * kMs, true, kRule, turn) == E);
  CHECK(s.enter(5, t += 10 * kMs, true, kRule, turn) == E);  // the trial's end: no C sample
  CHECK(s.trials == 0);
  CHECK_FALSE(s.in_call);
}

TEST_CASE("site trial: a call too small to return early takes no part; off outside nbc and optimize, or with 0 calls") {
  SiteTrial s;
  TrialTurn turn;
  long long t = 0;
  CHECK(s.enter(0, t, true, kRule, turn) == E);
  CHECK(s.enter(1, t += kMs, false, kRule, turn) == E);  // not eligible: completes in the call anyway (below_threshold)
  CHECK_FALSE(s.timing());
  CHECK(s.enter(2, t += kMs, true, kRule, turn) == E);  // the trial starts at the first call that takes part
  CHECK(s.timing());
  CHECK(s.enter(3, t += kMs, true, kRule, turn) == C);
  SiteTrial off;
  for (std::uint64_t i = 0; i < 6; ++i) CHECK(off.enter(i, t += kMs, true, TrialRule{}, turn) == E);
  Settings nbc, optimize;
  optimize.mode = Mode::Optimize;
  CHECK(trial_rule(nbc).calls == 4);
  CHECK(trial_rule(nbc).margin == Approx(0.03));
  CHECK(trial_rule(optimize).calls == 4);  // at the sites its profile cannot judge (the engine asks)
  Settings trace;
  trace.mode = Mode::Trace;
  CHECK(trial_rule(trace).calls == 0);
}

TEST_CASE("site trial: one site of a rank tries at a time; a site takes over the turn from one not called in between") {
  TrialTurn turn;
  SiteTrial a, b;
  long long t = 0;
  std::vector<TrialRun> ra, rb;
  // The two sites alternate in the program's loop: a's trial first (calls 1-4), b's after (5-8).
  for (std::uint64_t i = 0; i < 10; ++i) {
    ra.push_back(a.enter(i, t, true, kRule, turn));
    t += kMs;
    rb.push_back(b.enter(i, t, true, kRule, turn));
    t += kMs;
  }
  CHECK(ra == std::vector<TrialRun>{E, E, C, C, E, E, E, E, E, E});
  CHECK(rb == std::vector<TrialRun>{E, E, E, E, E, E, C, C, E, E});
  CHECK(a.trials == 1);
  CHECK(b.trials == 1);
  // A site that holds the turn and is not called again (NPB FT's first transform, twice before the
  // loop): the other waits one call, sees that the holder was not called since, and takes the turn.
  TrialTurn held;
  SiteTrial gone, waiting;
  CHECK(gone.enter(0, t, true, kRule, held) == E);
  CHECK(gone.enter(1, t, true, kRule, held) == E);  // its trial starts; the program never calls it again
  std::vector<TrialRun> rw;
  for (std::uint64_t i = 0; i < 8; ++i) rw.push_back(waiting.enter(i, t += kMs, true, kRule, held));
  CHECK(rw == std::vector<TrialRun>{E, E, E, C, C, E, E, E});
  CHECK(waiting.trials == 1);
}

TEST_CASE("site trial: its completions in the call, by its length (E C C E E C C E ...)") {
  CHECK(trial_completions(0) == 0);
  CHECK(trial_completions(1) == 0);
  CHECK(trial_completions(3) == 2);
  CHECK(trial_completions(4) == 2);
  CHECK(trial_completions(8) == 4);
}
