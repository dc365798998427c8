#!/usr/bin/env python3
"""Mode optimize when ranks reach one collective from different call sites (NPB IS's pattern).

usage: rank_sites.py --lib LIBTNBC --tool TNBC --prog RANK_SITES [--np 4]

rank_sites makes each MPI_Alltoallv and MPI_Bcast from one function, exchange(), which rank 0
calls from at_once() (reads at once: no overlap to gain) and the other ranks from
compute_first() (compute first: the overlap pays), then an MPI_Bcast from rank 0 from one site
that every rank reads at once (shared_bcast). The profile therefore has sites that only some
ranks called. Steps:
  trace      TNBC_MODE=trace, `tnbc merge`: at_once's sites list rank 0 only, compute_first's
             the others, shared_bcast's all; the fixed cost is set between the read-at-once
             sites' min(Tcomm, T_CURC + T_CRC) and the compute-first ones' (trace repeated up to
             3 times until they are 2x apart)
  optimize   the ranks decide differently for the same collectives: rank 0 completes them in the
             call (no_overlap_to_gain), the others return early (overlap_pays); shared_bcast,
             judged no gain at the only site the profile has for its size, is the MPI library's
             own call on every rank (passthrough, no_overlap_to_gain: every rank decides alike).
             No hang, no tnbc message, every byte equal to
             the blocking result, each rank's summary with its own outcomes, `tnbc report` (given
             the run directory holding them in tnbc/, as the NPB harness does) shows which ranks
             did what (and no warning)
  unseen     rank 1 calls exchange() from unseen(), a caller the trace never saw (not_in_profile:
             returns early, but for the calls mode nbc's trial completes in the call there), while
             rank 0 is at its no-gain site: completes, results right
  missing    rank 3 leaves before the last exchange(), TNBC_TIMEOUT=3: a rank waiting for it
             (rank 0 in the call, or one that returned early: whichever times out first) reports
             the collective and the rank it got nothing from, and the job ends (TNBC_SITE_TRIAL_AGREE
             off); with the ranks' votes on (the default) that call is a vote's, whose wait reports
             the collective and that some rank never called it
  late       rank 3 sleeps 5.25 s before the last exchange(), TNBC_TIMEOUT=5: the vote's waits
             time out at 5 s, and their roll calls (half a second) find every rank, or the vote
             completed meanwhile: the waiting ranks say so, wait on, and the job ends well; rank 0
             names the MPI library's messaging layer (TNBC_LOG=info)
With plain PMPI_* for the no-gain calls (tnbc before), rank 0 sits in PMPI_Alltoallv, where no
timeout reaches, while the others wait in tnbc's schedule until TNBC_TIMEOUT (60 s here) ends
the job: the optimize run fails (checked by hand).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import cost_between, options, run, site_numbers, summaries, trace_and_merge  # noqa: E402
from run_mpi_test import fail, run_mpirun  # noqa: E402

ITER, PAGES, COMPUTE_MS = "6", "128", "20"
AT_ONCE = [("exchange/at_once", "alltoallv"), ("exchange/at_once", "bcast"), ("shared_bcast/main", "bcast")]
LATER = [("exchange/compute_first", "alltoallv"), ("exchange/compute_first", "bcast")]


def mpirun(a, args, env_extra, outdir):
    run(a, [ITER, PAGES, COMPUTE_MS] + args, dict(env_extra, TNBC_TIMEOUT="60"), outdir, timeout=150, quiet=True)


def site_name(site):
    """exchange/at_once, shared_bcast/main...: the function making the call and its caller."""
    return "/".join(f.get("symbol", "?") for f in site["frames"][:2])


def trace(a, work, attempt):
    profile, merged, p = trace_and_merge(a, work, attempt, [ITER, PAGES, COMPUTE_MS])
    sites = {(site_name(s), s["kind"]): s for s in p["sites"]}
    others = list(range(1, a.np))
    want = {AT_ONCE[0]: [0], AT_ONCE[1]: [0], AT_ONCE[2]: list(range(a.np)), LATER[0]: others, LATER[1]: others}
    for key, ranks in want.items():
        if key not in sites:
            fail(f"profile sites {sorted(sites)}: {key} missing", merged)
        got = sorted(r["rank"] for r in sites[key]["ranks"])
        if got != ranks:
            fail(f"profile site {key} lists ranks {got}, expected {ranks}", merged)
    nums = {key: site_numbers(sites[key]) for key in want}
    for key, n in nums.items():
        if n is None:
            fail(f"{key}: the profile has no estimate (Tcomm, CURC)", merged)
    return profile, sites, nums


def decisions(summary, ids):
    """(site name, kind) -> the summary's decision entry, for the sites of the profile."""
    out = {}
    for d in summary["profile"].get("decisions", []):
        out[ids.get(d["site"], (d["where"].split(" ")[0], d["kind"]))] = d
    return out


