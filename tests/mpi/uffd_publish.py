#!/usr/bin/env python3
"""TNBC_UFFD_PUBLISH=auto publishes by moving pages or by copying them as the machine file prices
the two (model::page_moves_pay), TNBC_GUARD=auto guards a call with PROT_NONE where the file
prices it below userfaultfd at the call's size (model::guard_by_size, by_size_pays), and the
results stay right either way.

usage: uffd_publish.py --lib LIBTNBC --tool TNBC --prog DIFF_COLLECTIVES [--np 3]

  calibrate   `tnbc calibrate` under the launcher (the build's shared small sweep): a machine file
              with both userfaultfd backends measured (skipped, 77, where the kernel cannot move pages)
  moves dear  the same file with moving's publication 1000x dearer: no call's pages are moved
              (the summaries' guards.userfaultfd_moved is 0 on every rank)
  copies dear copying's publication 1000x dearer: pages are moved (userfaultfd_moved > 0 on some rank:
              diff_collectives has page-aligned receive buffers)
  uffd dear   TNBC_GUARD=auto, both userfaultfd publications 1000x dearer: every call held by
              PROT_NONE (guards.prot_none > 0, userfaultfd 0 on every rank; skipped where the
              calibration could not measure PROT_NONE)
  protect dear TNBC_GUARD=auto, PROT_NONE's publication 1000x dearer: calls held by userfaultfd,
              by PROT_NONE no more than with TNBC_GUARD=uffd (the memory userfaultfd cannot take)
  Every run: diff_collectives in mode nbc, every call from 3 pages per peer returning early (no trial),
  byte for byte against PMPI_* (" 0 failed").
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_runs import calibrated_machine, options, run, summaries  # noqa: E402
from run_mpi_test import fail  # noqa: E402

DEARER = 1000.0


def dearer(m, backends, path):
    """`m` with the publication of each of `backends` DEARER times its price, written to `path`."""
    m = json.loads(json.dumps(m))
    for backend in backends:
        pub = m["guard"][backend]["publish"]
        pub["ns"] = pub["ns"] * DEARER + 1e6
        pub["ns_per_byte"] = pub["ns_per_byte"] * DEARER + 1.0
        for point in pub.get("points", []):  # measured size by size (calibrate since session 56)
            point[1] = point[1] * DEARER + 1e6
    with open(path, "w") as f:
        json.dump(m, f)
    return path


def guard_counts(a, out, outdir):
    """Per rank, the summaries' guards (calls held per backend), after checking the file was used."""
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries, found {len(sums)}", out)
    for s in sums:
        if (s.get("model") or {}).get("source") != "file":
            fail(f"rank {s['rank']}: the machine file was not used: {s.get('model')}", out)
    return [s["guards"] for s in sums]


def moved_counts(a, out, outdir):
    g = guard_counts(a, out, outdir)
    return [x.get("userfaultfd_moved", 0) for x in g], sum(x.get("userfaultfd", 0) for x in g)


def main():
    a = options(3)
    work, m = calibrated_machine(a, "tnbc-uffd-publish-")
    measured = [k for k in ("userfaultfd_move", "userfaultfd_copy") if isinstance(m["guard"].get(k), dict)]
    if len(measured) < 2:
        print(f"SKIP: the calibration measured {measured or 'no userfaultfd backend'} (moving pages needs "
              "userfaultfd and Linux >= 6.8's UFFDIO_MOVE)")
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(77)
    env = {"TNBC_MODE": "nbc", "TNBC_MIN_BYTES": "12k", "TNBC_SITE_TRIAL_CALLS": "0", "TNBC_GUARD": "uffd",
           "TNBC_UFFD_PUBLISH": "auto"}

    out_dir = os.path.join(work, "moves-dear")
    out = run(a, [], dict(env, TNBC_MACHINE=dearer(m, ["userfaultfd_move"], os.path.join(work, "moves.json"))), out_dir)
    moved, held = moved_counts(a, out, out_dir)
    # What PROT_NONE holds with userfaultfd first (memory userfaultfd cannot take: layouts with gaps).
    fallback = sum(x.get("prot_none", 0) for x in guard_counts(a, out, out_dir))
    if held == 0:
        fail("no call was held back by userfaultfd: nothing to check", out)
    if any(moved):
        fail(f"moving priced 1000x dearer, yet calls had their pages moved: {moved} (ranks 0..)", out)
    print(f"moves dear: {held} calls held by userfaultfd, none moved")

    out_dir = os.path.join(work, "copies-dear")
    out = run(a, [], dict(env, TNBC_MACHINE=dearer(m, ["userfaultfd_copy"], os.path.join(work, "copies.json"))), out_dir)
    moved, held = moved_counts(a, out, out_dir)
    if not any(moved):
        fail(f"copying priced 1000x dearer, yet no call had its pages moved ({held} held by userfaultfd)", out)
    print(f"copies dear: {sum(moved)} of {held} calls held by userfaultfd had their pages moved")

    if not isinstance(m["guard"].get("prot_none"), dict):
        print("the calibration measured no PROT_NONE guard (publication through /proc/self/mem refused): "
              "the choice between the guards not checked")
    else:
        env = dict(env, TNBC_GUARD="auto")
        out_dir = os.path.join(work, "uffd-dear")
        path = dearer(m, ["userfaultfd_move", "userfaultfd_copy"], os.path.join(work, "uffd.json"))
        out = run(a, [], dict(env, TNBC_MACHINE=path), out_dir)
        g = guard_counts(a, out, out_dir)
        if sum(x.get("prot_none", 0) for x in g) == 0 or any(x.get("userfaultfd", 0) for x in g):
            fail(f"userfaultfd priced 1000x dearer, yet calls were not all held by PROT_NONE: {g} (ranks 0..)", out)
        print(f"uffd dear: {sum(x['prot_none'] for x in g)} calls held by PROT_NONE, none by userfaultfd")

        out_dir = os.path.join(work, "protect-dear")
        out = run(a, [], dict(env, TNBC_MACHINE=dearer(m, ["prot_none"], os.path.join(work, "protect.json"))), out_dir)
        g = guard_counts(a, out, out_dir)
        prot = sum(x.get("prot_none", 0) for x in g)
        if sum(x.get("userfaultfd", 0) for x in g) == 0 or prot > fallback:
            fail(f"PROT_NONE priced 1000x dearer, yet userfaultfd did not come first: {g} (ranks 0..; PROT_NONE "
                 f"held {fallback} calls with TNBC_GUARD=uffd)", out)
        print(f"protect dear: {sum(x['userfaultfd'] for x in g)} calls held by userfaultfd, {prot} by PROT_NONE "
              f"(as many as with TNBC_GUARD=uffd: {fallback})")
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
