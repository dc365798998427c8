#!/usr/bin/env python3
"""The harness's overlap reports and its default network (docs/harness.md, docs/reports.md).

Runs is-proxy class S at np 2 through every pass (and off, the preload alone) with the harness's default network (one
emulated node per rank on the shaped link; plain loopback where namespaces are not allowed) and
checks: each tnbc run has its report (report.txt, .json, .html) with the ideal from the trace
profile; one comparison page of the passes, self-contained, listed under the table with each
run's report; the table's hidden and ideal columns carry the reports' figures; with emulated
nodes, one host per rank and the ranks not all bound to one CPU; one machine file measured by
`tnbc calibrate` for the configuration, given to every tnbc pass and read by their cost model;
`--predict` and `--what-if-np` (tnbc predict's table and picture).

With --unit, only the deterministic checks of the paired speedups' confidence interval, verdict and
look plan (npb-harness/speedups.py), of the passes' labels, of the site decisions' names and of the
host figures (hostload.py: steal, the runs measured again, free page reporting) (no MPI, no timing).

usage: harness_test.py --tnbc PATH --build-dir DIR
       harness_test.py --unit
"""
import argparse
import contextlib
import glob
import io
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness.py")
sys.path.insert(0, HERE)
import harness  # noqa: E402
import hostload  # noqa: E402
import speedups  # noqa: E402
# off with a setting of its own (PASS:NAME=VALUE): the pass's --set reaches tnbc exec, its label names it.
OFF = "off:TNBC_TIMELINE_CALLS=2"
PASSES = ["baseline", "nbc", "trace", "optimize", OFF]
# The passes that leave tnbc summaries and get reports (off: the library preloaded, TNBC_MODE=off).
REPORTED = ["nbc", "trace", "optimize"]


def fail(msg, out=""):
    print(out[-6000:])
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def brute_coverage(n, k):
    """P(x(k) <= median <= x(n+1-k)) counted over the 2^n equally likely patterns of which ratios lie
    below the true median (the sign test's model), independently of speedups.sign_tail."""
    hit = sum(1 for signs in itertools.product((0, 1), repeat=n) if k <= sum(signs) <= n - k)
    return hit / 2 ** n


