#!/usr/bin/env python3
"""Mode optimize where a broadcast's root calls it from a site of its own (trace/gain.hh,
follow_receivers).

usage: root_sites.py --lib LIBTNBC --tool TNBC --prog ROOT_SITES [--np 3]

root_sites broadcasts with a root that rotates over the ranks: the root calls MPI_Bcast at
root_call(), the others at receive_call() and read the message at once. No rank receives at
root_call(): the trace has no estimate there. Steps, with the build's shared calibration (the one
model-decisions uses):
  trace     TNBC_MODE=trace, then `tnbc merge --machine`: root_call's verdict is receive_call's,
            said so ("the root's own call site: as its receivers' at receive_call"); the same
            class (plain MPI on every rank, completes in the call, returns early)
  optimize  TNBC_MODE=optimize on that profile: every broadcast call on every rank takes that
            class — the library's own call where the receivers' site is the library's call
            (before the rule the roots returned early, on no evidence, and tried, while the
            receivers completed in the call through tnbc's schedule), none returning early where
            it completes in the call; every received byte right
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import calibrated_machine, options, run, summaries  # noqa: E402
from run_mpi_test import fail  # noqa: E402

ARGS = ["12", "64"]
SITES = ("root_call", "receive_call")


def merge_verdicts(out):
    """site symbol -> (verdict class, the `optimize:` line) from `tnbc merge`."""
    verdicts, symbol = {}, None
    for line in out.splitlines():
        m = re.match(r"  at   (\w+) \(", line)
        if m:
            symbol = m.group(1)
        if line.startswith("  optimize: ") and symbol in SITES:
            if "plain MPI on every rank" in line:
                verdicts[symbol] = ("plain", line)
            elif line.startswith("  optimize: returns early"):
                verdicts[symbol] = ("early_return", line)
            elif line.startswith("  optimize: completes in the call"):
                verdicts[symbol] = ("in_call", line)
            else:
                fail(f"merge: unexpected verdict for {symbol}: {line}", out)
    if set(verdicts) != set(SITES):
        fail(f"merge printed verdicts for {sorted(verdicts)}, expected {sorted(SITES)}", out)
    return verdicts


def main():
    a = options(3)
    work, _ = calibrated_machine(a, "tnbc-root-sites-")
    try:
        machine = os.path.join(work, "machine.json")
        base = {"TNBC_MIN_BYTES": "12288", "TNBC_MACHINE": machine}  # every size judged by the model, per site
        trace_dir = os.path.join(work, "trace")
        run(a, ARGS, dict(base, TNBC_MODE="trace"), trace_dir)
        profile = trace_dir + ".profile"
        m = subprocess.run([a.tool, "merge", trace_dir, "-o", profile, "--machine", machine], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=dict(os.environ, TNBC_MIN_BYTES=base["TNBC_MIN_BYTES"]))
        print(m.stdout)
        if m.returncode != 0:
            fail("tnbc merge failed", m.stdout)
        v = merge_verdicts(m.stdout)
        if "0 B received in all" not in m.stdout:
            fail("merge: no broadcast site at which no rank received", m.stdout)
        if v["root_call"][0] != v["receive_call"][0] or \
                not re.search(r"\(the root's own call site: as its receivers' at receive_call \(", v["root_call"][1]):
            fail(f"merge: root_call's verdict is not receive_call's: {v}", m.stdout)
        expected = v["receive_call"][0]
        print("merge: both sites", expected)

        opt_dir = os.path.join(work, "optimize")
        run(a, ARGS, dict(base, TNBC_MODE="optimize", TNBC_PROFILE=profile), opt_dir, quiet=True)
        sums = summaries(opt_dir)
        if len(sums) != a.np:
            fail(f"expected {a.np} summaries, found {len(sums)}")
        for s in sums:
            c = s["collectives"]["bcast"]
            ok = {"plain": c["passthrough"] == c["calls"],
                  "in_call": c["early_return"] == 0 and c["passthrough"] == 0,
                  "early_return": c["passthrough"] == 0}[expected]
            if c["calls"] != int(ARGS[0]) or not ok:
                fail(f"rank {s['rank']}: broadcasts {c}, expected every one {expected} (the receivers' site's verdict)")
        print(f"root sites np {a.np}: OK ({expected})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
