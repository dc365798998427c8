#!/usr/bin/env python3
"""Node-level priorities on vs off (docs/benchmarks.md, "Node-level priorities"): the time until
every rank has its first-read sub-message, and until it has all of them (tests/bench/first_read.c),
on the emulated network (npb-harness/netrun.py: K=1, one shaped loopback shared by the np ranks;
K>1, one shaped link per node, ranks block-wise).

Per configuration (nodes, bytes per peer, order): a trace pass and `tnbc merge` (the profile gives
the read order), then REPS rounds, each running TNBC_NODE_PRIORITIES=on and =off in mode optimize
with that profile (TNBC_PROFILE_BLOCKING=off: the calls return early), the order of the two
alternating between rounds. Each run reports the medians over its iterations; the table gives
the median over the rounds and the ratio on/off. On one node (K=1) the ranks reach each other
through the shaped loopback (Open MPI over TCP), so TNBC_NODE_LOCAL_SENDS=link: their sends to
each other are what shares the link. Run it under tnbc-quiet.

--program table1 runs the Table 1 micro-benchmark instead (tests/bench/table1_alltoall, scenarios
(b)-(e)) in the same way and reports tnbc's achieved/ideal and total time per scenario, on vs off.

usage: node_prio_bench.py --build-dir BUILD [--program first_read|table1] [--np 4] [--nodes 1,2]
                          [--bytes 1M,4M] [--orders seq,swap] [--reps 6] [--iterations 8]
                          [--rate 1gbit] [--out DIR]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NETRUN = os.path.join(REPO, "npb-harness", "netrun.py")


def run(a, nodes, env_extra, args, outdir):
    lib = os.path.abspath(os.path.join(a.build_dir, "libtnbc.so"))
    prog = os.path.join(a.build_dir, "tests", "bench", "first_read" if a.program == "first_read" else "table1_alltoall")
    exports = {"LD_PRELOAD": lib, "TNBC_OUTPUT_DIR": outdir, **env_extra}
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
    calls = holds = timeouts = 0
    for path in glob.glob(os.path.join(outdir, "tnbc-summary.*.json")):
        with open(path) as f:
            s = json.load(f)
        for site in s["sites"]:
            n = site.get("node_priorities")
            if n:
                calls += n["calls"]
                holds += n["holds"]
                timeouts += n["hold_timeouts"]
    return {"calls": calls, "holds": holds, "hold_timeouts": timeouts}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--program", choices=["first_read", "table1"], default="first_read")
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--nodes", default="1,2")
    ap.add_argument("--bytes", default="1M,4M")
    ap.add_argument("--orders", default="seq,swap")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--out")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="tnbc-node-prio-bench-")
    os.makedirs(out, exist_ok=True)
    tool = os.path.join(a.build_dir, "tools", "tnbc")
    results = []
    for nodes in [int(x) for x in a.nodes.split(",")]:
        for size in a.bytes.split(","):
            for order in a.orders.split(","):
                tag = f"k{nodes}-{size}-{order}"
                args = ["--bytes", size, "--order", order, "--iterations", str(a.iterations)]
                if a.program == "table1":
                    args += ["--scenarios", "bcde"]
                base = {"TNBC_NODE_LOCAL_SENDS": "link"} if nodes == 1 else {}
                trace_dir = os.path.join(out, tag, "trace")
                run(a, nodes, {**base, "TNBC_MODE": "trace"}, args, trace_dir)
                profile = os.path.join(out, tag, "profile.json")
                m = subprocess.run([tool, "merge", trace_dir, "-o", profile], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
                if m.returncode != 0:
                    sys.exit(m.stdout)
                per = {"on": [], "off": []}
                counters = {"on": [], "off": []}
                for rep in range(a.reps):
                    for setting in (("on", "off") if rep % 2 == 0 else ("off", "on")):
                        d = os.path.join(out, tag, f"{setting}{rep}")
                        js = d + ".json"
                        env = {**base, "TNBC_MODE": "optimize", "TNBC_PROFILE": profile, "TNBC_PROFILE_BLOCKING": "off",
                               "TNBC_NODE_PRIORITIES": setting}
                        run(a, nodes, env, args + ["--json", js], d)
                        with open(js) as f:
                            per[setting].append(json.load(f))
                        counters[setting].append(node_counters(d))
                row = {"nodes": nodes, "np": a.np, "bytes": size, "order": order, "rate": a.rate, "reps": a.reps,
                       "iterations": a.iterations}
                if a.program == "table1":
                    for setting in ("on", "off"):
                        for run_json in per[setting]:
                            for sc in run_json["scenarios"]:
                                t = {v["name"]: v for v in sc["variants"]}["tnbc"]
                                r = row.setdefault(sc["id"], {"on": {"ach": [], "total_ms": []},
                                                              "off": {"ach": [], "total_ms": []}})
                                r[setting]["ach"].append(t["achieved_over_ideal"])
                                r[setting]["total_ms"].append(t["total_s"] * 1e3)
                    for sc in "bcde":
                        r = row.get(sc)
                        if not r:
                            continue
                        for setting in ("on", "off"):
                            r[setting]["ach_median"] = statistics.median(r[setting]["ach"])
                            r[setting]["total_median_ms"] = statistics.median(r[setting]["total_ms"])
                        print(f"{tag} ({sc}): ach/ideal on {r['on']['ach_median']:.2f} [{min(r['on']['ach']):.2f}-"
                              f"{max(r['on']['ach']):.2f}] off {r['off']['ach_median']:.2f} [{min(r['off']['ach']):.2f}-"
                              f"{max(r['off']['ach']):.2f}]; "
                              f"total on {r['on']['total_median_ms']:.1f} ms off {r['off']['total_median_ms']:.1f} ms "
                              f"({r['on']['total_median_ms'] / r['off']['total_median_ms']:.2f})", flush=True)
                    results.append(row)
                    continue
                for setting in ("on", "off"):
                    row[f"first_{setting}_ms"] = statistics.median(r["first_ms"] for r in per[setting])
                    row[f"all_{setting}_ms"] = statistics.median(r["all_ms"] for r in per[setting])
                    row[f"first_{setting}_runs"] = [r["first_ms"] for r in per[setting]]
                    row[f"holds_{setting}"] = sum(c["holds"] for c in counters[setting])
                    row[f"hold_timeouts_{setting}"] = sum(c["hold_timeouts"] for c in counters[setting])
                    row[f"arbitrated_calls_{setting}"] = sum(c["calls"] for c in counters[setting])
                row["first_ratio"] = row["first_on_ms"] / row["first_off_ms"]
                row["all_ratio"] = row["all_on_ms"] / row["all_off_ms"]
                results.append(row)
                spread = {k: f"[{min(row[f'first_{k}_runs']):.1f}-{max(row[f'first_{k}_runs']):.1f}]" for k in ("on", "off")}
                print(f"{tag}: first-read on {row['first_on_ms']:.1f} {spread['on']} ms / off {row['first_off_ms']:.1f} "
                      f"{spread['off']} ms = {row['first_ratio']:.2f}; all on {row['all_on_ms']:.1f} / off {row['all_off_ms']:.1f} = "
                      f"{row['all_ratio']:.2f}; holds on {row['holds_on']}, timeouts on {row['hold_timeouts_on']}, "
                      f"arbitrated calls on {row['arbitrated_calls_on']} off {row['arbitrated_calls_off']}", flush=True)
    with open(os.path.join(out, "node_prio_bench.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"results: {os.path.join(out, 'node_prio_bench.json')}")


if __name__ == "__main__":
    main()
