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

usage: harness_test.py --tnbc PATH --build-dir DIR
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness.py")
PASSES = ["baseline", "nbc", "trace", "optimize", "off"]
# The passes that leave tnbc summaries and get reports (off: the library preloaded, TNBC_MODE=off).
REPORTED = ["nbc", "trace", "optimize"]


def fail(msg, out=""):
    print(out[-6000:])
    print("FAIL:", msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tnbc", required=True)
    ap.add_argument("--build-dir", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tnbc-harness-test-")
    try:
        out_dir = os.path.join(work, "out")
        cmd = [sys.executable, HARNESS, "--tnbc", a.tnbc, "--build-dir", a.build_dir, "--benchmarks", "is",
               "--classes", "S", "--np", "2", "--passes", ",".join(PASSES), "--out", out_dir,
               "--predict", "--what-if-np", "4"]
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

        # off: the library preloaded with nothing of tnbc's work (the preload's own cost); no summaries
        # expected, none asked for.
        off = runs["off"]
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
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