def unit_interval():
    # The exact coverage of the order-statistic intervals, against counting the sign patterns.
    for n in range(1, 15):
        k, coverage = speedups.order_rank(n, 0.95)
        if k is None:
            check(brute_coverage(n, 1) < 0.95 and abs(coverage - brute_coverage(n, 1)) < 1e-12,
                  f"n={n}: no interval, but [x(1), x(n)] covers {brute_coverage(n, 1)}")
            continue
        check(abs(coverage - brute_coverage(n, k)) < 1e-12, f"n={n} k={k}: coverage {coverage} != "
              f"{brute_coverage(n, k)}")
        check(coverage >= 0.95, f"n={n}: coverage {coverage} below 0.95")
        check(k == (n + 1) // 2 or brute_coverage(n, k + 1) < 0.95, f"n={n}: k={k} is not the narrowest")
    check(speedups.order_rank(5, 0.95)[0] is None and speedups.min_repetitions(0.95) == 6, "n=5 has no 95% interval")
    check(speedups.order_rank(6, 0.95) == (1, 62 / 64), "n=6: [min, max] with 96.875%")
    check(speedups.order_rank(9, 0.95) == (2, 1 - 2 * 10 / 512), "n=9: [x(2), x(8)]")
    check(speedups.order_rank(8, 0.99)[0] == 1 and speedups.order_rank(7, 0.99)[0] is None, "99%: from n=8")
    # The interval of a deterministic sample (given out of order).
    xs = [1.05, 0.97, 1.10, 0.99, 1.01, 0.95, 1.03, 1.00, 1.04, 1.02]
    ci = speedups.median_ci(xs, 0.95)
    check((ci["n"], ci["low"], ci["high"]) == (10, 0.97, 1.05) and abs(ci["median"] - 1.015) < 1e-12,
          f"median_ci of 10 ratios: {ci}")
    ci = speedups.median_ci(xs[:5], 0.95)
    check(ci["low"] is None and ci["high"] is None and ci["median"] == 1.01 and ci["coverage"] == 1 - 2 / 32,
          f"5 ratios: no interval at 95%: {ci}")
    check(speedups.median_ci([], 0.95)["median"] is None, "no ratios: no median")


def unit_verdict():
    floor = 0.99

    def ci(low, high):
        return {"low": low, "high": high}
    cases = [(ci(0.995, 1.02), speedups.NOT_SLOWER), (ci(0.99, 1.02), speedups.NOT_SLOWER),
             (ci(0.95, 0.985), speedups.SLOWER), (ci(0.95, 0.99), speedups.UNDECIDED),
             (ci(0.98, 1.01), speedups.UNDECIDED), (ci(None, None), speedups.UNDECIDED)]
    for c, want in cases:
        check(speedups.verdict(c, floor) == want, f"verdict({c}, {floor}) = {speedups.verdict(c, floor)}, not {want}")
    # Paired by repetition: a repetition without both times is left out.
    base = {0: 1.0, 1: 1.1, 2: 1.2, 3: 0.9}
    other = {0: 0.5, 1: None, 2: 1.2, 4: 1.0}
    check(speedups.paired_ratios(base, other) == [2.0, 1.0], f"paired_ratios: {speedups.paired_ratios(base, other)}")
    # A cell's speedups from the harness's run records: an unverified run left out.
    runs = [{"benchmark": "ft", "class": "W", "np": 2, "pass": p, "repeat": r, "time": t, "verified": ok}
            for p, r, t, ok in [("baseline", r, 1.0, True) for r in range(7)] +
            [("optimize", r, 1.0 / x, True) for r, x in enumerate([1.0, 1.01, 0.995, 1.02, 0.992, 1.005])] +
            [("optimize", 6, 2.0, False), ("baseline-2", 0, 1.0, True)]]
    s = speedups.cell_speedups(runs, ("ft", "W", 2), ["optimize", "baseline-2"], 0.95, floor)
    check(s[0]["pass"] == "optimize" and s[0]["n"] == 6 and abs(s[0]["low"] - 0.992) < 1e-9 and
          s[0]["verdict"] == speedups.NOT_SLOWER, f"cell_speedups, optimize: {s[0]}")
    check(s[1]["n"] == 1 and s[1]["verdict"] == speedups.UNDECIDED, f"cell_speedups, one repetition: {s[1]}")
    check(s[0]["clock"] == "time", f"cell_speedups without NPB's timers: {s[0]['clock']}")
    # NPB's timer 1 where every verified run of the cell has it: ratios from it, not from the
    # 10 ms steps of "Time in seconds" (here all 1.0); one run without it: "Time in seconds" for all.
    fine = [dict(r, time=1.0, time_fine=r["time"]) for r in runs]
    s = speedups.cell_speedups(fine, ("ft", "W", 2), ["optimize"], 0.95, floor)
    check(s[0]["clock"] == "time_fine" and abs(s[0]["low"] - 0.992) < 1e-9, f"cell_speedups, timer 1: {s[0]}")
    fine[0] = dict(fine[0], time_fine=None)
    s = speedups.cell_speedups(fine, ("ft", "W", 2), ["optimize"], 0.95, floor)
    check(s[0]["clock"] == "time" and s[0]["median"] == 1.0, f"cell_speedups, a run without timer 1: {s[0]}")
    # parse: NPB's timer 1 (IS's and FT's formats) on the slowest rank (the max column).
    out_is = " Time in seconds =                     0.80\n timer  1 (total   ):      0.7929      0.7967      0.7948\n"
    out_ft = " Time in seconds =                     3.01\n timer  1(          total ) :      3.0137      3.0142      3.0139\n"
    check(harness.parse(out_is)["time_fine"] == 0.7967 and harness.parse(out_ft)["time_fine"] == 3.0142 and
          harness.parse(" Time in seconds =       0.6490\n")["time_fine"] is None,
          f"parse: {harness.parse(out_is)}, {harness.parse(out_ft)}")
    # A site decision under the table: named as its run's report names it, else by the summaries' frame.
    d = {"site": "0x1", "where": "main (is.A.x+0x22c1)"}
    named = {"report": {"decision_where": {"0x1": "rank (is.c:772)"}}}
    check(harness.decision_where(named, d) == "rank (is.c:772)" and
          harness.decision_where({"report": {"decision_where": {"0x2": "x"}}}, d) == d["where"] and
          harness.decision_where({"report": None}, d) == d["where"], "decision_where: the report's name, else the frame")
    # Mode nbc's trial (runtime/site_trial.hh): its calls completed in the call counted in the run's
    # line, summed over the ranks, and those the ranks agreed to run as the library's own
    # (runtime/call_vote.hh); a kind without any keeps the line as before.
    with tempfile.TemporaryDirectory() as t:
        for rank in (0, 1):
            with open(os.path.join(t, f"tnbc-summary.{rank}.json"), "w") as f:
                json.dump({"rank": rank, "collectives": {
                    "alltoallv": {"early_return": 3, "completed_in_call": 8, "passthrough": 5,
                                  "reasons": {"site_trial": 2, "early_return_slower": 6, "agreed_plain": 4}},
                    "bcast": {"early_return": 1, "completed_in_call": 0, "passthrough": 0, "reasons": {}}}}, f)
        line = harness.calls_line(harness.tnbc_calls(t))
        check(line == "alltoallv early 6, in the call 16 (no overlap to gain 0, site trial 4, early return slower 12), "
              "plain MPI 10 (agreed by the ranks' trials 8); bcast early 2, in the call 0 (no overlap to gain 0), "
              "plain MPI 0", f"calls_line: {line}")
        # Mode optimize's calls in the call on the model's sign at a site on trial (priced_loss).
        with open(os.path.join(t, "tnbc-summary.1.json"), "w") as f:
            json.dump({"rank": 1, "collectives": {"alltoall": {"early_return": 2, "completed_in_call": 5, "passthrough": 0,
                                                                "reasons": {"site_trial": 1, "priced_loss": 4}}}}, f)
        line = harness.calls_line(harness.tnbc_calls(t))
        check("alltoall early 2, in the call 5 (no overlap to gain 0, site trial 1, early return slower 0, priced at a "
              "loss 4)" in line, f"calls_line, priced_loss: {line}")
    # Mode optimize's calls the profile does not describe (a plain run's too: trace/plain_run.hh),
    # summed over the ranks at the end of the line.
    with tempfile.TemporaryDirectory() as t:
        for rank in (0, 1):
            with open(os.path.join(t, f"tnbc-summary.{rank}.json"), "w") as f:
                json.dump({"rank": rank, "collectives": {
                    "alltoall": {"early_return": 0, "completed_in_call": 0, "passthrough": 7, "reasons": {}}},
                    "profile": {"calls_unknown_site": rank, "calls_other_sizes": 7}}, f)
        line = harness.calls_line(harness.tnbc_calls(t))
        check(line == "alltoall early 0, in the call 0 (no overlap to gain 0), plain MPI 14; the profile does not "
              "describe 15 calls (sites or sizes it did not record)", f"calls_line with the profile's count: {line}")
    # A site the margin alone held back (the summaries' model sites with early_at_pct): listed with
    # the smallest percentage over the ranks; a site without it, or a summary without a model, not.
    with tempfile.TemporaryDirectory() as t:
        def model_site(site, pct, saved):
            m = {"site": site, "kind": "alltoallv", "where": "plain program: rank (is.c:772)", "decision": "plain",
                 "basis": "no_overlap_to_gain", "saved_ns": saved}
            return dict(m, early_at_pct=pct, margin_setting="TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT") if pct is not None else m
        for rank, pct in ((0, 2), (1, 1)):
            with open(os.path.join(t, f"tnbc-summary.{rank}.json"), "w") as f:
                json.dump({"rank": rank, "model": {"sites": [model_site("0x1", pct, 2.1e6), model_site("0x2", None, -1e6)]}}, f)
        with open(os.path.join(t, "tnbc-summary.2.json"), "w") as f:
            json.dump({"rank": 2}, f)
        held = harness.tnbc_calls(t)["held_back"]
        check(len(held) == 1 and held[0]["site"] == "0x1" and held[0]["early_at_pct"] == 1 and
              held[0]["ranks"] == [0, 1], f"tnbc_calls' held_back: {held}")
        line = harness.held_back_line(held[0])
        check("it would return early at TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT=1 (" in line and "2.10 ms" in line,
              f"held_back_line: {line}")
        check(harness.held_back_line(dict(held[0], early_at_pct=0)).find("=0 (") > 0, "held_back_line at 0")
        # The pass it names parses as optimize with that setting (a --passes entry PASS:NAME=VALUE).
        named = line.split("--passes ")[1].split(" ")[0].split(",")
        check(named[:3] == ["baseline", "trace", "optimize"] and harness.split_pass(named[3]) ==
              ("optimize", [("early_return_margin_tcomm_pct", "1")]), f"held_back_line's passes: {named}")
        # Printed under the table once per pass, from its last repetition.
        runs = [{"benchmark": "is", "class": "A", "np": 2, "pass": "optimize", "repeat": r,
                 "tnbc_calls": {"held_back": held}, "report": None} for r in range(2)]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            harness.print_held_back(runs + [dict(runs[0], **{"pass": "nbc", "tnbc_calls": {"held_back": []}})])
        text = printed.getvalue()
        check(text.count("held back by the margin alone, is.A np=2 optimize (repetition 1):") == 1 and
              text.count("TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT=1 (") == 1 and "nbc" not in text,
              f"print_held_back: {text}")
    # A site left to the trial (within_margin): how its calls ran, summed over the ranks, from the
    # summaries' site of the decision's return address (ft-proxy A, session 76: the trial's E, then
    # in the call); a decision of another basis, or a where without an offset, carries none.
    with tempfile.TemporaryDirectory() as t:
        for rank in (0, 1):
            with open(os.path.join(t, f"tnbc-summary.{rank}.json"), "w") as f:
                json.dump({"rank": rank, "profile": {"decisions": [
                    {"site": "0xa", "kind": "alltoall", "where": "MAIN__ (ft-proxy+0x00000000000038ae)",
                     "decision": "early_return", "basis": "within_margin", "calls": 7},
                    {"site": "0xb", "kind": "alltoall", "where": "MAIN__ (ft-proxy+0x0000000000004059)",
                     "decision": "blocking", "basis": "no_overlap_to_gain", "calls": 7}]},
                    "sites": [{"module": "/x/ft-proxy", "offset": "0x38ae", "early_return": 2 + rank,
                               "completed_in_call": 5 - rank, "passthrough": 0},
                              {"module": "/x/ft-proxy", "offset": "0x4059", "early_return": 0,
                               "completed_in_call": 7, "passthrough": 0}]}, f)
        decided = {d["site"]: d for d in harness.tnbc_calls(t)["decisions"]}
        check(decided["0xa"].get("ran") == [5, 9, 0] and "ran" not in decided["0xb"],
              f"tnbc_calls' within_margin site's calls: {decided}")
        check(harness.ran_at({"sites": []}, "MAIN__ (ft-proxy+0x38ae)") is None and
              harness.ran_at({"sites": [{"module": "/x/ft-proxy", "offset": "0x38ae"}]}, "rank (is.c:772)") is None,
              "ran_at without a matching site")
        runs = [{"benchmark": "ft", "class": "A", "np": 2, "pass": "optimize", "repeat": 0, "report": None,
                 "tnbc_calls": harness.tnbc_calls(t)}]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            harness.print_site_decisions(runs)
        check("(within_margin), 14 calls on ranks 0,1; the calls at its return address (every stack): early 5, in "
              "the call 9, plain MPI 0" in printed.getvalue(), f"print_site_decisions: {printed.getvalue()}")
    # The passes' labels: a pass named twice is an A/A comparison; a trace pass run once gets no verdict.
    labelled = harness.pass_labels(["baseline", "baseline", "trace", "optimize"])
    check(labelled == [("baseline", "baseline"), ("baseline-2", "baseline"), ("trace", "trace"),
                       ("optimize", "optimize")], f"pass_labels: {labelled}")
    check(harness.judged_passes(labelled, True) == ["baseline-2", "optimize"] and
          harness.judged_passes(labelled, False) == ["baseline-2", "trace", "optimize"] and
          harness.judged_passes([("optimize", "optimize")], False) == [], "judged_passes")
    # A pass with settings of its own: PASS:NAME=VALUE[:NAME=VALUE]; NAME as the table or TNBC_ variable.
    check(harness.split_pass("optimize:TNBC_EARLY_RETURN_MARGIN_BUSY_POLL_PCT=0:send_window=2") ==
          ("optimize", [("early_return_margin_busy_poll_pct", "0"), ("send_window", "2")]) and
          harness.split_pass("nbc") == ("nbc", []), "split_pass")
    for bad in ("optimize:margin", "optimize:=1", "optimize:x="):
        try:
            harness.split_pass(bad)
            check(False, f"split_pass({bad!r}) should be refused")
        except ValueError:
            pass
    traced = harness.pass_labels(["baseline", "trace:log=info", "optimize", "optimize:send_window=2"])
    check(harness.judged_passes(traced, True) == ["optimize", "optimize:send_window=2"],
          f"a trace pass with a setting runs once too: {harness.judged_passes(traced, True)}")
    # Measured against the pass without its settings, where that runs too (nbc:... has no plain nbc here).
    both = harness.pass_labels(["baseline", "optimize", "optimize:send_window=2", "nbc:send_window=2"])
    check(harness.setting_pairs(both) == [("optimize:send_window=2", "optimize")], f"setting_pairs: {both}")
    runs = [{"benchmark": "is", "class": "A", "np": 2, "pass": label, "repeat": r, "verified": True,
             "time": t * (1.10 if label == "optimize:send_window=2" else 1.0), "time_fine": None}
            for r, t in enumerate([1.0, 1.02, 0.99, 1.01, 1.0, 0.98]) for label, _ in both]
    got = harness.setting_comparisons(runs, [("is", "A", 2)], both, 0.95, 0.99)
    check(len(got) == 1 and got[0]["reference"] == "optimize" and got[0]["n"] == 6 and
          abs(got[0]["median"] - 1 / 1.10) < 1e-9 and got[0]["verdict"] == speedups.SLOWER,
          f"setting_comparisons: a setting 10 % slower in every repetition: {got}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        harness.print_setting_comparisons(got, lambda np: "2-nodes")
    check("optimize:send_window=2 optimize " in printed.getvalue() and "slower" in printed.getvalue(),
          f"print_setting_comparisons: {printed.getvalue()}")


def unit_looks():
    check(speedups.look_plan(6, 6, 0.95) == ([6], 0.95), "one look without --max-repeat")
    looks, level = speedups.look_plan(6, 60, 0.95)
    check(looks == [9, 14, 21, 32, 48, 60] and abs(level - (1 - 0.05 / 6)) < 1e-12,
          f"look plan 6..60: {looks}, {level} (6 cannot decide at the per-look level: dropped)")
    check(all(speedups.order_rank(n, level)[0] is not None for n in looks), "every look can decide")
    check(speedups.look_plan(3, 5, 0.95) == ([5], 0.95), "too few repetitions to decide: one look at the end")
    try:
        speedups.look_plan(6, 5, 0.95)
        fail("look_plan accepted last < first")
    except ValueError:
        pass
    # The plan's promise, simulated (seeded, deterministic): with the true median speedup at the floor,
    # the adaptive procedure says "not slower" in at most 2.5% of campaigns (one side of 95%); looking
    # after every repetition at 95% instead says it far more often.
    rng = random.Random(16)
    floor, trials = 0.99, 1500

    def wrong(counts, level):
        ratios = []
        for n in counts:
            while len(ratios) < n:
                ratios.append(floor * (1 + rng.gauss(0, 0.03)))
            v = speedups.verdict(speedups.median_ci(ratios, level), floor)
            if v != speedups.UNDECIDED:
                return v == speedups.NOT_SLOWER
        return False
    planned = sum(wrong(looks, level) for _ in range(trials)) / trials
    every = sum(wrong(list(range(6, 61)), 0.95) for _ in range(trials)) / trials
    check(planned <= 0.025, f"the look plan's wrong 'not slower' share {planned} above 2.5%")
    check(every > 0.025, f"looking after every repetition at 95%: wrong share {every}, expected above 2.5%")
    print(f"look plan: wrong 'not slower' in {100 * planned:.1f}% of {trials} simulated campaigns at the floor "
          f"(every repetition at 95%: {100 * every:.1f}%)")


def unit_host():
    # What the machine did beside a run, from two samples (machine busy s, steal s, the run's cgroup s).
    between = hostload.HostLoad.between
    check(between((10.0, 1.0, 5.0), (12.0, 1.5, 6.5)) ==
          {"busy_cpu_s": 2.0, "run_cpu_s": 1.5, "other_cpu_s": 0.5, "steal_s": 0.5}, "host figures")
    check(between((10.0, 0.0, None), (12.0, 0.0, None))["other_cpu_s"] is None, "no cgroup: other unknown")
    check(between((10.0, 0.0, 5.0), (10.5, 0.0, 5.6))["other_cpu_s"] == 0.0, "10 ms ticks: never negative")
    check(between(None, (1.0, 0.0, 1.0)) is None, "no /proc/stat: no figures")

    # Other work beside a run: named above 5 % of the machine's CPU time (CPUs x the run's wall time).
    shared = hostload.shared
    check(shared({"other_cpu_s": 0.35}, 3.0, 2), "0.35 s of 2 CPUs x 3 s (5.8 %): shared")
    check(not shared({"other_cpu_s": 0.12}, 3.0, 2), "0.12 s of 2 CPUs x 3 s (2 %): a quiet guest's background")
    check(not shared({"other_cpu_s": None}, 3.0, 2) and not shared(None, 3.0, 2)
          and not shared({"other_cpu_s": 1.0}, 0.0, 2), "unknown: not shared")

    # Steal above the limit: a share of the machine's CPU time (CPUs x the run's wall time).
    stolen = hostload.stolen
    check(stolen({"steal_s": 0.18}, 1.5, 2, 2.0), "0.18 s of 2 CPUs x 1.5 s is above 2 %")
    check(not stolen({"steal_s": 0.05}, 1.5, 2, 2.0), "0.05 s of 2 CPUs x 1.5 s is below 2 %")
    check(not stolen({"steal_s": 0.05}, 0.0, 2, 2.0) and not stolen(None, 1.5, 2, 2.0)
          and not stolen({"steal_s": None}, 1.5, 2, 2.0), "unknown: not stolen")
    # Where the hypervisor always takes some: only a run well above the usual share.
    check(not stolen({"steal_s": 0.18}, 1.5, 2, 2.0, usual_share=0.05), "6 % where 5 % is usual: not stolen")
    check(stolen({"steal_s": 0.48}, 1.5, 2, 2.0, usual_share=0.05), "16 % where 5 % is usual: stolen")
    usual = hostload.usual_steal_share
    check(usual([0.5, 0.5]) == 0.0, "fewer than 3 runs: nothing usual yet")
    check(usual([0.0, None, 0.01, 0.2]) == 0.01 and usual([0.0, 0.02, 0.04, 0.2]) == 0.03, "the median, None ignored")

    # Measured again while disturbed, at most `retries` times; the last run kept in every case.
    def scripted(steals, retries):
        runs, said = iter(steals), []
        kept, discarded = hostload.run_until_undisturbed(lambda: next(runs), lambda r: r > 1, retries, said.append)
        return kept, discarded, said
    check(scripted([0], 2) == (0, [], []), "an undisturbed run runs once")
    check(scripted([5, 0, 9], 2) == (0, [5], [5]), "a disturbed run is measured again, the next kept")
    check(scripted([5, 6, 7, 0], 2) == (7, [5, 6], [5, 6]), "at most 2 repeats: the last run kept though disturbed")
    check(scripted([5, 0], 0) == (5, [], []), "--steal-retries 0: never again")

    # Free page reporting: read from the kernel's parameter where a balloon device is bound.
    with tempfile.TemporaryDirectory() as d:
        order, driver = os.path.join(d, "order"), os.path.join(d, "driver")
        os.makedirs(driver)
        saved = hostload.PAGE_REPORTING_ORDER, hostload.BALLOON_DRIVER
        hostload.PAGE_REPORTING_ORDER, hostload.BALLOON_DRIVER = order, driver
        try:
            check(hostload.free_page_reporting() is None, "no parameter: no reporting")
            with open(order, "w") as f:
                f.write("9\n")
            check(hostload.free_page_reporting() is None, "no balloon device bound: no reporting")
            os.symlink(d, os.path.join(driver, "virtio0"))
            check(hostload.free_page_reporting() == 9, "order 9 with a bound balloon: reporting from order 9")
            with open(order, "w") as f:
                f.write(f"{hostload.LARGEST_PAGE_ORDER + 1}\n")
            check(hostload.free_page_reporting() is None, "above the largest order: off")
        finally:
            hostload.PAGE_REPORTING_ORDER, hostload.BALLOON_DRIVER = saved


def unit_against_model():
    """The model's predicted saving of a mode-optimize run (its summaries' decisions) against the
    measured one: summed per rank over the sites by their calls, the ranks' median; the verdict
    where the prediction is above 5 % of the plain program's time."""
    decisions = [
        # an early return: its saving a call
        {"site": "0x1", "kind": "bcast", "where": "main (x.c:1)", "decision": "early_return", "basis": "overlap_pays",
         "calls": 10, "comm_ns": 80e6, "saved_ns": 20e6, "own_call_ns": 60e6},
        # tnbc's schedule in the call, beating the library's call: Tcomm less its time
        {"site": "0x2", "decision": "blocking", "basis": "own_call_faster", "calls": 4, "comm_ns": 50e6,
         "saved_ns": -1e6, "own_call_ns": 30e6},
        # the library's call (no overlap to gain): nothing, whatever its figures
        {"site": "0x3", "decision": "blocking", "basis": "no_overlap_to_gain", "calls": 100, "comm_ns": 9e6,
         "saved_ns": 5e6, "own_call_ns": 1e6},
        # no estimate: nothing
        {"site": "0x4", "decision": "early_return", "basis": "no_estimate", "calls": 3, "comm_ns": None, "saved_ns": None},
        # left to the site trial (within the model's margins): no claim, whatever its figures
        {"site": "0x5", "decision": "early_return", "basis": "within_margin", "calls": 7, "comm_ns": 9e6,
         "saved_ns": 2e6}]
    got = harness.predicted_saving_s({"profile": {"status": "loaded", "decisions": decisions}})
    check(abs(got - (10 * 20e6 + 4 * 20e6) / 1e9) < 1e-12, f"predicted_saving_s: {got}")
    check(harness.predicted_saving_s({"profile": {"status": "loaded"}}) == 0.0,
          "predicted_saving_s of the plain program (a profile, no decision): 0")
    check(harness.predicted_saving_s({"profile": {"status": "other_rank_count"}}) is None and
          harness.predicted_saving_s({}) is None, "predicted_saving_s without a loaded profile")
    # The sites left to the trial: the model's price of the early returns there, the
    # decisions at one return address sharing its count in order (5 of 7, then 2 of 4), a site priced
    # at a loss negative; the others' figures not counted.
    trial = {"status": "loaded", "decisions": decisions[:1] + [
        {"site": "0x6", "where": "main (x+0x10)", "decision": "early_return", "basis": "within_margin", "calls": 5,
         "saved_ns": 2e6},
        {"site": "0x7", "where": "main (x+0x10)", "decision": "early_return", "basis": "within_margin", "calls": 4,
         "saved_ns": 3e6},
        {"site": "0x8", "where": "f (x+0x20)", "decision": "early_return", "basis": "within_margin", "calls": 9,
         "saved_ns": -1e6}]}
    sites = [{"module": "/p/x", "offset": "0x10", "early_return": 7, "completed_in_call": 2},
             {"module": "/p/x", "offset": "0x20", "early_return": 3, "completed_in_call": 6}]
    got = harness.trial_priced_saving_s({"profile": trial, "sites": sites})
    check(abs(got - (5 * 2e6 + 2 * 3e6 - 3 * 1e6) / 1e9) < 1e-12, f"trial_priced_saving_s: {got}")
    check(harness.trial_priced_saving_s({"profile": {"status": "loaded", "decisions": decisions[:4]}}) == 0.0 and
          harness.trial_priced_saving_s({}) is None, "trial_priced_saving_s without sites on trial, without a profile")
    with tempfile.TemporaryDirectory() as t:
        for rank, calls in ((0, 10), (1, 20), (2, 40)):
            with open(os.path.join(t, f"tnbc-summary.{rank}.json"), "w") as f:
                json.dump({"rank": rank, "profile": {"status": "loaded", "decisions": [dict(decisions[0], calls=calls)]}}, f)
        got = harness.tnbc_calls(t)["predicted_saving_s"]
        check(abs(got - 0.4) < 1e-12, f"tnbc_calls' predicted_saving_s, the ranks' median: {got}")

    def runs(predicted, times):
        return ([{"benchmark": "is", "class": "A", "np": 2, "pass": "baseline", "repeat": r, "time": 10.0,
                  "time_fine": None, "verified": True} for r in range(len(times))] +
                [{"benchmark": "is", "class": "A", "np": 2, "pass": "optimize", "repeat": r, "time": t, "time_fine": None,
                  "verified": True, "tnbc_calls": {"predicted_saving_s": predicted}} for r, t in enumerate(times)])
    cell = ("is", "A", 2)
    # Predicted 2 s of 10 (20 %): measured 1.2 s (median of 1.0, 1.2, 1.4) is at least half, 0.8 s is not.
    [x] = speedups.predicted_against_measured(runs(2.0, [9.0, 8.8, 8.6]), cell, ["optimize"])
    check(x["verdict"] == speedups.HALF_MEASURED and abs(x["measured_s"] - 1.2) < 1e-9 and abs(x["share"] - 0.2) < 1e-9
          and x["n"] == 3, f"predicted_against_measured: {x}")
    [x] = speedups.predicted_against_measured(runs(2.0, [9.2, 9.2, 9.3]), cell, ["optimize"])
    check(x["verdict"] == speedups.LESS_THAN_HALF, f"predicted_against_measured, less than half: {x}")
    # 0.4 s of 10 (4 %): no claim, whatever was measured; a pass without predictions: no row.
    [x] = speedups.predicted_against_measured(runs(0.4, [10.5, 10.5, 10.5]), cell, ["optimize"])
    check(x["verdict"] == speedups.NO_CLAIM, f"predicted_against_measured, below 5 %: {x}")
    check(speedups.predicted_against_measured(runs(None, [9.0]), cell, ["optimize"]) == [], "no prediction: no row")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        harness.print_against_model(speedups.predicted_against_measured(runs(2.0, [9.0, 8.8, 8.6]), cell, ["optimize"]),
                                    lambda np: "2-nodes")
    check("  at least half measured" in printed.getvalue() and "20.0%" in printed.getvalue(),
          f"print_against_model: {printed.getvalue()}")
    # The model's price of the trial's early returns beside it: the records' median, no verdict.
    rows = runs(2.0, [9.0, 8.8, 8.6])
    for r, priced in zip((r for r in rows if r["pass"] == "optimize"), (0.5, 0.7, None)):
        r["tnbc_calls"]["trial_priced_saving_s"] = priced
    [x] = speedups.predicted_against_measured(rows, cell, ["optimize"])
    check(abs(x["trial_priced_s"] - 0.6) < 1e-9 and x["verdict"] == speedups.HALF_MEASURED,
          f"predicted_against_measured, trial_priced_s: {x}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        harness.print_against_model([x], lambda np: "2-nodes")
    check("on trial s" in printed.getvalue() and "     0.600 " in printed.getvalue(),
          f"print_against_model, on trial s: {printed.getvalue()}")


def unit():
    unit_against_model()
    unit_host()
    unit_interval()
    unit_verdict()
    unit_looks()
    print("harness speedups (unit): OK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tnbc")
    ap.add_argument("--build-dir")
    ap.add_argument("--unit", action="store_true", help="only the deterministic checks (speedups.py, pass labels)")
    a = ap.parse_args()
    if a.unit:
        unit()
        return
    if not a.tnbc or not a.build_dir:
        ap.error("--tnbc and --build-dir are needed (or --unit)")
    work = tempfile.mkdtemp(prefix="tnbc-harness-test-")
    try:
        # A pass's setting that tnbc refuses: one message naming it, before anything runs.
        bad = subprocess.run([sys.executable, HARNESS, "--tnbc", a.tnbc, "--build-dir", a.build_dir, "--passes",
                              "baseline,optimize:early_return_margin_tcomm_pct=lots", "--out", os.path.join(work, "bad")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        if bad.returncode == 0 or "pass 'optimize:early_return_margin_tcomm_pct=lots'" not in bad.stdout or \
                "not valid" not in bad.stdout or os.path.exists(os.path.join(work, "bad", "machines")):
            fail(f"a pass with an invalid setting: exit {bad.returncode}", bad.stdout)
        out_dir = os.path.join(work, "out")
        cmd = [sys.executable, HARNESS, "--tnbc", a.tnbc, "--build-dir", a.build_dir, "--benchmarks", "is",
               "--classes", "S", "--np", "2", "--passes", ",".join(PASSES), "--out", out_dir,
               "--predict", "--what-if-np", "4", "--calibrate-cache", "8m", "--calibrate-copy", "4m",
               "--calibrate-max-bytes", "1m"]
        print("running:", " ".join(cmd), flush=True)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, env=env)
        out = p.stdout
        if p.returncode != 0:
            fail(f"the harness exited {p.returncode}", out)
        with open(os.path.join(out_dir, "summary.json")) as f:
            summary = json.load(f)
        runs = {r["pass"]: r for r in summary["runs"]}
        if sorted(runs) != sorted(PASSES) or not all(r["verified"] for r in runs.values()):
            fail(f"expected one verified run per pass: {sorted(runs)}", out)
        # The calibration ran with the sweep and sizes asked for (--calibrate-max-bytes and the
        # others reach `tnbc calibrate`: its command is the first line of its output file).
        logs = glob.glob(os.path.join(out_dir, "machines", "calibrate.*.txt"))
        command = []
        if len(logs) == 1:
            with open(logs[0]) as f:
                command = f.readline().split()
        asked = {"--max-bytes": "1m", "--cache-bytes": "8m", "--copy-bytes": "4m"}
        if any(k not in command or command[command.index(k) + 1] != v for k, v in asked.items()):
            fail(f"tnbc calibrate's command lacks {asked}: {logs} {command}", out)

        # The paired speedups (one repetition: every tnbc pass's ratio, too few for an interval) and
        # what each run's machine did besides it.
        paired = {s_["pass"]: s_ for s_ in summary.get("speedups", [])}
        reps = summary.get("repetitions") or {}
        if sorted(paired) != sorted(p_ for p_ in PASSES if p_ != "baseline") or \
                any(s_["n"] != 1 or s_["low"] is not None or s_["verdict"] != "undecided" for s_ in paired.values()):
            fail(f"speedups: expected one undecided ratio per pass: {paired}", out)
        if summary.get("settings_against_default") != []:  # the off pass with a setting has no plain off beside it
            fail(f"settings_against_default: {summary.get('settings_against_default')}", out)
        if [(c["ran"], c["stopped"]) for c in reps.get("cells", [])] != [(1, "--repeat 1 (fixed)")]:
            fail(f"repetitions: {reps}", out)
        if "speedup per repetition" not in out or any("host" not in r for r in summary["runs"]):
            fail("no speedup table, or a run without its host figures", out)
        # The model's predicted saving of the optimize pass (from its summaries' decisions) against
        # the measured one: one row, the optimize pass's, in summary.json and under the table.
        model = summary.get("predicted_against_measured")
        predicted = (runs["optimize"].get("tnbc_calls") or {}).get("predicted_saving_s")
        if predicted is None or not model or [x["pass"] for x in model] != ["optimize"] or \
                abs(model[0]["predicted_s"] - predicted) > 1e-9 or \
                model[0]["verdict"] not in (speedups.HALF_MEASURED, speedups.LESS_THAN_HALF, speedups.NO_CLAIM) or \
                "the cost model's predicted saving against the measured" not in out:
            fail(f"predicted against measured: {model}, the run's prediction {predicted}", out)

        # off: the library preloaded with nothing of tnbc's work (the preload's own cost); no summaries
        # expected, none asked for.
        off = runs[OFF]
        cmd_ = off["command"]
        end = cmd_.index("--", cmd_.index("exec"))  # tnbc exec's own "--" (netrun has one before mpirun)
        if cmd_[end - 2:end] != ["--set", "timeline_calls=2"]:
            fail(f"the pass's own setting is not the last --set of its tnbc exec: {off['command']}", out)
        if "--mode" not in off["command"] or off["command"][off["command"].index("--mode") + 1] != "off" or \
                off["tnbc_report"] is not None or off["tnbc_calls"] is not None:
            fail(f"the off pass is not tnbc exec --mode off without summaries: {off}", out)
        if "left a tnbc summary" in out:
            fail("a run was flagged for missing tnbc summaries", out)

        # The default network: one emulated node per rank, unbound (unless namespaces are not allowed).
        shaped = "network namespaces are not allowed" not in out
        nbc = runs["nbc"]
        if shaped:
            if nbc["net"] != "2-nodes" or nbc["nodes"] != 2 or nbc["rate"] != "1gbit":
                fail(f"default network: expected 2 emulated nodes at 1gbit, got {nbc['net']}, {nbc['nodes']}, "
                     f"{nbc['rate']}", out)
            if len(nbc["placement"]) != 2:
                fail(f"expected one emulated host per rank: {nbc['placement']}", out)
            if "--bind-to" not in nbc["command"]:
                fail("the emulated nodes' ranks were not started unbound (--bind-to none)", out)
            if all(cpu == "0" for h in nbc["placement"] for cpu in h["cpus"]):
                fail(f"every rank bound to CPU 0: {nbc['placement']}", out)

        # The cost model's machine: `tnbc calibrate` once for the configuration, passed to every
        # tnbc pass (npb-harness/calibration.py), and the runs' model read it.
        machines = sorted(glob.glob(os.path.join(out_dir, "machines", "machine.*.json")))
        if len(machines) != 1:
            fail(f"expected one calibrated machine file in {out_dir}/machines: {machines}", out)
        for p_ in REPORTED:
            if f"machine={machines[0]}" not in runs[p_]["command"]:
                fail(f"the {p_} pass was not given the calibrated machine {machines[0]}: {runs[p_]['command']}", out)
            for f_ in glob.glob(os.path.join(runs[p_]["tnbc_report"], "tnbc-summary.*.json")):
                model = json.load(open(f_)).get("model") or {}
                if model.get("source") != "file" or model.get("file") != machines[0]:
                    fail(f"{p_}: {f_}: the cost model did not use the machine file: {model.get('source')}, "
                         f"{model.get('file_problem')}", out)

        # Each tnbc run's report, with the ideal from the trace profile.
        for p_ in REPORTED:
            rep = runs[p_].get("report")
            if not rep:
                fail(f"the {p_} run has no report", out)
            for k in ("text", "json", "html"):
                if not os.path.isfile(rep[k]) or os.path.getsize(rep[k]) == 0:
                    fail(f"{p_}: {rep[k]} missing", out)
            with open(rep["json"]) as f:
                world = json.load(f)["runs"][0]["worlds"][0]
            t = world["totals"]
            if rep["hidden_share"] != t["hidden_share"] or rep["ideal_share"] != t["ideal_share"]:
                fail(f"{p_}: the harness's figures are not the report's: {rep} vs {t}", out)
            if t["ideal_share"] is None:
                fail(f"{p_}: no ideal although the trace profile was given", out)
            if not any(s["where"].startswith("main (is_proxy.c:") for s in world["sites"]):
                fail(f"{p_}: the report does not name is_proxy.c:LINE", open(rep["text"]).read())
        if runs["nbc"]["report"]["hidden_share"] is None or runs["trace"]["report"]["hidden_share"] != 0:
            fail("hidden: expected a figure for nbc and 0 for the trace pass (blocking calls)", out)

        # The comparison page, and the table and list under it.
        comps = summary.get("comparisons") or []
        if len(comps) != 1 or sorted(comps[0]["passes"]) != sorted(REPORTED):
            fail(f"expected one comparison of the tnbc passes: {comps}", out)
        page = open(comps[0]["html"]).read()
        for bad in ("http://", "https://", "<link", "src="):
            if bad in page:
                fail(f"the comparison page refers to something outside itself ({bad})", out)
        if page.count('<svg class="compare"') != 1 or not all(f">{p_}<" in page for p_ in REPORTED):
            fail("the comparison page lacks its bars per pass", out)
        header = next((ln for ln in out.splitlines() if ln.startswith("benchmark ")), "")
        if "hidden" not in header or "ideal" not in header:
            fail("the table has no hidden and ideal columns", out)
        row = next((ln for ln in out.splitlines() if ln.startswith("is ") and " nbc " in ln), "")
        nbc_rep = runs["nbc"]["report"]
        for share in (nbc_rep["hidden_share"], nbc_rep["ideal_share"]):
            if f"{100 * share:.0f}%" not in row.split()[-2:]:
                fail(f"the table's nbc row does not show the report's {share}: {row}", out)
        if f"comparison of " not in out or comps[0]["html"] not in out or runs["nbc"]["report"]["html"] not in out:
            fail("the comparison page and the runs' reports are not listed under the table", out)

        # --predict and --what-if-np (npb-harness/predict.py, docs/predict.md): the predicted time
        # next to each measured tnbc pass, and the what-if picture.
        lines = out.splitlines()
        at = next((i for i, ln in enumerate(lines) if ln.startswith("predicted (tnbc predict")), None)
        if at is None:
            fail("--predict: no table of predicted against measured times", out)
        rows = [ln for ln in lines[at:at + 8] if ln.startswith("is ")]
        if not any(" nbc " in r and r.count("%") >= 2 for r in rows):
            fail(f"--predict: no predicted nbc row with its two errors (simulated, anchored): {rows}", out)
        # --what-if-np 4: tnbc report's predicted section (tools/predict_picture.cc) in the comparison page,
        # from the harness's own prediction (--predicted predict-is.S.np2-at4.json): the picture's six
        # lines and the table's row for N = 4.
        if ('<svg class="what-if"' not in page or page.count('class="what-if-line"') != 6
                or page.count('<tr class="what-if-row"><td>4</td>') != 1):
            fail("--what-if-np: the predicted picture and table are not in the comparison page", out)
        print("harness reports: OK")
        crowded_yield(a, work, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def crowded_yield(a, work, env):
    """np 4 on 2 emulated nodes (this machine's CPUs split between them): where a node's ranks
    outnumber its CPUs, its runs go through netrun --yield by default, the log says `ranks yield`
    and summary.json's runs `mpi_yields`; with --spin, none of it; with a CPU per rank, nothing
    changes either way. Baseline only: no calibration (the key of a yielding library's is
    calibration_test's)."""
    crowded = 2 > max(1, len(os.sched_getaffinity(0)) // 2)  # ranks per node > the node's CPUs
    for option, expect in (([], crowded), (["--spin"], False)):
        out_dir = os.path.join(work, "yield" + "".join(option))
        cmd = [sys.executable, HARNESS, "--tnbc", a.tnbc, "--build-dir", a.build_dir, "--benchmarks", "is",
               "--classes", "S", "--np", "4", "--nodes", "2", "--passes", "baseline", "--out", out_dir] + option
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, env=env)
        what = " ".join(option) or "the default"
        if p.returncode != 0:
            fail(f"{what}: the harness exited {p.returncode}", p.stdout)
        with open(os.path.join(out_dir, "summary.json")) as f:
            runs = json.load(f)["runs"]
        yielded = [("--yield" in r["command"], r.get("mpi_yields", False)) for r in runs]
        if not runs or any(y != (expect, expect) for y in yielded) or ("ranks yield" in p.stdout) != expect:
            fail(f"{what} with {'crowded' if crowded else 'uncrowded'} nodes: (netrun --yield, mpi_yields) per "
                 f"run {yielded}, expected {(expect, expect)}", p.stdout)
        seen = "the ranks yielded" if expect else "the ranks spun" if crowded else "no node crowded here"
        print(f"harness {what}: OK ({seen})")


if __name__ == "__main__":
    main()
