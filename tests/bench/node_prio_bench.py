#!/usr/bin/env python3
"""Node-level priorities on vs off (docs/benchmarks.md, "Node-level priorities"): the time until
every rank has its first-read sub-message, and until it has all of them (tests/bench/first_read.c),
on the emulated network (npb-harness/netrun.py: K=1, one shaped loopback shared by the np ranks;
K>1, one shaped link per node, ranks block-wise).

Per configuration (nodes, bytes per peer, order): a trace pass and `tnbc merge` (the profile gives
the read order), then REPS rounds, each running every TNBC_NODE_PRIORITIES value of --settings
(default on,off; auto: the cost model's verdict, runtime/node_choice.hh, in --auto-reps rounds:
auto runs what on or off runs, the rounds show which) in mode optimize with
that profile (TNBC_PROFILE_BLOCKING=off: the calls return early), the order rotating between
rounds. Each run reports the medians over its iterations; the table gives the median over the
rounds and the ratio on/off. Per run the summaries say how many calls arbitration ran on and
auto's basis. --reps 0 runs the trace pass only and prints `tnbc merge`'s verdicts. On one node (K=1) the ranks reach each other
through the shaped loopback (Open MPI over TCP), so TNBC_NODE_LOCAL_SENDS=link: their sends to
each other are what shares the link. Run it under tnbc-quiet.

--calibrate measures the machine first (`tnbc calibrate` with np ranks in the same network
configuration, OUT/machine.kK.json) and --machine K=FILE,... gives one per node count: every run
of that configuration (trace, merge's verdicts, every setting) then uses it as TNBC_MACHINE, so
auto decides on a calibrated machine and not on the start-up probe's.

The trace passes of every configuration come first; then --reps rounds, each running every
configuration and setting once (so --time-limit, or an outer timeout, leaves every configuration
with runs; the raw runs are written after each round).

--program table1 runs the Table 1 micro-benchmark instead (tests/bench/table1_alltoall, scenarios
(b)-(e)) in the same way and reports tnbc's achieved/ideal and total time per scenario, on vs off.

usage: node_prio_bench.py --build-dir BUILD [--program first_read|table1] [--np 4] [--nodes 1,2]
                          [--bytes 1M,4M] [--orders seq,swap] [--settings on,off,auto] [--reps 6] [--auto-reps N]
                          [--iterations 8] [--calibration N] [--time-limit S] [--rate 1gbit] [--calibrate | --machine 1=F1,2=F2]
                          [--out DIR] [--profiles EARLIER_OUT]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NETRUN = os.path.join(REPO, "npb-harness", "netrun.py")
sys.path.insert(0, os.path.join(REPO, "npb-harness"))
import calibration  # noqa: E402  (a disturbed calibration measured again: the harness's rule)


def run(a, nodes, env_extra, args, outdir, prog=None):
    lib = os.path.abspath(os.path.join(a.build_dir, "libtnbc.so"))
    if prog is None:
        prog = os.path.join(a.build_dir, "tests", "bench",
                            "first_read" if a.program == "first_read" else "table1_alltoall")
        exports = {"LD_PRELOAD": lib, "TNBC_OUTPUT_DIR": outdir, **env_extra}
    else:  # tnbc calibrate: the MPI library's own calls, nothing preloaded
        exports = dict(env_extra)
    cmd = [sys.executable, NETRUN, "--rate", a.rate]
    if nodes > 1:
        cmd += ["--nodes", str(nodes)]
    cmd += ["--", "mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(a.np)]
    for k, v in exports.items():
        cmd += ["-x", f"{k}={v}"]
    cmd += [prog] + args
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if p.returncode != 0:
        print(p.stdout)
        sys.exit(f"run failed: {' '.join(cmd)}")
    return p.stdout


def node_counters(outdir):
    """Summed over the ranks' summaries: calls arbitrated and not, holds, hold time-outs, and
    the bases (runtime/node_choice.hh) the sites gave."""
    calls = off_calls = holds = timeouts = 0
    bases = set()
    for path in glob.glob(os.path.join(outdir, "tnbc-summary.*.json")):
        with open(path) as f:
            s = json.load(f)
        for site in s["sites"]:
            n = site.get("node_priorities")
            if n:
                calls += n["calls"]
                off_calls += n["off_calls"]
                holds += n["holds"]
                timeouts += n["hold_timeouts"]
                bases.add(n["basis"])
    return {"calls": calls, "off_calls": off_calls, "holds": holds, "hold_timeouts": timeouts, "bases": sorted(bases)}


def read_order(order, n):
    """first_read.c's read order of the blocks (seq: 0..n-1; swap: n-1, 1, .., n-2, 0)."""
    return [n - 1] + list(range(1, n - 1)) + [0] if order == "swap" and n > 1 else list(range(n))


