#!/usr/bin/env python3
"""Mode optimize completes in the call where the trace shows no overlap to gain (trace/gain.hh).

usage: gain_sites.py --lib LIBTNBC --tool TNBC --prog GAIN_SITES [--np 3]

gain_sites has two MPI_Alltoall sites of equal size: read_at_once touches the received data
right after the call, compute_first computes COMPUTE_MS first. Steps:
  trace      TNBC_MODE=trace, `tnbc merge`: the merge summary gives each site a verdict;
             the profile's estimates are recomputed here (Tcomm, T_CURC + T_CRC per site)
  cost       the fixed cost is set between the two sites' overlaps, min(Tcomm, T_CURC + T_CRC),
             (geometric mean, no per-MiB term), so the test does not depend on how fast this
             machine communicates; the trace is repeated (up to 3 times) if the two are not
             at least 2x apart
  optimize   read_at_once must complete in the call (tnbc's schedule, completed_in_call, reason
             no_overlap_to_gain; never plain MPI) and compute_first return early, on every rank,
             with the summary's numbers equal to the ones computed here; `tnbc report` says so;
             results equal the blocking ones
  disagree   rank 1 sets a cost of 10 s before MPI_Init: it judges every site no gain (the
             plain program, trace/plain_run.hh) while the others would return early at
             compute_first; rank 0 says once that the ranks judge the profile differently and
             every call is plain MPI on every rank, no hang, results right
  off        TNBC_PROFILE_BLOCKING=off: every call returns early
Every run must print "0 failed" (every received byte equals the blocking result) and exit 0.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import cost_between, options, run, site_numbers, summaries, trace_and_merge  # noqa: E402
from run_mpi_test import fail  # noqa: E402

ITER, PAGES, COMPUTE_MS = "6", "256", "20"
SITES = ("read_at_once", "compute_first")


def mpirun(a, args, env_extra, outdir, quiet=False):
    return run(a, [ITER, PAGES, COMPUTE_MS] + args, env_extra, outdir, quiet=quiet)


def sites_by_symbol(profile):
    out = {}
    for s in profile["sites"]:
        sym = s["frames"][0]["symbol"] if s["frames"] else ""
        for name in SITES:
            if sym == name:
                out[name] = s
    return out


def trace(a, work, attempt):
    profile, merged, p = trace_and_merge(a, work, attempt, [ITER, PAGES, COMPUTE_MS])
    if merged.count("  optimize: ") < 2:
        fail("the merge summary gives no optimize verdict per site", merged)
    sites = sites_by_symbol(p)
    if set(sites) != set(SITES):
        fail(f"profile sites {[s['frames'][0]['symbol'] for s in p['sites']]}: expected {SITES}")
    nums = {name: site_numbers(s) for name, s in sites.items()}
    for name, n in nums.items():
        if n is None:
            fail(f"{name}: the profile has no estimate (Tcomm, CURC)", merged)
    return profile, sites, nums


def decisions(summary):
    return {d["where"].split(" ")[0]: d for d in summary["profile"].get("decisions", [])}


def main():
    a = options(3)
    work = tempfile.mkdtemp(prefix="tnbc-gain-")
    profile, sites, nums, cost_us = cost_between(lambda attempt: trace(a, work, attempt), ["read_at_once"],
                                                 ["compute_first"])
    # The sizes pinned as in every test (run_mpi_test.py): this test is about each site's verdict;
    # the model's own sizes may return nothing early where ranks outnumber CPUs (np 3 on 2 here).
    cost = {"TNBC_EARLY_RETURN_COST_US": str(cost_us), "TNBC_EARLY_RETURN_COST_US_PER_MIB": "0",
            "TNBC_MIN_BYTES": str(3 * os.sysconf("SC_PAGE_SIZE"))}

    # The merge's verdicts under that cost model (the traces are in the profile's name less .profile).
    env = dict(os.environ, **cost)
    m = subprocess.run([a.tool, "merge", profile[:-len(".profile")], "-o", profile], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    verdicts = [l for l in m.stdout.splitlines() if l.startswith("  optimize: ")]
    if sorted(v.split(":")[1].strip().split(" ")[0] for v in verdicts) != ["completes", "returns"]:
        fail(f"merge verdicts: {verdicts}, expected one site to complete in the call, one to return early", m.stdout)

    # optimize: read_at_once completes in the call, compute_first returns early, on every rank.
    outdir = os.path.join(work, "optimize")
    out = mpirun(a, [], dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile), outdir, quiet=True)
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries, found {len(sums)}", out)
    iters = int(ITER)
    first = None
    for s in sums:
        d = decisions(s)
        if set(d) != set(SITES):
            fail(f"rank {s['rank']}: decisions for {sorted(d)}, expected {SITES}: {s['profile']}")
        at_once, later = d["read_at_once"], d["compute_first"]
        if (at_once["decision"], at_once["basis"], at_once["calls"]) != ("blocking", "no_overlap_to_gain", iters):
            fail(f"rank {s['rank']}: read_at_once: {at_once}, expected {iters} calls blocking (no_overlap_to_gain)")
        if (later["decision"], later["basis"], later["calls"]) != ("early_return", "overlap_pays", iters):
            fail(f"rank {s['rank']}: compute_first: {later}, expected {iters} calls returning early (overlap_pays)")
        for name in SITES:
            comm, over = nums[name]
            x = d[name]
            if abs(x["comm_ns"] - comm) > 2 or abs(x["overlap_ns"] - over) > 2 or abs(x["cost_ns"] - cost_us * 1e3) > 2:
                fail(f"rank {s['rank']}: {name}: summary {x} differs from the profile's Tcomm {comm}, "
                     f"T_CURC + T_CRC {over}, cost {cost_us} us")
        a2a = s["collectives"]["alltoall"]
        if a2a["reasons"].get("no_overlap_to_gain") != iters or a2a["completed_in_call"] != iters or a2a["passthrough"]:
            fail(f"rank {s['rank']}: alltoall counters {a2a}: expected {iters} calls completed in the call "
                 "(no_overlap_to_gain), none as plain MPI")
        if a2a["early_return"] != iters:
            fail(f"rank {s['rank']}: alltoall counters {a2a}: expected {iters} early returns (compute_first)")
        if s["profile"]["calls_blocking"] != iters or s["profile"]["blocking"] != "auto":
            fail(f"rank {s['rank']}: profile section {s['profile']}")
        blocking_sites = [x for x in s["sites"] if x["reasons"].get("no_overlap_to_gain")]
        if len(blocking_sites) != 1 or blocking_sites[0]["completed_in_call"] != iters:
            fail(f"rank {s['rank']}: per-site counters {s['sites']}: expected one site with {iters} calls completed "
                 "in the call")
        mine = sorted((k, v["decision"], v["basis"], v["calls"]) for k, v in d.items())
        if first is not None and mine != first:
            fail(f"rank {s['rank']} decided {mine}, rank 0 {first}")
        first = mine
    r = subprocess.run([a.tool, "report", outdir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout)
    if r.returncode != 0 or "WARNING" in r.stdout:
        fail("tnbc report failed or warned", r.stdout)
    lines = r.stdout.splitlines()
    if not any("read_at_once" in l and "COMPLETED IN THE CALL (no_overlap_to_gain)" in l for l in lines) or \
       not any("compute_first" in l and "returned early (overlap_pays)" in l for l in lines) or \
       not any("no_overlap_to_gain " + str(iters * a.np) in l for l in lines if l.startswith("  alltoall ")):
        fail("tnbc report does not show which site completed in the call and why", r.stdout)

    # disagree: rank 1 reads a cost of 10 s, so before MPI_Init it judges every site no gain (the
    # plain program, at its own thread level: trace/plain_run.hh) while the others return early
    # at compute_first: the ranks find out after MPI_Init and every collective is plain MPI.
    outdir = os.path.join(work, "disagree")
    out = mpirun(a, ["1"], dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile), outdir)
    said = [l for l in out.splitlines() if "tnbc[" in l and ("warning" in l or "error" in l)]
    if len(said) != 1 or "tnbc[0]: warning: the ranks judged the profile" not in said[0]:
        fail(f"disagree: expected rank 0's one warning that the ranks judge the profile differently: {said}", out)
    for s in summaries(outdir):
        a2a = s["collectives"]["alltoall"]
        if a2a["passthrough"] != 2 * iters or a2a["early_return"] or a2a["completed_in_call"]:
            fail(f"disagree: rank {s['rank']}: {a2a}: expected every call plain MPI")

    # off: TNBC_PROFILE_BLOCKING=off.
    outdir = os.path.join(work, "off")
    mpirun(a, [], dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile, TNBC_PROFILE_BLOCKING="off"), outdir)
    for s in summaries(outdir):
        p = s["profile"]
        if p["calls_blocking"] != 0 or p["blocking"] != "off" or {x["basis"] for x in p["decisions"]} != {"off"} or \
           s["collectives"]["alltoall"]["early_return"] != 2 * iters:
            fail(f"off: rank {s['rank']}: {p}")
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
