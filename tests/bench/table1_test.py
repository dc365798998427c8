#!/usr/bin/env python3
"""Functional test of the Table 1 program (never of its timings).

Runs table1_alltoall at np 2 on plain loopback with tiny sizes, once with libtnbc.so preloaded
(through tests/mpi/run_mpi_test.py, which also checks that tnbc returned early) and once
without. Each run must exit 0 (every result identical to the blocking one) and write a JSON
file with all five scenarios, each with the three measured variants (tnbc's mode, nbc or
optimize, is in the file's `tnbc` status); the run with tnbc must say tnbc was active, the one without that it was not loaded.

usage: table1_test.py [launcher options of run_mpi_test.py] --lib LIBTNBC TABLE1_ALLTOALL
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi", "run_mpi_test.py")
sys.path.insert(0, os.path.dirname(RUNNER))
from run_mpi_test import add_launcher_options, run_mpirun  # noqa: E402  (the one way tests start MPI jobs)

SCENARIOS = ["a", "b", "c", "d", "e"]
VARIANTS = ["blocking", "mpi3", "tnbc"]
VARIANT_FIELDS = ["total_s", "init_s", "overlap_s", "achieved_over_ideal", "eq3_bound_s", "tinit_over_tcomm",
                  "tinit_cpu_over_tcomm", "speedup_vs_mpi3", "calls_preempted_share"]
# 64 KiB per peer: above tnbc's default threshold (three pages), small enough to be quick.
ARGS = ["--bytes", "64K", "--iterations", "2", "--calibration", "2", "--order", "reverse"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def check_json(path, with_tnbc):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not valid JSON ({e})")
    if d.get("format") != "tnbc-bench" or d.get("version") != 1 or d.get("program") != "table1_alltoall":
        fail(f"{path}: wrong format/version/program: {d.get('format')} {d.get('version')} {d.get('program')}")
    for key in ("nproc", "kernel", "mpi_library"):
        if not d.get("machine", {}).get(key):
            fail(f"machine.{key} missing")
    p = d["parameters"]
    if p["np"] != 2 or p["bytes"] != 65536 or p["order_list"] != [1, 0]:
        fail(f"parameters not recorded as given: {p}")
    if not finite(d["calibration"]["tcomm_s"]) or d["calibration"]["tcomm_s"] <= 0:
        fail(f"calibration: {d['calibration']}")
    t = d["tnbc"]
    if with_tnbc and not (t["loaded"] and t["active"] and t["status"] == "nbc"):
        fail(f"tnbc should be loaded and active: {t}")
    if not with_tnbc and (t["loaded"] or t["active"]):
        fail(f"tnbc should not be loaded: {t}")
    ids = [s["id"] for s in d["scenarios"]]
    if ids != SCENARIOS:
        fail(f"scenarios {ids}, expected {SCENARIOS}")
    for s in d["scenarios"]:
        names = [v["name"] for v in s["variants"]]
        if names != VARIANTS:
            fail(f"scenario {s['id']}: variants {names}")
        for v in s["variants"]:
            for field in VARIANT_FIELDS:
                if not finite(v.get(field)):
                    fail(f"scenario {s['id']} {v['name']}: {field} = {v.get(field)}")
            if len(v["total_per_iteration_s"]) != 2:
                fail(f"scenario {s['id']} {v['name']}: per-iteration times missing")
        if not finite(s["ideal_overlap_s"]) or not isinstance(s["measured"]["condition_holds"], bool):
            fail(f"scenario {s['id']}: ideal/condition missing")
        # The hypervisor's steal during the scenario: a share of the machine's CPU time, or null
        # where /proc/stat cannot be read.
        m = s["measured"]
        if os.path.exists("/proc/stat") and not (finite(m.get("steal_s")) and m["steal_s"] >= 0
                                                 and finite(m.get("steal_share")) and 0 <= m["steal_share"] <= 1):
            fail(f"scenario {s['id']}: steal_s / steal_share = {m.get('steal_s')} / {m.get('steal_share')}")
    ver = d["verification"]
    if ver["wrong_results"] != 0 or ver["iterations_checked"] != 10:
        fail(f"verification: {ver}")


def main():
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--lib", required=True)
    ap.add_argument("program")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tnbc-bench-test-")

    with_path = os.path.join(tmp, "with.json")
    launcher = ["--mpi", a.mpi, "--mpirun", a.mpirun] + [x for f in a.preload_first for x in ("--preload-first", f)]
    r = subprocess.run([sys.executable, RUNNER, *launcher, "--np", "2", "--lib", a.lib,
                        "--expect-output", "tnbc: loaded, status 'nbc'",
                        "--expect-output", "all identical",
                        "--expect-summary", "kind=alltoall,min_early=1",
                        "--", a.program, *ARGS, "--json", with_path], text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=280)
    print(r.stdout)
    if r.returncode != 0:
        fail("the run with tnbc failed (see above)")
    check_json(with_path, True)

    without_path = os.path.join(tmp, "without.json")
    code, out = run_mpirun(2, {}, [a.program, *ARGS, "--json", without_path], 280, a)
    print(out)
    if code != 0:
        fail(f"the run without tnbc exited {code}")
    if "tnbc: NOT LOADED" not in out:
        fail("the run without tnbc did not say that tnbc was not loaded")
    check_json(without_path, False)
    print("PASS")


if __name__ == "__main__":
    main()
