#!/usr/bin/env python3
"""Mode nbc's trial per site (runtime/site_trial.hh), on gain_sites' two MPI_Alltoall sites.

usage: site_trial.py --lib LIBTNBC --tool TNBC --prog GAIN_SITES [--np 2]

gain_sites' read_at_once touches every received block right after its call; compute_first computes
COMPUTE_MS first. Mode nbc, every size returning early (TNBC_MIN_BYTES: on one node the model
would complete these in the call anyway), trials of 8 calls (E C C E E C C E), no margin:
  trial  each rank deciding alone (TNBC_SITE_TRIAL_AGREE=off: compute_first's verdict may be in_call
         too, and the key both sites share would then be agreed); on every rank, read_at_once tries
         first (calls 1-8), compute_first waits for the turn and
         tries at calls 9-16 (one site of a rank at a time); read_at_once's completions in the call
         are faster (its early returns only add the guard's costs to the same messages), so its
         calls 9-17 complete in the call (early_return_slower); its second trial, due at 16, waits
         until compute_first gives the turn back at 17 and runs from 18; compute_first's calls 17-23
         follow its own verdict; the counts of every reason follow from the verdicts, the verdicts
         from the medians the summary gives; a run where read_at_once's verdict is not in_call on
         every rank is repeated (up to 3 runs: a busy machine blurs a measurement); `tnbc report`
         names both reasons
  no profile  mode optimize with a profile that cannot be read runs as mode nbc, trial included
  other sizes mode optimize with a profile traced at other sizes: both sites' calls return early on
              no evidence (other_sizes), so both try
  agreed read_at_once alone (COMPUTE_MS -1), trials of 4 calls: where its verdict is in_call on
         every rank (up to 3 runs), the vote at the 7th call agrees that the rest run as the
         library's own (agreed_plain, passthrough: calls 7-24; the summary's agreement block: one
         key agreed at 7 votes); with TNBC_SITE_TRIAL_AGREE=off those calls complete in the call
         through tnbc's schedule (early_return_slower) and no vote is taken
  lean   mode optimize, read_at_once alone (traced so), every site within the model's margins
         (TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT and _COST_PCT 1000: a loss within 10 x the cost is
         tried) and a trial margin no measurement passes (90 %):
         read_at_once, priced at a loss (it reads at once), leans to the call — calls 5-15 and 20-23
         complete in the call on the model's sign (priced_loss), its trials at 1-4 and 16-19 (site_trial
         at 2, 3, 17, 18), the summary's trial `leaned`; with the ranks' vote (the default) the lean's
         calls vote for the library's own as a verdict's do: calls 7-24 agreed_plain; `tnbc report`
         names priced_loss, the site "on trial" and the verdict on the model's sign
  off    TNBC_SITE_TRIAL_CALLS=0: every call returns early, no trial in the summary
Every run must print "0 failed" (every received byte equals the blocking PMPI_Alltoall's) and exit 0.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import options, run, summaries, trace_and_merge  # noqa: E402
from run_mpi_test import fail  # noqa: E402

ITER, PAGES, COMPUTE_MS, TRIAL = 24, "256", "20", 8
BASE = {"TNBC_MODE": "nbc", "TNBC_MIN_BYTES": "12k"}


def functions(prog):
    """name -> (start, end) of gain_sites' two site functions (nm)."""
    out = subprocess.run(["nm", "-S", "--defined-only", prog], stdout=subprocess.PIPE, text=True, check=True).stdout
    spans = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] in ("read_at_once", "compute_first"):
            spans[f[3]] = (int(f[0], 16), int(f[0], 16) + int(f[1], 16))
    if len(spans) != 2:
        fail(f"nm {prog}: read_at_once and compute_first not both found", out)
    return spans


def sites_of(summary, spans):
    """name -> the summary's site whose call is inside that function."""
    out = {}
    for s in summary["sites"]:
        off = int(s["offset"], 16)
        for name, (lo, hi) in spans.items():
            if lo <= off < hi:
                out[name] = s
    if set(out) != set(spans):
        fail(f"rank {summary['rank']}: sites {[s['offset'] for s in summary['sites']]}, expected one in each of "
             f"{sorted(spans)}")
    return out


