#!/usr/bin/env python3
"""Runs an MPI program under mpirun with libtnbc.so preloaded and checks what came out.

usage: run_mpi_test.py [--mpi openmpi|mpich] [--mpirun PATH] [--preload-first LIB ...]
                       --np N --lib LIBTNBC [--mode nbc] [--no-lib] [--env K=V ...]
                       [--expect-exit K|failure] [--expect-output TEXT ...] [--expect-once TEXT ...]
                       [--skip-if-output TEXT ...] [--allow-errors]
                       [--expect-summary kind=alltoall,min_calls=3,lang=fortran,min_early=1 ...]
                       [--expect-bcast-backend B] [--expect-guard G] [--expect-no-guard G] [--expect-threshold BASIS]
                       [--tool TNBC --expect-report TEXT ...] [--expect-mpi-touches N]
                       [--timeout SECONDS] -- PROGRAM [ARGS]

--expect-summary constraints are checked on the per-rank summaries tnbc writes at MPI_Finalize
(TNBC_OUTPUT_DIR/tnbc-summary.<rank>.json), summed over ranks: `min_calls` (calls of that kind),
`min_fortran` (calls through the Fortran bindings), `min_early` / `max_early` (calls that returned
early),
`lang` (a call site in that language exists), `reason=NAME` (at least one call had that reason).
--expect-bcast-backend NAME: every broadcast that took tnbc's schedule travelled by that backend
(summed `bcast_backends` of the summaries: p2p, rma_binomial, rma_linear), and at least one did.
--expect-guard NAME: at least one early return was held back by that guard backend (summed
`guards` of the summaries: userfaultfd, prot_none, or userfaultfd_moved for pages swapped with
UFFDIO_MOVE); for userfaultfd the test is skipped (exit 77) when tnbc said the kernel does not
allow it here, for userfaultfd_moved also on kernels before Linux 6.8.
--expect-no-guard NAME: no early return was held back by that guard backend.
--expect-report TEXT (with --tool TNBC): `tnbc report` on the run's summaries succeeds and prints TEXT.
--expect-mpi-touches N (with --mode trace): in every rank's trace at least N calls have a
sub-message first touched by an MPI call (`how M`: the call's fence saw it before any access).
--expect-threshold BASIS: every rank's summary reports the same size threshold (TNBC_MIN_BYTES)
with that basis (measured, set, single_rank); see check_threshold. The runner pins
TNBC_MIN_BYTES to three pages unless --env sets it (run_mpirun).
--expect-once TEXT: exactly one output line contains TEXT (a message said once for all ranks).
--skip-if-output TEXT: the test is skipped (exit 77) when the output contains TEXT (e.g. MPI
cannot select a component the test asks for on this machine).
A line `tnbc[R]: error: ...` in the output fails the test unless --allow-errors is given.
--mpi/--mpirun name the implementation the build uses and its launcher (meson passes both):
Open MPI's mpirun gets `--oversubscribe` and `-x K=V`, MPICH's hydra `-genv K V` (it places more
ranks than cores by itself). The variables go to the ranks only, never into the launcher. With
hydra, a non-zero --expect-exit holds for any failed job (see exit_status).
--preload-first LIB goes before libtnbc.so in LD_PRELOAD (the ASan runtime of a sanitized build);
programs run without tnbc (--no-lib) are sanitized themselves and need nothing preloaded.
Exit status 0 when every expectation holds; the reason is printed otherwise.
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile


def fail(msg, output=""):
    print(f"FAIL: {msg}")
    if isinstance(output, bytes):  # subprocess.TimeoutExpired keeps what was read as bytes, even with text=True
        output = output.decode(errors="replace")
    if output:
        print("---- output (last 60 lines) ----")
        print("\n".join(output.splitlines()[-60:]))
    sys.exit(1)


SKIP = 77

# `tnbc calibrate`'s options for the tests' calibrations: a small last-level cache to empty before
# its cold measurements, so that one takes ~12 s instead of ~80 on a PVM guest (sysconf leads to
# 128 MiB, read twice per measurement), and copies measured to 4 MiB, so that each rank maps 16 MiB
# for its in-call copies instead of 256 (on a guest whose first touch of a page costs ~10 us, three
# quarters of a calibration's page faults; docs/testing.md). Its cold and large-copy prices are
# then off: the tests check the calibration's mechanics and what tnbc decides from a file, not the
# file's figures.
QUICK_CALIBRATION = ["--cache-bytes", "8m", "--copy-bytes", "4m"]


def add_launcher_options(ap):
    """The options meson gives every script that starts MPI jobs (meson.build: mpi_launch_args):
    which implementation and launcher, and what goes before libtnbc.so in LD_PRELOAD."""
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--preload-first", action="append", default=[])
    ap.add_argument("--env", action="append", default=[], help="K=V set in the ranks' environment")


def tool_arguments():
    """A test that runs `tnbc` itself under the launcher: the launcher's options
    (add_launcher_options) and --tool TNBC, parsed."""
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--tool", required=True)
    return ap.parse_args()


def run_mpirun(np, exports, cmd, timeout, opts=None):
    """Runs cmd under the launcher named in opts (add_launcher_options; default Open MPI's mpirun)
    with np ranks and the variables in exports set in the ranks' environment (as root too,
    oversubscribed); returns (launcher exit status, output). Fails the test on a timeout."""
    mpi, mpirun = getattr(opts, "mpi", "openmpi"), getattr(opts, "mpirun", "mpirun")
    first = getattr(opts, "preload_first", [])
    # The size threshold is measured at MPI_Init by default (TNBC_MIN_BYTES=auto): tests pin it
    # to its floor, three pages, so that which calls return early never depends on the costs a
    # run happens to measure; a test of auto passes --env TNBC_MIN_BYTES=auto.
    exports = dict({"TNBC_MIN_BYTES": str(3 * os.sysconf("SC_PAGE_SIZE"))}, **exports)
    for kv in getattr(opts, "env", []):
        k, v = kv.split("=", 1)
        exports[k] = v
    if first and exports.get("LD_PRELOAD"):
        exports = dict(exports, LD_PRELOAD=":".join(first + [exports["LD_PRELOAD"]]))
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    launcher = launch_command(mpi, mpirun, np, exports)
    print("running:", " ".join(launcher + cmd), flush=True)
    proc = subprocess.Popen(launcher + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        fail(f"timed out after {timeout:.0f} s (killed)", output)
    return proc.returncode, output


def kernel_version():
    m = re.match(r"(\d+)\.(\d+)", platform.release())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def check_threshold(summaries, basis, output):
    """--expect-threshold: every rank reports the same size threshold with this basis; a measured
    one is a whole number of pages, at least three (or null: no size pays, then nothing returned
    early), some rank's own value, with the measured costs non-negative."""
    page = os.sysconf("SC_PAGE_SIZE")
    ts = [s.get("threshold") for s in summaries]
    if any(t is None or t.get("basis") != basis for t in ts):
        fail(f"expected threshold basis {basis} on every rank, got {ts}", output)
    values = {t["min_bytes"] for t in ts}
    if len(values) != 1:
        fail(f"the ranks use different thresholds: {ts}", output)
    value = values.pop()
    if basis == "measured":
        if value is not None and (value < 3 * page or value % page):
            fail(f"measured threshold {value} is not a whole number of pages >= 3 pages", output)
        if not any(t["from_this_rank"] for t in ts):
            fail(f"no rank measured the threshold that is used: {ts}", output)
        for t in ts:
            costs = [t[k] for k in ("link_ns", "link_ns_per_byte", "guard_ns", "guard_ns_per_byte", "copy_ns_per_byte")]
            if any(not isinstance(c, (int, float)) or c < 0 for c in costs):
                fail(f"measured costs missing or negative: {t}", output)
            if len(summaries) > 1 and t["link_ns_per_byte"] <= 0 and t["link_ns"] <= 0:
                fail(f"no link cost measured with {len(summaries)} ranks: {t}", output)
        if value is None and len(summaries) <= 2:
            # The cost model's threshold is per kind (the summary's model block): the kinds whose
            # threshold is never (Alltoall's is `threshold` above) must not have returned early.
            # The block has MPI_COMM_WORLD's thresholds; a sub-communicator's placement (fewer
            # ranks on the node) has its own, so only at np <= 2, where every communicator of
            # more than one rank is placed as MPI_COMM_WORLD (tests/mpi/threshold_never.py
            # checks every communicator with a machine where no size pays anywhere).
            per_kind = (summaries[0].get("model") or {}).get("thresholds") or {}
            never = {k for k, v in per_kind.items() if v is None} | {"alltoall"}
            family = {"alltoallv": "alltoall", "allgatherv": "allgather"}
            if sum(v["early_return"] for s in summaries for k, v in s["collectives"].items() if family.get(k, k) in never):
                fail(f"no size pays by the cost model for {sorted(never)}, yet such calls returned early", output)
    print(f"threshold: {value} bytes ({basis}) on every rank")
    # The node's CPUs (runtime/cpu_share.hh), measured alongside: all ranks run on this machine.
    for s in summaries:
        n = s.get("node")
        if not n or n["ranks"] != len(summaries) or not 1 <= n["cpus"] <= os.cpu_count() or not 1 <= n["own_cpus"] <= n["cpus"]:
            fail(f"node block wrong for {len(summaries)} ranks on {os.cpu_count()} CPUs: {n}", output)
        # TNBC_PROGRESS_CPUS (default auto) never narrows the progress thread below the rank's CPUs.
        if not n["own_cpus"] <= n.get("progress_cpus", 0) <= os.cpu_count():
            fail(f"progress_cpus outside own_cpus..{os.cpu_count()}: {n}", output)
        contention = n["ranks"] > n["cpus"] or (n["own_cpus"] == 1 and n["progress_cpus"] == 1)
        if (n["cpu_contention"] is not None) != contention:
            fail(f"cpu_contention does not match ranks/cpus/own_cpus/progress_cpus: {n}", output)
        # The rank's cpuset holds its CPUs (0: unknown); a binding is advised only beside a second CPU.
        if not (n["cpuset_cpus"] == 0 or n["own_cpus"] <= n["cpuset_cpus"] <= os.cpu_count()):
            fail(f"cpuset_cpus outside own_cpus..{os.cpu_count()}: {n}", output)
        if n["cpu_contention"] and n["ranks"] <= n["cpus"] and ("--bind-to" in n["cpu_contention"]) != (n["cpuset_cpus"] != 1):
            fail(f"cpu_contention's advice does not fit cpuset_cpus {n['cpuset_cpus']}: {n['cpu_contention']}", output)
    print(f"node: {summaries[0]['node']}")


