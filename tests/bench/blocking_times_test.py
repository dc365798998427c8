#!/usr/bin/env python3
"""Functional test of blocking_times' order of the cases (never of its timings).

Runs blocking_times at np 2 on plain loopback, without tnbc, with tiny sizes: in the default
order (permuted, seeded) twice with the same seed and once with another, and with --order cyclic.
Every run must exit 0 and write a JSON file whose `orders` are, per timed iteration, a permutation
of the cases; cyclic: the fixed order rotated by one per iteration; permuted: the same orders for
the same seed, other orders for another seed, and not the cyclic ones (a case follows more than
one predecessor); every case timed in every iteration. A bad --order or --seed must be refused.

usage: blocking_times_test.py [launcher options of run_mpi_test.py] BLOCKING_TIMES
"""
import argparse
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from run_mpi_test import add_launcher_options, run_mpirun  # noqa: E402  (the one way tests start MPI jobs)

SIZES = [4096, 8192, 16384]
ITERATIONS = 6
CASES = 2 * len(SIZES)


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(a, tmp, name, extra):
    path = os.path.join(tmp, f"{name}.json")
    code, out = run_mpirun(2, {}, [a.program, "--sizes", "4k,8k,16k", "--iterations", str(ITERATIONS),
                                   *extra, "--json", path], 120, a)
    print(out)
    if code != 0:
        fail(f"{name}: exited {code}")
    with open(path) as f:
        d = json.load(f)
    if d.get("program") != "blocking_times":
        fail(f"{name}: program {d.get('program')}")
    orders = d.get("orders")
    if not isinstance(orders, list) or len(orders) != ITERATIONS:
        fail(f"{name}: orders {orders}")
    for o in orders:
        if sorted(o) != list(range(CASES)):
            fail(f"{name}: not a permutation of the cases: {o}")
    results = d["results"]
    if [(r["kind"], r["bytes"]) for r in results] != [(k, s) for s in SIZES for k in ("bcast", "alltoall")]:
        fail(f"{name}: results {[(r['kind'], r['bytes']) for r in results]}")
    for r in results:
        if len(r["times_s"]) != ITERATIONS or not all(math.isfinite(t) and t > 0 for t in r["times_s"]):
            fail(f"{name}: {r['kind']} {r['bytes']}: times {r['times_s']}")
    return d


def predecessors(orders):
    """Per case the set of cases that ran right before it (within an iteration)."""
    before = {c: set() for c in range(CASES)}
    for o in orders:
        for prev, c in zip(o, o[1:]):
            before[c].add(prev)
    return before


def main():
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("program")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tnbc-blocking-times-test-")

    cyclic = run(a, tmp, "cyclic", ["--order", "cyclic"])
    if cyclic["parameters"]["order"] != "cyclic":
        fail(f"cyclic: parameters {cyclic['parameters']}")
    rotated = [[(k + it) % CASES for k in range(CASES)] for it in range(ITERATIONS)]
    if cyclic["orders"] != rotated:
        fail(f"cyclic: orders {cyclic['orders']}, expected {rotated}")

    first = run(a, tmp, "permuted", [])
    p = first["parameters"]
    if p["order"] != "permuted" or p["seed"] != 1:
        fail(f"permuted: the default order and seed not recorded: {p}")
    again = run(a, tmp, "again", ["--order", "permuted", "--seed", "1"])
    if again["orders"] != first["orders"]:
        fail(f"the same seed gave other orders: {first['orders']} / {again['orders']}")
    other = run(a, tmp, "other", ["--seed", "12345"])
    if other["parameters"]["seed"] != 12345 or other["orders"] == first["orders"]:
        fail(f"seed 12345 gave the orders of seed 1 (or was not recorded): {other['parameters']}")
    if first["orders"] == rotated:
        fail("permuted ran the cyclic order")
    if all(len(s) <= 1 for s in predecessors(first["orders"]).values()):
        fail(f"permuted: every case follows one predecessor only: {first['orders']}")

    for bad in (["--order", "random"], ["--seed", "-3"], ["--seed", "x"]):
        code, out = run_mpirun(2, {}, [a.program, "--sizes", "4k", "--iterations", "1", *bad], 60, a)
        if code == 0 or "usage: blocking_times" not in out:
            fail(f"{' '.join(bad)} was not refused (exit {code}):\n{out}")
    print("PASS")


if __name__ == "__main__":
    main()
