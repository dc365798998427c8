#!/usr/bin/env python3
"""`tnbc predict MACHINE --program CURC_MS,CRC_MS [--tcomm-ms T] [--own-last]` (tools/predict.cc): the early
return's predicted cost for a program that computes T_CURC, then reads for T_CRC (the listing
tests/bench/early_return_cost.py compares with measurements), on a machine file written here
(predict_test.machine: 2 nodes, 1 Gbit/s-like between them). Not timed.

usage: program_test.py --tool TNBC
Checks, per size and kind: the figures obey the model's identities (Eq. 1 and Eq. 3: hidden =
min(Tcomm - Tinit, T_CURC + T_CRC), saved = Tcomm + T_CURC + T_CRC - early total, cost = hidden
- saved), with the model's Tcomm and with one given by --tcomm-ms; a program that computes three
times the transfer first saves most of it, one that reads at once saves nothing; the text listing
carries the same numbers; without --program no such fields; a malformed --program gives one
message and exit 2; --own-last adds T_CRC / n to a reader at once of an exchange, nothing to a
broadcast.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict_test import fail, machine, run_tnbc  # noqa: E402

SIZES = "256k,1m,4m"


def run(tool, *args, status=0):
    return run_tnbc(tool, "predict", *args, status=status)


def rows(out):
    try:
        return json.loads(out)["results"]
    except (ValueError, KeyError) as e:
        fail(f"not the JSON listing ({e})", out)


def close(a, b, what, out):
    if abs(a - b) > 1e-9 + 1e-6 * max(abs(a), abs(b)):
        fail(f"{what}: {a} != {b}", out)


def check_identities(r, x, tcomm, out):
    """The Overlap figures of one row against Eq. 1 / Eq. 3 for a program of X = T_CURC + T_CRC."""
    where = f"{r['kind']} {r['bytes']} B"
    hidden = max(0.0, min(tcomm - r["in_call_s"], x))
    close(r["hidden_s"], hidden, f"{where}: hidden (Eq. 3, Tcomm {tcomm})", out)
    close(r["saved_s"], tcomm + x - r["early_total_s"], f"{where}: saved", out)
    close(r["cost_s"], r["hidden_s"] - r["saved_s"], f"{where}: cost", out)
    if r["early_total_s"] < r["in_call_s"] + x - 1e-9:
        fail(f"{where}: the early return's total is below its time in the call plus the program's", out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tnbc-predict-program-")
    mach = os.path.join(d, "machine.json")
    with open(mach, "w") as f:
        json.dump(machine(), f)
    place = [mach, "--np", "2", "--per-node", "1", "--sizes", SIZES]

    plain = rows(run(a.tool, *place, "--json"))
    if len(plain) != 6 or any("early_total_s" in r for r in plain):
        fail("without --program: six rows (3 sizes x Bcast, Alltoall) and no early-return fields", json.dumps(plain))
    blocking = {(r["kind"], r["bytes"]): r["blocking_s"] for r in plain}
    ms = 1e-3

    # A program that computes three times the largest transfer before it reads, then reads 1 ms.
    curc = 3 * max(blocking.values())
    out = run(a.tool, *place, "--program", f"{curc / ms:.6f},1", "--json")
    late = rows(out)
    for r in late:
        tcomm = blocking[(r["kind"], r["bytes"])]
        close(r["blocking_s"], tcomm, "--program changes no blocking time", out)
        check_identities(r, curc + ms, tcomm, out)
        if r["saved_s"] < 0.5 * tcomm:
            fail(f"{r['kind']} {r['bytes']} B: computing 3x the transfer first should save most of it "
                 f"(saved {r['saved_s']} s of {tcomm} s)", out)

    # One that reads at once and fast: nothing to hide, the early return only costs.
    out = run(a.tool, *place, "--program", "0,0.01", "--json")
    for r in rows(out):
        check_identities(r, 0.01 * ms, blocking[(r["kind"], r["bytes"])], out)
        if r["saved_s"] > 0:
            fail(f"{r['kind']} {r['bytes']} B: a program that reads at once cannot gain", out)

    # A measured Tcomm given with --tcomm-ms replaces the model's in Eq. 3.
    out = run(a.tool, *place, "--program", f"{curc / ms:.6f},1", "--tcomm-ms", "50", "--json")
    for r in rows(out):
        check_identities(r, curc + ms, 50 * ms, out)

    # --own-last (some rank reads its own block after every peer's): a reader at once twice as
    # fast as the link reads its own block, half of what it reads at np 2, after the last piece
    # came in — the exchange's total grows by that, the broadcast's (no own block) not at all.
    for size in sorted({b for _, b in blocking}):
        one = [mach, "--np", "2", "--per-node", "1", "--sizes", str(size)]
        read = 0.5 * blocking[("alltoall", size)] / ms
        same = rows(run(a.tool, *one, "--program", f"0,{read:.6f}", "--json"))
        out = run(a.tool, *one, "--program", f"0,{read:.6f}", "--own-last", "--json")
        for r, o in zip(same, rows(out)):
            check_identities(o, read * ms, blocking[(r["kind"], r["bytes"])], out)
            grew = o["early_total_s"] - r["early_total_s"]
            if r["kind"] == "bcast":
                close(grew, 0, f"bcast {r['bytes']} B: --own-last changes no broadcast", out)
            elif abs(grew - read * ms / 2) > 0.01 * read * ms:
                fail(f"alltoall {r['bytes']} B: --own-last should add T_CRC / 2 = {read * ms / 2} s, added {grew} s", out)
    out = run(a.tool, *place, "--own-last", status=2)
    if "--own-last describes the program of --program" not in out:
        fail("--own-last without --program: one message", out)

    # The text listing: one line per row with the same early-return figures.
    text = run(a.tool, *place, "--program", f"{curc / ms:.6f},1")
    lines = [line for line in text.splitlines() if "early return + program" in line]
    if len(lines) != len(late):
        fail(f"the text listing has {len(lines)} early-return lines, expected {len(late)}", text)
    for line, r in zip(lines, late):
        want = f"early return + program {r['early_total_s'] * 1e6:.1f} us (saved {r['saved_s'] * 1e6:.1f} us"
        if want not in line or r["kind"] not in line:
            fail(f"text line for {r['kind']} {r['bytes']} B should say '{want}'", text)

    for bad in ("1", "1,x", "-1,2"):
        out = run(a.tool, *place, "--program", bad, status=2)
        if f"--program wants CURC_MS,CRC_MS, not '{bad}'" not in out:
            fail(f"--program {bad}: one message naming the value", out)
    print("OK")


if __name__ == "__main__":
    main()