def expect(cond, what, s):
    if not cond:
        fail(f"rank {s['rank']}: {what}: collectives {s['collectives']}, profile {s['profile']}")


def main():
    a = options(4)
    work = tempfile.mkdtemp(prefix="tnbc-rank-sites-")
    iters = int(ITER)
    profile, sites, nums, cost_us = cost_between(lambda attempt: trace(a, work, attempt), AT_ONCE, LATER)
    cost = {"TNBC_EARLY_RETURN_COST_US": str(cost_us), "TNBC_EARLY_RETURN_COST_US_PER_MIB": "0"}
    ids = {s["site"]: key for key, s in sites.items()}
    opt = dict(cost, TNBC_MODE="optimize", TNBC_PROFILE=profile)

    # optimize: rank 0 completes exchange()'s calls in the call, the others return early. The
    # summaries go to optimize/tnbc/, as the NPB harness puts them: `tnbc report optimize` finds them.
    outdir = os.path.join(work, "optimize", "tnbc")
    mpirun(a, [], opt, outdir)
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries, found {len(sums)}")
    for s in sums:
        d = decisions(s, ids)
        # shared_bcast runs as plain MPI (route_call): it reaches no per-site decision.
        mine = AT_ONCE[:2] if s["rank"] == 0 else [LATER[0], LATER[1]]
        if set(d) != set(mine):
            fail(f"rank {s['rank']}: decisions for {sorted(d)}, expected {sorted(mine)}: {s['profile']}")
        for key in mine:
            want = ("blocking", "no_overlap_to_gain") if key in AT_ONCE else ("early_return", "overlap_pays")
            expect((d[key]["decision"], d[key]["basis"], d[key]["calls"]) == want + (iters,),
                   f"{key}: {d[key]}, expected {iters} calls {want}", s)
        v, b = s["collectives"]["alltoallv"], s["collectives"]["bcast"]
        expect(v["passthrough"] == 0 and b["passthrough"] == iters,
               "only shared_bcast's calls run as plain MPI (every bcast site of its size has no gain)", s)
        if s["rank"] == 0:
            expect(v["completed_in_call"] == iters and v["reasons"].get("no_overlap_to_gain") == iters and
                   v["early_return"] == 0, "alltoallv: every call completed in the call (no_overlap_to_gain)", s)
            expect(b["completed_in_call"] == iters and b["reasons"].get("no_overlap_to_gain") == 2 * iters,
                   "bcast: exchange()'s completed in the call, shared_bcast's plain MPI (no_overlap_to_gain)", s)
        else:
            expect(v["early_return"] == iters and "no_overlap_to_gain" not in v["reasons"],
                   "alltoallv: every call returned early", s)
            expect(b["early_return"] == iters and b["completed_in_call"] == 0 and
                   b["reasons"].get("no_overlap_to_gain") == iters,
                   "bcast: compute_first's returned early, shared_bcast's plain MPI", s)
        expect(s["profile"]["calls_blocking"] == (2 * iters if s["rank"] == 0 else 0), "calls_blocking", s)
    r = subprocess.run([a.tool, "report", os.path.dirname(outdir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    print(r.stdout)
    lines = r.stdout.splitlines()
    others = f"ranks 1-{a.np - 1}" if a.np > 2 else "rank 1"
    for kind in ("alltoallv", "bcast"):
        if not any(l.startswith(f"  {kind} at exchange") and "COMPLETED IN THE CALL (no_overlap_to_gain), "
                   f"{iters} calls on rank 0;" in l for l in lines):
            fail(f"tnbc report does not show rank 0 completing exchange()'s {kind} in the call", r.stdout)
        if not any(l.startswith(f"  {kind} at exchange") and f"returned early (overlap_pays), {iters * (a.np - 1)} "
                   f"calls on {others};" in l for l in lines):
            fail(f"tnbc report does not show ranks 1.. returning early from exchange()'s {kind}", r.stdout)
    if r.returncode != 0 or "WARNING" in r.stdout:
        fail("tnbc report failed or warned", r.stdout)

    # unseen: rank 1 calls from a caller the profile does not have, rank 0 is at its no-gain site.
    outdir = os.path.join(work, "unseen")
    mpirun(a, ["1"], opt, outdir)
    for s in summaries(outdir):
        d = decisions(s, ids)
        v = s["collectives"]["alltoallv"]
        if s["rank"] == 1:
            new = [x for key, x in d.items() if key not in ids.values()]
            expect(len(new) == 2 and all(x["basis"] == "not_in_profile" and x["decision"] == "early_return" and
                                         x["where"].startswith("exchange ") for x in new),
                   "unseen: exchange()'s calls from unseen() are not in the profile and return early", s)
            # Early on no evidence, so mode nbc's trial tries the site (runtime/site_trial.hh).
            tried = v["reasons"].get("site_trial", 0) + v["reasons"].get("early_return_slower", 0)
            expect(v["early_return"] + tried == iters and v["reasons"].get("site_trial", 0) > 0 and
                   v["completed_in_call"] == tried, "unseen: alltoallv returned early but for its site's trial", s)
        elif s["rank"] == 0:
            expect(d[AT_ONCE[0]]["decision"] == "blocking" and v["completed_in_call"] == iters,
                   "unseen: rank 0 completes at_once's alltoallv in the call", s)

    # missing: the last exchange() lacks rank np-1; a rank waiting for it (rank 0 in the call, or
    # one that returned early: whichever times out first ends the job) must say so. Without the
    # ranks' votes (TNBC_SITE_TRIAL_AGREE=off) the collective's own wait names the rank; with them
    # (the default) that call is one where the ranks vote (its communicator's 11th past the global
    # decisions: runtime/call_vote.hh), and the vote's wait names it by a roll call
    # (runtime/roll_call.hh): the only rank that did not answer.
    for agree, wants in (("off", (r"tnbc\[\d+\]: error: timeout \(TNBC_TIMEOUT=3s\) inside alltoallv",
                                  rf"tnbc\[\d+\]:   rank {a.np - 1}: nothing received from it in this collective")),
                         ("on", (r"tnbc\[\d+\]: error: timeout \(TNBC_TIMEOUT=3s\) in MPI_Alltoallv, where its ranks "
                                 rf"vote on the calls to run as the MPI library's own on a communicator of {a.np} ranks "
                                 r"\(this is rank \d of it\): the vote \(MPI_Iallreduce on tnbc's duplicate\) did not "
                                 r"complete, so some rank of it never called this collective; ranks of it that did not "
                                 r"answer a roll call within a tenth of the timeout, so never reached this collective: "
                                 rf"{a.np - 1}\n",))):
        exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": os.path.join(work, "missing-" + agree),
                   "TNBC_TIMEOUT": "3", "TNBC_SITE_TRIAL_AGREE": agree, **opt}
        code, out = run_mpirun(a.np, exports, [a.prog, ITER, PAGES, COMPUTE_MS, "-1", str(a.np - 1)], 120, a)
        for want in wants:
            if not re.search(want, out):
                fail(f"missing ({agree}): no waiting rank reports the missing rank ({want!r})", out)
        if code == 0:
            fail(f"missing ({agree}): the job should have ended through MPI_Abort", out)

    # late: rank np-1 comes to the vote's call 5.25 s late, inside the roll call the waiting ranks
    # hold from 5 s on for a tenth of TNBC_TIMEOUT: it answers from its wait, or its coming
    # completes the vote; either way every rank came, so the job goes on (before session 75 it
    # ended there).
    # TNBC_LOG=info: rank 0's line at MPI_Init names the library's messaging layer
    # (runtime/mpi_threads.hh): Open MPI's pml, or MPICH's device, whose threads are not measured.
    exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": os.path.join(work, "late"),
               "TNBC_TIMEOUT": "5", **opt, "TNBC_LOG": "info"}
    code, out = run_mpirun(a.np, exports, [a.prog, ITER, PAGES, COMPUTE_MS, "-1", str(a.np - 1), "5250"], 120, a)
    late = (r"tnbc\[\d+\]: warning: the vote \(MPI_Iallreduce on tnbc's duplicate\) in MPI_Alltoallv, where its ranks "
            r"vote on the calls to run as the MPI library's own on a communicator of \d+ ranks \(this is rank \d of "
            r"it\), did not complete within TNBC_TIMEOUT=5s: (every rank answered a roll call \(one came late\), so "
            r"it waits once more as long|it completed during a roll call \(a rank came late\))")
    ended_well = code == 0 and re.search(r"rank_sites: \d+ passed, 0 failed", out)
    if not ended_well or re.search(r"tnbc\[\d+\]: error", out) or not re.search(late, out):
        fail("late: the ranks waiting in the vote should say a rank came late and go on, the job end well", out)
    print("late:", *sorted(set(m.group(0)[-60:] for m in re.finditer(late, out))))
    # The ranks that return early from that Alltoallv (compute_first's) waited in its vote for rank
    # np-1 those 5.25 s: the summaries count it as waiting for peers within their early calls' time.
    for s in summaries(os.path.join(work, "late")):
        ov = s["overhead"]
        if 0 < s["rank"] < a.np - 1 and not 4.0 <= ov["in_early_calls_waiting_s"] <= ov["in_early_calls_s"]:
            fail(f"late: rank {s['rank']} should count its ~5 s in the vote as waiting for peers: {ov}")
    named = r"tnbc\[0\]: info: Open MPI pml \w+: " if a.mpi == "openmpi" else \
        r"tnbc\[0\]: info: MPICH ch\d:\w+ \(whether it lets a second thread's calls through while the program " \
        r"waits is not measured\): "
    if not re.search(named + "a broadcast's", out):
        fail(f"rank 0 did not name the MPI library's messaging layer ({named})", out)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