def check(cond, what, rank, site):
    if not cond:
        fail(f"rank {rank}: {what}: {site}")


def trial_run(a, work, attempt, spans, args):
    """One run with trials of TRIAL calls: every count checked; whether read_at_once's verdict is in_call."""
    outdir = os.path.join(work, f"trial{attempt}", "tnbc")
    run(a, args, dict(BASE, TNBC_SITE_TRIAL_CALLS=str(TRIAL), TNBC_SITE_TRIAL_MARGIN_PCT="0",
                      TNBC_SITE_TRIAL_AGREE="off"), outdir, quiet=True)
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries, found {len(sums)}")
    half = TRIAL // 2
    at_once_in_call = True
    for s in sums:
        rank = s["rank"]
        sites = sites_of(s, spans)
        for name, site in sites.items():
            t = site.get("trial")
            check(site["calls"] == ITER and site["passthrough"] == 0, f"{name}: {ITER} calls, none plain MPI", rank, site)
            check(t is not None and t["trials"] == 1 and t["early_ns"] > 0 and t["in_call_ns"] > 0,
                  f"{name}: one trial with both medians", rank, site)
            check(t["verdict"] == ("in_call" if t["in_call_ns"] < t["early_ns"] else "early_return"),
                  f"{name}: the verdict follows the medians (margin 0)", rank, site)
        at_once, first = sites["read_at_once"], sites["compute_first"]
        # read_at_once: trial 1-8 (4 in the call), its verdict 9-17, its second trial from 18 (19, 20, 23 in the call).
        want = {"site_trial": half + 3}
        if at_once["trial"]["verdict"] == "in_call":
            want["early_return_slower"] = TRIAL + 1
        else:
            at_once_in_call = False
        check(at_once["reasons"] == want and at_once["completed_in_call"] == sum(want.values()),
              f"read_at_once: reasons {want}", rank, at_once)
        # compute_first: waits for the turn (calls 1-8), trial 9-16, its verdict 17-23.
        want = {"site_trial": half}
        if first["trial"]["verdict"] == "in_call":
            want["early_return_slower"] = ITER - 2 * TRIAL - 1
        check(first["reasons"] == want and first["completed_in_call"] == sum(want.values()),
              f"compute_first: reasons {want}", rank, first)
    return outdir, at_once_in_call


