#!/usr/bin/env python3
"""The emulated NIC's queue, old against new: one program run alternately under
`netrun.py --nic droptail` (the emulation before: tbf queue of rate x 100 ms, tail drop) and
`--nic lossless` (the default), REPEAT times each, interleaved, with `--stats`: per run the
program's time and communication timer (NPB and the proxies print them), the queues' drops and
the nodes' TCP counters (retransmitted segments, timeouts, tail-loss probes); then per NIC the
median, the spread ((max - min) / median) and the runs with drops or timeouts (docs/harness.md,
"The NIC's queue"). A timing tool: run it under `tnbc-quiet`.

usage: nic_compare.py [--rate 1gbit] [--nodes 2] [--repeat 6] [--json FILE] [--variant NAME="NETRUN ARGS" ...]
                      -- mpirun -np 4 PROGRAM ARGS

--variant adds another netrun configuration to the rotation (e.g. --variant shared="--node-cpus shared").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import harness

VARIANTS = {"droptail": ["--nic", "droptail"], "lossless": ["--nic", "lossless"]}


def spread(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--json", default=None, help="write every run's figures here")
    ap.add_argument("--variant", action="append", default=[], metavar='NAME="ARGS"',
                    help="another netrun configuration, run in the same rotation")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command given")
    variants = dict(VARIANTS)
    for v in a.variant:
        name, _, args = v.partition("=")
        variants[name] = args.split()
    runs = []
    # NPB prints its timers (harness.parse) when timer.flag is in its directory: this one.
    flag = None if os.path.exists("timer.flag") else "timer.flag"
    if flag:
        open(flag, "w").close()
    for rep in range(a.repeat):
        for nic, args in variants.items():
            r = subprocess.run([sys.executable, harness.NETRUN, "--stats", "--rate", a.rate,
                                "--nodes", str(a.nodes)] + args + ["--"] + cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            res = harness.parse(r.stdout)
            run = {"nic": nic, "repeat": rep, "exit": r.returncode, "verified": res["verified"],
                   "time": res["time"], "comm": res["timers"].get("comm"), **(harness.net_stats(r.stdout) or {})}
            runs.append(run)
            print(" ".join(f"{k}={v}" for k, v in run.items()), flush=True)
    if flag:
        os.remove(flag)
    print(f"\n{' '.join(cmd)}: {a.nodes} nodes, {a.rate}, {a.repeat} interleaved repetitions")
    for nic in variants:
        sel = [r for r in runs if r["nic"] == nic and r["exit"] == 0 and r["time"] is not None]
        if not sel:
            print(f"{nic:9} no successful run")
            continue
        times = [r["time"] for r in sel]
        comms = [r["comm"] for r in sel if r["comm"] is not None]
        hit = sum(1 for r in sel if r.get("tbf_dropped") or r.get("tcp_timeouts"))
        print(f"{nic:9} time median {statistics.median(times):.3f} s spread {100 * spread(times):.0f} % "
              f"[{min(times):.3f}-{max(times):.3f}]"
              + (f"; comm median {statistics.median(comms):.3f} s spread {100 * spread(comms):.0f} %" if comms else "")
              + f"; runs with drops or timeouts {hit} of {len(sel)}; drops {sum(r.get('tbf_dropped', 0) for r in sel)}, "
              f"timeouts {sum(r.get('tcp_timeouts', 0) for r in sel)}, retrans {sum(r.get('tcp_retrans', 0) for r in sel)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
