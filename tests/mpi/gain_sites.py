#!/usr/bin/env python3
"""Mode optimize runs blocking where the trace shows no overlap to gain (trace/gain.hh).

usage: gain_sites.py --lib LIBTNBC --tool TNBC --prog GAIN_SITES [--np 3]

gain_sites has two MPI_Alltoall sites of equal size: read_at_once touches the received data
right after the call, compute_first computes COMPUTE_MS first. Steps:
  trace      TNBC_MODE=trace, `tnbc merge`: the merge summary gives each site a verdict;
             the profile's estimates are recomputed here (Tcomm, T_CURC + T_CRC per site)
  cost       the fixed cost is set between the two sites' overlaps, min(Tcomm, T_CURC + T_CRC),
             (geometric mean, no per-MiB term), so the test does not depend on how fast this
             machine communicates; the trace is repeated (up to 3 times) if the two are not
             at least 4x apart
  optimize   read_at_once must run blocking (plain MPI, reason no_overlap_to_gain) and
             compute_first return early, on every rank alike, with the summary's numbers equal
             to the ones computed here; `tnbc report` says so; results equal the blocking ones
  disagree   one rank sets another cost before MPI_Init: one warning, no site runs blocking
  off        TNBC_PROFILE_BLOCKING=off: no site runs blocking
Every run must print "0 failed" (every received byte equals the blocking result) and exit 0.
"""
import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_mpi_test import add_launcher_options, fail, run_mpirun  # noqa: E402

ITER, PAGES, COMPUTE_MS = "6", "256", "20"
SITES = ("read_at_once", "compute_first")


def mpirun(a, args, env_extra, outdir):
    exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": outdir}
    exports.update(env_extra)
    code, out = run_mpirun(a.np, exports, [a.prog, ITER, PAGES, COMPUTE_MS] + args, 180, a)
    if code != 0 or " 0 failed" not in out:
        fail(f"run {outdir} failed (exit {code}) or results differ from the blocking collectives", out)
    return out


def median(v):
    v = sorted(v)
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def site_numbers(site):
    """Tcomm, T_CURC + T_CRC as trace/gain.hh computes them from the profile's per-rank values."""
    comm = [r["duration_ns"] for r in site["ranks"] if r.get("duration_ns") is not None]
    over = []
    for r in site["ranks"]:
        if not r["receives"] or not r["traced"] or r.get("curc_ns") is None:
            continue
        if r.get("r_crc_bytes_per_s"):
            crc = r["bytes_per_call"] / r["r_crc_bytes_per_s"] * 1e9
        else:
            crc = sum(r["gaps_ns"])
        over.append(r["curc_ns"] + crc)
    if not comm or not over:
        return None
    return median(comm), median(over)


def sites_by_symbol(profile):
    out = {}
    for s in profile["sites"]:
        sym = s["frames"][0]["symbol"] if s["frames"] else ""
        for name in SITES:
            if sym == name:
                out[name] = s
    return out


