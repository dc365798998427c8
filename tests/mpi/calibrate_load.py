#!/usr/bin/env python3
"""`tnbc calibrate` says when other processes took the CPUs it measured on, and only those.

usage: calibrate_load.py --tool TNBC [--mpi openmpi --mpirun mpirun]

Two ranks on this machine, a short calibration (`--max-bytes 64k`), twice: with one busy process
per CPU beside it (a build, another job); and, where this process may use two CPUs or more, with
the ranks confined to the first (as a job's cpuset on a shared node) and busy processes on the
others. Each machine file must carry the load (`load`:
others_cpu_share, steal_share, shares of the CPU time in [0, 1]). Beside the busy processes the
others' share must be above calibrate's 5 % (runtime/model/machine.hh, kLoadNoteShare) and
calibrate must end with its warning: the burners take at least half of every CPU the ranks do not
hold. On CPUs the ranks may not use they must not count: below 5 %, no warning (that run's
share is also this machine's quiet figure, as far as its other work allows: 0.0-0.5 % here).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_mpi_test import QUICK_CALIBRATION, tool_arguments, fail, run_mpirun  # noqa: E402

NP = 2
NOTE_SHARE = 0.05  # runtime/model/machine.hh, kLoadNoteShare
WARNING = "tnbc: calibrate: warning: during the measurements other processes took"


def calibrate(a, machine, burner_cpus=(), rank_cpus=None):
    """One calibration writing `machine`, with a busy process on each of `burner_cpus` and this
    process (so the launcher and the ranks) on `rank_cpus` (None: as it is): (load, output)."""
    allowed = os.sched_getaffinity(0)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                preexec_fn=lambda c=c: os.sched_setaffinity(0, {c})) for c in burner_cpus]
    try:
        if rank_cpus is not None:
            os.sched_setaffinity(0, rank_cpus)
        code, out = run_mpirun(NP, {}, [a.tool, "calibrate", "-o", machine, "--max-bytes", "64k",
                                        "--seconds-per-size", "0.02"] + QUICK_CALIBRATION, 240, a)
    finally:
        os.sched_setaffinity(0, allowed)
        for b in burners:
            b.kill()
            b.wait()
    print(out)
    if code != 0 or not os.path.exists(machine):
        fail(f"tnbc calibrate failed (exit {code})", out)
    load = json.load(open(machine)).get("load")
    if not isinstance(load, dict) or not all(0 <= load.get(k, -1) <= 1 for k in ("others_cpu_share", "steal_share")):
        fail(f"the machine file's load is {load!r}: expected both shares in [0, 1]", open(machine).read())
    return load, out


def main():
    a = tool_arguments()
    work = tempfile.mkdtemp(prefix="tnbc-calibrate-load-")
    cpus = sorted(os.sched_getaffinity(0))[:64]
    busy, out = calibrate(a, os.path.join(work, "busy.json"), burner_cpus=cpus)
    if busy["others_cpu_share"] <= NOTE_SHARE:
        fail(f"beside {len(cpus)} busy processes the others' share is {busy['others_cpu_share']:.3f}, "
             f"not above {NOTE_SHARE}", out)
    if WARNING not in out:
        fail("calibrate beside busy processes printed no warning", out)
    said = f"others' share {busy['others_cpu_share']:.3f} beside {len(cpus)} busy processes (warned)"
    if len(cpus) >= 2:
        # The ranks on the first CPU, unbound there (Open MPI would bind two ranks to cores).
        os.environ["OMPI_MCA_hwloc_base_binding_policy"] = "none"
        apart, out = calibrate(a, os.path.join(work, "apart.json"), burner_cpus=cpus[1:], rank_cpus={cpus[0]})
        # The warning also names the hypervisor's share (steal) above the same 5 %: a slow hour of
        # the host says so rightly (session 59's CI: others 0.000, steal 0.059), not a failure here.
        if apart["others_cpu_share"] > NOTE_SHARE or (WARNING in out and apart["steal_share"] <= NOTE_SHARE):
            fail(f"busy processes on CPUs the ranks may not use counted: others' share "
                 f"{apart['others_cpu_share']:.3f} (steal {apart['steal_share']:.3f})", out)
        said += f", {apart['others_cpu_share']:.3f} with them on CPUs the ranks may not use"
    print("PASS: " + said)


if __name__ == "__main__":
    main()
