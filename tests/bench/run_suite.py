#!/usr/bin/env python3
"""Runs the benchmark suite and writes one combined JSON file and table (docs/benchmarks.md).

  guard_costs                       once, without MPI and without tnbc
  table1_alltoall, table1_bcast     per np and access order, on the emulated link
                                    (npb-harness/netrun.py), with and without libtnbc.so
                                    (TNBC_MODE=nbc); then a trace pass, `tnbc merge` of it
                                    into a profile, and a run with TNBC_MODE=optimize and
                                    that profile (its tnbc row is tnbc-optimize)
  passthrough_overhead              per np, on shared memory (the strictest case for a
                                    per-call cost) and on the emulated link, with and
                                    without libtnbc.so

Every program interleaves its variants itself and writes its own JSON (kept in OUT/); this
script gathers them, adds the tnbc summaries (early returns), prints one table and checks the
issue's goals on the runs with tnbc. Figures from a busy machine are noise: rerun it quietly.

usage: run_suite.py [--build-dir build] [--out DIR] [--np 2,4] [--orders seq,reverse,swap]
                    [--programs alltoall,bcast] [--iterations 10] [--rate 4gbit]
                    [--no-netrun] [--only-with-tnbc] [--no-optimize] [-- EXTRA TABLE1 OPTIONS]
"""
import argparse
import datetime
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NETRUN = os.path.join(REPO, "npb-harness", "netrun.py")
SKIP = 77

GOALS = {"achieved_over_ideal_min": 0.9, "tinit_over_tcomm_max": 0.02, "speedup_vs_mpi3_bc_min": 1.3,
         "passthrough_overhead_max": 0.03}


def log(msg):
    print(msg, flush=True)


