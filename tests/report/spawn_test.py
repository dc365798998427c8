#!/usr/bin/env python3
"""A program that starts processes with MPI_Comm_spawn (spawn_prog.c) under tnbc: each MPI world
writes its own per-rank summaries (the first world in TNBC_OUTPUT_DIR, a spawned one in
TNBC_OUTPUT_DIR/spawned-<id>/), none overwrites another's or fails to write, and `tnbc report`
shows the worlds apart, each with all its ranks.

usage: spawn_test.py [launcher options] --lib LIBTNBC --tool TNBC --prog spawn_prog --np N
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from profile_runs import options  # noqa: E402
from run_mpi_test import SKIP, fail, run_mpirun  # noqa: E402

CHILDREN = 2


def main():
    a = options(2)
    work = tempfile.mkdtemp(prefix="tnbc-spawn-")
    try:
        out_dir = os.path.join(work, "out")
        exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": out_dir}
        code, out = run_mpirun(a.np, exports, [a.prog, str(CHILDREN)], 180, a)
        print(out)
        if "spawn" in out.lower() and ("not supported" in out.lower() or "unable to spawn" in out.lower()):
            print("SKIP: this MPI cannot spawn processes here")
            sys.exit(SKIP)
        if code != 0:
            # The MPI library's own spawn may not work here (MPICH's hydra on this machine fails
            # with "Error in spawn call", or exits 15 saying nothing): the same program without
            # tnbc tells.
            plain_code, plain_out = run_mpirun(a.np, {}, [a.prog, str(CHILDREN)], 180, a)
            if plain_code != 0:
                print(plain_out)
                print(f"SKIP: MPI_Comm_spawn fails without tnbc too (exit {plain_code}): this MPI cannot spawn here")
                sys.exit(SKIP)
        if code != 0 or "spawn_prog parent: " not in out or "spawn_prog child: " not in out or out.count(" 0 failed") != 2:
            fail(f"the program failed (exit {code})", out)
        if "cannot write" in out or "error" in out.lower().replace("errcodes", ""):
            fail("a rank could not write its summary", out)
        main_files = sorted(glob.glob(os.path.join(out_dir, "tnbc-summary.*.json")))
        worlds = sorted(glob.glob(os.path.join(out_dir, "spawned-*")))
        if len(main_files) != a.np or len(worlds) != 1:
            fail(f"expected {a.np} summaries of the first world and one spawned world, got {main_files}, {worlds}")
        child_files = sorted(glob.glob(os.path.join(worlds[0], "tnbc-summary.*.json")))
        if len(child_files) != CHILDREN:
            fail(f"expected {CHILDREN} summaries of the spawned world, got {child_files}")
        ids = set()
        for files, size, world in ((main_files, a.np, "main"), (child_files, CHILDREN, "spawned")):
            ranks = []
            for f in files:
                s = json.load(open(f))
                if s["size"] != size or s["run"]["world"] != world:
                    fail(f"{f}: size {s['size']}, world {s['run']['world']}; expected {size}, {world}")
                ranks.append(s["rank"])
                ids.add(s["run"]["id"])
                calls = s["collectives"]["alltoall"]["calls"]
                if calls != (4 if world == "main" else 5):
                    fail(f"{f}: {calls} Alltoall calls")
            if sorted(ranks) != list(range(size)):
                fail(f"{world} world: ranks {ranks}")
        if len(ids) != 2:
            fail(f"the worlds should have their own run ids: {ids}")
        if out.count("tnbc: report: ") != 2:
            fail("each world's rank 0 should print its lines at MPI_Finalize", out)
        r = subprocess.run([a.tool, "report", out_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(r.stdout)
        if r.returncode != 0:
            fail("tnbc report failed", r.stdout)
        heads = [l for l in r.stdout.splitlines() if l.startswith("tnbc report: ")]
        if len(heads) != 2 or f": {a.np} of {a.np} ranks, mode nbc, run " not in heads[0] or \
                f"{CHILDREN} of {CHILDREN} ranks, mode nbc, a world started by MPI_Comm_spawn" not in heads[1]:
            fail(f"the report should show two worlds apart: {heads}", r.stdout)
        if "runs:" in r.stdout or "left out" in r.stdout:
            fail("the report saw mixed runs", r.stdout)
        print("spawn: OK")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
