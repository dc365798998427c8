#!/usr/bin/env python3
"""Runs a program in trace mode under mpirun, merges the traces with `tnbc merge` and checks
the profile against the access orders the program is known to have.

  check_trace.py orders  --lib L --tool T --prog P --pattern {3120|reverse|differ} [--np 4]
  check_trace.py fortran --lib L --tool T --prog P [--np 4]
  check_trace.py errors  --lib L --tool T --prog P          (mixed runs, truncated/corrupt files)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from run_mpi_test import launch_command  # noqa: E402  (the one way tests start MPI jobs)

ITER = 3


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run_traced(args, outdir, np, prog_args):
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    # The broadcast's cut is the cost model's (segments from the start-up probe's machine): at
    # most 2 middle segments, the 4 sub-messages the expected orders name (with cheaper messages
    # since calibrate's and the probe's overhead fix, the model may pick more).
    exports = {"LD_PRELOAD": ":".join(args.preload_first + [args.lib]), "TNBC_MODE": "trace",
               "TNBC_OUTPUT_DIR": outdir, "TNBC_BCAST_MAX_SEGMENTS": "2"}
    exports.update(kv.split("=", 1) for kv in args.env)
    cmd = launch_command(args.mpi, args.mpirun, np, exports) + [args.prog] + prog_args
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=100)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        fail("%s exited with %d" % (" ".join(cmd), p.returncode))
    if "OK" not in p.stdout:
        fail("the program did not print OK (wrong results in trace mode?)")
    return p


def merge(args, d, expect_ok=True):
    out = os.path.join(d, "app.profile")
    p = subprocess.run([args.tool, "merge", d, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    if expect_ok:
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            fail("tnbc merge failed: " + p.stderr)
        with open(out) as f:
            prof = json.load(f)
        if prof.get("format") != "tnbc-profile" or prof.get("version") != 1:
            fail("profile format/version wrong: %r %r" % (prof.get("format"), prof.get("version")))
        return prof
    return p


def sites_of(prof, kind):
    s = [x for x in prof["sites"] if x["kind"] == kind]
    if len(s) != 1:
        fail("expected one %s call site, found %d" % (kind, len(s)))
    return s[0]


def expected_orders(pattern, n, np):
    if pattern == "reverse":
        return {r: list(range(n - 1, -1, -1)) for r in range(np)}
    if pattern == "differ":
        return {r: [(r + k) % n for k in range(n)] for r in range(np)}
    return {r: [int(c) for c in pattern] for r in range(np)}


def check_site(site, expect, ranks, uniform, what):
    byrank = {x["rank"]: x for x in site["ranks"]}
    for r in ranks:
        got = byrank[r]["order"]
        if got != expect[r]:
            fail("%s rank %d: order %s, expected %s" % (what, r, got, expect[r]))
        if byrank[r]["calls_with_order"] != ITER or byrank[r]["traced"] != ITER:
            fail("%s rank %d: %d of %d traced calls have the order (expected %d)" %
                 (what, r, byrank[r]["calls_with_order"], byrank[r]["traced"], ITER))
        if byrank[r]["curc_ns"] is None or byrank[r]["r_crc_bytes_per_s"] is None:
            fail("%s rank %d: no CURC/R_CRC estimate" % (what, r))
        if len(byrank[r]["keys"]) != 1:
            fail("%s rank %d: %d instance keys for one size signature" % (what, r, len(byrank[r]["keys"])))
    if uniform:
        if site["consensus_order"] != expect[ranks[0]]:
            fail("%s: consensus %s, expected %s" % (what, site["consensus_order"], expect[ranks[0]]))
        if abs(site["kendall_tau_mean"] - 1.0) > 1e-9 or not site["same_order_on_all_ranks"]:
            fail("%s: ranks should agree fully (tau %s)" % (what, site["kendall_tau_mean"]))
    else:
        if site["same_order_on_all_ranks"] or site["kendall_tau_mean"] >= 1.0:
            fail("%s: ranks differ but the profile says they agree" % what)
    print("ok: %s orders %s" % (what, [expect[r] for r in ranks]))


def cmd_orders(args):
    d = tempfile.mkdtemp(prefix="tnbc-trace-test.")
    try:
        run_traced(args, d, args.np, [args.pattern, str(ITER)])
        prof = merge(args, d)
        if prof["np"] != args.np:
            fail("np %d in the profile" % prof["np"])
        uniform = args.pattern != "differ"
        exp = expected_orders(args.pattern, args.np, args.np)
        a = sites_of(prof, "alltoall")
        check_site(a, exp, list(range(args.np)), uniform, "alltoall")
        if a["send_buffer_written_before_completion"]:
            fail("alltoall: the send buffer is never written, profile says it is")
        v = sites_of(prof, "alltoallv")
        check_site(v, exp, list(range(args.np)), uniform, "alltoallv")
        if not v["send_buffer_written_before_completion"]:
            fail("alltoallv: the send buffer is written at once, profile says it is not")
        # 3120 and reverse reach a block through a page it shares with an unread neighbour
        # (ascending reads, as in "differ", find the shared page already opened)
        if args.pattern != "differ" and not any(r["shared_page_attributions"] > 0 for r in v["ranks"]):
            fail("alltoallv: blocks share pages, no shared-page attribution reported")
        if not all(r["syscall_touches"] >= ITER for r in v["ranks"]):
            fail("alltoallv: the write(2) first touches were not recorded as syscalls")
        b = sites_of(prof, "bcast")
        bexp = expected_orders(args.pattern, 4, args.np)
        check_site(b, bexp, list(range(1, args.np)), uniform, "bcast")
        root = [x for x in b["ranks"] if x["rank"] == 0][0]
        if root["order"]:
            fail("bcast root receives nothing but has order %s" % root["order"])
        g = sites_of(prof, "allgather")
        check_site(g, exp, list(range(args.np)), uniform, "allgather")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("PASS")


def cmd_fortran(args):
    d = tempfile.mkdtemp(prefix="tnbc-trace-test.")
    try:
        run_traced(args, d, args.np, [])
        prof = merge(args, d)
        a = sites_of(prof, "alltoall")
        exp = {r: list(range(args.np)) for r in range(args.np)}
        byrank = {x["rank"]: x for x in a["ranks"]}
        for r in range(args.np):
            if byrank[r]["order"] != exp[r]:
                fail("fortran alltoall rank %d: order %s, expected %s" % (r, byrank[r]["order"], exp[r]))
        if a["consensus_order"] != exp[0]:
            fail("fortran alltoall: consensus %s" % a["consensus_order"])
        if not a["frames"] or not a["frames"][0]["module"]:
            fail("fortran alltoall: no call-site frames")
        sites_of(prof, "bcast")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("PASS")


def expect_merge_error(args, d, needles, what):
    p = merge(args, d, expect_ok=False)
    if p.returncode == 0:
        fail("%s: tnbc merge accepted it" % what)
    for n in needles:
        if n not in p.stderr:
            fail("%s: message %r lacks %r" % (what, p.stderr.strip(), n))
    print("ok: %s -> %s" % (what, p.stderr.strip()))


def call_keys(path):
    """(site, key, occurrence) of every call in a trace file."""
    out = []
    for line in open(path):
        f = line.split()
        if f and f[0] == "call":
            out.append((f[3], f[5], f[7]))
    return out


def cmd_errors(args):
    base = tempfile.mkdtemp(prefix="tnbc-trace-test.")
    try:
        d4, d2 = os.path.join(base, "np4"), os.path.join(base, "np2")
        run_traced(args, d4, 4, ["reverse", "1"])
        run_traced(args, d2, 2, ["reverse", "1"])
        names = ["tnbc-trace.%d.txt" % r for r in range(4)]
        # mixed np
        mixed = os.path.join(base, "mixed")
        os.mkdir(mixed)
        for r in range(4):
            shutil.copy(os.path.join(d2 if r < 2 else d4, names[r]), mixed)
        expect_merge_error(args, mixed, ["mixed runs", "processes"], "mixed np")
        # missing rank
        miss = os.path.join(base, "missing")
        shutil.copytree(d4, miss)
        os.remove(os.path.join(miss, names[3]))
        expect_merge_error(args, miss, ["rank(s) 3"], "missing rank")
        # truncated
        trunc = os.path.join(base, "trunc")
        shutil.copytree(d4, trunc)
        path = os.path.join(trunc, names[2])
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) * 2 // 3])
        expect_merge_error(args, trunc, [names[2], "truncated"], "truncated file")
        # corrupt (one digit changed)
        bad = os.path.join(base, "corrupt")
        shutil.copytree(d4, bad)
        path = os.path.join(bad, names[1])
        text = open(path).read()
        i = text.index("t_ns ") + 5
        while not text[i].isdigit():
            i = text.index("t_ns ", i) + 5
        text = text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]
        open(path, "w").write(text)
        expect_merge_error(args, bad, [names[1], "checksum"], "corrupt file")
        # the same instances get the same keys in another run (ASLR: module-relative addresses)
        d4b = os.path.join(base, "np4b")
        run_traced(args, d4b, 4, ["reverse", "1"])
        for r in range(4):
            a, b = call_keys(os.path.join(d4, names[r])), call_keys(os.path.join(d4b, names[r]))
            if a != b or not a:
                fail("rank %d: call keys differ between two runs: %s vs %s" % (r, a, b))
        print("ok: call-site keys stable across runs: %s" % call_keys(os.path.join(d4, names[0])))
        # the good directory merges
        merge(args, d4)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("PASS")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["orders", "fortran", "errors"])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--preload-first", action="append", default=[])
    ap.add_argument("--env", action="append", default=[])  # K=V for the ranks
    ap.add_argument("--pattern", default="3120")
    ap.add_argument("--np", type=int, default=4)
    args = ap.parse_args()
    {"orders": cmd_orders, "fortran": cmd_fortran, "errors": cmd_errors}[args.what](args)


if __name__ == "__main__":
    main()