def runtime_arrivals(outdir, order, n):
    """The runtime's own per-sub-message arrival times (the summaries' `timelines`: the observed
    calls of each site, docs/formats.md), per observed call but the site's first (first_read's
    warm-up): the time from the call until EVERY rank had its first-read block (the first block of
    the read order, as first_read.c reads it: a rank whose first block is its own has it at the
    return, 0 here) and until every rank had every block, ms. Calls observed on fewer than n ranks
    are left out. (The summary's own `first_read_ms_mean` skips a rank's own block: at the rank
    every other reads from first, it is the next block's time.)"""
    per_call = {}
    for path in glob.glob(os.path.join(outdir, "tnbc-summary.*.json")):
        with open(path) as f:
            s = json.load(f)
        me = s["rank"]
        for site in s["sites"]:
            if site["kind"] != "alltoall":
                continue
            for t in site.get("timelines") or []:
                if t["call"] == 0:
                    continue
                arr = t["arrival_ns"]
                got = [arr[b] for b in range(len(arr)) if b != me]
                b0 = read_order(order, n)[0]
                first = 0 if b0 == me else (arr[b0] if b0 < len(arr) else None)
                if first is None or first < 0 or min(got) < 0:
                    continue
                per_call.setdefault(t["call"], []).append((first / 1e6, max(got) / 1e6))
    calls = [v for _, v in sorted(per_call.items()) if len(v) == n]
    return {"runtime_first_ms": [max(x[0] for x in v) for v in calls],
            "runtime_all_ms": [max(x[1] for x in v) for v in calls]}


def machine_files(a, out):
    """Node count -> machine file: --machine K=FILE, or with --calibrate `tnbc calibrate` run now
    in each configuration (np ranks; one node: over the shaped loopback, as the runs)."""
    files = {}
    for item in filter(None, (a.machine or "").split(",")):
        k, _, path = item.partition("=")
        files[int(k)] = os.path.abspath(path)
    if a.calibrate:
        tool = os.path.abspath(os.path.join(a.build_dir, "tools", "tnbc"))
        for nodes in [int(x) for x in a.nodes.split(",")]:
            if nodes in files:
                continue
            path = os.path.join(out, f"machine.k{nodes}.json")

            def calibrate(_first, nodes=nodes, path=path):
                run(a, nodes, {}, ["calibrate", "-o", path, "--max-bytes", "4m"], out, prog=tool)
                return True
            calibration.until_undisturbed(calibrate, path, f"k{nodes}")
            files[nodes] = path
            print(f"k{nodes}: machine {path}", flush=True)
    return files


