#!/usr/bin/env python3
"""tnbc under a real Slurm (a one-node cluster on this machine: slurm_cluster.py):

1. `srun -n 2 --mpi=PLUGIN tnbc exec --output-dir D -- PROG ARGS` (PLUGIN: pmix for Open MPI,
   pmi2 for MPICH, what the harness derives from the program): verified, one MPI job of 2 ranks
   (the summaries' size), early returns, each rank's placement on this node with the CPUs srun
   bound it to (task/affinity: one each when the node has two);
2. the same with `--mpi=none`, the usual mistake: tnbc exec says which plugin is missing; Open MPI
   stops in MPI_Init, MPICH's tasks become one-rank jobs, which tnbc says at MPI_Init;
3. the NPB harness with `--launcher srun --ranks-per-node 2` (baseline and nbc passes of both
   proxies): verified, net none, placement (1 host, ranks 0-1) in summary.json and under the table.

Skipped (exit 77, reason printed) when the daemons cannot start here.

usage: slurm_test.py --mpi openmpi|mpich --tnbc TNBC --build-dir BUILD
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mpi")]
from run_mpi_test import SKIP, fail  # noqa: E402  (the MPI tests' verdicts)
from slurm_cluster import OneNodeSlurm, SlurmUnavailable  # noqa: E402

HARNESS = os.path.join(HERE, "..", "..", "npb-harness", "harness.py")
VERIFIED = "Verification    =               SUCCESSFUL"


def run(cmd, env, timeout=180):
    print("running:", " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        fail(f"timed out after {timeout} s", (e.stdout or b"").decode(errors="replace"))
    print(p.stdout)
    return p.returncode, p.stdout


def summaries(d):
    out = []
    for path in sorted(glob.glob(os.path.join(d, "tnbc-summary.*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


def check_direct(slurm, a, work):
    """Step 1: srun starts tnbc exec, which starts the proxy, as one MPI job."""
    plugin = "pmi2" if a.mpi == "mpich" else "pmix"
    d = os.path.join(work, "direct")
    # The size threshold pinned to its floor, three pages, as in the MPI tests (run_mpi_test.py).
    pages3 = str(3 * os.sysconf("SC_PAGE_SIZE"))
    code, out = run(["srun", "-n", "2", f"--mpi={plugin}", a.tnbc, "exec", "--set", f"min_bytes={pages3}",
                     "--output-dir", d, "--",
                     os.path.join(a.build_dir, "npb-harness", "is-proxy"), "S"], slurm.env())
    if code != 0 or VERIFIED not in out:
        fail(f"srun --mpi={plugin} exited {code} without a verified run", out)
    sums = summaries(d)
    if len(sums) != 2 or any(s["size"] != 2 for s in sums):
        fail(f"expected 2 summaries of one 2-rank job in {d}, got {[s['size'] for s in sums]}", out)
    early = sum(s["collectives"]["alltoallv"]["early_return"] for s in sums)
    if early == 0:
        fail("no MPI_Alltoallv returned early under srun", out)
    where = [s["placement"] for s in sums]
    if any(w["host"] != slurm.node or w["cpu_count"] < 1 for w in where):
        fail(f"placement {where} is not node {slurm.node}", out)
    # task/affinity binds each task to its own CPU when there are enough.
    if slurm.cpus >= 2 and (any(w["cpu_count"] != 1 for w in where) or where[0]["cpus"] == where[1]["cpus"]):
        fail(f"srun binds each task to one CPU of {slurm.cpus}, the summaries say {where}", out)
    print(f"direct: --mpi={plugin}, {early} early returns, placement {where}")


def check_no_plugin(slurm, a, work):
    """Step 2: srun --mpi=none: a clear message, never a silent wrong job."""
    d = os.path.join(work, "none")
    code, out = run(["srun", "-n", "2", "--mpi=none", a.tnbc, "exec", "--output-dir", d, "--",
                     os.path.join(a.build_dir, "npb-harness", "is-proxy"), "S"], slurm.env())
    if sum("without an MPI plugin" in line for line in out.splitlines()) != 1:
        fail("tnbc exec did not say once that srun runs the step without an MPI plugin", out)
    if a.mpi == "mpich":
        if sum("srun started 2 tasks, but MPI_COMM_WORLD has 1" in line for line in out.splitlines()) != 1:
            fail("MPICH's tasks ran as one-rank jobs and tnbc did not say so once at MPI_Init", out)
    elif code == 0:
        fail("Open MPI under srun --mpi=none should stop in MPI_Init", out)
    print(f"--mpi=none: exit {code}, said so")


def check_harness(slurm, a, work):
    """Step 3: the harness with --launcher srun."""
    out_dir = os.path.join(work, "harness")
    code, out = run([sys.executable, HARNESS, "--launcher", "srun", "--ranks-per-node", "2", "--np", "2",
                     "--benchmarks", "is,ft", "--classes", "S", "--passes", "baseline,nbc", "--tnbc", a.tnbc,
                     "--build-dir", a.build_dir, "--out", out_dir, "--timeout", "180"], slurm.env(), timeout=900)
    if code != 0:
        fail(f"the harness exited {code}", out)
    with open(os.path.join(out_dir, "summary.json")) as f:
        runs = json.load(f)["runs"]
    if len(runs) != 4 or not all(r["verified"] and r["net"] == "none" and r["launcher"] == "srun" for r in runs):
        fail(f"expected 4 verified runs with net none and launcher srun: {runs}", out)
    for r in runs:
        if r["pass"] == "nbc" and (r["nodes"] != 1 or [h["host"] for h in r["placement"]] != [slurm.node] or
                                   r["placement"][0]["ranks"] != [0, 1]):
            fail(f"{r['benchmark']} nbc: placement {r['placement']}, nodes {r['nodes']}: expected ranks 0-1 on "
                 f"{slurm.node}", out)
    for bench in ("is", "ft"):
        if f"placement, {bench}.S np=2: 1 host: {slurm.node}: 2 ranks (0-1)" not in out:
            fail(f"the harness did not print the placement of {bench}.S under its table", out)
    print("harness --launcher srun: 4 runs verified, placement recorded")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], required=True)
    ap.add_argument("--tnbc", required=True)
    ap.add_argument("--build-dir", required=True)
    a = ap.parse_args()
    a.tnbc, a.build_dir = os.path.abspath(a.tnbc), os.path.abspath(a.build_dir)
    # meson test's timeout sends SIGTERM: stop the daemons on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: terminated (test timeout?)"))
    work = tempfile.mkdtemp(prefix="tnbc-slurm-test-")
    try:
        with OneNodeSlurm() as slurm:
            print(f"one-node Slurm: node {slurm.node}, {slurm.cpus} CPUs, SLURM_CONF={slurm.conf}")
            code, out = run(["srun", "--mpi=list"], slurm.env())
            print(f"srun's MPI plugins: {' '.join(out.split()[4:])}")
            check_direct(slurm, a, work)
            check_no_plugin(slurm, a, work)
            check_harness(slurm, a, work)
    except SlurmUnavailable as e:
        print(f"SKIP: a one-node Slurm cannot run here: {e}")
        sys.exit(SKIP)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
