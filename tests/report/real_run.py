#!/usr/bin/env python3
"""`tnbc report` on real runs of report_prog (built with -g; docs/reports.md).

usage: real_run.py [launcher options] --lib LIBTNBC --tool TNBC --prog report_prog --np N

A trace pass, `tnbc merge`, then an nbc pass of report_prog at np N (at np 2 also an optimize pass). Checks:
  - at MPI_Finalize rank 0 (only) printed the three lines (hidden %, Tinit %, the report command),
    and their percentages are the report's totals (one definition);
  - `tnbc merge` and `tnbc report` name each call site by `report_prog.c:LINE`, the lines marked
    SITE in the source; merge names none where the build ID the run recorded differs (one note);
  - the figures hang together: Tinit + blocked + hidden >= 100% of the duration at every site,
    each share within 0..100%, the calls the program made, bytes per call; each site that returned
    early has a timeline of observed calls whose first accesses are seen;
  - the ideal (Eq. 1, from the trace profile) is there for the site that computes first;
  - the JSON report says the same, and the HTML page has one timeline per call site;
  - at np 2, mode optimize: the cost model's decision per site names the site by the same file:line;
  - at np 2, mode nbc without the site trial: each rank's timelines sample its receiving calls of the
    broadcast whose root rotates (its 1st, 2nd, 4th), the root's calls not counted.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from profile_runs import options, run  # noqa: E402
from run_mpi_test import fail  # noqa: E402

ITER, PAGES = "12", "32"


def site_lines(source):
    """SITE name -> line number in report_prog.c."""
    lines = {}
    with open(source) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"/\* SITE (\w+) \*/", line)
            if m:
                lines[m.group(1)] = n
    return lines


def rebuilt_merge(a, work, trace):
    """The same traces where the executable's build ID differs from the one the run recorded (a
    program rebuilt since): `tnbc merge` says so once and names no line (module+offset)."""
    copy = os.path.join(work, "trace-rebuilt")
    shutil.copytree(trace, copy)
    path = os.path.join(copy, "tnbc-summary.0.json")
    summary = json.load(open(path))
    for info in summary["modules"].values():
        info["build_id"] = "00" * 20
    json.dump(summary, open(path, "w"))
    m = subprocess.run([a.tool, "merge", copy, "-o", copy + ".profile"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if m.returncode != 0:
        fail("tnbc merge (build ID changed) failed", m.stdout)
    if m.stdout.count("not the file that ran") != 1 or "report_prog.c:" in m.stdout or \
            not re.search(r"^  at   \w+ \(report_prog\+0x", m.stdout, re.M):
        fail("tnbc merge, the executable rebuilt since the run: expected one note and module+offset frames",
             m.stdout)


def optimized(a, work, profile, lines):
    """Mode optimize on the profile: the cost model's decision per site names each site by its
    report_prog.c:LINE, as the call sites do (not by module+offset); a site within the model's
    margins reads "on trial" (since session 77)."""
    opt = os.path.join(work, "optimize")
    run(a, [ITER, PAGES], {"TNBC_MODE": "optimize", "TNBC_PROFILE": profile}, opt)
    r = subprocess.run([a.tool, "report", opt], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout)
    if r.returncode != 0:
        fail(f"tnbc report (optimize) exited with {r.returncode}", r.stdout)
    decided = [l for l in r.stdout.splitlines()
               if re.match(r"    \w+ at .*: (PLAIN MPI|COMPLETED IN THE CALL|returned early|on trial) \(", l)]
    for name, line in lines.items():
        if not any(f"report_prog.c:{line}" in l for l in decided):
            fail(f"the cost model's decisions do not name the {name} site as report_prog.c:{line}", r.stdout)
    if any("+0x" in l for l in decided):
        fail("a decision names its site by module+offset", r.stdout)


def rotating_root(a, work):
    """Mode nbc without the site trial: the broadcast's root rotates, so each rank is the root of
    every other call and receives at the others; the timelines sample each rank's 1st, 2nd and 4th
    receiving early return (TNBC_TIMELINE_CALLS 4 of its ITER / np), on every rank alike (counted
    over all early returns, a rank whose first call was its root's saw one receiving call only)."""
    out = os.path.join(work, "rotating")
    run(a, [ITER, PAGES], {"TNBC_MODE": "nbc", "TNBC_SITE_TRIAL_CALLS": "0", "TNBC_MIN_BYTES": "12k",
                           "TNBC_TIMELINE_CALLS": "4"}, out)
    receiving = int(ITER) // a.np
    expected = sum(1 for n in (1, 2, 4, 8) if n <= receiving)
    for r in range(a.np):
        summary = json.load(open(os.path.join(out, f"tnbc-summary.{r}.json")))
        bcast = [s for s in summary["sites"] if s["kind"] == "bcast"]
        if len(bcast) != 1 or bcast[0]["early_return"] != int(ITER):
            fail(f"rank {r}: expected one broadcast site of {ITER} early returns: {bcast}")
        got = len(bcast[0]["timelines"])
        if got != expected:
            fail(f"rank {r}: the broadcast site has {got} timelines, expected {expected} "
                 f"(the 1st, 2nd, 4th, ... of its {receiving} receiving calls)")


def main():
    a = options(2)
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_prog.c")
    lines = site_lines(source)
    work = tempfile.mkdtemp(prefix="tnbc-report-real-")
    try:
        trace = os.path.join(work, "trace")
        run(a, [ITER, PAGES], {"TNBC_MODE": "trace"}, trace)
        profile = os.path.join(work, "app.profile")
        m = subprocess.run([a.tool, "merge", trace, "-o", profile], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if m.returncode != 0:
            fail("tnbc merge failed", m.stdout)
        for name, line in lines.items():
            if not re.search(rf"^  at   \w+ \(report_prog\.c:{line}[,)]", m.stdout, re.M):
                fail(f"tnbc merge does not name the {name} site at report_prog.c:{line}", m.stdout)
        rebuilt_merge(a, work, trace)
        nbc = os.path.join(work, "nbc")
        out = run(a, [ITER, PAGES], {"TNBC_MODE": "nbc"}, nbc)
        said = [l for l in out.splitlines() if l.startswith("tnbc: ")]
        if len(said) != 3 or not said[0].startswith("tnbc: hidden: ") or \
                not said[1].startswith("tnbc: Tinit (time inside the calls): ") or \
                not said[2].endswith(" report " + os.path.realpath(nbc)) or \
                not os.path.samefile(said[2].split()[2], a.tool):
            fail(f"expected rank 0's three lines at MPI_Finalize, got {said}", out)
        hidden_said = float(re.match(r"tnbc: hidden: ([0-9.]+)%", said[0]).group(1))
        tinit_said = float(re.match(r"tnbc: Tinit \(time inside the calls\): ([0-9.]+)%", said[1]).group(1))

        j = os.path.join(work, "report.json")
        page = os.path.join(work, "report.html")
        r = subprocess.run([a.tool, "report", nbc, "--profile", profile, "--json", j, "--html", page,
                            "--compare", trace], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(r.stdout)
        if r.returncode != 0:
            fail(f"tnbc report exited with {r.returncode}", r.stdout)
        for name, line in lines.items():
            if f"report_prog.c:{line}" not in r.stdout:
                fail(f"the report does not name the {name} site as report_prog.c:{line}", r.stdout)
        rep = json.load(open(j))
        w = rep["runs"][0]["worlds"][0]
        if w["ranks"] != list(range(a.np)) or w["mode"] != "nbc":
            fail(f"world: ranks {w['ranks']}, mode {w['mode']}")
        t = w["totals"]
        if abs(100 * t["hidden_share"] - hidden_said) > 0.051 or abs(100 * t["tinit_share"] - tinit_said) > 0.051:
            fail(f"MPI_Finalize said hidden {hidden_said}%, Tinit {tinit_said}%; the report: "
                 f"{100 * t['hidden_share']:.1f}%, {100 * t['tinit_share']:.1f}%")
        by_line = {}
        for s in w["sites"]:
            if s["file"].endswith("report_prog.c"):
                by_line[s["line"]] = s
        for name, line in lines.items():
            s = by_line.get(line)
            if s is None:
                fail(f"no site at report_prog.c:{line} ({name}) in the JSON")
            tot = s["totals"]
            if tot["calls"] != int(ITER) * a.np:
                fail(f"{name}: {tot['calls']} calls, expected {int(ITER) * a.np}")
            for k in ("tinit_share", "blocked_share", "hidden_share"):
                if tot[k] is None or not -1e-9 <= tot[k] <= 1 + 1e-9:
                    fail(f"{name}: {k} = {tot[k]}")
            if tot["tinit_share"] + tot["blocked_share"] + tot["hidden_share"] < 1 - 1e-9:
                fail(f"{name}: Tinit + blocked + hidden < duration: {tot}")
            early = sum(x["early"] for x in s["ranks"])
            if name != "broadcast" or a.np > 1:
                if early == 0:
                    fail(f"{name}: no call returned early", r.stdout)
                tl = s["timeline"]
                if tl["calls"] == 0 or not tl["read_order"]:
                    fail(f"{name}: no observed call with first accesses: {tl}", r.stdout)
        # The exchange computes 2 ms before it reads: the profile gives it an ideal.
        ex = by_line[lines["exchange"]]
        if ex["totals"]["ideal_share"] is None or ex["totals"]["ideal_share"] <= 0:
            fail(f"exchange: no ideal from the profile: {ex['ideal_note']}", r.stdout)
        # The gather reads the blocks in reverse order after its computation.
        order = by_line[lines["gather"]]["timeline"]["read_order"]
        if a.np > 2 and order[0] != a.np - 1:
            fail(f"gather: observed read order {order}, expected the last block first")
        html = open(page).read()
        sites = len(w["sites"])
        drawn = html.count('<svg class="timeline"')
        if drawn != sites:
            fail(f"the page has {drawn} timelines for {sites} call sites")
        if a.np == 2:
            optimized(a, work, profile, lines)
            rotating_root(a, work)
        print(f"real run np {a.np}: OK")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
