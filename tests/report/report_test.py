#!/usr/bin/env python3
"""`tnbc report` on synthetic summaries with known numbers (synthetic.py; docs/reports.md).

usage: report_test.py --tool TNBC (figures | json | bad-input | browser [--screenshot PNG])

figures    every figure of the text report: per site, per rank (min/mean/max), totals as shares of
           the collectives' time and of the run, waits, read order, decisions, notes, the spawned
           world apart, the comparison with a trace pass
json       the JSON report: format, version, the same figures; read back by `tnbc report FILE.json`
           it gives the same text (round trip)
bad-input  one clear message each, never a traceback, what can be reported still is: no summaries,
           not a directory, a truncated file, summaries of two runs, of two versions, of a newer
           version, a rank missing, a profile of another program
browser    the HTML page in headless Chromium: the rendered DOM has one timeline per call site (the
           page's script counts those the browser laid out) and the comparison bars; with --predicted
           (`tnbc predict --json` files of known figures), the section "predicted at other process
           counts": its picture laid out with its six lines (hidden share and speedup, three variants)
           and a point per N each, and its table with the files' figures
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from html import escape as html_escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synthetic  # noqa: E402


def fail(msg, out=""):
    print(f"FAIL: {msg}")
    if out:
        print("---- output ----")
        print(out)
    sys.exit(1)


def report(tool, *args, expect_status=0):
    r = subprocess.run([tool, "report", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = r.stdout + r.stderr
    if r.returncode != expect_status:
        fail(f"tnbc report {' '.join(args)} exited with {r.returncode}, expected {expect_status}", out)
    if "Traceback" in out or "terminate called" in out or "what():" in out:
        fail("tnbc report crashed", out)
    return r.stdout, r.stderr


def expect_lines(text, wanted):
    """Each wanted line must be a line of text (exactly, trailing spaces ignored)."""
    lines = [l.rstrip() for l in text.splitlines()]
    for w in wanted:
        if w.rstrip() not in lines:
            fail(f"missing line:\n{w}", text)


def expect_in(text, wanted):
    for w in wanted:
        if w not in text:
            fail(f"missing: {w}", text)


def setup(work):
    run = os.path.join(work, "nbc")
    profile = synthetic.write_run(run)
    trace = os.path.join(work, "trace")
    synthetic.write_trace_run(trace)
    return run, profile, trace


# The figures (docs/reports.md), from synthetic.py's numbers:
#   site 1: D 200 ms, T 60, B 40, H 100, I 60 over 20 calls; per rank T 20/40 %, B 30/10 %, H 50/50 %
#   site 2: D = T = 4 ms (4 calls); site 3: D = T = 2 ms (2 calls); wall 2 x 1 s
#   totals: D 206, T 66, B 40, H 100 ms: 48.5%, 32.0%, 19.4%; of the run 10.3%, 5.0%, 3.3%, 2.0%
def check_figures(tool, work):
    run, profile, trace = setup(work)
    out, _ = report(tool, run, "--profile", profile, "--compare", trace)
    expect_lines(out, [
        "tnbc report: " + run + ": 2 of 2 ranks, mode nbc, run 00000000000000aa",
        "  alltoall   calls 20: early return 18, completed in the call 0, plain MPI 2; why not early: below_threshold 2",
        "  bcast      calls 4: early return 0, completed in the call 0, plain MPI 4; why not early: single_rank 4",
        "  allgather  calls 2: early return 2, completed in the call 0, plain MPI 0",
        "  tnbc's copies in its calls: 0.360 ms per call on its schedule, 1.20x the cost model's price for them"
        " (the machine's in-call copy rate)",
        "  wall time 2.000 s (2 ranks); collectives 0.206 s = 10.3% of the run",
        "  hidden 48.5% (5.0% of the run); exposed 51.5%: Tinit 32.0% (3.3% of the run), blocked 19.4% (2.0% of the run)",
        "  ideal (Eq. 1, the sites in the profile): 30.0% of their time (3.0% of the run)",
        "  1  alltoall       20       2 MiB  10.000 ms   30.0%   20.0%   50.0%   30.0%  app+0x1234"
        "                                0 1",
        "  2  bcast           4       4 KiB   1.000 ms  100.0%    0.0%    0.0%     n/a  true+0x2010"
        "                               -",
        "  3  allgather       2       1 MiB   1.000 ms  100.0%    0.0%    0.0%     n/a  false+0x2020"
        "                              -",
        "  1  10/10/10      10.000/10.000/10.000  20/30/40         10/20/30         50/50/50         30/30/30         10.0%",
        "  2  4/4/4         1.000/1.000/1.000     100/100/100      0/0/0            0/0/0            n/a              0.2%",
        "  3  2/2/2         1.000/1.000/1.000     100/100/100      0/0/0            0/0/0            n/a              0.1%",
        "  1  calls 20: early return 18, completed in the call 0, plain MPI 2; why not early: below_threshold 2",
        "  2  calls 4: early return 0, completed in the call 0, plain MPI 4; why not early: single_rank 4 on rank 0",
        "  3  calls 2: early return 2, completed in the call 0, plain MPI 0 on rank 1",
        "  1  fence 2 (10.000 ms), userfault 6 (30.000 ms); observing first accesses: 3 waits (1.000 ms, not blocked);"
        " timeline of 3 observed calls",
        "  2  none; no ideal: not in the profile (called from elsewhere in the trace pass?)",
        # Mode nbc's trial (tools/report_trial.cc): the ranks' medians as a range, the verdicts counted.
        "  1   early return 10.500-10.600 ms, in the call 9.600-10.700 ms: later calls complete in the call on 1 of 2 ranks",
        # The spawned world, apart: 9 ms over 3 calls, T 3, H 6.
        "tnbc report: " + run + "/spawned-0000000000000abc: 1 of 1 ranks, mode nbc, a world started by MPI_Comm_spawn,"
        " run 0000000000000abc",
        "  wall time 1.000 s (1 rank); collectives 0.009 s = 0.9% of the run",
        "  hidden 66.7% (0.6% of the run); exposed 33.3%: Tinit 33.3% (0.3% of the run), blocked 0.0% (0.0% of the run)",
        # The trace pass: D = T = 80 ms per rank (8 ms per call), ideal min(8, 3) = 3 ms per call: 37.5%.
        "  nbc                   0.206 s    48.5%    51.5%   32.0%    19.4%   30.0%       10.3%  " + run,
        "  trace                 0.160 s     0.0%   100.0%  100.0%     0.0%   37.5%        8.0%  " + trace,
        "    alltoall  app+0x1234                                nbc 50.0%  trace 0.0%",
    ])
    expect_in(out, ["/nonexistent/app: not found (moved or deleted since the run?)",
                    "/bin/true: no debug information", "/bin/false: not the file that ran (its build ID differs"])
    # Without a profile: no ideal anywhere, said once; the rest unchanged.
    out, _ = report(tool, run)
    if "waiting for peers" in out:
        fail("summaries without in_early_calls_waiting_s: no wait for peers to name", out)
    expect_lines(out, ["  1  alltoall       20       2 MiB  10.000 ms   30.0%   20.0%   50.0%     n/a  app+0x1234"
                       "                                0 1",
                       "ideal (Eq. 1): no trace profile (tnbc report --profile FILE)"])
    # Mode optimize: the run's Tinit per early return against the cost model's for the calls its
    # decisions returned early (synthetic.write_optimize_run), in the text and through the JSON.
    opt = os.path.join(work, "optimize")
    synthetic.write_optimize_run(opt)
    out, _ = report(tool, opt)
    expect_lines(out, ["  time inside the early-returning calls (Tinit): 0.360 ms per early return, 1.13x the cost model's"
                       " 0.318 ms for them; progress threads' CPU 0.000 s (all ranks)",
                       "    of it 0.180 ms waiting for peers that called later (the partial pages at the buffers' ends,"
                       " the ranks' votes); the model prices it only as a broadcast's receivers' wait for a late root",
                       "  it does not describe 5 calls over all ranks (2 at sites it does not hold, 3 at sizes it did not"
                       " record): trace the program as it ran here",
                       "  bcast at main (app+0x1234) [0x2]: COMPLETED IN THE CALL (no_overlap_to_gain), 4 calls on rank 0;"
                       " min(Tcomm 10.00 ms, T_CURC + T_CRC 3.00 ms) - cost 0.50 ms = 2.50 ms; the root's own call site:"
                       " as its receivers' at receive (app+0x5678)"])
    # The cost model's section (tools/report_model.cc), from synthetic.model_block: one heading, the
    # machine's figures (us per MiB = ns per byte x 1.048576), the thresholds and each site's decision.
    if out.count("\ncost model:") != 1 or "cost model (" in out:
        fail("the cost model's section should have one heading", out)
    expect_lines(out, [
        "cost model:",
        "  machine from the machine file /nonexistent/machine.json (rank 0's view; every rank decides from the same"
        " machine)",
        "  inter_node: L 8.0 us, G 8.000 ns/B (125 MB/s), o_s 6.0 us, o_r 2.0 us, node 8.000 ns/B out, 4.500 in+out",
        "    a blocking send returns with up to 2 MiB still buffered for its receiver",
        "    a computation on the CPU of a transfer loses 50.0 us + 524.3 us/MiB exchanged each way",
        "  tnbc's own MPI_Alltoall, returned early, takes 100.0 us + 1048.6 us/MiB received from a computation on the"
        " CPU its rank computes on",
        "  tnbc's own MPI_Bcast, returned early, takes 0.0 us + 786.4 us/MiB received from a computation on the CPU"
        " its rank computes on",
        "  memcpy 31.5 us/MiB, into pages never touched 3.0 us + 314.6 us/MiB",
        "  tnbc's copies in a call (outside the caches, every rank at once) 4.5 us at 64 KiB, 90.0 us at 1 MiB,"
        " 1.25 ms at 16 MiB; one rank alone (a broadcast's root) 2.0 us + 41.9 us/MiB",
        "  a call touching less than 1 MiB (what a rank sends and receives; a broadcast's message) is priced with the"
        " caches warm",
        "  tnbc's own MPI_Alltoall, returned early, spends 60.0 us + 10.5 us/MiB received in the call beyond the parts"
        " priced (caches emptied; caches warm: 12.0 us at 64 KiB)",
        "  tnbc's own MPI_Bcast (a receiver), returned early, spends 70.0 us + 13.1 us/MiB received in the call beyond"
        " the parts priced (caches emptied)",
        "  tnbc's own MPI_Bcast (its root), returned early, spends 30.0 us at 64 KiB, 90.0 us at 1 MiB sent in the call"
        " beyond the parts priced (caches emptied; caches warm: 5.0 us at 64 KiB)",
        "  the hand-over to the progress thread at the end of a call 20.0 us (caches warm: 10.0 us)",
        "  guard userfaultfd_move: hold 50.0 us + 21.0 us/MiB (caches warm: 7.3 us at 4 KiB, 9.2 us at 64 KiB), publish"
        " 4.0 us + 21.0 us/MiB, fault 6.0 us",
        "  size thresholds (MPI_COMM_WORLD): alltoall never bcast 16 KiB",
        "    alltoall at main (app+0x1234): returned early (overlap_pays) on all ranks; blocking 10.00 ms (model 9.50 ms),"
        " in the call 0.30 ms, hidden 3.00 ms, cost 0.50 ms, saved 2.50 ms",
        "    bcast at main (app+0x1234): PLAIN MPI (no_overlap_to_gain) on rank 0; blocking 10.00 ms (model 9.50 ms),"
        " in the call 0.30 ms, hidden 3.00 ms, cost 0.50 ms, saved 2.50 ms; it would return early at"
        " TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT=7",
    ])
    path = os.path.join(work, "optimize.json")
    report(tool, opt, "--json", path)
    again, _ = report(tool, path)
    if again != out:
        fail("tnbc report of the optimize run's JSON differs from the report of the directory", again)
    # Sites on trial (within the model's margins): rank 0's alltoall site decided so and its trial's
    # verdict on the model's sign (leaned); rank 1's allgather site tried, and completed a call on the
    # model's sign, with no verdict.
    trial = os.path.join(work, "optimize-trial")
    synthetic.write_optimize_run(trial)
    for rank in (0, 1):
        summary = os.path.join(trial, f"tnbc-summary.{rank}.json")
        with open(summary) as f:
            s = json.load(f)
        if rank == 0:
            s["profile"]["decisions"][0]["basis"] = "within_margin"
            s["sites"][0]["trial"]["leaned"] = True
        else:
            s["sites"][1]["reasons"] = {"site_trial": 1, "priced_loss": 1}
        synthetic.write_json(summary, s)
    out, _ = report(tool, trial)
    expect_lines(out, [
        "the site trial:",
        "  1   early return 10.500-10.600 ms, in the call 9.600-10.700 ms: later calls complete in the call on 1 of 2"
        " ranks (on 1 of them the model's sign: a loss priced, and early returns not faster by the trial's margin)",
        "  3   no verdict on any rank (the run ended first, or the trial got no sample of each kind): 1 trial calls in"
        " the call, 1 in the call on the model's sign (a loss priced)"])
    expect_in(out, ["alltoall at main (app+0x1234) [0x1]: on trial (within_margin), 8 calls on rank 0"])
    path = os.path.join(work, "optimize-trial.json")
    report(tool, trial, "--json", path)
    again, _ = report(tool, path)
    if again != out:
        fail("tnbc report of the trial run's JSON differs from the report of the directory (leaned)", again)
    # Without a warm own call (files before session 24; ranks sharing a node before session 38) the
    # model prices every call cold (Machine::warm): the section says so and shows no warm figure.
    cold = optimize_run_without(work, "optimize-cold", ["in_call_rest_warm"])
    out, _ = report(tool, cold)
    expect_lines(out, [
        "  every call is priced with the caches emptied (tnbc's own call was not measured with the caches warm)",
        "  tnbc's own MPI_Alltoall, returned early, spends 60.0 us + 10.5 us/MiB received in the call beyond the parts"
        " priced (caches emptied)",
        "  tnbc's own MPI_Bcast (its root), returned early, spends 30.0 us at 64 KiB, 90.0 us at 1 MiB sent in the call"
        " beyond the parts priced (caches emptied)",
        "  the hand-over to the progress thread at the end of a call 20.0 us",
        "  guard userfaultfd_move: hold 50.0 us + 21.0 us/MiB, publish 4.0 us + 21.0 us/MiB, fault 6.0 us",
    ])
    if "caches warm:" in out:
        fail("a machine without a warm own call should show no warm figure", out)
    # Ranks sharing a node (since session 38): the own call measured warm only, no cold rests; the
    # warm ones are shown as such.
    shared = optimize_run_without(work, "optimize-shared",
                                  ["in_call_rest", "in_call_rest_bcast", "in_call_rest_bcast_root"])
    out, _ = report(tool, shared)
    expect_lines(out, [
        "  a call touching less than 1 MiB (what a rank sends and receives; a broadcast's message) is priced with the"
        " caches warm",
        "  tnbc's own MPI_Alltoall, returned early, spends 12.0 us at 64 KiB received in the call beyond the parts"
        " priced (caches warm; not measured with them emptied)",
        "  tnbc's own MPI_Bcast (its root), returned early, spends 5.0 us at 64 KiB sent in the call beyond the parts"
        " priced (caches warm; not measured with them emptied)",
    ])
    if "MPI_Bcast (a receiver)" in out:
        fail("a broadcast receiver's rest measured neither cold nor warm should not be shown", out)
    print("figures: OK")


def optimize_run_without(work, name, keys):
    """The synthetic optimize run in WORK/NAME, its summaries' machine without the guard members KEYS."""
    run = os.path.join(work, name)
    synthetic.write_optimize_run(run)
    for summary in os.listdir(run):
        if summary.startswith("tnbc-summary."):
            with open(os.path.join(run, summary)) as f:
                s = json.load(f)
            for key in keys:
                del s["model"]["machine"]["guard"][key]
            synthetic.write_json(os.path.join(run, summary), s)
    return run


