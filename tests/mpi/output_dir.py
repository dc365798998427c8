#!/usr/bin/env python3
"""TNBC_OUTPUT_DIR that cannot take the files: the program's results and exit status must not
change, and each rank says clearly which file it could not write and why.

usage: output_dir.py --lib LIBTNBC --prog PROFILE_USE --case unusable|full

  unusable  a regular file as the directory, and a directory below a regular file (cannot be
            created), nbc mode (summaries)
  full      (root, tmpfs) a 16 KiB tmpfs filled up: summaries (nbc) and traces (trace mode)
            fail with "No space left on device", no temporary file is left behind; a read-only
            tmpfs: "Read-only file system". Skipped (77) when a tmpfs cannot be mounted here.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_mpi_test import SKIP, add_launcher_options, fail, run_mpirun  # noqa: E402

NP = 2


def run(a, outdir, mode, expect):
    exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": outdir, "TNBC_MODE": mode}
    code, out = run_mpirun(NP, exports, [a.prog, "1", "2"], 120, a)
    print(f"--- TNBC_OUTPUT_DIR={outdir} TNBC_MODE={mode}: exit {code}")
    print(out.strip())
    if code != 0:
        fail(f"exit status {code}: an unwritable output directory must not change it", out)
    if " 0 failed" not in out:
        fail("results differ from the blocking collectives", out)
    for rank in range(NP):
        lines = [l for l in out.splitlines() if l.startswith(f"tnbc[{rank}]:") and all(e in l for e in expect)]
        if len(lines) != 1:
            fail(f"rank {rank}: expected one message containing {expect}", out)


def mount_tmpfs(where, options):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tnbc-test", where],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--case", choices=["unusable", "full"], required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tnbc-outdir-")
    try:
        if a.case == "unusable":
            plain = os.path.join(work, "plain")
            open(plain, "w").write("a file, not a directory\n")
            run(a, plain, "nbc", [f"'{plain}' exists and is not a directory", "summary not written"])
            sub = os.path.join(plain, "sub")
            run(a, sub, "nbc", [f"cannot create the directory '{sub}'", "Not a directory", "summary not written"])
        else:
            mnt = os.path.join(work, "mnt")
            os.mkdir(mnt)
            if not mount_tmpfs(mnt, "size=16k"):
                print("SKIP: cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)")
                sys.exit(SKIP)
            try:
                fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT)
                try:
                    while os.write(fd, b"\0" * 4096) > 0:
                        pass
                except OSError:
                    pass  # full
                os.close(fd)
                run(a, mnt, "nbc", ["No space left on device", "tnbc-summary.", "summary not written"])
                run(a, mnt, "trace", ["No space left on device", "tnbc-trace.", "trace not written"])
                left = sorted(set(os.listdir(mnt)) - {"filler"})
                if left:
                    fail(f"files left in the full directory: {left}")
            finally:
                subprocess.run(["umount", mnt])
            if not mount_tmpfs(mnt, "ro"):
                fail("could mount a tmpfs but not a read-only one")
            try:
                run(a, mnt, "nbc", ["Read-only file system", "summary not written"])
            finally:
                subprocess.run(["umount", mnt])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