def check_summaries(outdir, np, constraints, output, guard=None, no_guard=None, threshold=None, bcast_backend=None):
    files = sorted(glob.glob(os.path.join(outdir, "tnbc-summary.*.json")))
    if len(files) != np:
        fail(f"expected {np} summaries in {outdir}, found {len(files)}", output)
    summaries = []
    for f in files:
        with open(f) as fh:
            s = json.load(fh)
        if s.get("format") != "tnbc-summary" or s.get("version") != 2:
            fail(f"{f}: not a tnbc-summary version 2")
        # Where the rank ran (runtime/placement.hh): this machine, at least one CPU.
        where = s.get("placement") or {}
        if where.get("host") != socket.gethostname() or not 1 <= where.get("cpu_count", 0) <= os.cpu_count():
            fail(f"{f}: placement {where} is not this host ({socket.gethostname()}) with 1..{os.cpu_count()} CPUs")
        summaries.append(s)
    if threshold:
        check_threshold(summaries, threshold, output)
    if guard:
        used = sum(s["guards"][guard] for s in summaries)
        if used == 0 and guard.startswith("userfaultfd") and "instead of userfaultfd" in output:
            print("SKIP: userfaultfd is not available here:")
            print("\n".join(l for l in output.splitlines() if "instead of userfaultfd" in l)[:500])
            sys.exit(SKIP)
        if used == 0 and guard == "userfaultfd_moved" and kernel_version() < (6, 8):
            print(f"SKIP: Linux {platform.release()} cannot move pages (UFFDIO_MOVE is Linux >= 6.8)")
            sys.exit(SKIP)
        if used == 0:
            fail(f"no early return was guarded by {guard} (guards: {[s['guards'] for s in summaries]})", output)
        print(f"guard {guard}: {used} early returns")
    if bcast_backend:
        used = {b: sum(s["bcast_backends"][b] for s in summaries) for b in summaries[0]["bcast_backends"]}
        if used[bcast_backend] == 0 or sum(used.values()) != used[bcast_backend]:
            fail(f"broadcasts by backend {used}: expected all by {bcast_backend}", output)
        print(f"bcast backend {bcast_backend}: {used[bcast_backend]} broadcasts")
    if no_guard:
        used = sum(s["guards"][no_guard] for s in summaries)
        if used:
            fail(f"{used} early returns were guarded by {no_guard}, expected none", output)
    for c in constraints:
        fields = dict(kv.split("=", 1) for kv in c.split(","))
        kind = fields.pop("kind")
        total = {"calls": 0, "fortran_calls": 0, "early_return": 0}
        reasons = {}
        langs = set()
        for s in summaries:
            k = s["collectives"][kind]
            for key in total:
                total[key] += k[key]
            for r, n in k["reasons"].items():
                reasons[r] = reasons.get(r, 0) + n
            langs.update(site["lang"] for site in s["sites"] if site["kind"] == kind)
        for key, value in fields.items():
            if key == "min_calls" and total["calls"] < int(value):
                fail(f"{kind}: {total['calls']} calls intercepted, expected at least {value}")
            elif key == "min_fortran" and total["fortran_calls"] < int(value):
                fail(f"{kind}: {total['fortran_calls']} Fortran calls intercepted, expected at least {value}")
            elif key == "min_early" and total["early_return"] < int(value):
                fail(f"{kind}: {total['early_return']} early returns, expected at least {value}")
            elif key == "max_early" and total["early_return"] > int(value):
                fail(f"{kind}: {total['early_return']} early returns, expected at most {value}")
            elif key == "lang" and value not in langs:
                fail(f"{kind}: no call site in {value} (sites: {sorted(langs)})")
            elif key == "reason" and reasons.get(value, 0) == 0:
                fail(f"{kind}: no call ran blocking for reason {value} (reasons: {reasons})")
            elif key not in ("min_calls", "min_fortran", "min_early", "max_early", "lang", "reason"):
                fail(f"unknown constraint {key}")
        print(f"summary {kind}: {total}, reasons {reasons}, sites {sorted(langs)}")