def agreed_run(a, work, attempt, spans, agree):
    """read_at_once alone, trials of 4 calls, TNBC_SITE_TRIAL_AGREE=`agree`: every count checked
    where its verdict is in_call on every rank; returns whether it was."""
    outdir = os.path.join(work, f"agreed-{agree}{attempt}", "tnbc")
    run(a, [str(ITER), PAGES, "-1"], dict(BASE, TNBC_SITE_TRIAL_MARGIN_PCT="0", TNBC_SITE_TRIAL_AGREE=agree), outdir,
        quiet=True)
    sums = summaries(outdir)
    sites = {s["rank"]: [x for x in s["sites"] if spans["read_at_once"][0] <= int(x["offset"], 16) <
                         spans["read_at_once"][1]] for s in sums}
    if len(sums) != a.np or any(len(v) != 1 for v in sites.values()):
        fail(f"{outdir}: expected one read_at_once site in each of {a.np} summaries", sums)
    # With the agreement the one trial's verdict (a second trial, from call 16, means the first
    # was not in_call on every rank: the summary keeps the last one's); without, the first
    # verdict (calls 6-16).
    if any(v[0]["trial"]["verdict"] != "in_call" or v[0]["trial"]["trials"] != 1 if agree == "on" else
           v[0]["reasons"].get("early_return_slower", 0) < 11 for v in sites.values()):
        return False
    later = ITER - 6  # calls 7-24: after the warm-up (1), the trial (2-5) and the first verdict (6)
    for s in sums:
        site, votes = sites[s["rank"]][0], s["agreement"]
        if agree == "on":
            want = {"site_trial": 2, "early_return_slower": 1, "agreed_plain": later}
            check(site["reasons"] == want and site["passthrough"] == later and site["early_return"] == 3,
                  f"read_at_once: reasons {want}, {later} calls the library's own", s["rank"], site)
            check(votes == {"votes": 7, "agreed": 1, "retried": 0}, "7 votes (calls 7, 9, 11, 13, 15, 16, 24), "
                  "one key agreed", s["rank"], votes)
        else:
            # Its verdict from call 6 to 16, its second trial at 17-20 (2 more site_trial), and from 21
            # the second verdict (in the summary).
            slower = 11 + (ITER - 20 if site["trial"]["verdict"] == "in_call" else 0)
            want = {"site_trial": 4, "early_return_slower": slower}
            check(site["reasons"] == want and site["passthrough"] == 0 and site["trial"]["trials"] == 2,
                  f"read_at_once: reasons {want}, two trials", s["rank"], site)
            check(votes == {"votes": 0, "agreed": 0, "retried": 0}, "no vote", s["rank"], votes)
    if agree == "on":
        r = subprocess.run([a.tool, "report", os.path.dirname(outdir)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        said = f"{a.np * later} of them (all ranks) ran as the MPI library's own, agreed by the ranks"
        if r.returncode != 0 or said not in r.stdout or f"agreed_plain {a.np * later}" not in r.stdout:
            fail(f"tnbc report does not say that the ranks agreed ({said!r})", r.stdout)
    return True


def lean_run(a, work, spans, profile, agree):
    """Mode optimize at a site within the model's margins priced at a loss (read_at_once alone, the
    profile traced so), trials of 4 calls that no measurement decides (margin 90 %), the ranks'
    vote `agree`: every count checked (the lean's calls are the model's sign, not a measurement)."""
    outdir = os.path.join(work, f"lean-{agree}", "tnbc")
    run(a, [str(ITER), PAGES, "-1"], dict(BASE, TNBC_MODE="optimize", TNBC_PROFILE=profile,
                                          TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT="1000",
                                          TNBC_EARLY_RETURN_MARGIN_COST_PCT="1000", TNBC_SITE_TRIAL_MARGIN_PCT="90",
                                          TNBC_SITE_TRIAL_AGREE=agree), outdir, quiet=True)
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"{outdir}: expected {a.np} summaries, found {len(sums)}")
    for s in sums:
        [d] = [x for x in s["profile"].get("decisions", []) if x["kind"] == "alltoall"] or [None]
        if d is None or d["basis"] != "within_margin" or d["saved_ns"] > 0:
            fail(f"rank {s['rank']}: read_at_once (it reads at once) should be on trial at a predicted loss: "
                 f"{s['profile']}")
        [site] = [x for x in s["sites"] if spans["read_at_once"][0] <= int(x["offset"], 16) < spans["read_at_once"][1]]
        t = site.get("trial") or {}
        if agree == "off":
            # Warm-up 0, trial 1-4 (E C C E), the lean 5-15, the second trial 16-19, the lean 20-23.
            want = {"site_trial": 4, "priced_loss": 15}
            check(site["reasons"] == want and site["early_return"] == 5 and site["passthrough"] == 0,
                  f"read_at_once: reasons {want}, 5 early returns", s["rank"], site)
            check(t.get("trials") == 2 and t.get("verdict") == "in_call" and t.get("leaned") is True,
                  "read_at_once: two trials, the last one's verdict in_call on the model's sign", s["rank"], site)
        else:
            # The vote at the 7th call (its communicator's calls 7, 9, ... as in agreed_run): calls
            # 7-24 the library's own; before it the warm-up, the trial and one call on the lean.
            later = ITER - 6
            want = {"site_trial": 2, "priced_loss": 1, "agreed_plain": later}
            check(site["reasons"] == want and site["passthrough"] == later and site["early_return"] == 3 and
                  t.get("trials") == 1 and t.get("leaned") is True,
                  f"read_at_once: reasons {want}, {later} calls the library's own, one trial leaned", s["rank"], site)
    r = subprocess.run([a.tool, "report", os.path.dirname(outdir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    said = ["priced_loss", "on trial (within_margin)", f"on {a.np} of them the model's sign: a loss priced"]
    if r.returncode != 0 or any(x not in r.stdout for x in said):
        fail(f"tnbc report does not say {said}", r.stdout)


def main():
    a = options(2)
    work = tempfile.mkdtemp(prefix="tnbc-site-trial-")
    spans = functions(a.prog)
    args = [str(ITER), PAGES, COMPUTE_MS]

    # The verdict is a measurement: a machine busy with something else may blur it once.
    for attempt in range(3):
        outdir, in_call = trial_run(a, work, attempt, spans, args)
        if in_call:
            break
        print(f"attempt {attempt}: read_at_once's trial did not find completing in the call faster on every rank")
    else:
        fail("read_at_once: completing in the call never measured faster than returning early (3 runs)")
    r = subprocess.run([a.tool, "report", os.path.dirname(outdir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0 or "site_trial" not in r.stdout or "early_return_slower" not in r.stdout:
        fail("tnbc report does not name the trial's reasons", r.stdout)
    print(r.stdout)

    # Mode optimize whose profile cannot be used runs as mode nbc: with the trial.
    outdir = os.path.join(work, "no-profile", "tnbc")
    out = run(a, args, dict(BASE, TNBC_MODE="optimize", TNBC_PROFILE=os.path.join(work, "missing.profile"),
                            TNBC_SITE_TRIAL_CALLS=str(TRIAL)), outdir)
    if "as TNBC_MODE=nbc" not in out:
        fail("mode optimize without its profile: no message that it runs as mode nbc", out)
    for s in summaries(outdir):
        for name, site in sites_of(s, spans).items():
            check(site.get("trial", {}).get("trials") == 1 and site["reasons"].get("site_trial", 0) > 0,
                  f"{name}: mode optimize without a profile tries as mode nbc", s["rank"], site)

    # Mode optimize with a profile of other sizes (traced at half the pages): the profile cannot judge
    # the calls (other_sizes, early on no evidence), so both sites try; with sizes it recorded it
    # judges them and nothing is tried (profile-blocking-sites' counts).
    profile, _, _ = trace_and_merge(a, work, 0, ["6", str(int(PAGES) // 2), COMPUTE_MS])
    outdir = os.path.join(work, "other-sizes", "tnbc")
    run(a, args, dict(BASE, TNBC_MODE="optimize", TNBC_PROFILE=profile, TNBC_SITE_TRIAL_CALLS=str(TRIAL)), outdir)
    for s in summaries(outdir):
        bases = {d["basis"] for d in s["profile"].get("decisions", [])}
        if bases != {"other_sizes"}:
            fail(f"rank {s['rank']}: optimize with a profile of other sizes: decisions {s['profile']}")
        for name, site in sites_of(s, spans).items():
            check(site.get("trial", {}).get("trials") == 1 and site["reasons"].get("site_trial", 0) > 0,
                  f"{name}: mode optimize tries the sites its profile cannot judge", s["rank"], site)

    # Every rank's trial completes read_at_once in the call: its later calls the library's own.
    for agree in ("on", "off"):
        for attempt in range(3):
            if agreed_run(a, work, attempt, spans, agree):
                break
            print(f"agreed ({agree}), attempt {attempt}: read_at_once's verdict was not in_call on every rank")
        else:
            fail(f"agreed ({agree}): read_at_once's completions in the call never measured faster on every rank")

    profile, _, _ = trace_and_merge(a, work, "-alone", [str(ITER), PAGES, "-1"])
    for agree in ("off", "on"):
        lean_run(a, work, spans, profile, agree)

    outdir = os.path.join(work, "off", "tnbc")
    run(a, args, dict(BASE, TNBC_SITE_TRIAL_CALLS="0"), outdir, quiet=True)
    for s in summaries(outdir):
        for name, site in sites_of(s, spans).items():
            check(site["early_return"] == ITER and "trial" not in site, f"{name}: every call early, no trial",
                  s["rank"], site)
    print("site_trial: passed")


if __name__ == "__main__":
    main()