def approx(a, b):
    return a is not None and abs(a - b) < 1e-9 * max(1.0, abs(b))


def check_json(tool, work):
    run, profile, trace = setup(work)
    path = os.path.join(work, "report.json")
    text, _ = report(tool, run, "--profile", profile, "--compare", trace, "--json", path)
    with open(path) as f:
        j = json.load(f)
    if j.get("format") != "tnbc-report" or j.get("version") != 1 or len(j["runs"]) != 2:
        fail(f"format/version/runs: {j.get('format')} {j.get('version')} {len(j.get('runs', []))}")
    main = j["runs"][0]
    if main["label"] != "nbc" or main["profile"] != profile or len(main["worlds"]) != 2:
        fail(f"run: {main['label']} {main['profile']} {len(main['worlds'])} worlds")
    w = main["worlds"][0]
    if not approx(w.get("copies_s"), 0.0072) or not approx(w.get("copies_priced_s"), 0.006):
        fail(f"world copies_s / copies_priced_s = {w.get('copies_s')} / {w.get('copies_priced_s')}, expected 0.0072 / 0.006")
    t = w["totals"]
    for k, v in (("duration_ns", 206e6), ("tinit_ns", 66e6), ("blocked_ns", 40e6), ("hidden_ns", 100e6),
                 ("ideal_ns", 60e6), ("hidden_share", 100 / 206), ("tinit_share", 66 / 206),
                 ("blocked_share", 40 / 206), ("exposed_share", 106 / 206), ("ideal_share", 0.3),
                 ("run_share", 206e6 / 2e9), ("hidden_run_share", 100e6 / 2e9), ("tinit_run_share", 66e6 / 2e9)):
        if not approx(t.get(k), v):
            fail(f"world totals {k} = {t.get(k)}, expected {v}")
    s1 = w["sites"][0]
    if (s1["kind"], s1["where"], s1["module"], s1["offset"]) != ("alltoall", "app+0x1234", "/nonexistent/app", "0x1234"):
        fail(f"site 1 identity {s1['kind']} {s1['where']}")
    for k, v in (("calls", 20), ("duration_ns", 200e6), ("tinit_share", 0.3), ("blocked_share", 0.2),
                 ("hidden_share", 0.5), ("ideal_share", 0.3), ("run_share", 0.1)):
        if not approx(s1["totals"].get(k), v):
            fail(f"site 1 {k} = {s1['totals'].get(k)}, expected {v}")
    for k, (lo, mean, hi) in (("tinit_share", (0.2, 0.3, 0.4)), ("blocked_share", (0.1, 0.2, 0.3)),
                              ("hidden_share", (0.5, 0.5, 0.5)), ("ideal_share", (0.3, 0.3, 0.3)),
                              ("duration_per_call_ns", (10e6, 10e6, 10e6))):
        sp = s1["spread"][k]
        if not (approx(sp["min"], lo) and approx(sp["mean"], mean) and approx(sp["max"], hi) and sp["n"] == 2):
            fail(f"site 1 spread {k} = {sp}")
    r0 = s1["ranks"][0]
    if r0["rank"] != 0 or r0["waits"] != {"drain": 0, "fault": 0, "fence": 2, "userfault": 5} or \
            not approx(r0["ideal_ns"], 30e6) or r0["observe_waits"] != 3:
        fail(f"site 1 rank 0: {r0}")
    if r0["trial"] != {"trials": 1, "early_ns": 10500000, "in_call_ns": 9600000, "verdict": "in_call",
                       "leaned": False} or \
            s1["ranks"][1]["trial"]["verdict"] != "early_return" or w["sites"][1]["ranks"][0]["trial"] is not None:
        fail(f"site 1's trial per rank (mode nbc), none at site 2: {r0['trial']}, {s1['ranks'][1]['trial']}")
    tl = s1["timeline"]
    # Read order by position in each call's own order: sub-message 0 is touched first in both
    # calls that touch it (rank 1's call touches only 1), although its mean touch time is later.
    if tl["calls"] != 3 or tl["read_order"] != [0, 1] or len(tl["subs"]) != 2:
        fail(f"timeline {tl}")
    a0, f0 = tl["subs"][0]["arrival_ns"], tl["subs"][0]["access_ns"]
    if not (approx(a0["mean"], 10e6 / 3) and a0["n"] == 3 and approx(f0["mean"], 5.25e6) and f0["n"] == 2 and
            approx(f0["min"], 4e6) and approx(f0["max"], 6.5e6)):
        fail(f"sub 0: arrival {a0} access {f0}")
    if w["sites"][1]["totals"]["ideal_ns"] is not None or w["sites"][1]["ranks"][0]["ideal_ns"] is not None:
        fail("site 2 (not in the profile) has an ideal")
    if main["worlds"][1]["spawned"] is not True or main["worlds"][1]["size"] != 1:
        fail("the spawned world")
    # Round trip: the JSON read back gives the same report.
    again, _ = report(tool, path)
    if again != text:
        fail("tnbc report of the JSON differs from the report of the directory", again)
    # And written again, the same JSON.
    path2 = os.path.join(work, "again.json")
    report(tool, path, "--json", path2)
    if open(path).read() != open(path2).read():
        fail("the JSON written from the JSON differs")
    print("json: OK")