def check_mpi_touches(outdir, np, n, output):
    """--expect-mpi-touches: every rank's trace (docs/formats.md) has at least n calls with a
    sub-message whose first touch was an MPI call on the buffer (a fence), not a fault."""
    for rank in range(np):
        path = os.path.join(outdir, f"tnbc-trace.{rank}.txt")
        if not os.path.exists(path):
            fail(f"no trace {path}", output)
        calls, call = set(), None
        with open(path) as f:
            for line in f:
                fields = line.split()
                if fields[:1] == ["call"]:
                    call = fields[1]
                elif fields[:1] == ["sub"] and fields[fields.index("how") + 1] == "M":
                    calls.add(call)
        if len(calls) < n:
            fail(f"rank {rank}: {len(calls)} calls with a sub-message first touched by an MPI call, expected at "
                 f"least {n} (a fence missing?)", output)
        print(f"rank {rank}: calls {sorted(calls, key=int)} first touched by an MPI call")


def launch_command(mpi, mpirun, np, exports):
    """The launcher command line for `np` ranks with `exports` set in the ranks' environment."""
    if mpi == "mpich":
        cmd = [mpirun, "-print-all-exitcodes", "-np", str(np)]
        for k, v in exports.items():
            cmd += ["-genv", k, v]
        return cmd
    cmd = [mpirun, "--oversubscribe", "-np", str(np)]
    for k, v in exports.items():
        cmd += ["-x", f"{k}={v}"]
    return cmd