class Suite:
    def __init__(self, a):
        self.a = a
        self.bench = os.path.join(a.build_dir, "tests", "bench")
        self.lib = os.path.abspath(os.path.join(a.build_dir, "libtnbc.so"))
        self.runs = []
        self.net = "loopback" if a.no_netrun else f"emulated {a.rate} (netrun.py)"
        self.env = dict(os.environ)
        if os.geteuid() == 0:
            self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    def mpirun(self, np, tnbc, name, mode, profile):
        cmd = ["mpirun", "--oversubscribe", "-np", str(np)]
        if tnbc:
            outdir = os.path.join(self.a.out, "tnbc-" + name)
            os.makedirs(outdir, exist_ok=True)
            cmd += ["-x", "LD_PRELOAD=" + self.lib, "-x", "TNBC_MODE=" + mode, "-x", "TNBC_OUTPUT_DIR=" + outdir]
            if profile:
                cmd += ["-x", "TNBC_PROFILE=" + os.path.abspath(profile)]
        return cmd

    def trace_profile(self, name, program, args, np):
        """A trace pass of the program (TNBC_MODE=trace) merged into a profile (tnbc merge), for
        its optimize run; None (said) when either fails."""
        self.run(name, program, args, np=np, tnbc=True, net=True, mode="trace", record=False)
        profile = os.path.join(self.a.out, name + ".profile")
        tool = os.path.join(self.a.build_dir, "tools", "tnbc")
        r = subprocess.run([tool, "merge", os.path.join(self.a.out, "tnbc-" + name), "-o", profile, "--quiet"],
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            log(f"!! tnbc merge of {name} failed: {r.stdout.strip()}")
            return None
        return profile

    def run(self, name, program, args, np=None, tnbc=False, net=False, mode="nbc", profile=None, record=True):
        """Runs one program; returns its parsed JSON (None on failure, recorded)."""
        path = os.path.join(self.a.out, name + ".json")
        cmd = ([] if np is None else self.mpirun(np, tnbc, name, mode, profile)) + [os.path.join(self.bench, program)] + args
        cmd += ["--json", path]
        where = "none (no MPI)" if np is None else "plain (shared memory)"
        if net and not self.a.no_netrun:
            cmd = [sys.executable, NETRUN, "--rate", self.a.rate, "--skip-code", "--"] + cmd
            where = self.net
        log(f"== {name}: {' '.join(cmd)}")
        r = subprocess.run(cmd, env=self.env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode == SKIP and net:
            log("netrun: no network namespace here; running on plain loopback (overlap figures mean little)")
            self.a.no_netrun = True
            self.net = "loopback (netrun unavailable)"
            return self.run(name, program, args, np, tnbc, net, mode, profile, record)
        with open(os.path.join(self.a.out, name + ".txt"), "w") as f:
            f.write(r.stdout)
        log(r.stdout.rstrip())
        entry = {"name": name, "program": program, "np": np, "tnbc_preloaded": tnbc,
                 "tnbc_mode": mode if tnbc else None, "profile": profile, "network": where,
                 "command": cmd, "exit_status": r.returncode, "result": None}
        if r.returncode == 0 and os.path.exists(path):
            with open(path) as f:
                entry["result"] = json.load(f)
        else:
            log(f"!! {name} failed (exit status {r.returncode}); see {name}.txt")
        if tnbc:
            entry["tnbc_summary"] = early_returns(os.path.join(self.a.out, "tnbc-" + name))
        if record or r.returncode != 0:
            self.runs.append(entry)
        return entry["result"]


def early_returns(outdir):
    """Calls and early returns per collective, summed over the ranks' tnbc summaries."""
    total = {}
    for f in glob.glob(os.path.join(outdir, "tnbc-summary.*.json")):
        with open(f) as fh:
            s = json.load(fh)
        for kind, k in s["collectives"].items():
            t = total.setdefault(kind, {"calls": 0, "early_return": 0, "completed_in_call": 0, "passthrough": 0})
            for key in t:
                t[key] += k.get(key, 0)
    return total


def table1_rows(runs):
    lines = [f"{'run':<34} {'sc':<3}{'cond':<5}{'Tcomm ms':>9}{'ideal ms':>9}{'tnbc ms':>9}{'mpi3 ms':>9}"
             f"{'blk ms':>9}{'ach/ideal':>10}{'Tinit/Tc':>9}{'cpu/Tc':>8}{'MPI3/tnbc':>10}"]
    for r in runs:
        d = r["result"]
        if not d or "scenarios" not in d:
            continue
        label = f"{d['parameters']['collective']} np{r['np']} {d['parameters']['order']} " + \
                (f"+{r['tnbc_mode']}" if r["tnbc_preloaded"] else "no-tnbc")
        for s in d["scenarios"]:
            v = {x["name"]: x for x in s["variants"]}
            t, m, b = v["tnbc"], v["mpi3"], v["blocking"]
            lines.append(f"{label:<34} {s['id']:<3}{'yes' if s['measured']['condition_holds'] else 'NO':<5}"
                         f"{s['measured']['tcomm_s'] * 1e3:9.2f}{s['ideal_overlap_s'] * 1e3:9.2f}"
                         f"{t['total_s'] * 1e3:9.2f}{m['total_s'] * 1e3:9.2f}{b['total_s'] * 1e3:9.2f}"
                         f"{t['achieved_over_ideal']:10.2f}{t['tinit_over_tcomm']:9.3f}"
                         f"{t.get('tinit_cpu_over_tcomm', float('nan')):8.3f}{t['speedup_vs_mpi3']:10.2f}")
    return lines


def goals(runs):
    """The issue's goals, checked on every run with tnbc preloaded."""
    out = []
    for r in runs:
        d = r["result"]
        if not r["tnbc_preloaded"] or not d:
            continue
        if "scenarios" in d:
            label = f"{d['parameters']['collective']} np{r['np']} {d['parameters']['order']} {r['tnbc_mode']}"
            tn = {s["id"]: next(v for v in s["variants"] if v["name"] == "tnbc") for s in d["scenarios"]}
            worst_ach = min(tn.items(), key=lambda kv: kv[1]["achieved_over_ideal"])
            worst_init = max(tn.items(), key=lambda kv: kv[1]["tinit_over_tcomm"])
            out.append({"run": label, "goal": "achieved/ideal >= 0.9 in every scenario",
                        "value": worst_ach[1]["achieved_over_ideal"], "where": worst_ach[0],
                        "met": worst_ach[1]["achieved_over_ideal"] >= GOALS["achieved_over_ideal_min"]})
            out.append({"run": label, "goal": "Tinit/Tcomm <= 0.02", "value": worst_init[1]["tinit_over_tcomm"],
                        "where": worst_init[0],
                        "met": worst_init[1]["tinit_over_tcomm"] <= GOALS["tinit_over_tcomm_max"]})
            for sid in ("b", "c"):
                if sid in tn:
                    out.append({"run": label, "goal": f"MPI-3 peer beaten by >= 1.3x in ({sid})",
                                "value": tn[sid]["speedup_vs_mpi3"], "where": sid,
                                "met": tn[sid]["speedup_vs_mpi3"] >= GOALS["speedup_vs_mpi3_bc_min"]})
        elif d.get("program") == "passthrough_overhead":
            for key, res in d["results"].items():
                out.append({"run": f"passthrough np{r['np']} {r['network'].split(' ')[0]}",
                            "goal": f"pass-through overhead <= 3% ({key})",
                            "value": res["overhead"], "where": key,
                            "met": res["overhead"] <= GOALS["passthrough_overhead_max"]})
    return out


def passthrough_lines(runs):
    lines = []
    by_run = {}
    for r in runs:
        d = r["result"]
        if d and d.get("program") == "passthrough_overhead":
            by_run.setdefault((r["np"], r["network"]), {})[r["tnbc_preloaded"]] = d["results"]
    for (np, net), pair in sorted(by_run.items()):
        for key in ("bcast_8B", "alltoall_16B_per_peer"):
            w, wo = pair.get(True, {}).get(key), pair.get(False, {}).get(key)
            if not w:
                continue
            line = (f"passthrough np{np} {net.split(' ')[0]:<9} {key:<22} MPI_/PMPI_ with tnbc {w['ratio']:.3f} "
                    f"({w['mpi_us_per_call']:.2f} vs {w['pmpi_us_per_call']:.2f} us)")
            if wo:
                line += (f"; PMPI_ with/without tnbc loaded {w['pmpi_us_per_call'] / wo['pmpi_us_per_call']:.2f} "
                         f"(separate runs: MPI_THREAD_MULTIPLE, not the shim)")
            lines.append(line)
    return lines


def guard_lines(runs):
    d = next((r["result"] for r in runs if r["program"] == "guard_costs" and r["result"]), None)
    if not d:
        return []
    mib = next((x for x in d["mprotect_pair"] if x["bytes"] == 1 << 20), None)
    pub = next((x for x in d["proc_mem_publish"] if x["bytes"] == 1 << 20), None)
    cpy = next((x for x in d["memcpy"] if x["bytes"] == 1 << 20), None)
    lines = [f"guard: fault round trip {d['fault']['round_trip_us']:.2f} us; mprotect pair 1 page "
             f"{d['mprotect_pair'][0]['us']:.2f} us" + (f", 1 MiB {mib['us']:.1f} us" if mib else "")]
    if pub and cpy:
        lines.append(f"guard: /proc/self/mem publication {pub['us_per_mib']:.0f} us/MiB; memcpy {cpy['us_per_mib']:.0f} us/MiB")
    u = d["userfaultfd"]
    if u.get("available"):
        one = next((x for x in u["sizes"] if x["bytes"] == 1 << 20), None)
        if one:
            lines.append(f"guard: userfaultfd 1 MiB: register {one['register_us']:.1f} us, DONTNEED "
                         f"{one['dontneed_us']:.1f} us, COPY {one['copy_us_per_mib']:.0f} us/MiB")
        if "blocked_reader_round_trip_us" in u:
            lines.append(f"guard: blocked reader round trip {u['blocked_reader_round_trip_us']:.1f} us, "
                         f"wake after UFFDIO_COPY {u['blocked_reader_wake_us']:.1f} us")
    else:
        lines.append(f"guard: userfaultfd not available ({u.get('reason')})")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--out", help="output directory (default tnbc-out/bench-<time>)")
    ap.add_argument("--np", default="2,4")
    ap.add_argument("--orders", default="seq,reverse,swap")
    ap.add_argument("--programs", default="alltoall,bcast")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rate", default="4gbit")
    ap.add_argument("--no-netrun", action="store_true", help="plain loopback instead of the emulated link")
    ap.add_argument("--only-with-tnbc", action="store_true", help="skip the runs without libtnbc.so")
    ap.add_argument("--no-optimize", action="store_true",
                    help="skip the trace pass and the optimize run (TNBC_PROFILE from it) of each Table 1 case")
    ap.add_argument("extra", nargs=argparse.REMAINDER, help="-- options passed to the Table 1 programs")
    a = ap.parse_args()
    extra = a.extra[1:] if a.extra and a.extra[0] == "--" else a.extra
    a.out = a.out or os.path.join("tnbc-out", "bench-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(a.out, exist_ok=True)
    s = Suite(a)
    for p in ["guard_costs", "table1_alltoall", "table1_bcast", "passthrough_overhead"]:
        if not os.path.exists(os.path.join(s.bench, p)):
            sys.exit(f"run_suite: {os.path.join(s.bench, p)} not built (ninja -C {a.build_dir})")
    if not os.path.exists(s.lib):
        sys.exit(f"run_suite: {s.lib} not built")
    nps = [int(x) for x in a.np.split(",")]
    pres = [True] if a.only_with_tnbc else [True, False]

    s.run("guard_costs", "guard_costs", [])
    for np in nps:
        for order in a.orders.split(","):
            for prog in a.programs.split(","):
                args = ["--iterations", str(a.iterations), "--order", order] + extra
                for tnbc in pres:
                    name = f"table1_{prog}-np{np}-{order}-{'tnbc' if tnbc else 'plain'}"
                    s.run(name, "table1_" + prog, args, np=np, tnbc=tnbc, net=True)
                if not a.no_optimize:
                    base = f"table1_{prog}-np{np}-{order}"
                    profile = s.trace_profile(base + "-trace", "table1_" + prog, args, np)
                    if profile:
                        s.run(base + "-optimize", "table1_" + prog, args, np=np, tnbc=True, net=True,
                              mode="optimize", profile=profile)
        for net in (False, True):
            for tnbc in pres:
                s.run(f"passthrough-np{np}-{'net' if net else 'shm'}-{'tnbc' if tnbc else 'plain'}",
                      "passthrough_overhead", [], np=np, tnbc=tnbc, net=net)

    g = goals(s.runs)
    machine = next((r["result"]["machine"] for r in s.runs if r["result"] and r["np"]), None)
    lines = [f"tnbc benchmark suite: {machine and machine['date']}, {machine and machine['nproc']} CPUs, "
             f"{machine and machine['kernel']}, {machine and machine['mpi_library']}; network: {s.net}",
             ""] + table1_rows(s.runs) + [""] + passthrough_lines(s.runs) + guard_lines(s.runs) + ["", "goals (runs with tnbc):"]
    lines += [f"  {'met' if x['met'] else 'NOT MET':<8}{x['run']:<33} {x['goal']}: {x['value']:.3f} ({x['where']})"
              for x in g]
    failed = [r["name"] for r in s.runs if r["exit_status"] != 0]
    if failed:
        lines += ["", "FAILED runs: " + ", ".join(failed)]
    table = "\n".join(lines)
    with open(os.path.join(a.out, "suite.txt"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(a.out, "suite.json"), "w") as f:
        json.dump({"format": "tnbc-bench-suite", "version": 1, "machine": machine, "network": s.net,
                   "parameters": {"np": nps, "orders": a.orders.split(","), "programs": a.programs.split(","),
                                  "iterations": a.iterations, "extra": extra},
                   "goals": g, "runs": s.runs}, f, indent=1)
    log("\n" + table)
    log(f"\nwritten: {os.path.join(a.out, 'suite.json')}, {os.path.join(a.out, 'suite.txt')}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
