#!/usr/bin/env python3
"""Node-level priorities (runtime/node_gate.hh) on emulated nodes, in mode optimize.

usage: node_priorities.py --lib LIBTNBC --tool TNBC --prog NODE_PRIO --np N --nodes K
                          [--case plain|slow|stop] [launcher options]

Runs node_prio (tests/mpi/node_prio.c: Alltoall and Alltoallv read in orders that differ between
ranks and iterations, checked byte for byte against PMPI_*) under npb-harness/netrun.py --nodes K
(ranks block-wise, M = ceil(N / K) per node, one shaped link per node): a trace pass, `tnbc merge`,
then the optimize pass with that profile (TNBC_NODE_PRIORITIES=auto: on, where a node has more
than one rank). Checks:
  plain  every byte equal; on every rank of a node with several ranks the summary's sites have
         `node_priorities` (arbitration ran) and, summed over the job, some send was held back;
         a rank alone on its node has none (no board: nothing to arbitrate); no tnbc warning
  slow   the same while one rank computes for a long time before its reads and before a call
  stop   a rank stops (SIGSTOP, board slot frozen) right after an early return: the others
         report what is missing and the job ends (MPI_Abort) within TNBC_TIMEOUT, no hang
Skipped (77) where netrun cannot make namespaces, or under MPICH (netrun --nodes drives Open MPI).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_mpi_test import add_launcher_options, fail, launch_command  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NETRUN = os.path.join(HERE, "..", "..", "npb-harness", "netrun.py")
SKIP = 77
ITERS, PAGES = "4", "64"
SLOW_MS = "1500"
TIMEOUT_S = 5


def run(a, exports, args, timeout):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    exports = dict({"TNBC_MIN_BYTES": str(3 * os.sysconf("SC_PAGE_SIZE")), "LD_PRELOAD": os.path.abspath(a.lib)},
                   **exports)
    for kv in a.env:  # as run_mpi_test.run_mpirun: the sanitized build's options, its runtime first
        k, v = kv.split("=", 1)
        exports[k] = v
    if a.preload_first:
        exports["LD_PRELOAD"] = ":".join(a.preload_first + [exports["LD_PRELOAD"]])
    cmd = [sys.executable, NETRUN, "--rate", "4gbit", "--nodes", str(a.nodes), "--skip-code", "--"]
    cmd += launch_command(a.mpi, a.mpirun, a.np, exports) + [a.prog] + args
    print("running:", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        fail(f"timed out after {timeout} s (a hang)", e.stdout or "")
    if p.returncode == SKIP:
        print(p.stdout)
        print("SKIP: netrun cannot make network namespaces here")
        sys.exit(SKIP)
    return p.returncode, p.stdout, time.monotonic() - t0


def summaries(outdir):
    out = {}
    for path in glob.glob(os.path.join(outdir, "tnbc-summary.*.json")):
        with open(path) as f:
            s = json.load(f)
        out[s["rank"]] = s
    return out


def main():
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--case", choices=["plain", "slow", "stop"], default="plain")
    a = ap.parse_args()
    if a.mpi != "openmpi":
        print("SKIP: netrun.py --nodes drives Open MPI's mpirun only")
        sys.exit(SKIP)
    work = tempfile.mkdtemp(prefix="tnbc-node-prio-")
    per_node = -(-a.np // a.nodes)
    node_of = [r // per_node for r in range(a.np)]
    crowded = {r for r in range(a.np) if node_of.count(node_of[r]) > 1}
    extra = []
    if a.case == "slow":
        extra = [str(a.np - 1), SLOW_MS]
    elif a.case == "stop":
        extra = ["-1", "0", str(min(a.np - 1, 1))]

    # Trace pass and profile.
    trace_dir = os.path.join(work, "trace")
    code, out, _ = run(a, {"TNBC_MODE": "trace", "TNBC_OUTPUT_DIR": trace_dir}, [ITERS, PAGES], 240)
    if code != 0 or " 0 failed" not in out:
        fail("trace pass failed or results differ", out)
    profile = os.path.join(work, "node_prio.profile")
    m = subprocess.run([a.tool, "merge", trace_dir, "-o", profile], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if m.returncode != 0:
        fail("tnbc merge failed", m.stdout)

    opt_dir = os.path.join(work, "optimize")
    exports = {"TNBC_MODE": "optimize", "TNBC_PROFILE": profile, "TNBC_OUTPUT_DIR": opt_dir,
               "TNBC_PROFILE_BLOCKING": "off"}
    if a.case == "stop":
        exports["TNBC_TIMEOUT"] = str(TIMEOUT_S)
        code, out, took = run(a, exports, [ITERS, PAGES] + extra, 120)
        stopped = int(extra[2])
        if code == 0:
            fail("stop: the job should have ended through MPI_Abort", out)
        if f"timeout (TNBC_TIMEOUT={TIMEOUT_S}s)" not in out or f"rank {stopped}" not in out:
            fail(f"stop: no rank reported the timeout and the stopped rank {stopped}", out)
        print(out[-3000:])
        print(f"PASS (ended after {took:.1f} s)")
        shutil.rmtree(work, ignore_errors=True)
        return

    code, out, _ = run(a, exports, [ITERS, PAGES] + extra, 240)
    if code != 0 or " 0 failed" not in out:
        fail("optimize pass failed or results differ from the blocking collectives", out)
    said = [l for l in out.splitlines() if "tnbc[" in l and ("warning" in l or "error" in l)]
    if said:
        fail(f"unexpected tnbc messages: {said}", out)
    sums = summaries(opt_dir)
    if len(sums) != a.np:
        fail(f"{len(sums)} summaries for {a.np} ranks", out)
    holds = 0
    for r, s in sorted(sums.items()):
        node = [x.get("node_priorities") for x in s["sites"] if x.get("node_priorities")]
        early = sum(x["early_return"] for x in s["sites"] if x["kind"] in ("alltoall", "alltoallv"))
        print(f"rank {r} (node {node_of[r]}): early returns {early}, node_priorities {node}")
        if early == 0:
            fail(f"rank {r}: no Alltoall(v) returned early", out)
        if r in crowded and not node:
            fail(f"rank {r} shares its node: its summary should show node_priorities at its sites", out)
        if r not in crowded and node:
            fail(f"rank {r} is alone on its node: nothing to arbitrate, yet node_priorities ran", out)
        holds += sum(n["holds"] for n in node)
    if crowded and holds == 0:
        fail("no send was ever held back on any node (the arbitration did nothing)", out)
    print(f"PASS ({holds} sends held back, job-wide)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
