#!/usr/bin/env python3
"""`tnbc calibrate` with four ranks on one node measures tnbc's in-call copies to 4 MiB.

usage: calibrate_node.py --tool TNBC [--mpi openmpi --mpirun mpirun]

Four ranks on this machine (shared memory, oversubscribed where it has fewer CPUs): `tnbc
calibrate --max-bytes 256k`. The in-call copy is measured at 64 KiB-4 MiB whatever --max-bytes
says, each rank walking its arena (three times the last-level cache over the node's ranks, at
least four of the largest copy) with one cursor for every size; the more ranks share a node, the
smaller the arena. Until session 25 a cursor a smaller copy left near the arena's end started
the next size's larger copy there: every calibration at np 4 on one node died of SIGSEGV (since
session 22), and the harness's contended cells fell back to the start-up probe. The file must be
written, with the in-call copy measured at every size up to 4 MiB; tnbc's own early return
measured with the caches warm only (since session 38), at 64 KiB where that exchange fits in the
cache. The tests' `--copy-bytes 4m` (run_mpi_test.QUICK_CALIBRATION) leaves out the 16 and 64 MiB
copies: the points stop at 4 MiB. First, sizes that are no byte count of at least 4k
(`--cache-bytes 1k`, `lots`, `--max-bytes 0`, `--copy-bytes 1k`): exit 2 and one message naming
the options.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_mpi_test import QUICK_CALIBRATION, tool_arguments, fail, run_mpirun  # noqa: E402

NP = 4
SIZES = [65536, 256 << 10, 1 << 20, 4 << 20]  # runtime/model/calibrate.cc, in_call_copy_sizes


def bad_options(a):
    """A cache, copy or sweep size that is no byte count of at least 4k: exit 2 and one line naming the
    options, before MPI starts (no launcher needed)."""
    for bad in (["--cache-bytes", "1k"], ["--cache-bytes", "lots"], ["--max-bytes", "0"], ["--copy-bytes", "1k"]):
        p = subprocess.run([a.tool, "calibrate", "-o", os.devnull] + bad, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        if p.returncode != 2 or "--cache-bytes and --copy-bytes must be byte counts of at least 4k" not in p.stdout:
            fail(f"tnbc calibrate {' '.join(bad)}: expected exit 2 and the options' message, got exit "
                 f"{p.returncode}", p.stdout)


def main():
    a = tool_arguments()
    bad_options(a)
    machine = os.path.join(tempfile.mkdtemp(prefix="tnbc-calibrate-node-"), "machine.json")
    code, out = run_mpirun(NP, {}, [a.tool, "calibrate", "-o", machine, "--max-bytes", "256k", "--seconds-per-size", "0.02"]
                           + QUICK_CALIBRATION, 240, a)
    print(out)
    if code != 0 or not os.path.exists(machine):
        fail(f"tnbc calibrate at np {NP} on one node failed (exit {code})", out)
    m = json.load(open(machine))
    if m.get("ranks_per_node") != NP:
        fail(f"the file says {m.get('ranks_per_node')} ranks per node, not {NP}", open(machine).read())
    line = m.get("guard", {}).get("memcpy_in_call")
    points = [x for x, _ in line.get("points", [])] if line else []
    if points != SIZES:  # (16 and 64 MiB would follow without --copy-bytes 4m where the arena allows)
        fail(f"the in-call copy's points are at {points}, expected {SIZES} (--copy-bytes 4m)", open(machine).read())
    # tnbc's own call where ranks share a node: measured warm only (tools/calibrate_own_call.hh), at
    # the sizes whose exchange fits in the cache (what a rank sends and receives: 2 x NP x 64 KiB).
    guard = m.get("guard", {})
    if "in_call_rest" in guard or "in_call_rest_bcast" in guard or "in_call_rest_bcast_root" in guard:
        fail("tnbc's own call measured with the caches emptied where ranks share a node", open(machine).read())
    warm = guard.get("in_call_rest_warm", {}).get("points", [])
    if guard.get("warm_below_bytes", 0) > 2 * NP * 65536 and [x for x, _ in warm] != [65536 * (NP - 1)]:  # by bytes received
        fail(f"guard.in_call_rest_warm at {[x for x, _ in warm]}: expected measured at 64 KiB (tnbc's own early return, "
             "caches warm)", out)
    for key in ("in_call_rest_bcast_warm", "in_call_rest_bcast_root_warm"):
        if guard.get("warm_below_bytes", 0) > 65536 and not guard.get(key, {}).get("points"):
            fail(f"guard.{key}: expected measured at 64 KiB (tnbc's own broadcast, caches warm)", out)
    print(f"PASS: np {NP} on one node calibrated; in-call copy measured at {points}; tnbc's own call warm: {warm}")


if __name__ == "__main__":
    main()
