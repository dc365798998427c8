#!/usr/bin/env python3
"""Functional test of incall_bench.py (never of its timings).

The driver times tnbc's schedule completed in the call against PMPI_* only if mode optimize
really runs that schedule at the timed site: with every site of a kind judged no gain it would
run the plain program, and the bench would time PMPI_* against itself (it did, sessions 47-53).
Runs the driver at np 2 on this machine with one tiny size, one block of one call, for MPI_Alltoall
and for a skewed MPI_Alltoallv: each must exit 0 (the driver checks in the summaries that every
timed call completed in the call and that incall's decoy call returned early) and print its table.

usage: incall_test.py --mpi openmpi|mpich --mpirun MPIRUN [...] --build-dir BUILD
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--build-dir", required=True)
    a, _ = ap.parse_known_args()
    if a.mpi != "openmpi":
        print("SKIP: incall_bench.py drives Open MPI's mpirun")
        sys.exit(77)
    for kind, extra in (("alltoall", []), ("alltoallv", ["--skew", "4"])):
        with tempfile.TemporaryDirectory(prefix="tnbc-incall-test.") as out:
            cmd = [sys.executable, os.path.join(HERE, "incall_bench.py"), "--build-dir", a.build_dir, "--np", "2",
                   "--mpirun", a.mpirun, "--kind", kind, "--sizes", "64k", "--reps", "1", "--calls", "1",
                   "--out", out] + extra
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        print(r.stdout)
        if r.returncode != 0:
            print(f"FAIL: incall_bench.py --kind {kind} exited {r.returncode}")
            sys.exit(1)
        if "every intercepted call completed in the call" not in r.stdout or "64k" not in r.stdout:
            print(f"FAIL: incall_bench.py --kind {kind}: expected its table and its check's line")
            sys.exit(1)
    print("OK: incall_bench.py timed tnbc's schedule in the call for MPI_Alltoall and a skewed MPI_Alltoallv")


if __name__ == "__main__":
    main()
