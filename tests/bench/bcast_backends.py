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

auto is measured as a fourth column, interleaved like the others, with TNBC_LOG=info: each auto
run's rank 0 prints its RMA probe's figures and the model's choice over sizes for MPI_COMM_WORLD
(one-sided figures from that run's probe; messages and O_r from the machine: `tnbc calibrate`'s
file with --machine, given to every run, else the model's start-up probe). Per size, each auto
run's choice is set against the backend with the lowest measured median (right or wrong, per
run), and how often the runs' choices differ is counted. Every run's summaries must show the
same broadcast backends on every rank (every rank selects alike), and every non-auto run only the
backend asked for.

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
sys.path.insert(0, os.path.join(REPO, "npb-harness"))
import calibration  # noqa: E402  (a disturbed calibration measured again: the harness's rule)
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
    if a.machine == "calibrate":  # first, so that every run (auto's included) uses it
        a.machine = os.path.join(out, "machine.json")

        def calibrate(_first):
            r = launch(["mpirun", "--oversubscribe", "-np", str(a.np), os.path.join(build, "tools", "tnbc"),
                        "calibrate", "-o", a.machine, "--max-bytes", "4m", "--quiet"])
            if r.returncode != 0:
                print(r.stdout)
                sys.exit("bcast_backends: tnbc calibrate failed")
            return True
        calibration.until_undisturbed(calibrate, a.machine, "bcast_backends")
    ratios = {b: {} for b in COLUMNS}    # backend -> bytes -> [ratio per run]
    times = {b: {} for b in COLUMNS}     # backend -> bytes -> [MPI_ us per run]
    auto_used = {}                       # backend -> broadcasts auto ran with it (every run)
    auto_runs = []                       # per auto run: {"plan": text, "ranges": [...], "probe": text}
    pmpi = {}                            # bytes -> [PMPI_ us per run]
    for run in range(a.runs):
        order = COLUMNS[run % 4:] + COLUMNS[:run % 4]
        for b in order:
            js = os.path.join(out, f"{b}-{run}.json")
            cmd = ["mpirun", "--oversubscribe", "-np", str(a.np), "-x", "LD_PRELOAD=" + os.path.join(build, "libtnbc.so"),
                   "-x", "TNBC_MODE=nbc", "-x", "TNBC_MIN_BYTES=12k", "-x", "TNBC_BCAST_BACKEND=" + b,
                   "-x", "TNBC_OUTPUT_DIR=" + os.path.join(out, f"{b}-{run}")]
            if a.machine:
                cmd += ["-x", "TNBC_MACHINE=" + os.path.abspath(a.machine)]
            if b == "auto":
                cmd += ["-x", "TNBC_LOG=info"]
            cmd += [prog, "--kind", "bcast", "--sizes", a.sizes, "--reps", str(a.reps), "--calls", str(a.calls),
                    "--json", js]
            r = launch(cmd)
            if r.returncode != 0:
                print(r.stdout)
                sys.exit(f"bcast_backends: run {run} of {b} failed (exit {r.returncode})")
            # Every rank's summary: the same backends (alike), and for rma-*/p2p only the one asked for.
            per_rank = []
            for f in sorted(os.listdir(os.path.join(out, f"{b}-{run}"))):
                if f.startswith("tnbc-summary"):
                    per_rank.append(json.load(open(os.path.join(out, f"{b}-{run}", f)))["bcast_backends"])
            if len(per_rank) != a.np or any(u != per_rank[0] for u in per_rank):
                sys.exit(f"bcast_backends: run {run} of {b}: the ranks' broadcast backends differ: {per_rank}")
            used = per_rank[0]
            if b == "auto":
                for k, n in used.items():
                    auto_used[k] = auto_used.get(k, 0) + n
                auto_runs.append(parse_plan(r.stdout))
            elif used.get(b.replace("-", "_"), 0) == 0 or sum(used.values()) != used[b.replace("-", "_")]:
                sys.exit(f"bcast_backends: run {run} of {b}: broadcasts by backend {used}")
            for res in json.load(open(js))["results"]:
                n = res["bytes"]
                ratios[b].setdefault(n, []).append(res["ratio_median"])
                times[b].setdefault(n, []).append(res["mpi_us_per_call"])
                pmpi.setdefault(n, []).append(res["pmpi_us_per_call"])

    where = f"{a.nodes} emulated nodes at {a.rate}, pml {a.pml}" if a.nodes else "shared memory"
    print(f"bcast_backends: np {a.np}, {where}, {a.runs} runs per backend (interleaved), root 0, machine "
          f"{a.machine or 'the model start-up probe'};")
    print("  median over runs of MPI_Bcast/PMPI_Bcast (tnbc until every byte is read / the library's own)")
    print(f"  {'size':>10} {'PMPI_ us':>10} " + " ".join(f"{b:>14}" for b in COLUMNS) +
          f" {'fastest':>13} {'auto runs chose':>24} {'right':>6} {'auto x fastest':>14}   (min-max over runs)")
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
        # Each auto run's choice at this size against the measured fastest.
        chosen = [predicted(ar["ranges"], n) for ar in auto_runs]
        row["auto_choices"] = {c: chosen.count(c) for c in sorted(set(chosen))}
        row["auto_right"] = chosen.count(row["fastest"])
        row["auto_runs"] = len(chosen)
        row["auto_x_fastest"] = row["auto"]["ratio_median"] / row[row["fastest"]]["ratio_median"]
        choices = ",".join(f"{c} {k}" for c, k in row["auto_choices"].items())
        print(f"  {n:>10} {row['pmpi_us']:>10.0f} " + " ".join(f"{c:>14}" for c in cells) +
              f" {row['fastest']:>13} {choices:>24} {row['auto_right']:>3}/{row['auto_runs']:<2} "
              f"{row['auto_x_fastest']:14.2f}")
        table.append(row)
    right = sum(r["auto_right"] for r in table)
    total = sum(r["auto_runs"] for r in table)
    plans = [ar["plan"] for ar in auto_runs]
    common = max(set(plans), key=plans.count) if plans else None
    print(f"  auto's runs chose the measured fastest in {right} of {total} run-sizes; their broadcasts: {auto_used}")
    print(f"  auto's plans: {len(set(plans))} different in {len(plans)} runs; most often ({plans.count(common)}x): "
          f"{common}")
    for i, ar in enumerate(auto_runs):
        print(f"    run {i}: {ar['plan']} | {ar['probe']}")
    if a.json:
        json.dump({"np": a.np, "nodes": a.nodes, "rate": a.rate if a.nodes else None, "runs": a.runs, "pml": a.pml,
                   "machine": a.machine, "auto_runs": auto_runs, "auto_used": auto_used, "results": table},
                  open(a.json, "w"), indent=1)


def parse_plan(text):
    """An auto run's start-up lines: its plan over sizes (ranges: [(from bytes, backend)]) and RMA probe."""
    plan = re.search(r"TNBC_BCAST_BACKEND=auto on MPI_COMM_WORLD \(([^)]*)\): (.*)", text)
    probe = re.search(r"RMA probe \(.*", text)
    ranges = []
    if plan:
        for part in plan.group(2).split(", "):
            m = re.match(r"(\S+)(?: (?:from|below) ([\d.]+) (B|KiB|MiB|GiB))?", part)
            unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}.get(m.group(3), 1)
            ranges.append((float(m.group(2)) * unit if m.group(2) and " from " in part else 0, m.group(1)))
    elif "not usable" in text:
        ranges = [(0, "p2p")]
    return {"plan": plan.group(2) if plan else "(no plan printed: " + (probe.group(0) if probe else "no probe") + ")",
            "ranges": ranges, "probe": probe.group(0) if probe else None}


def predicted(ranges, n):
    return [b for f, b in ranges if f <= n][-1] if ranges else "?"

if __name__ == "__main__":
    main()
