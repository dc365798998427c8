#!/usr/bin/env python3
"""tnbc's own copies in its calls against the machine file's price of them (the summary's
overhead.in_call_copies; rank 0's word at the end when they differ far).

usage: copy_price.py --lib LIBTNBC --tool TNBC --prog GAIN_SITES [--np 3]

  count      TNBC_MODE=nbc, every call returning early, eager send copies, the start-up
             probe (no machine file): each rank's in_call_copies counts every byte it copied,
             its own block and the blocks it sends: calls x np x bytes per peer; its time and the
             price are positive; nothing said about the price (the probe does not measure it)
  cheap      the same with a machine file from `tnbc calibrate` whose in-call copy line is divided
             by 1000: rank 0, and only rank 0, says the copies took far more than the file prices
"""
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


def main():
    a = options(3)
    work = tempfile.mkdtemp(prefix="tnbc-copy-price-")
    base = {"TNBC_MODE": "nbc", "TNBC_MIN_BYTES": "4096", "TNBC_SEND_COPY": "eager", "TNBC_LOG": "warn"}

    outdir = os.path.join(work, "probe")
    out = run(a, ARGS, base, outdir)
    check_counts(a, outdir)
    if SAID in out:
        fail("with the start-up probe (no machine file) nothing is to be said about the copies' price", out)

    machine = os.path.join(work, "machine.json")
    calibrate(a, machine, "256k", 0.02)
    m = json.load(open(machine))
    line = m.get("guard", {}).get("memcpy_in_call")
    if not line or line.get("ns_per_byte", 0) <= 0:
        fail(f"tnbc calibrate wrote no in-call copy line: {line}")
    line["ns"] /= CHEAPER
    line["ns_per_byte"] /= CHEAPER
    for p in line.get("points", []):
        p[1] /= CHEAPER
    cheap = os.path.join(work, "cheap.json")
    with open(cheap, "w") as f:
        json.dump(m, f)

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
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
