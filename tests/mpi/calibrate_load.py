#!/usr/bin/env python3
"""`tnbc calibrate` says when other processes took the CPUs it measured on.

usage: calibrate_load.py --tool TNBC [--mpi openmpi --mpirun mpirun]

Two ranks on this machine, a short calibration (`--max-bytes 64k`), twice: as the machine is, and
with one busy process per CPU beside it (a build, another job). Each machine file must carry the
load (`load`: others_cpu_share, steal_share, shares of the machine's CPU time in [0, 1]); beside
the busy processes the others' share must be above calibrate's 5 % (runtime/model/machine.hh,
kLoadNoteShare) and calibrate must end with its warning. The quiet run's share is printed, not
asserted (this machine may be busy with something else meanwhile); the busy run's is far above
any such noise: the burners take at least half of every CPU the ranks do not hold.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_mpi_test import add_launcher_options, fail, run_mpirun  # noqa: E402

NP = 2
NOTE_SHARE = 0.05  # runtime/model/machine.hh, kLoadNoteShare
WARNING = "tnbc: calibrate: warning: during the measurements other processes took"


def calibrate(a, machine):
    code, out = run_mpirun(NP, {}, [a.tool, "calibrate", "-o", machine, "--max-bytes", "64k", "--seconds-per-size", "0.02"],
                           240, a)
    print(out)
    if code != 0 or not os.path.exists(machine):
        fail(f"tnbc calibrate failed (exit {code})", out)
    load = json.load(open(machine)).get("load")
    if not isinstance(load, dict) or not all(0 <= load.get(k, -1) <= 1 for k in ("others_cpu_share", "steal_share")):
        fail(f"the machine file's load is {load!r}: expected both shares in [0, 1]", open(machine).read())
    return load, out


def main():
    import argparse
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--tool", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tnbc-calibrate-load-")
    quiet, _ = calibrate(a, os.path.join(work, "quiet.json"))
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(min(64, os.cpu_count() or 1))]
    try:
        busy, out = calibrate(a, os.path.join(work, "busy.json"))
    finally:
        for b in burners:
            b.kill()
            b.wait()
    if busy["others_cpu_share"] <= NOTE_SHARE:
        fail(f"beside {len(burners)} busy processes the others' share is {busy['others_cpu_share']:.3f}, "
             f"not above {NOTE_SHARE}", out)
    if WARNING not in out:
        fail("calibrate beside busy processes printed no warning", out)
    print(f"PASS: others' share {quiet['others_cpu_share']:.3f} as the machine is, {busy['others_cpu_share']:.3f} beside "
          f"{len(burners)} busy processes (warned); steal {quiet['steal_share']:.3f} / {busy['steal_share']:.3f}")


if __name__ == "__main__":
    main()
