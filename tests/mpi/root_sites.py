#!/usr/bin/env python3
"""Mode optimize where a broadcast's root calls it from a site of its own (trace/gain.hh,
follow_receivers).

usage: root_sites.py --lib LIBTNBC --tool TNBC --prog ROOT_SITES [--np 3]

root_sites broadcasts with a root that rotates over the ranks: the root calls MPI_Bcast at
root_call(), the others at receive_call() and read the message, at once or after computing 20 ms.
No rank receives at root_call(): the trace has no estimate there. For each of the two programs,
with the build's shared calibration (the one model-decisions uses):
  trace     TNBC_MODE=trace, then `tnbc merge --machine`: root_call's verdict is receive_call's,
            said so ("the root's own call site: as its receivers' at receive_call"); the same
            class (plain MPI on every rank, completes in the call, returns early)
  optimize  TNBC_MODE=optimize on that profile: every broadcast call on every rank takes that
            class — the library's own call where the receivers' site is the library's call
            (before the rule the roots returned early, on no evidence, and tried, while the
            receivers completed in the call through tnbc's schedule), none returning early where
            it completes in the call (and `tnbc report` says whose decision root_call's site took);
            every received byte right
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import calibrated_machine, merge_verdicts, options, run, summaries  # noqa: E402
from run_mpi_test import fail  # noqa: E402

ARGS = ["12", "64"]
COMPUTE_MS = "20"
SITES = ("root_call", "receive_call")


def variant(a, work, machine, name, args):
    """Trace, merge and optimize root_sites with `args`: merge gives root_call the receivers' verdict,
    and the run takes it at every broadcast call; the verdict class."""
    base = {"TNBC_MIN_BYTES": "12288", "TNBC_MACHINE": machine}  # every size judged by the model, per site
    trace_dir = os.path.join(work, name + "-trace")
    run(a, args, dict(base, TNBC_MODE="trace"), trace_dir)
    profile = trace_dir + ".profile"
    m = subprocess.run([a.tool, "merge", trace_dir, "-o", profile, "--machine", machine], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=dict(os.environ, TNBC_MIN_BYTES=base["TNBC_MIN_BYTES"]))
    print(m.stdout)
    if m.returncode != 0:
        fail(f"{name}: tnbc merge failed", m.stdout)
    v = merge_verdicts(m.stdout, SITES)
    if "0 B received in all" not in m.stdout:
        fail(f"{name}: merge: no broadcast site at which no rank received", m.stdout)
    if v["root_call"][0] != v["receive_call"][0] or \
            not re.search(r"\(the root's own call site: as its receivers' at receive_call \(", v["root_call"][1]):
        fail(f"{name}: merge: root_call's verdict is not receive_call's: {v}", m.stdout)
    expected = v["receive_call"][0]
    print(f"{name}: merge: both sites {expected}")

    opt_dir = os.path.join(work, name + "-optimize")
    run(a, args, dict(base, TNBC_MODE="optimize", TNBC_PROFILE=profile), opt_dir, quiet=True)
    sums = summaries(opt_dir)
    if len(sums) != a.np:
        fail(f"{name}: expected {a.np} summaries, found {len(sums)}")
    for s in sums:
        c = s["collectives"]["bcast"]
        ok = {"plain": c["passthrough"] == c["calls"],
              "in_call": c["early_return"] == 0 and c["passthrough"] == 0,
              "early_return": c["passthrough"] == 0}[expected]
        if c["calls"] != int(args[0]) or not ok:
            fail(f"{name}: rank {s['rank']}: broadcasts {c}, expected every one {expected} (the receivers' site's verdict)")
    if expected != "plain":  # plain MPI's calls take no site's decision: the report lists none
        r = subprocess.run([a.tool, "report", opt_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(r.stdout)
        if r.returncode != 0 or not re.search(r"^  bcast at root_call \(.*; the root's own call site: as its "
                                              r"receivers' at receive_call \(", r.stdout, re.M):
            fail(f"{name}: tnbc report does not say that root_call's site took receive_call's decision", r.stdout)
    return expected


def main():
    a = options(3)
    work, _ = calibrated_machine(a, "tnbc-root-sites-")
    try:
        machine = os.path.join(work, "machine.json")
        at_once = variant(a, work, machine, "at-once", ARGS)
        later = variant(a, work, machine, "compute", ARGS + [COMPUTE_MS])
        print(f"root sites np {a.np}: OK (read at once: {at_once}; computing first: {later})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
