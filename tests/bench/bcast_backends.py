#!/usr/bin/env python3
"""RMA binomial vs RMA linear vs p2p binomial vs PMPI_Bcast (issue 21; docs/benchmarks.md, "RMA broadcast").

TNBC_BCAST_BACKEND is one setting per run (every rank must agree), so the backends are
interleaved run by run: for each repetition, one run per backend, in rotated order. Each run is
tests/bench/incall.c --kind bcast in mode nbc: per size, blocks of `--calls` MPI_Bcast (tnbc,
returning early, every byte read right after the call, so the time is the broadcast's until its
data is in) interleaved with blocks of PMPI_Bcast (the library's own, same buffers), a barrier
before each block, root 0. The figure per backend and size is the median over runs of the run's
ratio MPI_/PMPI_ (each run's own median over blocks), so a slow run slows both sides alike; the
absolute times are printed for reference only.

auto is measured as a fourth column (interleaved like the others; its summaries say which
backends it ran). How well auto predicts: one more run (untimed) with TNBC_BCAST_BACKEND=auto and TNBC_LOG=info
prints the model's choice over sizes for MPI_COMM_WORLD (rank 0's start-up line: the RMA probe's
one-sided figures, the messages and O_r from the machine, `tnbc calibrate`'s file with --machine,
else the model's start-up probe); per size it is set against the backend with the lowest
measured median.

usage: bcast_backends.py --build-dir BUILD [--np 4] [--sizes 64k,1M,8M] [--runs 6] [--reps 5]
                         [--calls 6] [--nodes K --rate 1gbit [--pml ucx]] [--machine FILE]
                         [--out DIR] [--json FILE]
Measure under `tnbc-quiet` for figures to report.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NETRUN = os.path.join(REPO, "npb-harness", "netrun.py")
BACKENDS = ["p2p", "rma-binomial", "rma-linear"]
COLUMNS = BACKENDS + ["auto"]  # auto: measured too, interleaved like the others


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--sizes", default="64k,1M,8M")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--nodes", type=int, default=0, help="emulated nodes (netrun.py); 0: shared memory")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--pml", choices=("ob1", "ucx"), default="ob1", help="netrun.py --pml (ucx: usable RMA over the link)")
    ap.add_argument("--machine", help="TNBC_MACHINE for auto's plan (tnbc calibrate's file; `calibrate`: "
                    "run tnbc calibrate first, in this placement)")
    ap.add_argument("--out")
    ap.add_argument("--json")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    out = a.out or tempfile.mkdtemp(prefix="bcast-backends-")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    prog = os.path.join(build, "tests", "bench", "incall")

    def launch(cmd):
        if a.nodes:
            cmd = [sys.executable, NETRUN, "--nodes", str(a.nodes), "--rate", a.rate, "--pml", a.pml, "--"] + cmd
        elif a.pml == "ucx":
            cmd = cmd[:1] + ["--mca", "pml", "ucx", "--mca", "osc", "ucx"] + cmd[1:]
        return subprocess.run(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ratios = {b: {} for b in COLUMNS}    # backend -> bytes -> [ratio per run]
    times = {b: {} for b in COLUMNS}     # backend -> bytes -> [MPI_ us per run]
    auto_used = {}                       # backend -> broadcasts auto ran with it (every run)
    pmpi = {}                            # bytes -> [PMPI_ us per run]
    for run in range(a.runs):
        order = COLUMNS[run % 4:] + COLUMNS[:run % 4]
        for b in order:
            js = os.path.join(out, f"{b}-{run}.json")
            cmd = ["mpirun", "--oversubscribe", "-np", str(a.np), "-x", "LD_PRELOAD=" + os.path.join(build, "libtnbc.so"),
                   "-x", "TNBC_MODE=nbc", "-x", "TNBC_MIN_BYTES=12k", "-x", "TNBC_BCAST_BACKEND=" + b,
                   "-x", "TNBC_OUTPUT_DIR=" + os.path.join(out, f"{b}-{run}"),
                   prog, "--kind", "bcast", "--sizes", a.sizes, "--reps", str(a.reps), "--calls", str(a.calls),
                   "--json", js]
            r = launch(cmd)
            if r.returncode != 0:
                print(r.stdout)
                sys.exit(f"bcast_backends: run {run} of {b} failed (exit {r.returncode})")
            # The summaries must show the backend asked for (no silent fallback).
            used = {}
            for f in os.listdir(os.path.join(out, f"{b}-{run}")):
                if f.startswith("tnbc-summary"):
                    s = json.load(open(os.path.join(out, f"{b}-{run}", f)))
                    for k, n in s["bcast_backends"].items():
                        used[k] = used.get(k, 0) + n
            if b == "auto":
                for k, n in used.items():
                    auto_used[k] = auto_used.get(k, 0) + n
            elif used.get(b.replace("-", "_"), 0) == 0 or sum(used.values()) != used[b.replace("-", "_")]:
                sys.exit(f"bcast_backends: run {run} of {b}: broadcasts by backend {used}")
            for res in json.load(open(js))["results"]:
                n = res["bytes"]
                ratios[b].setdefault(n, []).append(res["ratio_median"])
                times[b].setdefault(n, []).append(res["mpi_us_per_call"])
                pmpi.setdefault(n, []).append(res["pmpi_us_per_call"])
    if a.machine == "calibrate":
        a.machine = os.path.join(out, "machine.json")
        r = launch(["mpirun", "--oversubscribe", "-np", str(a.np), os.path.join(build, "tools", "tnbc"), "calibrate",
                    "-o", a.machine, "--max-bytes", "4m", "--quiet"])
        if r.returncode != 0:
            print(r.stdout)
            sys.exit("bcast_backends: tnbc calibrate failed")
    # auto's plan: the model's choice over sizes (untimed run).
    plan_cmd = ["mpirun", "--oversubscribe", "-np", str(a.np), "-x", "LD_PRELOAD=" + os.path.join(build, "libtnbc.so"),
                "-x", "TNBC_MODE=nbc", "-x", "TNBC_MIN_BYTES=12k", "-x", "TNBC_BCAST_BACKEND=auto", "-x", "TNBC_LOG=info",
                "-x", "TNBC_OUTPUT_DIR=" + os.path.join(out, "auto")]
    if a.machine:
        plan_cmd += ["-x", "TNBC_MACHINE=" + os.path.abspath(a.machine)]
    plan_cmd += [prog, "--kind", "bcast", "--sizes", a.sizes, "--reps", "1", "--calls", "1"]
    r = launch(plan_cmd)
    plan = re.search(r"TNBC_BCAST_BACKEND=auto on MPI_COMM_WORLD \(([^)]*)\): (.*)", r.stdout)
    probe = re.search(r"RMA probe .*", r.stdout)
    ranges = []  # (from bytes, backend)
    if plan:
        for part in plan.group(2).split(", "):
            m = re.match(r"(\S+)(?: from ([\d.]+) (B|KiB|MiB|GiB))?", part)
            unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}.get(m.group(3), 1)
            ranges.append((float(m.group(2)) * unit if m.group(2) else 0, m.group(1)))

    def predicted(n):
        return [b for f, b in ranges if f <= n][-1] if ranges else "?"

    where = f"{a.nodes} emulated nodes at {a.rate}, pml {a.pml}" if a.nodes else "shared memory"
    print(f"bcast_backends: np {a.np}, {where}, {a.runs} runs per backend (interleaved), root 0;")
    print("  median over runs of MPI_Bcast/PMPI_Bcast (tnbc until every byte is read / the library's own)")
    print(f"  {'size':>10} {'PMPI_ us':>10} " + " ".join(f"{b:>14}" for b in COLUMNS) +
          f" {'fastest':>13} {'auto chose':>13} {'x fastest':>9}   (min-max over runs)")
    table = []
    for n in sorted(pmpi):
        row = {"bytes": n, "pmpi_us": statistics.median(pmpi[n])}
        cells = []
        for b in COLUMNS:
            rs = ratios[b][n]
            row[b] = {"ratio_median": statistics.median(rs), "ratio_min": min(rs), "ratio_max": max(rs),
                      "us_median": statistics.median(times[b][n]), "ratios": rs}
            cells.append(f"{statistics.median(rs):6.2f} ({min(rs):.2f}-{max(rs):.2f})")
        row["fastest"] = min(BACKENDS, key=lambda b: row[b]["ratio_median"])
        row["auto_plan"] = predicted(n)
        # The plan's pick against the fastest: right if it is the fastest; else how much slower.
        pick = row["auto_plan"] if row["auto_plan"] in BACKENDS else None
        row["x_fastest"] = row[pick]["ratio_median"] / row[row["fastest"]]["ratio_median"] if pick else None
        row["right"] = pick == row["fastest"]
        print(f"  {n:>10} {row['pmpi_us']:>10.0f} " + " ".join(f"{c:>14}" for c in cells) +
              f" {row['fastest']:>13} {row['auto_plan']:>13} " +
              (f"{row['x_fastest']:9.2f}" if pick else f"{'?':>9}"))
        table.append(row)
    right = sum(1 for r in table if r["right"])
    close = sum(1 for r in table if r["x_fastest"] is not None and r["x_fastest"] <= 1.15)
    print(f"  auto's plan: the measured fastest in {right} of {len(table)} sizes, within 1.15x of it in {close}; "
          f"auto's runs used {auto_used}")
    print(f"  auto's plan ({plan.group(1) if plan else 'not printed'}): {plan.group(2) if plan else r.stdout[-2000:]}")
    if probe:
        print(f"  {probe.group(0)}")
    if a.json:
        json.dump({"np": a.np, "nodes": a.nodes, "rate": a.rate if a.nodes else None, "runs": a.runs, "pml": a.pml,
                   "auto_plan": plan.group(2) if plan else None, "rma_probe": probe.group(0) if probe else None,
                   "auto_used": auto_used, "results": table}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
