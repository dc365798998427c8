#!/usr/bin/env python3
"""`tnbc calibrate` on a slow emulated link measures the CPU a message costs, not its transfer time.

usage: calibrate_link.py --tool TNBC [--mpi openmpi --mpirun mpirun]

Two emulated nodes (npb-harness/netrun.py --nodes 2, 1 Gbit/s: G = 8 ns/B), one rank each:
`tnbc calibrate --max-bytes 1m`. Over TCP a message's CPU at either end (the kernel's copies, MPI's
work: LogGOPS's O) is a fraction of a ns per byte, far below the link's 8 ns/B. The machine file's
inter-node level must say so: O_s and O_r per byte, and o_s(m), o_r(m) at the largest size, at
most a quarter of G and of g(m). Until 2026-11-24 calibrate counted the sender's spinning
acknowledgement, the idle tests between sleeps, and (the worst) let the CPU of a one-message
MPI_Waitall train overwrite the polled train's: o_s and o_r came out ~ T(m), O ~ G, and the
estimators' CPU bound doubled every Alltoall over the link. A bound, not a timing: a loaded
machine's CPU per byte is still far below a quarter of G. The file also has the hand-over at the
end of an early return, below the 1 ms a progress thread lets its caller go first, and what tnbc's
own early return took beyond the model's parts (calibrate ran it through tnbc's engine), and what
tnbc's own transfer took from a computation on each rank's one CPU.

Skipped (77) where netrun cannot make namespaces, or under MPICH (netrun --nodes drives Open MPI).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_mpi_test import QUICK_CALIBRATION, tool_arguments, fail, launch_command  # noqa: E402

NETRUN = os.path.join(HERE, "..", "..", "npb-harness", "netrun.py")
SKIP = 77
RATE = "1gbit"
SHARE = 0.25  # the largest share of G (and of g(m)) a message's CPU may take
RETURN_WAIT_NS = 1e6  # runtime/return_wait.hh, kReturnWaitNs: the longest a progress thread lets a caller go first


def calibrate_on_two_nodes(a, options, exports=None):
    """`tnbc calibrate OPTIONS` on two emulated nodes at RATE, one rank each (`exports`: more of
    the ranks' environment); (the finished process, the machine file). Exits 77 where netrun cannot
    make namespaces or under MPICH, and fails where calibrate fails."""
    if a.mpi != "openmpi":
        print("SKIP: netrun.py --nodes drives Open MPI's mpirun only")
        sys.exit(SKIP)
    work = tempfile.mkdtemp(prefix="tnbc-calibrate-link-")
    machine = os.path.join(work, "machine.json")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # Emulated nodes share this machine's CPUs: no binding (both ranks would get CPU 0).
    cmd = [sys.executable, NETRUN, "--rate", RATE, "--nodes", "2", "--skip-code", "--"]
    # The sanitized build's runtime options (ASAN_OPTIONS ...): the tool itself is instrumented.
    launch_exports = dict(kv.split("=", 1) for kv in a.env)
    launch_exports.update(exports or {})
    cmd += launch_command(a.mpi, a.mpirun, 2, launch_exports) + ["--bind-to", "none", a.tool, "calibrate", "-o",
                                                                  machine] + options
    print("running:", " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    except subprocess.TimeoutExpired as e:
        fail("tnbc calibrate timed out after 240 s", e.stdout or "")
    print(p.stdout)
    if p.returncode == SKIP:
        print("SKIP: netrun cannot make network namespaces here")
        sys.exit(SKIP)
    if p.returncode != 0 or not os.path.exists(machine):
        fail(f"tnbc calibrate failed (exit {p.returncode})", p.stdout)
    return p, machine


def main():
    a = tool_arguments()
    p, machine = calibrate_on_two_nodes(a, ["--max-bytes", "1m", "--seconds-per-size", "0.05"] + QUICK_CALIBRATION)
    doc = json.load(open(machine))
    level = doc["levels"].get("inter_node")
    if not level:
        fail("the machine file has no inter_node level (2 emulated nodes)", open(machine).read())
    G = level["G_ns_per_byte"]
    # 1 Gbit/s is 8 ns/B; the measured G must be near it (else the check below means nothing).
    if not 4 <= G <= 16:
        fail(f"G {G:.2f} ns/B, expected about 8 (a 1 Gbit/s link)", open(machine).read())
    problems = []
    for key in ("O_s_ns_per_byte", "O_r_ns_per_byte"):
        if level[key] > SHARE * G:
            problems.append(f"{key} {level[key]:.2f} ns/B > {SHARE} x G ({G:.2f} ns/B)")
    last = level["sweep"][-1]
    for key in ("o_s_ns", "o_r_ns"):
        if last[key] > SHARE * last["g_ns"]:
            problems.append(f"{key}({last['bytes']:.0f} B) {last[key] / 1e3:.1f} us > {SHARE} x g "
                            f"({last['g_ns'] / 1e3:.1f} us)")
    if problems:
        fail("calibrate counts the transfer time as the messages' CPU: " + "; ".join(problems), open(machine).read())
    # The hand-over (session 23): measured, and the thread standing for the progress thread gave
    # the caller its CPU back at its first look (runtime/return_wait.hh: at the latest after 1 ms).
    handover = doc["progress"].get("handover_ns")
    if handover is None or not 0 < handover < RETURN_WAIT_NS:
        fail(f"progress.handover_ns {handover}: expected measured, above 0 and below {RETURN_WAIT_NS / 1e6:.0f} ms",
             open(machine).read())
    # tnbc's own early return ran through its engine at the end (tools/calibrate_own_call.hh): every
    # call returned early, so the file has what the model's parts miss, one point per size.
    rest = doc["guard"].get("in_call_rest")
    if not rest or len(rest.get("points", [])) < 2:
        fail(f"guard.in_call_rest {rest}: expected measured at 64 KiB .. 1 MiB (tnbc's own early return)",
             p.stdout)
    # Its own MPI_Bcast too (session 32): a receiver's rest, one point per size.
    rest_bcast = doc["guard"].get("in_call_rest_bcast")
    if not rest_bcast or len(rest_bcast.get("points", [])) != len(rest["points"]):
        fail(f"guard.in_call_rest_bcast {rest_bcast}: expected measured at the sizes of in_call_rest (tnbc's own "
             "broadcast)", p.stdout)
    # And its root's apart (session 36): its copy and the sends it starts, one point per size.
    rest_root = doc["guard"].get("in_call_rest_bcast_root")
    if not rest_root or len(rest_root.get("points", [])) != len(rest["points"]):
        fail(f"guard.in_call_rest_bcast_root {rest_root}: expected measured at the sizes of in_call_rest (tnbc's own "
             "broadcast, its root)", p.stdout)
    if "MPI_Bcast, its root" not in p.stdout:
        fail("calibrate's output: expected the root's own call (\"MPI_Bcast, its root\")", p.stdout)
    # The cold calls' copies counted at the copy line's price (session 76): what they took against
    # it is said, a finite ratio (the exchanges copy the own block and the sends in every call).
    took = re.search(r"their copies took ([0-9.]+)x the copy line's price", p.stdout)
    if not took or not 0 < float(took.group(1)) < 100:
        fail("calibrate's output: expected what tnbc's own calls' copies took against the copy line's price", p.stdout)
    # What tnbc's own transfer takes from a computation on the rank's one CPU (session 33): netrun's
    # nodes have one CPU each, so it is measured, one point per size, both kinds; at the largest
    # size (1 MiB each way over 1 Gbit/s) the kernel's and the progress thread's work is there.
    if doc.get("cpus_per_node") == 1:
        for key in ("cpu_taken", "cpu_taken_bcast"):
            taken = doc["progress"].get(key)
            if not taken or len(taken.get("points", [])) != len(rest["points"]) or taken["points"][-1][1] <= 0:
                fail(f"progress.{key} {taken}: expected measured at the sizes of in_call_rest, above 0 at the largest "
                     "(tnbc's own transfer beside a computation on one CPU)", p.stdout)
    # The warm figures and the first round (session 24): where the system names its L2 cache, the
    # cache size, the progress thread's first round after the return, the warm hand-over, the hold
    # of every measured guard at the sizes below it, and the warm call (64 KiB per peer on two
    # ranks touches 256 KiB: below any L2 of 512 KiB or more).
    l2 = os.sysconf("SC_LEVEL2_CACHE_SIZE") if "SC_LEVEL2_CACHE_SIZE" in os.sysconf_names else 0
    if l2 and l2 > 0:
        if doc["guard"].get("warm_below_bytes") != l2:
            fail(f"guard.warm_below_bytes {doc['guard'].get('warm_below_bytes')}: expected this CPU's L2, {l2}", p.stdout)
        first = doc["progress"].get("first_round_ns")
        if first is None or not 0 <= first <= 2 * RETURN_WAIT_NS:
            fail(f"progress.first_round_ns {first}: expected measured, at most 2 ms", p.stdout)
        warm = doc["progress"].get("handover_warm_ns")
        if warm is None or not 0 < warm < RETURN_WAIT_NS:
            fail(f"progress.handover_warm_ns {warm}: expected measured, above 0 and below 1 ms", p.stdout)
        for name, g in doc["guard"].items():
            if isinstance(g, dict) and "hold" in g and not g.get("hold_warm", {}).get("points"):
                fail(f"guard.{name}.hold_warm: expected measured below {l2} bytes", p.stdout)
        if l2 >= 512 << 10 and not doc["guard"].get("in_call_rest_warm", {}).get("points"):
            fail("guard.in_call_rest_warm: expected measured at 64 KiB (tnbc's own early return, caches warm)", p.stdout)
        if l2 >= 512 << 10 and not doc["guard"].get("in_call_rest_bcast_warm", {}).get("points"):
            fail("guard.in_call_rest_bcast_warm: expected measured at 64 KiB (tnbc's own broadcast, caches warm)", p.stdout)
        if l2 >= 512 << 10 and not doc["guard"].get("in_call_rest_bcast_root_warm", {}).get("points"):
            fail("guard.in_call_rest_bcast_root_warm: expected measured at 64 KiB (tnbc's own broadcast's root, caches "
                 "warm)", p.stdout)
    print(f"OK: G {G:.2f} ns/B, O_s {level['O_s_ns_per_byte']:.3f} ns/B, O_r {level['O_r_ns_per_byte']:.3f} ns/B, "
          f"o_s/o_r at {last['bytes']:.0f} B: {last['o_s_ns'] / 1e3:.1f} / {last['o_r_ns'] / 1e3:.1f} us "
          f"(g {last['g_ns'] / 1e3:.1f} us), hand-over {handover / 1e3:.1f} us")


if __name__ == "__main__":
    main()