def trace(a, work, attempt):
    outdir = os.path.join(work, f"trace{attempt}")
    mpirun(a, [], {"TNBC_MODE": "trace"}, outdir)
    profile = os.path.join(work, f"app{attempt}.profile")
    m = subprocess.run([a.tool, "merge", outdir, "-o", profile], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    print(m.stdout)
    if m.returncode != 0:
        fail("tnbc merge failed", m.stdout)
    if m.stdout.count("  optimize: ") < 2:
        fail("the merge summary gives no optimize verdict per site", m.stdout)
    with open(profile) as f:
        p = json.load(f)
    sites = sites_by_symbol(p)
    if set(sites) != set(SITES):
        fail(f"profile sites {[s['frames'][0]['symbol'] for s in p['sites']]}: expected {SITES}")
    nums = {name: site_numbers(s) for name, s in sites.items()}
    for name, n in nums.items():
        if n is None:
            fail(f"{name}: the profile has no estimate (Tcomm, CURC)", m.stdout)
    return profile, sites, nums


def summaries(outdir):
    files = sorted(glob.glob(os.path.join(outdir, "tnbc-summary.*.json")))
    return [json.load(open(f)) for f in files]


def decisions(summary):
    return {d["where"].split(" ")[0]: d for d in summary["profile"].get("decisions", [])}


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
    work = tempfile.mkdtemp(prefix="tnbc-gain-")

    for attempt in range(3):
        profile, sites, nums = trace(a, work, attempt)
        gain = {name: min(comm, over) for name, (comm, over) in nums.items()}
        print(f"attempt {attempt}: min(Tcomm, T_CURC + T_CRC): read_at_once {gain['read_at_once'] / 1e3:.0f} us, "
              f"compute_first {gain['compute_first'] / 1e3:.0f} us "
              f"(Tcomm {nums['compute_first'][0] / 1e3:.0f} us)")
        if gain["compute_first"] >= 4 * gain["read_at_once"]:
            break
    else:
        fail("in three trace runs the site that computes first never showed 4x the overlap of the one that "
             "reads at once (a very busy machine?)")
    cost_us = max(1, int(math.sqrt(gain["read_at_once"] * gain["compute_first"]) / 1e3))
    cost = {"TNBC_EARLY_RETURN_COST_US": str(cost_us), "TNBC_EARLY_RETURN_COST_US_PER_MIB": "0"}
    print(f"cost model for the test: {cost_us} us per call")

    # The merge's verdicts under that cost model.
    env = dict(os.environ, **cost)
    m = subprocess.run([a.tool, "merge", os.path.join(work, f"trace{attempt}"), "-o", profile], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    verdicts = [l for l in m.stdout.splitlines() if l.startswith("  optimize: ")]
    if sorted(v.split(":")[1].strip().split(" ")[0] for v in verdicts) != ["returns", "runs"]:
        fail(f"merge verdicts: {verdicts}, expected one site to run blocking, one to return early", m.stdout)

    # optimize: read_at_once blocking, compute_first early, alike on every rank.
    outdir = os.path.join(work, "optimize")
    out = mpirun(a, [], dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile), outdir)
    tnbc_lines = [l for l in out.splitlines() if "tnbc[" in l and ("warning" in l or "error" in l)]
    if tnbc_lines:
        fail(f"unexpected tnbc messages: {tnbc_lines}", out)
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
        if a2a["reasons"].get("no_overlap_to_gain") != iters or a2a["passthrough"] != iters:
            fail(f"rank {s['rank']}: alltoall counters {a2a}: expected {iters} plain calls (no_overlap_to_gain)")
        if a2a["early_return"] != iters:
            fail(f"rank {s['rank']}: alltoall counters {a2a}: expected {iters} early returns (compute_first)")
        if s["profile"]["calls_blocking"] != iters or s["profile"]["blocking"] != "auto":
            fail(f"rank {s['rank']}: profile section {s['profile']}")
        blocking_sites = [x for x in s["sites"] if x["reasons"].get("no_overlap_to_gain")]
        if len(blocking_sites) != 1 or blocking_sites[0]["passthrough"] != iters:
            fail(f"rank {s['rank']}: per-site counters {s['sites']}: expected one site with {iters} plain calls")
        mine = sorted((k, v["decision"], v["basis"], v["calls"]) for k, v in d.items())
        if first is not None and mine != first:
            fail(f"rank {s['rank']} decided {mine}, rank 0 {first}")
        first = mine
    r = subprocess.run([a.tool, "report", outdir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout)
    if r.returncode != 0 or "WARNING" in r.stdout:
        fail("tnbc report failed or warned", r.stdout)
    lines = r.stdout.splitlines()
    if not any("read_at_once" in l and "RAN BLOCKING (no_overlap_to_gain)" in l for l in lines) or \
       not any("compute_first" in l and "returned early (overlap_pays)" in l for l in lines) or \
       not any("no_overlap_to_gain " + str(iters * a.np) in l for l in lines if l.startswith("  alltoall ")):
        fail("tnbc report does not show which site ran blocking and why", r.stdout)

    # disagree: rank 1 reads another TNBC_EARLY_RETURN_COST_US.
    outdir = os.path.join(work, "disagree")
    out = mpirun(a, ["1"], dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile), outdir)
    said = [l for l in out.splitlines() if "ranks read different profiles or settings" in l]
    if len(said) != 1:
        fail(f"disagree: expected the warning once, found {len(said)}", out)
    for s in summaries(outdir):
        p = s["profile"]
        if p["calls_blocking"] != 0 or p["blocking"] != "ranks_disagree" or s["collectives"]["alltoall"]["passthrough"]:
            fail(f"disagree: rank {s['rank']} ran calls blocking or does not say why not: {p}")

    # off: TNBC_PROFILE_BLOCKING=off.
    outdir = os.path.join(work, "off")
    mpirun(a, [], dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile, TNBC_PROFILE_BLOCKING="off"), outdir)
    for s in summaries(outdir):
        p = s["profile"]
        if p["calls_blocking"] != 0 or p["blocking"] != "off" or {x["basis"] for x in p["decisions"]} != {"off"}:
            fail(f"off: rank {s['rank']}: {p}")
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
