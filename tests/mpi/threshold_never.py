#!/usr/bin/env python3
"""Where the cost model finds that no size pays, no call returns early -- on any communicator,
for any kind, also on a rank that receives nothing in an Alltoallv (only sends).

usage: threshold_never.py --lib LIBTNBC --tool TNBC --prog DIFF_COLLECTIVES [--np 3]

  calibrate  `tnbc calibrate` under the launcher (small sweep): a machine file
  never      the same file with every guard backend's fault costing 1000 s (a reader's wait on a
             page held back): returning early cannot pay at any size up to the model's 1 GiB; and
             every placement's margin of Tcomm at 100 % (TNBC_EARLY_RETURN_MARGIN_*_PCT), which no
             saving clears: a calibration whose ping-pong met MPICH's spinning ranks' scheduler
             slices (L 2.1 ms, session 78's CI) prices the library's broadcast at 3 L and tnbc's,
             its pieces all in by the return (nothing held for a reader), at one: paid at 12 KiB
  run        diff_collectives (every collective, sub-communicators, Alltoallv with zero counts)
             with TNBC_MIN_BYTES=auto and that file: results equal the blocking ones, every
             rank's summary says the threshold is null (no size pays) and the model's per-kind
             thresholds are all null, and no call of any kind returned early (seen once under
             load in threshold-auto-np2: an Alltoallv rank that received nothing returned early
             although no size paid, as the policy was not asked for calls without receives)
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import calibrated_machine, options, run, summaries  # noqa: E402
from run_mpi_test import fail  # noqa: E402

NEVER_FAULT_NS = 1e12


def main():
    a = options(3)
    work, m = calibrated_machine(a, "tnbc-never-")
    guards = [g for g in m["guard"].values() if isinstance(g, dict) and "fault_ns" in g]  # the backends measured
    if not guards:
        fail(f"the machine file has no guard backend measured: {m['guard']}")
    for g in guards:
        g["fault_ns"] = NEVER_FAULT_NS
    never = os.path.join(work, "never.json")
    with open(never, "w") as f:
        json.dump(m, f)

    outdir = os.path.join(work, "run")
    margins = {f"TNBC_EARLY_RETURN_MARGIN_{p}_PCT": "100" for p in ("TCOMM", "SHARED_NODE", "BUSY_POLL")}
    out = run(a, [], {"TNBC_MIN_BYTES": "auto", "TNBC_MACHINE": never, "TNBC_MODE": "nbc", **margins}, outdir)
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries, found {len(sums)}", out)
    for s in sums:
        model = s.get("model") or {}
        if model.get("source") != "file":
            fail(f"rank {s['rank']}: the machine file was not used: {model.get('source')}, {model.get('file_problem')}",
                 out)
        if s["threshold"]["min_bytes"] is not None:
            fail(f"rank {s['rank']}: expected no size to pay, threshold {s['threshold']}", out)
        paying = {k: v for k, v in (model.get("thresholds") or {}).items() if v is not None}
        if paying or not model.get("thresholds"):
            fail(f"rank {s['rank']}: expected every kind's threshold null: {model.get('thresholds')}", out)
        early = {k: v["early_return"] for k, v in s["collectives"].items() if v["early_return"]}
        if early:
            fail(f"rank {s['rank']}: no size pays, yet calls returned early: {early}",
                 json.dumps(s["collectives"], indent=1))
    calls = sum(v.get("calls", 0) for s in sums for v in s["collectives"].values())
    print(f"no size pays: {calls} calls over {a.np} ranks, none returned early")
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
