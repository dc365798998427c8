#!/usr/bin/env python3
"""Node-level priorities (runtime/node_gate.hh) on emulated nodes, in mode optimize.

usage: node_priorities.py --lib LIBTNBC --tool TNBC --prog NODE_PRIO --np N --nodes K
                          [--case plain|slow|stop|auto] [--report] [launcher options]

Runs node_prio (tests/mpi/node_prio.c: Alltoall and Alltoallv read in orders that differ between
ranks and iterations, checked byte for byte against PMPI_*) under npb-harness/netrun.py --nodes K
(ranks block-wise, M = ceil(N / K) per node, one shaped link per node; K = 1: one node whose N
ranks reach each other over its shaped loopback (Open MPI over TCP), TNBC_NODE_LOCAL_SENDS=link,
M = N: np 8 on 1 node is M = 8 on 2 cores, oversubscribed): a trace pass, `tnbc merge`,
then the optimize pass with that profile (TNBC_NODE_PRIORITIES=on; case auto: auto). Checks:
  plain  every byte equal; on every rank of a node with several ranks the summary's sites have
         `node_priorities` (arbitration ran) and, summed over the job, some send was held back;
         a rank alone on its node has none (no board: nothing to arbitrate); no tnbc warning
  slow   the same while one rank computes for a long time before its reads and before a call
  stop   a rank stops (SIGSTOP, board slot frozen) right after an early return: the others
         report what is missing and the job ends (MPI_Abort) within TNBC_TIMEOUT, no hang
  auto   every byte equal; the cost model decided per site (runtime/node_choice.hh): every
         crowded rank's sites record the basis (gains / no_gain / costs, with the model's
         first-read and end estimates; a broadcast: one_sender where no node has two forwarders
         on its link for the root), and arbitration ran exactly where the basis says so
  auto-cpu  auto with the trace run's machine (TNBC_MACHINE) made CPU-bound: each end of a
         message between nodes costs 4x the link's time in CPU (the kernel's TCP copies on a
         loaded host). Two ranks per node whose progress threads share the node's CPUs with
         their computation cannot keep the link busy one at a time: auto must say off (basis
         costs or no_gain) at every site, and no send is ever held back
--report then checks `tnbc report` on the optimize run (tools/report_node.cc): the text, JSON and
         HTML (headless Chromium: the table's rows laid out) show per site whether arbitration
         ran and on which ranks, the holds, hold time-outs and first-read figures of the summaries;
         the report JSON read back prints the same text
Skipped (77) where netrun cannot make namespaces, or under MPICH (netrun --nodes drives Open MPI).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_runs  # noqa: E402  (the common options, the summaries)
from run_mpi_test import fail, launch_command  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NETRUN = os.path.join(HERE, "..", "..", "npb-harness", "netrun.py")
SKIP = 77
ITERS, PAGES = "4", "64"
SLOW_MS = "300"  # 15x TNBC_NODE_HOLD_US: the others' holds on its slot time out while it computes
TIMEOUT_S = 3  # as the missing-rank tests (tests/mpi/meson.build): the job ends this long after the stop


def run(a, exports, args, timeout):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    exports = dict({"TNBC_MIN_BYTES": str(3 * os.sysconf("SC_PAGE_SIZE")), "LD_PRELOAD": os.path.abspath(a.lib)},
                   **exports)
    if a.nodes == 1:  # one node: its ranks reach each other over the shaped loopback, which they share
        exports["TNBC_NODE_LOCAL_SENDS"] = "link"
    for kv in a.env:  # as run_mpi_test.run_mpirun: the sanitized build's options, its runtime first
        k, v = kv.split("=", 1)
        exports[k] = v
    if a.preload_first:
        exports["LD_PRELOAD"] = ":".join(a.preload_first + [exports["LD_PRELOAD"]])
    # --yield: on a node with more ranks than CPUs, Open MPI's waiting ranks give up their CPU (what
    # is checked here is results and decisions, not speed: a run at np 8 on 2 nodes 2.5x quicker).
    cmd = [sys.executable, NETRUN, "--rate", "4gbit", "--nodes", str(a.nodes), "--yield", "--skip-code", "--"]
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


def main():
    ap = profile_runs.parser()
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--case", choices=["plain", "slow", "stop", "auto", "auto-cpu"], default="plain")
    ap.add_argument("--report", action="store_true")
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
    auto = a.case.startswith("auto")
    exports = {"TNBC_MODE": "optimize", "TNBC_PROFILE": profile, "TNBC_OUTPUT_DIR": opt_dir,
               "TNBC_PROFILE_BLOCKING": "off", "TNBC_NODE_PRIORITIES": "auto" if auto else "on"}
    if a.case == "auto-cpu":
        exports["TNBC_MACHINE"] = cpu_bound_machine(trace_dir, work)
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

    if a.case == "plain":
        exports["TNBC_LOG"] = "info"
    code, out, _ = run(a, exports, [ITERS, PAGES] + extra, 240)
    if code != 0 or " 0 failed" not in out:
        fail("optimize pass failed or results differ from the blocking collectives", out)
    # TNBC_BCAST_SEND_WINDOW=auto under ob1 (netrun's TCP): a window of 1 where the run spans
    # nodes, the root's call starting the sends where every rank is on one node (policy.hh).
    window = ("a broadcast's root and forwarding ranks send through their progress thread, 1 piece" if a.nodes > 1
              else "starts its sends in the call (TNBC_BCAST_SEND_WINDOW; every rank on one node)")
    if a.case == "plain" and window not in out:
        fail(f"rank 0 did not say: {window}", out)
    said = [l for l in out.splitlines() if "tnbc[" in l and ("warning" in l or "error" in l)
            and not profile_runs.owed_load_warning(l, exports.get("TNBC_MACHINE"))]
    if said:
        fail(f"unexpected tnbc messages: {said}", out)
    sums = {s["rank"]: s for s in profile_runs.summaries(opt_dir)}
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
        for x in s["sites"]:
            n = x.get("node_priorities")
            if n and auto:
                check_auto(r, x["kind"], n, out, must_be_off=a.case == "auto-cpu")
            elif n and (n["basis"] != "setting" or n["off_calls"] != 0 or n["calls"] == 0):
                fail(f"rank {r}: TNBC_NODE_PRIORITIES=on, yet the site says {n}", out)
        holds += sum(n["holds"] for n in node)
    if crowded and holds == 0 and not auto:
        fail("no send was ever held back on any node (the arbitration did nothing)", out)
    if a.case == "auto-cpu" and holds:
        fail(f"auto on a CPU-bound machine: {holds} sends held back, yet no site should arbitrate", out)
    if a.report:
        check_report(a, work, opt_dir, sums)
    print(f"PASS ({holds} sends held back, job-wide)")
    shutil.rmtree(work, ignore_errors=True)


def check_auto(rank, kind, n, out, must_be_off=False):
    """The model's decision at one site of a crowded rank: judged by the model, with its estimates,
    and obeyed. `must_be_off`: the machine is CPU-bound, so the verdict must be off.
    The summary keeps the LAST call's verdict and estimates. Alltoall's calls are all alike, so every
    one must follow it; Alltoallv's sizes and Bcast's root change between calls (node_prio.c), and
    so may the verdict (the model is asked per call): there the last verdict must have been obeyed
    at least once."""
    alike = kind == "alltoall"
    if kind == "bcast" and n["basis"] == "one_sender":  # no node has two forwarders on its link for this root
        if n["off_calls"] == 0:
            fail(f"rank {rank}: bcast with one forwarder per link, yet every call arbitrated: {n}", out)
        return
    if n["basis"] not in ("gains", "no_gain", "costs"):
        fail(f"rank {rank}: auto on 2 nodes with a profile and a model should be the model's call, not {n['basis']}", out)
    est = n.get("model_first_read_ms")
    if not est or not (est["on"] > 0 and est["off"] > 0 and est["end_on"] > 0 and est["end_off"] > 0):
        fail(f"rank {rank}: the model's first-read and end estimates are missing: {n}", out)
    gain, cost = est["off"] - est["on"], max(0.0, est["end_on"] - est["end_off"])
    # Where the profile gave the program's read time: when it has read everything, with and without.
    gains = (est["done_off"] - est["done_on"] if "done_on" in est else gain - cost) > est["margin"]
    if gains != (n["basis"] == "gains") or (n["basis"] == "costs") != (not gains and gain > est["margin"]):
        fail(f"rank {rank}: basis {n['basis']} does not follow the estimates {est}", out)
    obeyed = n["calls"] > 0 if gains else n["off_calls"] > 0
    if not obeyed or (alike and (n["off_calls"] if gains else n["calls"]) > 0):
        fail(f"rank {rank}: arbitration ran on {n['calls']} calls, not on {n['off_calls']}, against basis {n['basis']}",
             out)
    if must_be_off and gains:
        fail(f"rank {rank}: {kind} on a CPU-bound machine, yet auto said on: {n}", out)


def cpu_bound_machine(trace_dir, work):
    """The trace run's machine (TNBC_OUTPUT_DIR/tnbc-machine.json: the probe's, fits this run)
    with the CPU per byte at each end of a message between nodes 4x the link's time per byte: the
    slowest of its measured rates (G; node_out and node_bi, the node's link shared by its ranks:
    the probe measures these apart, and on a loaded host they can be 100x G, so a CPU cost 4x G
    alone would leave the link, not the CPUs, as the bound)."""
    with open(os.path.join(trace_dir, "tnbc-machine.json")) as f:
        m = json.load(f)
    inter = m["levels"].get("inter_node")
    if not inter:
        fail(f"the trace run's machine has no inter_node level: {m['levels']}")
    cpu = 4 * max(inter["G_ns_per_byte"], inter.get("node_out_ns_per_byte", 0), inter.get("node_bi_ns_per_byte", 0))
    inter["O_s_ns_per_byte"] = inter["O_r_ns_per_byte"] = cpu
    for p in inter.get("sweep") or []:
        p["o_s_ns"] = p["o_r_ns"] = max(p["o_s_ns"], cpu * p["bytes"])
    path = os.path.join(work, "cpu-bound-machine.json")
    with open(path, "w") as f:
        json.dump(m, f)
    print(f"machine: {path} (inter_node CPU {cpu:.2f} ns per byte at each end)")
    return path


def check_report(a, work, run_dir, sums):
    """`tnbc report` of the optimize run shows what the summaries say, in text, JSON and HTML."""
    page, js = os.path.join(work, "report.html"), os.path.join(work, "report.json")
    r = subprocess.run([a.tool, "report", run_dir, "--json", js, "--html", page], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        fail("tnbc report failed", r.stdout)
    text = r.stdout
    print(text[text.find("node-level priorities:"):][:2500])
    with open(js) as f:
        world = json.load(f)["runs"][0]["worlds"][0]
    section = [x for x in world["sections"] if x["key"] == "node_priorities"]
    if len(section) != 1 or "node-level priorities:" not in text:
        fail("the report has no node-level priorities section", text)
    rows = section[0]["data"]["sites"]
    # The summaries' figures per (kind, module offset) summed over ranks; the report merges the
    # sites of one source line, so compare per kind.
    want = {}
    for r_, s in sums.items():
        for x in s["sites"]:
            n = x.get("node_priorities")
            if not n:
                continue
            k = want.setdefault(x["kind"], {"calls": 0, "off_calls": 0, "holds": 0, "hold_timeouts": 0, "ran": set(),
                                            "means": []})
            for f in ("calls", "off_calls", "holds", "hold_timeouts"):
                k[f] += n[f]
            if n["calls"]:
                k["ran"].add(r_)
            if n["first_read_calls"]:
                k["means"].append(n["first_read_ms_mean"])
    got = {}
    for row in rows:
        k = got.setdefault(row["kind"], {"calls": 0, "off_calls": 0, "holds": 0, "hold_timeouts": 0, "ran": set(),
                                         "means": []})
        for f in ("calls", "off_calls", "holds", "hold_timeouts"):
            k[f] += row[f]
        k["ran"] |= ranks_of(row["ranks_ran"])
        if row["first_read_ns"]["n"]:
            k["means"].append(row["first_read_ns"]["mean"] / 1e6)
        if row["ran"] != (row["calls"] > 0):
            fail(f"report row {row}: 'ran' does not follow its calls", text)
        where = f"{row['kind']} at {row['where']}"
        line = ("ran on ranks " + row["ranks_ran"]) if row["ran"] else "did not run"
        block = text[text.find("node-level priorities:"):]
        if where not in block or not any(l.strip().startswith(f"{row['site']} ") and line in l for l in block.splitlines()):
            fail(f"the text does not show site {row['site']} ({where}) as '{line}'", text)
    for kind, w in want.items():
        g = got.get(kind)
        if not g:
            fail(f"the report shows no node-level figures for {kind}, the summaries do: {w}", text)
        for f in ("calls", "off_calls", "holds", "hold_timeouts"):
            if g[f] != w[f]:
                fail(f"{kind}: the report says {f} {g[f]}, the summaries {w[f]}", text)
        if g["ran"] != w["ran"]:
            fail(f"{kind}: arbitration ran on ranks {sorted(g['ran'])} per the report, {sorted(w['ran'])} per the summaries")
        if w["means"] and not (min(w["means"]) - 1e-3 <= min(g["means"]) and max(g["means"]) <= max(w["means"]) + 1e-3):
            fail(f"{kind}: first-read means {g['means']} outside the summaries' {w['means']}", text)
    # The report JSON read back prints the same text.
    back = subprocess.run([a.tool, "report", js], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if back.returncode != 0 or back.stdout[back.stdout.find("node-level priorities:"):] != text[text.find("node-level priorities:"):]:
        fail("the report JSON read back does not print the same node-level section", back.stdout)
    # The page in a real browser: every row of the table laid out.
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("chromium is not installed (tools/dev.sh test installs it)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--user-data-dir=" + os.path.join(work, "chromium")]
    d = subprocess.run([chromium, *flags, "--dump-dom", "file://" + page], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=180)
    dom = d.stdout
    if d.returncode != 0 or "</html>" not in dom:
        fail(f"chromium --dump-dom failed ({d.returncode})", d.stderr[-2000:])
    if f'data-node-rows="{len(rows)}"' not in dom or dom.count('<tr class="node-site"') != len(rows):
        said = dom[dom.find('id="rendered"'):][:160]
        fail(f"{len(rows)} sites with node-level figures; the rendered page says {said}")
    ran = sum(1 for row in rows if row["ran"])
    marked = dom.count('data-ran="yes"')
    if marked != ran:
        fail(f"{ran} sites where arbitration ran; the page marks {marked}")
    print(f"report: OK ({len(rows)} sites with node-level figures, {ran} arbitrated; text, JSON and the page agree)")


def ranks_of(text):
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


if __name__ == "__main__":
    main()
