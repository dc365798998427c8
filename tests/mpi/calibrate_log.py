#!/usr/bin/env python3
"""`tnbc calibrate` with TNBC_LOG=debug logs tnbc's own calls in its last step.

usage: calibrate_log.py --tool TNBC [--mpi openmpi --mpirun mpirun]

Two emulated nodes, one rank each (calibrate_link.py's launch), `tnbc calibrate --max-bytes 64k`
with TNBC_LOG=debug: calibrate says that the engine logs tnbc's own calls (their figures then
include the log's cost), and each rank's engine logs its early-returning MPI_Alltoall and MPI_Bcast
calls, one line per call's parts ("tnbc[R]: debug: alltoall #N: set-up ..."), as a program's run
does (docs/cluster.md). Before session 35 calibrate set the engine's log to warnings whatever
TNBC_LOG said. Skipped (77) where calibrate_link.py is.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from calibrate_link import calibrate_on_two_nodes  # noqa: E402
from run_mpi_test import QUICK_CALIBRATION, tool_arguments, fail  # noqa: E402

NOTE = "tnbc's own call: TNBC_LOG=debug: the engine logs each call"


def main():
    a = tool_arguments()
    p, _ = calibrate_on_two_nodes(a, ["--max-bytes", "64k", "--seconds-per-size", "0.02"] + QUICK_CALIBRATION, {"TNBC_LOG": "debug"})
    if NOTE not in p.stdout:
        fail(f"expected calibrate's note: {NOTE!r}", p.stdout)
    for kind in ("alltoall", "bcast"):
        ranks = set(re.findall(r"tnbc\[(\d)\]: debug: %s #\d+: set-up " % kind, p.stdout))
        if ranks != {"0", "1"}:
            fail(f"expected each rank's engine to log its own {kind} calls' parts (ranks seen: {sorted(ranks)})", p.stdout)
    print("OK: calibrate's own calls logged on both ranks")


if __name__ == "__main__":
    main()
