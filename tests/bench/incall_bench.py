#!/usr/bin/env python3
"""tnbc's in-call path against PMPI_* (tests/bench/incall.c; docs/benchmarks.md, "The in-call path").

Mode optimize completes a call in the call (tnbc's own schedule, waited for inside it) where the
profile shows no overlap to gain. This driver makes that happen for every call of incall.c: a
trace pass of the same sizes, `tnbc merge`, then the optimize run with an early-return cost so
large (TNBC_EARLY_RETURN_COST_US) that no site pays. It checks in the summaries that every
intercepted call completed in the call for that reason (else the figures would be of another
path; one call per size, incall.c's decoy, returns early so that the others are not the MPI
library's own calls), and prints incall's table: per size, MPI_ (tnbc in the call) against PMPI_, interleaved.

usage: incall_bench.py --build-dir BUILD [--np N] [--kind alltoall|alltoallv|bcast|allgather]
                       [--sizes 64k,256k,1M,4M] [--skew H] [--reps 7] [--calls 10] [--machine FILE]
                       [--net none | --nodes K --rate 1gbit] [--out DIR] [--mpirun mpirun]
--skew H (alltoallv): the middle half of the ranks receive H times the others' block (incall.c).
--machine FILE: both passes use that machine file (TNBC_MACHINE), so that `tnbc merge --machine
FILE` on the trace pass prints the cost model's figures for the same calls.
--nodes K runs everything on K emulated nodes (npb-harness/netrun.py, one shaped link each);
without it, shared memory on this machine. Measure under `tnbc-quiet` for figures to report.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NETRUN = os.path.join(REPO, "npb-harness", "netrun.py")


def run(cmd, env, what):
    r = subprocess.run(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        print(r.stdout)
        sys.exit(f"incall_bench: {what} failed (exit status {r.returncode}): {' '.join(cmd)}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--kind", default="alltoall")
    ap.add_argument("--skew", type=float, default=1.0, help="alltoallv: the heavy ranks' block over the others'")
    ap.add_argument("--machine", help="a machine file of `tnbc calibrate` for both passes")
    ap.add_argument("--sizes", default="64k,256k,1M,4M")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=0, help="emulated nodes (netrun.py); 0: shared memory")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    tool, prog = os.path.join(build, "tools", "tnbc"), os.path.join(build, "tests", "bench", "incall")
    out = a.out or tempfile.mkdtemp(prefix="tnbc-incall.")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["TNBC_LIBRARY"] = os.path.join(build, "libtnbc.so")

    def launch(mode_args, prog_args):
        # The threshold at its floor in both passes, so that every size takes tnbc's schedule.
        settings = ["--set", "min_bytes=12k"] + (["--set", "machine=" + os.path.abspath(a.machine)] if a.machine else [])
        skew = ["--skew", str(a.skew)] if a.kind == "alltoallv" else []
        cmd = ([a.mpirun, "--oversubscribe", "-np", str(a.np), tool, "exec"] + settings + mode_args +
               ["--", prog, "--kind", a.kind, "--sizes", a.sizes] + skew + prog_args)
        if a.nodes:
            cmd = [sys.executable, NETRUN, "--nodes", str(a.nodes), "--rate", a.rate, "--"] + cmd
        return cmd

    trace_dir, opt_dir = os.path.join(out, "trace"), os.path.join(out, "optimize")
    profile = os.path.join(out, "incall.profile")
    run(launch(["--mode", "trace", "--output-dir", trace_dir], ["--reps", "1", "--calls", "2"]), env, "the trace pass")
    run([tool, "merge", trace_dir, "-o", profile, "--quiet"], env, "tnbc merge")
    opt_env = dict(env, TNBC_EARLY_RETURN_COST_US="1000000000")
    text = run(launch(["--mode", "optimize", "--profile", profile, "--output-dir", opt_dir],
                      ["--reps", str(a.reps), "--calls", str(a.calls), "--json", os.path.join(out, "incall.json")]),
               opt_env, "the optimize run")
    # Every timed intercepted call must have completed in the call, for lack of overlap to gain; one
    # call per size, incall.c's decoy (its data never read), returned early.
    decoys = len(a.sizes.split(","))
    for path in sorted(glob.glob(os.path.join(opt_dir, "tnbc-summary.*.json"))):
        with open(path) as f:
            k = json.load(f)["collectives"][a.kind]
        timed = k["calls"] - decoys
        if timed <= 0 or k["early_return"] != decoys or k["completed_in_call"] != timed or \
                k["reasons"].get("no_overlap_to_gain") != timed:
            sys.exit(f"incall_bench: {path}: not every timed call completed in the call for no overlap to gain: {k}")
    print(text.rstrip())
    print(f"incall_bench: {'%d emulated nodes at %s' % (a.nodes, a.rate) if a.nodes else 'shared memory'}, "
          f"every intercepted call completed in the call (no_overlap_to_gain); results in {out}")


if __name__ == "__main__":
    main()
