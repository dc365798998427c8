#!/usr/bin/env python3
"""Early return read at once, against the MPI library's own call (docs/benchmarks.md, "RMA
broadcast", session 13): tests/bench/read_once in mode nbc, TNBC_MIN_BYTES=auto (the model decides
per size whether a call returns early), over several launches.

usage: read_once.py --build-dir BUILD [--np 4] [--nodes K --rate 1gbit] [--kinds bcast,alltoall]
                    [--sizes 64k,256k,1M,4M] [--runs 6] [--reps 5] [--calls 4]
                    [--machines probe,cal] [--machine FILE] [--lib LABEL=PATH ...] [--out DIR] [--json FILE]

Variants: every libtnbc.so given (--lib; default the build's) with every machine source
(--machines: `probe`, the model's start-up probe; `cal`, TNBC_MACHINE from `tnbc calibrate`, run
once first in this placement unless --machine names a file). They are interleaved run by run
(for each run, one launch per variant, in rotated order). A cell is the median over runs of each
run's median MPI_/PMPI_ ratio (its range over runs); each launch's summary gives the sizes the
model returned early at (`model.early_return_sizes`), equal on every rank or the run fails, and
every launch must verify its data. A benchmark: run it under tnbc-quiet, never as a timed test.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NETRUN = os.path.join(REPO, "npb-harness", "netrun.py")
sys.path.insert(0, os.path.join(REPO, "npb-harness"))
import calibration  # noqa: E402  (a disturbed calibration measured again: the harness's rule)
KIND_KEY = {"bcast": "bcast", "alltoall": "alltoall", "alltoallv": "alltoall"}  # summary's kind per driver kind


def human(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def bands_text(ranges):
    if not ranges:
        return "never"
    return ", ".join(f"from {human(f)}" if t is None else f"{human(f)}-{human(t)}" for f, t in ranges)


def inside(ranges, n):
    return any(n >= f and (t is None or n < t) for f, t in ranges)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=0, help="emulated nodes (netrun.py); 0: shared memory")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--kinds", default="bcast,alltoall")
    ap.add_argument("--sizes", default="64k,256k,1M,4M")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--machines", default="probe,cal")
    ap.add_argument("--machine", help="the machine file for `cal` (else tnbc calibrate runs first)")
    ap.add_argument("--lib", action="append", default=[], help="LABEL=PATH of a libtnbc.so (repeatable)")
    ap.add_argument("--out")
    ap.add_argument("--json")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    out = a.out or tempfile.mkdtemp(prefix="read-once-")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    libs = [tuple(x.split("=", 1)) for x in a.lib] or [("build", os.path.join(build, "libtnbc.so"))]
    machines = a.machines.split(",")
    if any(m not in ("probe", "cal") for m in machines):
        sys.exit("read_once: --machines takes probe and/or cal")

    def launch(cmd):
        cmd = ["mpirun", "--oversubscribe", "-np", str(a.np)] + (["--bind-to", "none"] if a.nodes > 1 else []) + cmd
        if a.nodes:
            cmd = [sys.executable, NETRUN, "--nodes", str(a.nodes), "--rate", a.rate, "--"] + cmd
        return subprocess.run(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    machine = os.path.abspath(a.machine) if a.machine else None
    if "cal" in machines and not machine:
        machine = os.path.join(out, "machine.json")

        def calibrate(_first):
            r = launch([os.path.join(build, "tools", "tnbc"), "calibrate", "-o", machine, "--max-bytes", "4m",
                        "--quiet"])
            if r.returncode != 0:
                print(r.stdout)
                sys.exit("read_once: tnbc calibrate failed")
            return True
        calibration.until_undisturbed(calibrate, machine, "read_once")
    variants = [(f"{lab}/{m}", path, m) for lab, path in libs for m in machines]
    ratios = {}   # (variant, kind, bytes) -> [run's median ratio]
    pmpi = {}     # (kind, bytes) -> [PMPI_ us per run]
    bands = {}    # (variant, kind) -> [ranges per run]
    for run in range(a.runs):
        k = run % len(variants)
        for name, lib, m in variants[k:] + variants[:k]:
            tag = f"{name.replace('/', '-')}-{run}"
            js = os.path.join(out, tag + ".json")
            cmd = ["-x", "LD_PRELOAD=" + os.path.abspath(lib), "-x", "TNBC_MODE=nbc", "-x", "TNBC_MIN_BYTES=auto",
                   "-x", "TNBC_OUTPUT_DIR=" + os.path.join(out, tag)]
            if m == "cal":
                cmd += ["-x", "TNBC_MACHINE=" + machine]
            cmd += [os.path.join(build, "tests", "bench", "read_once"), "--kinds", a.kinds, "--sizes", a.sizes,
                    "--reps", str(a.reps), "--calls", str(a.calls), "--json", js]
            r = launch(cmd)
            if r.returncode != 0:
                print(r.stdout)
                sys.exit(f"read_once: run {run} of {name} failed (exit {r.returncode})")
            per_rank = [json.load(open(f))["model"]["early_return_sizes"]
                        for f in sorted(glob.glob(os.path.join(out, tag, "tnbc-summary*.json")))]
            if len(per_rank) != a.np or any(p != per_rank[0] for p in per_rank):
                sys.exit(f"read_once: run {run} of {name}: the ranks' early-return sizes differ: {per_rank}")
            for kind in a.kinds.split(","):
                bands.setdefault((name, kind), []).append(per_rank[0][KIND_KEY[kind]])
            for res in json.load(open(js))["results"]:
                key = (res["kind"], res["bytes"])
                ratios.setdefault((name,) + key, []).append(res["ratio_median"])
                pmpi.setdefault(key, []).append(res["pmpi_us_per_call"])
    where = f"{a.nodes} emulated nodes at {a.rate}" if a.nodes else "shared memory"
    print(f"read_once: np {a.np}, {where}, {a.runs} runs per variant (interleaved), mode nbc, TNBC_MIN_BYTES=auto; "
          f"machine for cal: {machine}")
    print("  median over runs of MPI_X/PMPI_X, every byte read right after the call (min-max over runs); "
          "* : the model returned early at this size (in how many runs)")
    table = []
    for kind in a.kinds.split(","):
        for name, _, _ in variants:
            rs = bands[(name, kind)]
            texts = [bands_text(b) for b in rs]
            print(f"  {kind:9} {name:18} early return at: " +
                  "; ".join(f"{t} ({texts.count(t)})" for t in sorted(set(texts), key=texts.index)))
        print(f"  {'':9} {'size':>10} {'PMPI_ us':>10} " + " ".join(f"{n:>24}" for n, _, _ in variants))
        for (k, n) in sorted(key for key in pmpi if key[0] == kind):
            row = {"kind": kind, "bytes": n, "pmpi_us": statistics.median(pmpi[(k, n)])}
            cells = []
            for name, _, _ in variants:
                rs = ratios[(name, k, n)]
                early = sum(inside(b, n) for b in bands[(name, kind)])
                row[name] = {"ratio_median": statistics.median(rs), "ratio_min": min(rs), "ratio_max": max(rs),
                             "ratios": rs, "early_runs": early}
                cells.append(f"{statistics.median(rs):5.2f} ({min(rs):.2f}-{max(rs):.2f})" + (f"*{early}" if early else "  "))
            print(f"  {'':9} {human(n):>10} {row['pmpi_us']:>10.0f} " + " ".join(f"{c:>24}" for c in cells))
            table.append(row)
    if a.json:
        json.dump({"np": a.np, "nodes": a.nodes, "rate": a.rate if a.nodes else None, "runs": a.runs,
                   "machine": machine, "variants": [v[0] for v in variants],
                   "bands": {f"{n}|{k}": b for (n, k), b in bands.items()}, "results": table},
                  open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
