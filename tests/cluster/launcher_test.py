#!/usr/bin/env python3
"""The NPB harness on "real" hosts without Slurm: --launcher (the build's mpirun: Open MPI's, or
MPICH's hydra), --hostfile (this machine, in the launcher's format), --ranks-per-node 2, --net
none (the default there). The baseline and nbc passes of is-proxy must be verified, summary.json
must record net none, the launcher and the placement (ranks 0-1 on this host), the table's
placement line must say so; and options that cannot work together are refused with a message.

usage: launcher_test.py --mpi openmpi|mpich --mpirun PATH --tnbc TNBC --build-dir BUILD
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "..", "npb-harness", "harness.py")
sys.path.insert(0, os.path.join(HERE, "..", "mpi"))
from run_mpi_test import fail  # noqa: E402  (the MPI tests' verdicts)


def harness(args):
    cmd = [sys.executable, HARNESS] + args
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    print(p.stdout)
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--tnbc", required=True)
    ap.add_argument("--build-dir", required=True)
    a = ap.parse_args()
    host = socket.gethostname()
    work = tempfile.mkdtemp(prefix="tnbc-launcher-test-")
    try:
        hostfile = os.path.join(work, "hosts")
        with open(hostfile, "w") as f:
            f.write(f"{host}:2\n" if a.mpi == "mpich" else f"{host} slots=2\n")
        out_dir = os.path.join(work, "out")
        common = ["--tnbc", a.tnbc, "--build-dir", a.build_dir, "--benchmarks", "is", "--classes", "S", "--np", "2"]
        code, out = harness(common + ["--launcher", a.mpirun, "--hostfile", hostfile, "--ranks-per-node", "2",
                                      "--passes", "baseline,nbc", "--out", out_dir, "--calibrate-cache", "8m", "--calibrate-copy", "4m",
                                      "--calibrate-max-bytes", "1m"])
        if code != 0:
            fail(f"the harness exited {code}", out)
        with open(os.path.join(out_dir, "summary.json")) as f:
            runs = json.load(f)["runs"]
        if len(runs) != 2 or not all(r["verified"] and r["net"] == "none" and r["launcher"] == a.mpirun for r in runs):
            fail(f"expected 2 verified runs, net none, launcher {a.mpirun}: {runs}", out)
        nbc = next(r for r in runs if r["pass"] == "nbc")
        if nbc["nodes"] != 1 or [(h["host"], h["ranks"]) for h in nbc["placement"]] != [(host, [0, 1])]:
            fail(f"nbc placement {nbc['placement']}, nodes {nbc['nodes']}: expected ranks 0-1 on {host}", out)
        if f"placement, is.S np=2: 1 host: {host}: 2 ranks (0-1)" not in out:
            fail("no placement line under the table", out)
        # Combinations that cannot work: said before anything runs.
        for bad, says in ((["--launcher", a.mpirun, "--hostfile", hostfile, "--net", "shaped"], "use --net none"),
                          (["--launcher", a.mpirun, "--hostfile", os.path.join(work, "missing")], "not found"),
                          (["--launcher", "no-such-launcher"], "not in PATH")):
            code, out = harness(common + bad + ["--passes", "baseline", "--out", os.path.join(work, "bad")])
            if code == 0 or says not in out:
                fail(f"harness {' '.join(bad)}: expected a refusal saying '{says}'", out)
        if a.mpi == "openmpi":  # mpirun is Open MPI's: the emulated network only with it, locally
            code, out = harness(common + ["--launcher", "srun", "--hostfile", hostfile, "--passes", "baseline",
                                          "--out", os.path.join(work, "bad")])
            if shutil.which("srun") and (code == 0 or "--hostfile is for mpirun/mpiexec" not in out):
                fail("srun with --hostfile was not refused", out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