def check_bad_input(tool, work):
    run, profile, trace = setup(work)
    # No summaries; not a directory; only traces.
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    _, err = report(tool, empty, expect_status=2)
    expect_in(err, [f"{empty}: no summaries (tnbc-summary.<rank>.json, here or in {empty}/tnbc)"])
    _, err = report(tool, profile, expect_status=2)
    expect_in(err, [f"{profile}: not a tnbc report"])
    _, err = report(tool, os.path.join(work, "nothing"), expect_status=2)
    expect_in(err, ["not a directory"])
    with open(os.path.join(empty, "tnbc-trace.0.txt"), "w") as f:
        f.write("TNBC-TRACE 1\n")
    _, err = report(tool, empty, expect_status=2)
    expect_in(err, ["the trace files here are for `tnbc merge`"])

    def copy(name):
        d = os.path.join(work, name)
        shutil.copytree(run, d)
        return d

    # A truncated file: left out, named; the other rank reported.
    d = copy("truncated")
    p = os.path.join(d, "tnbc-summary.1.json")
    with open(p) as f:
        content = f.read()
    with open(p, "w") as f:
        f.write(content[:len(content) // 2])
    out, _ = report(tool, d, "--profile", profile)
    expect_in(out, [f"{p} is truncated or not valid JSON (", "as when a run is killed while it writes its summaries: left out",
                    "1 of 2 ranks left a summary (missing: rank(s) 1;",
                    "tnbc report: " + d + ": 1 of 2 ranks, mode nbc"])
    # Rank 0's figures only (its observed calls read sub-message 0 first).
    expect_lines(out, ["  1  alltoall       10       2 MiB  10.000 ms   20.0%   30.0%   50.0%   30.0%  app+0x1234"
                       "                                0 1"])
    # An empty file.
    d = copy("empty-file")
    open(os.path.join(d, "tnbc-summary.0.json"), "w").close()
    out, _ = report(tool, d)
    expect_in(out, ["tnbc-summary.0.json is empty (the rank did not finish writing it?): left out"])
    # Summaries of two runs: the newest reported, the other named.
    d = copy("two-runs")
    old = synthetic.summary(2, 3, [], run_id="00000000000000cc")
    p = os.path.join(d, "tnbc-summary.2.json")
    synthetic.write_json(p, old)
    os.utime(p, (time.time() - 3600, time.time() - 3600))
    out, _ = report(tool, d)
    expect_in(out, ["the directory holds summaries of 2 runs: reporting run 00000000000000aa (the newest files), "
                    "leaving out run 00000000000000cc (3 ranks, files of rank(s) 2)",
                    "tnbc report: " + d + ": 2 of 2 ranks"])
    # Two versions: rank 1 of an older tnbc (format 1): the version 2 ones reported.
    d = copy("two-versions")
    v1 = synthetic.summary(1, 2, synthetic.main_world_summaries()[1]["sites"], version=1)
    synthetic.write_json(os.path.join(d, "tnbc-summary.1.json"), v1)
    out, _ = report(tool, d)
    expect_in(out, ["summaries of different tnbc versions: rank(s) 1 wrote an older format; only the version 2 "
                    "summaries are reported", "1 of 2 ranks left a summary"])
    # Only version 1: counts and decisions, no times (never a wrong 0%).
    d = os.path.join(work, "version-1")
    os.makedirs(d)
    for s in synthetic.main_world_summaries():
        synthetic.write_json(os.path.join(d, "tnbc-summary.%d.json" % s["rank"]),
                             synthetic.summary(s["rank"], 2, s["sites"], version=1))
    out, _ = report(tool, d)
    expect_in(out, ["summaries of an older tnbc (format version 1): calls and decisions only, no times"])
    expect_lines(out, ["  1  alltoall       20       2 MiB        n/a     n/a     n/a     n/a     n/a  app+0x1234"
                       "                                -"])
    if "hidden 0.0%" in out or "run (all ranks" in out:
        fail("a version 1 report shows times", out)
    # A newer version: left out with the reason.
    d = copy("newer")
    s = json.load(open(os.path.join(d, "tnbc-summary.1.json")))
    s["version"] = 3
    synthetic.write_json(os.path.join(d, "tnbc-summary.1.json"), s)
    out, _ = report(tool, d)
    expect_in(out, ["tnbc-summary.1.json has format version 3, which this tnbc cannot read"])
    # Not a summary; a rank out of range.
    d = copy("foreign")
    synthetic.write_json(os.path.join(d, "tnbc-summary.1.json"), {"format": "something-else"})
    out, _ = report(tool, d)
    expect_in(out, ["tnbc-summary.1.json is not a tnbc summary"])
    # A profile of another program: no ideal, said.
    other = json.load(open(profile))
    other["executable"] = "/elsewhere/other"
    op = os.path.join(work, "other.profile")
    synthetic.write_json(op, other)
    out, _ = report(tool, run, "--profile", op)
    expect_in(out, [f"profile {op} is of another run (2 ranks of /elsewhere/other; this one: 2 ranks of "
                    "/nonexistent/app): no ideal (Eq. 1)"])
    # A profile that is not one.
    out, _ = report(tool, run, "--profile", os.path.join(run, "tnbc-summary.0.json"))
    expect_in(out, ["cannot be used for the ideal (Eq. 1)"])
    # Every file bad: an error naming them.
    d = os.path.join(work, "all-bad")
    os.makedirs(d)
    open(os.path.join(d, "tnbc-summary.0.json"), "w").write("{")
    _, err = report(tool, d, expect_status=2)
    expect_in(err, ["no summary could be read:", "tnbc-summary.0.json is truncated or not valid JSON"])
    # The predicted section (tools/predict_picture.cc): inputs that do not fit give one message and
    # the report without the section; a bad list is a usage error.
    page = os.path.join(work, "p.html")
    _, err = report(tool, run, "--html", page, "--predicted", os.path.join(work, "none.json"))
    expect_in(err, [f"no predicted section: {work}/none.json: no such file"])
    if "<section id=\"what-if\">" in open(page).read():
        fail("a predicted section from a missing file", open(page).read())
    _, err = report(tool, run, "--html", page, "--predicted", profile)
    expect_in(err, [f"no predicted section: {profile}: not a `tnbc predict --json` output"])
    _, err = report(tool, run, "--html", page, "--profile", profile, "--what-if-np", "8,64")
    expect_in(err, ["no predicted section: --what-if-np needs --machine (a `tnbc calibrate` file)"])
    if len(err.strip().splitlines()) != 1 or "<section id=\"what-if\">" in open(page).read():
        fail("--what-if-np without --machine: one message, no section", err)
    _, err = report(tool, run, "--what-if-np", "8,x", "--machine", profile, expect_status=2)
    expect_in(err, ["--what-if-np wants process counts from 1 to 1048576, not 'x'"])
    # Bad arguments.
    _, err = report(tool, expect_status=2)
    _, err = report(tool, run, "--bogus", expect_status=2)
    expect_in(err, ["unknown option --bogus"])
    print("bad-input: OK")


# `tnbc predict --json` outputs of known figures at three process counts (format tnbc-predict).
WHAT_IF = {8: (0.5, 0.42, 1.30), 64: (1.5, 0.21, 1.12), 256: (4.0, -0.05, 0.97)}


def predicted_files(work):
    files = []
    for n, (tcomm, hidden, speedup) in WHAT_IF.items():
        v = {"call_s": 0.01, "total_s": 1.0, "hidden_share": hidden, "speedup": speedup}
        j = {"format": "tnbc-predict", "version": 1, "np": n, "ranks_per_node": 8, "scaling": "strong", "sites": [],
             "program": {"blocking_s": tcomm, "blocking_total_s": tcomm, "nbc": v, "optimize": v,
                         "optimize+node": dict(v, hidden_share=hidden + 0.1)}}
        files.append(os.path.join(work, f"at{n}.json"))
        synthetic.write_json(files[-1], j)
    return ",".join(files)


def check_browser(tool, work, screenshot):
    run, profile, trace = setup(work)
    page = os.path.join(work, "report.html")
    out, _ = report(tool, run, "--profile", profile, "--compare", trace, "--html", page, "--json",
                    os.path.join(work, "r.json"), "--predicted", predicted_files(work))
    expect_in(out, ["predicted at other process counts (tnbc predict):"])
    expect_lines(out, ["      64         8      1.500 |       21%     1.120x |       21%     1.120x |"
                       "       31%     1.120x |"])
    sites = sum(len(w["sites"]) for w in json.load(open(os.path.join(work, "r.json")))["runs"][0]["worlds"])
    html = open(page).read()
    for bad in ("http://", "https://", "<link", "src="):
        if bad in html:
            fail(f"the page refers to something outside itself ({bad})")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("chromium is not installed (tools/dev.sh test installs it)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--user-data-dir=" + os.path.join(work, "chromium")]
    # A browser that cannot start at all here (no display libraries, a kernel without what its
    # sandbox-less mode needs) skips the test, saying why; one that starts must render the page.
    probe = subprocess.run([chromium, *flags, "--dump-dom", "about:blank"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=180)
    if probe.returncode != 0 or "</html>" not in probe.stdout:
        print(f"SKIP: chromium cannot run here (exit {probe.returncode}): {probe.stderr[-1500:]}")
        sys.exit(77)
    r = subprocess.run([chromium, *flags, "--dump-dom", "file://" + page], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=180)
    dom = r.stdout
    if r.returncode != 0 or "</html>" not in dom:
        fail(f"chromium --dump-dom failed ({r.returncode})", r.stderr[-2000:])
    drawn = dom.count('<svg class="timeline"')
    laid_out = f'data-timelines="{sites}"'
    if drawn != sites or laid_out not in dom:
        said = dom[dom.find('id="rendered"'):][:80]
        fail(f"{sites} call sites, {drawn} timelines in the rendered DOM; the page's script says {said}")
    # The placement and the collectives' outcomes: the text's lines, in the page as rendered.
    block = out[out.index("collectives (all ranks):"):]
    block = block[:block.index("\n\n")].split("\n")
    shown = dom[dom.find('id="collectives"'):]
    shown = shown[:shown.find("</pre>")]
    missing = [line for line in block if html_escape(line.strip(), quote=False) not in shown]
    if len(block) < 3 or missing:
        fail(f"the page's collectives block lacks the text's lines {missing or block}", shown[:2000])
    if dom.count('<svg class="compare"') != 1 or dom.count('<svg class="compare-site"') != 3:
        fail("the comparison bars are missing")
    if dom.count('<g class="arrival">') != 2 or dom.count('<g class="access">') != 2:
        fail("the timeline of site 1 lacks its arrivals and first accesses")
    # The predicted section: one picture, its 6 lines (2 panels x 3 variants) and 18 points laid out
    # by the browser (the page's script counts them), a table row per N with the files' figures.
    lines, points = 2 * 3, 2 * 3 * len(WHAT_IF)
    if (dom.count('<svg class="what-if"') != 1 or f'data-what-if-lines="{lines}"' not in dom
            or f'data-what-if-points="{points}"' not in dom):
        said = dom[dom.find('id="rendered"'):][:200]
        fail(f"the predicted picture is missing or empty (want {lines} lines, {points} points laid out): {said}")
    if dom.count('<tr class="what-if-row">') != len(WHAT_IF) or "<td>-5%</td><td>0.970x</td>" not in dom:
        fail("the predicted table lacks its rows or figures")
    if screenshot:
        r = subprocess.run([chromium, *flags, "--window-size=1000,1500", "--hide-scrollbars",
                            "--screenshot=" + os.path.abspath(screenshot), "file://" + page],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        print(r.stdout[-300:])
    print(f"browser: OK ({drawn} timelines for {sites} call sites; the predicted picture with {lines} lines)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--screenshot")
    ap.add_argument("what", choices=["figures", "json", "bad-input", "browser"])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tnbc-report-test-")
    try:
        {"figures": check_figures, "json": check_json, "bad-input": check_bad_input}.get(
            a.what, lambda t, w: check_browser(t, w, a.screenshot))(a.tool, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