def summarize(a, cfg, settings, per, counters):
    """One configuration's row from its runs so far (medians over the runs), printed."""
    tag = cfg["tag"]
    row = {"nodes": cfg["nodes"], "np": a.np, "bytes": cfg["size"], "order": cfg["order"], "rate": a.rate,
           "reps": {x: len(per[x]) for x in settings}, "iterations": a.iterations, "machine": cfg["machine"],
           "merge_verdicts": cfg["verdicts"], "counters": counters, "runs": per}
    for setting in settings:
        c = counters[setting]
        print(f"{tag} {setting}: {len(per[setting])} runs, arbitrated calls {sum(x['calls'] for x in c)}, not "
              f"{sum(x['off_calls'] for x in c)}, holds {sum(x['holds'] for x in c)}, hold timeouts "
              f"{sum(x['hold_timeouts'] for x in c)}, bases {sorted({b for x in c for b in x['bases']})}",
              flush=True)
    done = [x for x in settings if per[x]]
    if a.program == "table1":
        for setting in done:
            for run_json in per[setting]:
                for sc in run_json["scenarios"]:
                    t = {v["name"]: v for v in sc["variants"]}["tnbc"]
                    r = row.setdefault(sc["id"], {x: {"ach": [], "total_ms": []} for x in settings})
                    r[setting]["ach"].append(t["achieved_over_ideal"])
                    r[setting]["total_ms"].append(t["total_s"] * 1e3)
        for sc in "bcde":
            r = row.get(sc)
            if not r:
                continue
            line = []
            for setting in done:
                x = r[setting]
                x["ach_median"] = statistics.median(x["ach"])
                x["total_median_ms"] = statistics.median(x["total_ms"])
                line.append(f"{setting} ach/ideal {x['ach_median']:.2f} [{min(x['ach']):.2f}-{max(x['ach']):.2f}]"
                            f" total {x['total_median_ms']:.1f} ms [{min(x['total_ms']):.1f}-"
                            f"{max(x['total_ms']):.1f}]")
            if "on" in done and "off" in done:
                r["total_ratio"] = r["on"]["total_median_ms"] / r["off"]["total_median_ms"]
                line.append(f"on/off total {r['total_ratio']:.2f}")
            print(f"{tag} ({sc}): " + "; ".join(line), flush=True)
        return row
    for setting in done:
        row[f"first_{setting}_ms"] = statistics.median(r["first_ms"] for r in per[setting])
        row[f"all_{setting}_ms"] = statistics.median(r["all_ms"] for r in per[setting])
        row[f"first_{setting}_runs"] = [r["first_ms"] for r in per[setting]]
        row[f"all_{setting}_runs"] = [r["all_ms"] for r in per[setting]]
        row[f"holds_{setting}"] = sum(c["holds"] for c in counters[setting])
        row[f"hold_timeouts_{setting}"] = sum(c["hold_timeouts"] for c in counters[setting])
        row[f"arbitrated_calls_{setting}"] = sum(c["calls"] for c in counters[setting])
        for what in ("first", "all"):  # the runtime's arrival times: every observed call of every run
            calls = [x for c in counters[setting] for x in c.get(f"runtime_{what}_ms", [])]
            row[f"runtime_{what}_{setting}_calls"] = calls
            row[f"runtime_{what}_{setting}_ms"] = statistics.median(calls) if calls else None
    line = []
    for setting in done:
        runs = row[f"first_{setting}_runs"]
        rt, n = row[f"runtime_first_{setting}_ms"], len(row[f"runtime_first_{setting}_calls"])
        line.append(f"first-read {setting} {row[f'first_{setting}_ms']:.1f} [{min(runs):.1f}-{max(runs):.1f}] ms"
                    f", all {row[f'all_{setting}_ms']:.1f} ms; runtime's arrivals: first "
                    + (f"{rt:.1f} ms, all {row[f'runtime_all_{setting}_ms']:.1f} ms ({n} calls)" if n else "-"))
    if "on" in done and "off" in done:
        row["first_ratio"] = row["first_on_ms"] / row["first_off_ms"]
        row["all_ratio"] = row["all_on_ms"] / row["all_off_ms"]
        line.append(f"on/off first {row['first_ratio']:.2f} all {row['all_ratio']:.2f}")
        if row["runtime_first_on_ms"] and row["runtime_first_off_ms"]:
            row["runtime_first_ratio"] = row["runtime_first_on_ms"] / row["runtime_first_off_ms"]
            row["runtime_all_ratio"] = row["runtime_all_on_ms"] / row["runtime_all_off_ms"]
            line.append(f"runtime's arrivals on/off first {row['runtime_first_ratio']:.2f} "
                        f"all {row['runtime_all_ratio']:.2f}")
    print(f"{tag}: " + "; ".join(line), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--program", choices=["first_read", "table1"], default="first_read")
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--nodes", default="1,2")
    ap.add_argument("--bytes", default="1M,4M")
    ap.add_argument("--orders", default="seq,swap")
    ap.add_argument("--settings", default="on,off")
    ap.add_argument("--auto-reps", type=int, help="rounds that run auto (default: --reps; it repeats on or off)")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--machine")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--calibration", type=int, help="table1: blocking calls that measure Tcomm first (its default: 5)")
    ap.add_argument("--time-limit", type=float, help="seconds: start no run after this (the rounds so far are reported)")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--out")
    ap.add_argument("--profiles", help="an earlier --out: reuse its trace passes (same configurations), so that a "
                                       "second call adds rounds to the first one's")
    a = ap.parse_args()
    begun = time.monotonic()
    out = a.out or tempfile.mkdtemp(prefix="tnbc-node-prio-bench-")
    os.makedirs(out, exist_ok=True)
    tool = os.path.join(a.build_dir, "tools", "tnbc")
    settings = [x for x in a.settings.split(",") if x]
    if not settings or any(x not in ("on", "off", "auto") for x in settings):
        sys.exit("--settings: a list of on, off, auto")
    machines = machine_files(a, out)
    # Every configuration's trace pass and auto's verdicts first; then the rounds, each running every
    # configuration and setting once, so that a time limit leaves every configuration with runs.
    configs = []
    for nodes in [int(x) for x in a.nodes.split(",")]:
        for size in a.bytes.split(","):
            for order in a.orders.split(","):
                tag = f"k{nodes}-{size}-{order}"
                args = ["--bytes", size, "--order", order, "--iterations", str(a.iterations)]
                if a.program == "table1":
                    args += ["--scenarios", "bcde"]
                    if a.calibration:
                        args += ["--calibration", str(a.calibration)]
                base = {"TNBC_NODE_LOCAL_SENDS": "link"} if nodes == 1 else {}
                if nodes in machines:
                    base["TNBC_MACHINE"] = machines[nodes]
                trace_dir = os.path.join(out, tag, "trace")
                profile = os.path.join(out, tag, "profile.json")
                reuse = a.profiles and os.path.exists(os.path.join(a.profiles, tag, "trace"))
                if reuse:  # an earlier call's trace pass (--profiles): its runs continue that call's
                    trace_dir = os.path.join(a.profiles, tag, "trace")
                else:
                    run(a, nodes, {**base, "TNBC_MODE": "trace"}, args, trace_dir)
                # merge prints auto's verdict per site (on the machine file, with the runs' settings).
                m = subprocess.run([tool, "merge", trace_dir, "-o", profile] +
                                   (["--machine", machines[nodes]] if nodes in machines else []),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env=dict(os.environ, **base, TNBC_PROFILE_BLOCKING="off"))
                if m.returncode != 0:
                    sys.exit(m.stdout)
                verdicts = [l.strip() for l in m.stdout.splitlines() if "node-level priorities" in l]
                for l in verdicts:
                    print(f"{tag}: merge: {l}", flush=True)
                configs.append({"tag": tag, "nodes": nodes, "size": size, "order": order, "args": args, "base": base,
                                "profile": profile, "verdicts": verdicts, "machine": machines.get(nodes),
                                "per": {x: [] for x in settings}, "counters": {x: [] for x in settings}})
    results_path = os.path.join(out, "node_prio_bench.json")

    def write(rows):
        with open(results_path, "w") as f:
            json.dump(rows, f, indent=1)

    if a.reps == 0:  # --reps 0: the trace passes and auto's verdicts only
        write([{"nodes": c["nodes"], "bytes": c["size"], "order": c["order"], "machine": c["machine"],
                "merge_verdicts": c["verdicts"]} for c in configs])
        print(f"results: {results_path}")
        return
    cut = False
    for rep in range(a.reps):
        for cfg in configs:
            for setting in settings[rep % len(settings):] + settings[:rep % len(settings)]:
                if setting == "auto" and a.auto_reps is not None and rep >= a.auto_reps:
                    continue
                if a.time_limit is not None and time.monotonic() - begun > a.time_limit:
                    cut = True
                    break
                d = os.path.join(out, cfg["tag"], f"{setting}{rep}")
                js = d + ".json"
                env = {**cfg["base"], "TNBC_MODE": "optimize", "TNBC_PROFILE": cfg["profile"],
                       "TNBC_PROFILE_BLOCKING": "off", "TNBC_NODE_PRIORITIES": setting}
                run(a, cfg["nodes"], env, cfg["args"] + ["--json", js], d)
                with open(js) as f:
                    cfg["per"][setting].append(json.load(f))
                cfg["counters"][setting].append(node_counters(d))
                if a.program == "first_read":
                    cfg["counters"][setting][-1].update(runtime_arrivals(d, cfg["order"], a.np))
        # raw runs after every round: a run cut by an outer time limit keeps the rounds before it
        write([{"tag": c["tag"], "runs": c["per"], "counters": c["counters"]} for c in configs])
        print(f"round {rep} done at {time.monotonic() - begun:.0f} s", flush=True)
        if cut:
            print(f"--time-limit {a.time_limit:.0f} s: no run started after it (round {rep} incomplete)", flush=True)
            break
    write([summarize(a, c, settings, c["per"], c["counters"]) for c in configs])
    print(f"results: {results_path}")


if __name__ == "__main__":
    main()
