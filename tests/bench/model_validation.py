#!/usr/bin/env python3
"""The cost model against measurements (docs/benchmarks.md, "The cost model against measurements").

usage: model_validation.py [--build-dir build] [--np 2] [--nodes 2] [--rate 1gbit | --net none]
                           [--sizes 64k,256k,1m,4m,16m] [--iterations 9] [--order permuted] [--seed 1] [--runs 1]
                           [--calibrations 1] [--launches 1] [--machine FILE ...]
                           [--out DIR] [--measured BLOCKING_TIMES_JSON ...]

On the emulated link (npb-harness/netrun.py, K emulated nodes, ranks block-wise) or on shared
memory (--net none: one node): `tnbc calibrate` measures the machine (unless --machine names
one), tests/bench/blocking_times measures the MPI library's own MPI_Bcast and MPI_Alltoall at
each size (sizes and kinds interleaved, each iteration in a fresh seeded order by default, the
i-th launch with seed S + i (--seed S), so that the launches mix different predecessors; --order
cyclic: the fixed cyclic order of the figures before session 15; median of the slowest rank's
time), and `tnbc predict`
gives the model's times for the same placement. Prints per case measured, predicted and the
relative error, then the median and worst relative error; writes OUT/validation.json. A
benchmark: run it under tnbc-quiet, never as a timed test.

--runs R: blocking_times runs R times, each its own launch (on shared memory the same call moves
by up to 1.5x between launches: docs/benchmarks.md); a case's measured time is the median of the
R runs' medians, its spread (max - min) / median over the runs, and the output gives the error
against each run alone too.

--calibrations K --launches L: K calibrations, each the median of L launches of `tnbc calibrate`
(`tnbc calibrate --combine`; launches interleaved with blocking_times', each kind spread evenly
over the whole call; L by
default as the harness calibrates: npb-harness/calibration.py launches_for), each
validated against the same measured runs: per calibration its median and worst error, then over
the K calibrations the largest median (is the goal met whichever calibration a user got?).
--machine FILE ...: several machine files (no calibration), the same per-file report.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETRUN = os.path.join(HERE, "..", "..", "npb-harness", "netrun.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "npb-harness"))
import calibration  # noqa: E402  (how many launches make a calibration: the harness's rule)


def launcher(a, prog):
    cmd = ["mpirun", "-np", str(a.np), "--oversubscribe"]
    if a.net == "shaped":
        if a.nodes > 1:
            cmd += ["--bind-to", "none"]  # emulated nodes share the CPUs (npb-harness/harness.py)
        return [sys.executable, NETRUN, "--rate", a.rate, "--nodes", str(a.nodes), "--"] + cmd + prog
    return cmd + prog


def run(cmd):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"model_validation: failed ({p.returncode}):\n{p.stdout[-3000:]}")
    return p.stdout


def calibrate(a, tnbc, path):
    """tnbc calibrate writing `path`, measured again while other processes or the hypervisor took the
    machine's CPUs (the harness's rule: npb-harness/calibration.py, until_undisturbed): a build beside
    a validation's calibration priced Tinit 2-5x high (docs/benchmarks.md, "Session 29")."""
    def launch(_first):
        run(launcher(a, [tnbc, "calibrate", "-o", path, "--max-bytes", "4m", "--quiet"]))
        return True
    calibration.until_undisturbed(launch, path, os.path.basename(path))


def spread(cals, bts):
    """The calibrate and blocking_times launches in one order, each kind spread evenly over the
    whole call (a launch draws the machine's state of its minutes: docs/benchmarks.md, sessions
    11-13), so that the measured launches span the period the calibrations do, not its start."""
    if not cals or not bts:
        return cals + bts
    many, few = (cals, bts) if len(cals) >= len(bts) else (bts, cals)
    out, j = [], 0
    for i, x in enumerate(many):
        out.append(x)
        # the few go after the many's (j + 1/2) / len(few) quantiles
        while j < len(few) and (i + 1) * len(few) >= (j + 0.5) * len(many):
            out.append(few[j])
            j += 1
    return out + few[j:]


