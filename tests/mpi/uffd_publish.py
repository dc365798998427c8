#!/usr/bin/env python3
"""TNBC_UFFD_PUBLISH=auto publishes by moving pages or by copying them as the machine file prices
the two (model::page_moves_pay), and the results stay right either way.

usage: uffd_publish.py --lib LIBTNBC --tool TNBC --prog DIFF_COLLECTIVES [--np 3]

  calibrate   `tnbc calibrate` under the launcher (the build's shared small sweep): a machine file
              with both userfaultfd backends measured (skipped, 77, where the kernel cannot move pages)
  moves dear  the same file with moving's publication 1000x dearer: no call's pages are moved
              (the summaries' guards.userfaultfd_moved is 0 on every rank)
  copies dear copying's publication 1000x dearer: pages are moved (userfaultfd_moved > 0 on some rank:
              diff_collectives has page-aligned receive buffers)
  Both runs: diff_collectives in mode nbc, every call from 3 pages per peer returning early,
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


def dearer(m, backend, path):
    """`m` with `backend`'s publication DEARER times its price, written to `path`."""
    m = json.loads(json.dumps(m))
    pub = m["guard"][backend]["publish"]
    pub["ns"] = pub["ns"] * DEARER + 1e6
    pub["ns_per_byte"] = pub["ns_per_byte"] * DEARER + 1.0
    with open(path, "w") as f:
        json.dump(m, f)
    return path


def moved_counts(a, out, outdir):
    sums = summaries(outdir)
    if len(sums) != a.np:
        fail(f"expected {a.np} summaries, found {len(sums)}", out)
    for s in sums:
        if (s.get("model") or {}).get("source") != "file":
            fail(f"rank {s['rank']}: the machine file was not used: {s.get('model')}", out)
    return [s["guards"].get("userfaultfd_moved", 0) for s in sums], sum(s["guards"].get("userfaultfd", 0) for s in sums)


def main():
    a = options(3)
    work, m = calibrated_machine(a, "tnbc-uffd-publish-")
    measured = [k for k in ("userfaultfd_move", "userfaultfd_copy") if isinstance(m["guard"].get(k), dict)]
    if len(measured) < 2:
        print(f"SKIP: the calibration measured {measured or 'no userfaultfd backend'} (moving pages needs "
              "userfaultfd and Linux >= 6.8's UFFDIO_MOVE)")
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(77)
    env = {"TNBC_MODE": "nbc", "TNBC_MIN_BYTES": "12k", "TNBC_GUARD": "uffd", "TNBC_UFFD_PUBLISH": "auto"}

    out_dir = os.path.join(work, "moves-dear")
    out = run(a, [], dict(env, TNBC_MACHINE=dearer(m, "userfaultfd_move", os.path.join(work, "moves.json"))), out_dir)
    moved, held = moved_counts(a, out, out_dir)
    if held == 0:
        fail("no call was held back by userfaultfd: nothing to check", out)
    if any(moved):
        fail(f"moving priced 1000x dearer, yet calls had their pages moved: {moved} (ranks 0..)", out)
    print(f"moves dear: {held} calls held by userfaultfd, none moved")

    out_dir = os.path.join(work, "copies-dear")
    out = run(a, [], dict(env, TNBC_MACHINE=dearer(m, "userfaultfd_copy", os.path.join(work, "copies.json"))), out_dir)
    moved, held = moved_counts(a, out, out_dir)
    if not any(moved):
        fail(f"copying priced 1000x dearer, yet no call had its pages moved ({held} held by userfaultfd)", out)
    print(f"copies dear: {sum(moved)} of {held} calls held by userfaultfd had their pages moved")
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