def exit_status(mpi, returncode, output, expected):
    """The job's exit status as Open MPI's mpirun reports it: the first failing rank's, 128+N for
    a rank killed by signal N. Hydra's is not that: when one rank dies (a test's deliberate
    segfault), the others fail in turn (UCX aborts on the dead peer) or are killed, and which
    status it reports is a race; even its per-rank list (-print-all-exitcodes) records the dead
    rank as 0 at times. So under hydra a test that expects a failure accepts any failure (its
    --expect-output markers say which), and one that expects success needs every rank at 0."""
    if mpi != "mpich":
        return returncode
    ranks = []
    for line in re.findall(r"Exit codes: (.*)", output):
        for host_codes in re.findall(r"\[[^]]*\] ([\d,]+)", line):
            ranks += [int(c) for c in host_codes.split(",")]
    codes = [(w >> 8) & 0xFF if w & 0x7F == 0 else 128 + (w & 0x7F) for w in ranks]
    failed = [c for c in codes if c != 0] or ([returncode] if returncode else [])
    if not failed:
        return 0
    return expected if expected != 0 else failed[0]


def main():
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--lib")
    ap.add_argument("--mode", default="nbc")
    ap.add_argument("--no-lib", action="store_true")
    ap.add_argument("--expect-exit", default="0", help="an exit status, or 'failure' for any non-zero one")
    ap.add_argument("--expect-output", action="append", default=[])
    ap.add_argument("--expect-once", action="append", default=[])
    ap.add_argument("--skip-if-output", action="append", default=[])
    ap.add_argument("--allow-errors", action="store_true")
    ap.add_argument("--expect-summary", action="append", default=[])
    ap.add_argument("--expect-bcast-backend", choices=["p2p", "rma_binomial", "rma_linear"],
                    help="at least one broadcast took that backend and none another (summaries' bcast_backends)")
    ap.add_argument("--expect-guard", choices=["userfaultfd", "prot_none", "userfaultfd_moved"])
    ap.add_argument("--expect-no-guard", choices=["userfaultfd", "prot_none", "userfaultfd_moved"])
    ap.add_argument("--expect-threshold", choices=["measured", "set", "single_rank"])
    ap.add_argument("--tool", help="the tnbc command, for --expect-report")
    ap.add_argument("--expect-report", action="append", default=[])
    ap.add_argument("--expect-mpi-touches", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if not cmd:
        ap.error("no program given")
    if shutil.which(a.mpirun) is None:
        fail(f"{a.mpirun} not found (install openmpi-bin or mpich)")
    outdir = tempfile.mkdtemp(prefix="tnbc-mpitest-")
    exports = {"TNBC_OUTPUT_DIR": outdir, "TNBC_MODE": a.mode}
    if not a.no_lib:
        if not a.lib or not os.path.exists(a.lib):
            fail(f"library {a.lib} not found")
        exports["LD_PRELOAD"] = os.path.abspath(a.lib)
    returncode, output = run_mpirun(a.np, exports, cmd, a.timeout, a)
    print(output)
    for text in a.skip_if_output:
        if text in output:
            print(f"SKIP: the output says '{text}'")
            sys.exit(SKIP)
    expected = 1 if a.expect_exit == "failure" else int(a.expect_exit)
    status = exit_status(a.mpi, returncode, output, expected)
    if (status == 0) if a.expect_exit == "failure" else status != expected:
        fail(f"exit status {status}, expected {a.expect_exit}", output)
    for text in a.expect_output:
        if text not in output:
            fail(f"output lacks '{text}'", output)
    for text in a.expect_once:
        n = sum(text in line for line in output.splitlines())
        if n != 1:
            fail(f"{n} output lines contain '{text}', expected exactly one", output)
    errors = re.findall(r"^tnbc\[\d+\]: error: .*$", output, re.M)
    if errors and not a.allow_errors:
        fail(f"tnbc reported {len(errors)} error(s), first: {errors[0]}", output)
    if (a.expect_summary or a.expect_guard or a.expect_no_guard or a.expect_threshold or a.expect_bcast_backend) \
            and not a.no_lib:
        check_summaries(outdir, a.np, a.expect_summary, output, a.expect_guard, a.expect_no_guard, a.expect_threshold,
                        a.expect_bcast_backend)
    if a.expect_mpi_touches:
        check_mpi_touches(outdir, a.np, a.expect_mpi_touches, output)
    if a.expect_report:
        r = subprocess.run([a.tool, "report", outdir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(r.stdout)
        if r.returncode != 0:
            fail(f"tnbc report exited with {r.returncode}", r.stdout)
        for text in a.expect_report:
            if text not in r.stdout:
                fail(f"tnbc report lacks '{text}'", r.stdout)
    shutil.rmtree(outdir, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