def median(v):
    v = sorted(v)
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def placement_parser():
    """The options of the model's benchmarks (this one, early_return_cost.py): the build, the
    ranks and where they run."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--net", choices=["shaped", "none"], default="shaped")
    return ap


def parse_placement(ap):
    a = ap.parse_args()
    if a.net == "none":
        a.nodes = 1
    return a


def main():
    ap = placement_parser()
    ap.add_argument("--sizes", default="64k,256k,1m,4m,16m")
    ap.add_argument("--iterations", type=int, default=9)
    ap.add_argument("--order", choices=["permuted", "cyclic"], default="permuted",
                    help="blocking_times' order of the cases per iteration (cyclic: as before session 15)")
    ap.add_argument("--seed", type=int, default=1, help="blocking_times' seed of its first launch (then +1 per launch)")
    ap.add_argument("--runs", type=int, default=1, help="launches of blocking_times (medians over them)")
    ap.add_argument("--calibrations", type=int, default=1, help="calibrations, each validated on its own")
    ap.add_argument("--launches", type=int, default=None,
                    help="launches of tnbc calibrate per calibration (median; default: the harness's rule, "
                         "npb-harness/calibration.py launches_for: several where a node has more ranks than CPUs)")
    ap.add_argument("--machine", nargs="+", help="machine files to validate (instead of calibrating)")
    ap.add_argument("--measured", nargs="+", help="blocking_times' JSONs of earlier runs (with --machine): predict "
                                                  "again, measure nothing (after a change to the estimators)")
    ap.add_argument("--out", default="model-validation")
    a = parse_placement(ap)
    if a.launches is None:
        a.launches = calibration.launches_for(-(-a.np // a.nodes), max(1, len(os.sched_getaffinity(0)) // a.nodes))
    os.makedirs(a.out, exist_ok=True)
    tnbc = os.path.join(a.build_dir, "tools", "tnbc")
    if a.measured and not a.machine:
        sys.exit("model_validation: --measured needs the --machine those times were measured with")
    if a.runs < 1 or a.calibrations < 1 or a.launches < 1:
        sys.exit("model_validation: --runs, --calibrations and --launches must be at least 1")
    measured_jsons = a.measured or [os.path.join(a.out, "blocking_times.json" if a.runs == 1 else
                                                 f"blocking_times.{i}.json") for i in range(a.runs)]
    launches = [os.path.join(a.out, f"machine.{k}.{j}.json") for k in range(a.calibrations) for j in range(a.launches)]
    cals = [] if a.machine else [("cal", p) for p in launches]
    bts = [] if a.measured else [("bt", p) for p in measured_jsons]
    if a.seed < 0:
        sys.exit("model_validation: --seed must not be negative")
    seeds = {path: a.seed + i for i, path in enumerate(measured_jsons)}
    for what, path in spread(cals, bts):
        if what == "cal":
            calibrate(a, tnbc, path)
        else:
            run(launcher(a, [os.path.join(a.build_dir, "tests", "bench", "blocking_times"), "--sizes", a.sizes,
                             "--iterations", str(a.iterations), "--order", a.order, "--seed", str(seeds[path]),
                             "--json", path]))
    machines = a.machine
    if not machines:
        machines = []
        for k in range(a.calibrations):
            group = launches[k * a.launches:(k + 1) * a.launches]
            if len(group) == 1:
                machines.append(group[0])
                continue
            machines.append(os.path.join(a.out, f"machine.{k}.json"))
            run([tnbc, "calibrate", "--combine"] + group + ["-o", machines[-1]])
    runs = [{(r["kind"], r["bytes"]): r["median_s"] for r in json.load(open(path))["results"]}
            for path in measured_jsons]
    where = f"np={a.np}, {a.nodes} node(s), " + (f"emulated link {a.rate}" if a.net == "shaped" else "shared memory")
    per_machine = [validate(a, tnbc, machine, runs, where) for machine in machines]
    medians = [v["median_abs_error"] for v in per_machine if v["median_abs_error"] is not None]
    if len(per_machine) > 1 and medians:
        print(f"\nover {len(per_machine)} calibrations ({where}): median |error| per calibration " +
              ", ".join(f"{100 * e:.0f}%" for e in medians) + f"; largest {100 * max(medians):.0f}%, worst case "
              f"{100 * max(v['worst_abs_error'] for v in per_machine):.0f}%")
    with open(os.path.join(a.out, "validation.json"), "w") as f:
        json.dump({"format": "tnbc-model-validation", "version": 3, "where": where, "runs": len(runs),
                   "launches_per_calibration": a.launches, "calibrations": per_machine}, f, indent=1)


def validate(a, tnbc, machine, runs, where):
    """The model from one machine file against the measured runs: rows and summary."""
    per_node = (a.np + a.nodes - 1) // a.nodes
    pred = json.loads(run([tnbc, "predict", machine, "--np", str(a.np), "--per-node", str(per_node),
                           "--sizes", a.sizes, "--json"]))
    predicted = {(r["kind"], r["bytes"]): r["blocking_s"] for r in pred["results"]}
    rows, errors, spreads = [], [], []
    per_run = [[] for _ in runs]
    for key in runs[0]:
        p = predicted.get(key)
        times = [r[key] for r in runs if key in r]
        if p is None or len(times) != len(runs):
            continue
        m = median(times)
        err = (p - m) / m
        errors.append(abs(err))
        spread = (max(times) - min(times)) / m
        spreads.append(spread)
        for i, t in enumerate(times):
            per_run[i].append(abs((p - t) / t))
        rows.append({"kind": key[0], "bytes": key[1], "measured_s": m, "runs_s": times, "spread": spread,
                     "predicted_s": p, "relative_error": err})
    print(f"\nthe model against the MPI library's blocking calls ({where}; machine {machine}; "
          f"{len(runs)} run(s), measured = the median of the runs' medians):")
    print(f"  {'kind':9} {'bytes':>10} {'measured us':>12} {'spread':>7} {'predicted us':>13} {'error':>8}")
    for r in rows:
        print(f"  {r['kind']:9} {r['bytes']:>10} {r['measured_s'] * 1e6:12.1f} {100 * r['spread']:6.0f}% "
              f"{r['predicted_s'] * 1e6:13.1f} {100 * r['relative_error']:+7.0f}%")
    summary = {"machine": machine, "median_abs_error": median(errors) if errors else None,
               "worst_abs_error": max(errors) if errors else None,
               "median_spread": median(spreads) if spreads else None,
               "per_run_median_abs_error": [median(e) if e else None for e in per_run]}
    if errors:
        print(f"  median |error| {100 * summary['median_abs_error']:.0f}%, worst {100 * summary['worst_abs_error']:.0f}%; "
              f"spread between runs: median {100 * summary['median_spread']:.0f}%, largest {100 * max(spreads):.0f}%")
        if len(runs) > 1:
            print("  median |error| against each run alone: " +
                  ", ".join(f"{100 * e:.0f}%" for e in summary["per_run_median_abs_error"]))
    return {**summary, "rows": rows}


if __name__ == "__main__":
    main()
