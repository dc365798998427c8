#!/usr/bin/env python3
"""Mode optimize with good and bad profiles (docs/formats.md, profile rules).

usage: profile_inputs.py --lib LIBTNBC --tool TNBC --prog PROFILE_USE [--np 3]

A trace pass at --np and one at --np - 1 are merged into profiles; then profile_use runs with
TNBC_MODE=optimize and
  good        the profile of this program at this np: no message, calls ordered by the profile
  other-np    the profile recorded at np - 1
  corrupt     the good profile cut in half
  not-json    a binary file
  missing     a path that does not exist
  other-sizes the good profile, the program run with other message sizes
  other-prog  the good profile, a copy of the program at another path
Every run must print "0 failed" (each received byte equals the blocking result) and exit 0;
each bad case must print its message exactly once (naming the file) and still return early
with default priorities; the summaries must say how the profile was used.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_mpi_test import add_launcher_options, fail, run_mpirun  # noqa: E402

SCALE, OTHER_SCALE, ITER = "1", "2", "3"


def mpirun(a, np, prog, args, env_extra, outdir):
    exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": outdir}
    exports.update(env_extra)
    return run_mpirun(np, exports, [prog] + args, 120, a)


def trace_profile(a, np, work):
    outdir = os.path.join(work, f"trace-np{np}")
    code, out = mpirun(a, np, a.prog, [SCALE, ITER], {"TNBC_MODE": "trace"}, outdir)
    if code != 0 or " 0 failed" not in out:
        fail(f"trace pass at np {np} failed (exit {code})", out)
    profile = os.path.join(work, f"np{np}.profile")
    m = subprocess.run([a.tool, "merge", outdir, "-o", profile, "--quiet"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if m.returncode != 0:
        fail(f"tnbc merge at np {np} failed", m.stdout)
    return profile


def summaries(outdir, np, output):
    files = sorted(glob.glob(os.path.join(outdir, "tnbc-summary.*.json")))
    if len(files) != np:
        fail(f"expected {np} summaries in {outdir}, found {len(files)}", output)
    return [json.load(open(f)) for f in files]


def run_case(a, work, name, profile, expect, status, prog=None, scale=SCALE):
    outdir = os.path.join(work, "out-" + name)
    # Read orders only: with the default cost model every site of this small, shared-memory
    # program would run blocking (profile-blocking-sites tests that decision).
    code, out = mpirun(a, a.np, prog or a.prog, [scale, ITER],
                       {"TNBC_MODE": "optimize", "TNBC_PROFILE": profile, "TNBC_PROFILE_BLOCKING": "off"}, outdir)
    print(f"--- {name}: exit {code}")
    print(out.strip())
    if code != 0:
        fail(f"{name}: exit status {code}, expected 0", out)
    if " 0 failed" not in out:
        fail(f"{name}: results differ from the blocking collectives", out)
    tnbc_lines = [l for l in out.splitlines() if "tnbc[" in l and ("warning" in l or "error" in l)]
    if expect is None:
        if tnbc_lines:
            fail(f"{name}: unexpected tnbc messages: {tnbc_lines}", out)
    else:
        hits = [l for l in tnbc_lines if all(e in l for e in expect)]
        if len(hits) != 1:
            fail(f"{name}: expected one message containing {expect}, found {len(hits)}: {tnbc_lines}", out)
        if len(tnbc_lines) != 1:
            fail(f"{name}: expected only that message, found {tnbc_lines}", out)
    sums = summaries(outdir, a.np, out)
    prof = [s.get("profile") for s in sums]
    if any(p is None for p in prof):
        fail(f"{name}: a summary lacks the profile section: {prof}")
    if {p["status"] for p in prof} != {status}:
        fail(f"{name}: profile status {[p['status'] for p in prof]}, expected {status}")
    early = sum(s["collectives"][k]["early_return"] for s in sums for k in ("alltoall", "alltoallv", "bcast"))
    if early == 0:
        fail(f"{name}: no call returned early (expected nbc with default priorities at least)")
    ordered = sum(p["calls_ordered"] for p in prof)
    other = sum(p["calls_other_sizes"] for p in prof)
    unknown = sum(p["calls_unknown_site"] for p in prof)
    print(f"{name}: early returns {early}, calls ordered by the profile {ordered}, other sizes {other}, "
          f"unknown sites {unknown}")
    return ordered, other, unknown


def main():
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--np", type=int, default=3)
    a = ap.parse_args()
    if shutil.which(a.mpirun) is None:
        fail(f"{a.mpirun} not found")
    work = tempfile.mkdtemp(prefix="tnbc-profile-")
    good = trace_profile(a, a.np, work)
    other_np = trace_profile(a, a.np - 1, work)
    text = open(good).read()
    corrupt = os.path.join(work, "corrupt.profile")
    open(corrupt, "w").write(text[: len(text) // 2])
    binary = os.path.join(work, "binary.profile")
    shutil.copy(a.prog, binary)
    copy = os.path.join(work, "copy-of-" + os.path.basename(a.prog))
    shutil.copy(a.prog, copy)

    ordered, other, unknown = run_case(a, work, "good", good, None, "loaded")
    if ordered == 0 or other or unknown:
        fail("good: every call should take its order from the profile")
    run_case(a, work, "other-np", other_np, [other_np, f"recorded with {a.np - 1} processes, this run has {a.np}",
                                            "default priorities"], "rejected")
    run_case(a, work, "corrupt", corrupt, [corrupt, "not valid JSON", "truncated", "default priorities"], "rejected")
    run_case(a, work, "not-json", binary, [binary, "not valid JSON", "line 1, column 1"], "rejected")
    missing = os.path.join(work, "none.profile")
    run_case(a, work, "missing", missing, [missing, "No such file", "default priorities"], "rejected")
    ordered, other, unknown = run_case(a, work, "other-sizes", good, [good, "recorded other message sizes"], "loaded",
                                       scale=OTHER_SCALE)
    if other == 0 or ordered:
        fail("other-sizes: calls should be counted as other sizes, none ordered")
    run_case(a, work, "other-prog", good, [good, "recorded for the program " + os.path.realpath(a.prog),
                                           "this is " + copy], "rejected", prog=copy)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
