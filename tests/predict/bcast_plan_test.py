#!/usr/bin/env python3
"""`tnbc bcast-plan` (tools/bcast_plan.hh): auto's broadcast backend offline, on a machine file with
known numbers (predict_test.machine: 2 nodes, 1 Gbit/s-like between them, 0.2 ns/B inside).

usage: bcast_plan_test.py --tool TNBC
Checks: one-sided operations as slow as UCX's emulation over TCP (16 ms each) give p2p at every
size across nodes; puts far cheaper than messages inside a node of 8 ranks give an RMA backend
from some size on, and the per-size lines agree with the plan line; bad --rma and sizes give one
message and exit 2.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict_test import fail, machine, run_tnbc  # noqa: E402


def run(tool, *args, status=0):
    return run_tnbc(tool, "bcast-plan", *args, status=status)


def picks(out):
    return [line.split()[-1] for line in out.splitlines() if line.strip()[:1].isdigit()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tnbc-bcast-plan-")
    mach = os.path.join(d, "machine.json")
    with open(mach, "w") as f:
        json.dump(machine(), f)
    slow = run(a.tool, mach, "--np", "2", "--per-node", "1", "--rma", "16000,1,0.03,20", "--sizes", "16k,1m,8m")
    if picks(slow) != ["p2p"] * 3 or "  plan: p2p" not in slow:
        fail("16 ms per one-sided operation across nodes should give p2p at every size", slow)
    fast = run(a.tool, mach, "--np", "8", "--rma", "0,0.1,0.001,1,0.001", "--sizes", "4k,64k,1m,8m")
    chosen = picks(fast)
    if len(chosen) != 4 or not any(c.startswith("rma-") for c in chosen):
        fail("puts 200x cheaper per byte than messages should give RMA at some size", fast)
    plan = [line for line in fast.splitlines() if line.strip().startswith("plan:")][0]
    for c in set(chosen):
        if c not in plan:
            fail(f"the per-size choice {c} is missing from the plan line", fast)
    if "rma needs a 20 % lead" not in fast.lower():
        fail("the margin is not stated", fast)
    bad = run(a.tool, mach, "--np", "2", "--rma", "1,2", status=2)
    if "--rma wants four or five numbers" not in bad:
        fail("a short --rma should say what it wants", bad)
    bad = run(a.tool, mach, "--np", "2", "--rma", "1,2,3,4", "--sizes", "12q", status=2)
    if "not a size: '12q'" not in bad:
        fail("a bad size should be named", bad)
    run(a.tool, os.path.join(d, "missing.json"), "--np", "2", "--rma", "1,2,3,4", status=2)
    print("OK")


if __name__ == "__main__":
    main()
