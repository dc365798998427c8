#!/usr/bin/env python3
"""tnbc's own copies in its calls against the machine file's price of them (the summary's
overhead.in_call_copies; rank 0's word at the end when they differ far).

usage: copy_price.py --lib LIBTNBC --tool TNBC --prog GAIN_SITES --bcast-prog PROFILE_USE [--np 3]

  count      TNBC_MODE=nbc, every call returning early, eager send copies, the start-up
             probe (no machine file): each rank's in_call_copies counts every byte it copied,
             its own block and the blocks it sends: calls x np x bytes per peer; its time and the
             price are positive; nothing said about the price (the probe does not measure it)
  cheap      the same with a machine file from `tnbc calibrate` whose in-call copy line is divided
             by 1000: rank 0, and only rank 0, says the copies took far more than the file prices
  alone      PROFILE_USE (a broadcast from rank 0 beside its exchanges) with that file, then with
             its line of a rank copying alone (memcpy_in_call_alone) divided by 1000: a broadcast
             root copies alone in its call, so rank 0's price falls, and only rank 0's (the
             same copies, byte for byte); the other ranks copy nothing for the broadcast
"""
import copy
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import calibrate, options, run, summaries  # noqa: E402
from run_mpi_test import fail  # noqa: E402

ITERATIONS, PAGES_PER_PEER, COMPUTE_MS = 4, 64, 1
ARGS = [str(ITERATIONS), str(PAGES_PER_PEER), str(COMPUTE_MS)]
SAID = "tnbc's copies in its calls took"
CHEAPER = 1000


def check_counts(a, outdir):
    page = os.sysconf("SC_PAGESIZE")
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries in {outdir}, found {len(sums)}")
    for s in sums:
        c = s["collectives"]["alltoall"]
        through = c["early_return"]
        if through == 0 or through != c["calls"]:
            fail(f"rank {s['rank']}: expected every alltoall to return early (TNBC_MIN_BYTES=4096): {c}")
        cc = s["overhead"].get("in_call_copies")
        want = through * a.np * PAGES_PER_PEER * page
        if not cc or cc["bytes"] != want:
            fail(f"rank {s['rank']}: in_call_copies {cc}: expected {want} bytes ({through} calls x {a.np} blocks x "
                 f"{PAGES_PER_PEER} pages)")
        if cc["copies"] < 2 * through or cc["s"] <= 0 or cc["priced_s"] <= 0:
            fail(f"rank {s['rank']}: in_call_copies {cc}: expected at least 2 copies per call, a time and a price")
    return sums


def scaled_down(machine, key, path):
    """The machine file with its guard line `key` divided by CHEAPER, written to `path`."""
    m = json.load(open(machine))
    line = m.get("guard", {}).get(key)
    if not line or line.get("ns_per_byte", 0) <= 0:
        fail(f"tnbc calibrate wrote no {key} line: {line}")
    line["ns"] /= CHEAPER
    line["ns_per_byte"] /= CHEAPER
    for p in line.get("points", []):
        p[1] /= CHEAPER
    with open(path, "w") as f:
        json.dump(m, f)
    return path


def check_bcast_root_alone(a, work, machine, base):
    """A broadcast root's copy priced with the line of a rank copying alone (the model's price)."""
    b = copy.copy(a)
    b.prog = a.bcast_prog
    env = dict(base, TNBC_BCAST_BACKEND="p2p")  # the backend's plan reads the file: kept the same
    cheap = scaled_down(machine, "memcpy_in_call_alone", os.path.join(work, "cheap-alone.json"))
    runs = {}
    for name, m in (("alone", machine), ("cheap-alone", cheap)):
        outdir = os.path.join(work, name)
        run(b, ["1", "3"], dict(env, TNBC_MACHINE=m), outdir)
        runs[name] = {s["rank"]: s for s in summaries(outdir)}
    for rank, s in runs["alone"].items():
        c = s["collectives"]["bcast"]
        if c["calls"] == 0 or c["early_return"] != c["calls"]:
            fail(f"rank {rank}: expected every broadcast to return early (TNBC_MIN_BYTES=4096): {c}")
        before, after = s["overhead"]["in_call_copies"], runs["cheap-alone"][rank]["overhead"]["in_call_copies"]
        if (before["copies"], before["bytes"]) != (after["copies"], after["bytes"]):
            fail(f"rank {rank}: the two runs copied differently: {before} / {after}")
        # The prices are the model's, from the same copies: any fall is the alone line's. Its share
        # of the root's copies varies with the calibration (its exchanges' copies too): 1 % in one
        # MPICH calibration (0.00159 -> 0.00158 s), so no fixed share is asked for.
        if rank == 0 and not after["priced_s"] < (1 - 1e-6) * before["priced_s"]:
            fail(f"the broadcast's root: its copies priced {after['priced_s']} s with the alone line {CHEAPER}x "
                 f"cheaper, {before['priced_s']} s before: expected lower (its staging copy priced alone)")
        if rank != 0 and abs(after["priced_s"] - before["priced_s"]) > 1e-9 * before["priced_s"]:
            fail(f"rank {rank} (not the root): its copies' price moved with the alone line: "
                 f"{before['priced_s']} -> {after['priced_s']} s")


def main():
    a = options(3, lambda ap: ap.add_argument("--bcast-prog", required=True))
    work = tempfile.mkdtemp(prefix="tnbc-copy-price-")
    base = {"TNBC_MODE": "nbc", "TNBC_MIN_BYTES": "4096", "TNBC_SITE_TRIAL_CALLS": "0", "TNBC_SEND_COPY": "eager",
            "TNBC_LOG": "warn"}

    outdir = os.path.join(work, "probe")
    out = run(a, ARGS, base, outdir)
    check_counts(a, outdir)
    if SAID in out:
        fail("with the start-up probe (no machine file) nothing is to be said about the copies' price", out)

    machine = os.path.join(work, "machine.json")
    calibrate(a, machine, "256k", 0.02)
    cheap = scaled_down(machine, "memcpy_in_call", os.path.join(work, "cheap.json"))

    outdir = os.path.join(work, "cheap")
    out = run(a, ARGS, dict(base, TNBC_MACHINE=cheap), outdir)
    sums = check_counts(a, outdir)
    said = [l for l in out.splitlines() if SAID in l]
    if len(said) != 1 or "tnbc[0]" not in said[0] or cheap not in said[0] or "is low by as much" not in said[0]:
        fail(f"a file pricing the copies {CHEAPER}x too low: expected rank 0's one line '{SAID} ...x what the machine "
             f"file ({cheap}) prices them at ... low by as much': {said}", out)
    ratio = [s["overhead"]["in_call_copies"]["s"] / s["overhead"]["in_call_copies"]["priced_s"] for s in sums]
    if min(ratio) < 10:
        fail(f"a file pricing the copies {CHEAPER}x too low: the summaries' s / priced_s {ratio}, expected far above 1")
    check_bcast_root_alone(a, work, machine, base)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
