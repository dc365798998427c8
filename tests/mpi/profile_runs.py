"""What the trace -> merge -> optimize tests share (gain_sites.py, rank_sites.py): their command
line, a calibration (`tnbc calibrate`), a run of the program with libtnbc.so, the profile's numbers as trace/gain.hh computes
them, the per-rank summaries, and the cost model set between the sites that read at once and
those that compute first."""
import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

from run_mpi_test import QUICK_CALIBRATION, add_launcher_options, fail, run_mpirun

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "npb-harness"))
import calibration  # noqa: E402  (a disturbed calibration measured again: the harness's rule)


def parser(np_default=None):
    """The launcher's options, --lib, --tool, --prog and --np (required without a default)."""
    ap = argparse.ArgumentParser()
    add_launcher_options(ap)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--np", type=int, default=np_default, required=np_default is None)
    return ap


def options(np_default, more=None):
    """The parsed options (parser); `more(ap)` adds a test's own first."""
    ap = parser(np_default)
    if more:
        more(ap)
    a = ap.parse_args()
    if shutil.which(a.mpirun) is None:
        fail(f"{a.mpirun} not found")
    return a


def calibrate(a, machine, max_bytes, seconds_per_size):
    """`tnbc calibrate -o machine` under the launcher (a small sweep); fails the test unless it wrote it.
    Measured again while the machine was busy (the harness's rule, npb-harness/calibration.py
    until_undisturbed): the runs then warn that the file's prices are likely high, which the tests
    that expect no word from tnbc must not see for a reason outside the code.
    One calibration per build and sweep is shared by the tests that ask for the same one (model-decisions,
    plain-run, copy-price and threshold-never: np 3, 256k; see shared_calibration): a copy of it, unless the
    build's tnbc is newer than it."""
    shared = shared_calibration(a, max_bytes, seconds_per_size)
    if os.path.isfile(shared) and os.path.getmtime(shared) > newest_build_input(a):
        shutil.copyfile(shared, machine)
        print(f"machine file: a copy of {shared} (this build's calibration, made by an earlier test)")
        return

    def launch(_first):
        code, out = run_mpirun(a.np, {}, [a.tool, "calibrate", "-o", machine, "--max-bytes", max_bytes,
                                          "--seconds-per-size", str(seconds_per_size), "--quiet"] + QUICK_CALIBRATION, 300, a)
        if code != 0 or not os.path.exists(machine):
            fail("tnbc calibrate failed", out)
        return True
    calibration.until_undisturbed(launch, machine, os.path.basename(machine))
    os.makedirs(os.path.dirname(shared), exist_ok=True)
    shutil.copyfile(machine, shared + ".tmp")
    os.replace(shared + ".tmp", shared)


def calibrated_machine(a, prefix):
    """A scratch directory and the build's shared small calibration in it (np from `a`, 256k at
    0.02 s a size: the one model-decisions, plain-run, copy-price, threshold-never and uffd-publish
    share): (directory, the machine file's JSON), for a test to derive machine files from."""
    work = tempfile.mkdtemp(prefix=prefix)
    machine = os.path.join(work, "machine.json")
    calibrate(a, machine, "256k", 0.02)
    with open(machine) as f:
        return work, json.load(f)


def shared_calibration(a, max_bytes, seconds_per_size):
    """Where this build keeps its calibration for (np, sweep, launcher): BUILD/tests/mpi/calibrations/,
    BUILD being where --tool was built (BUILD/tools/tnbc). A calibration costs 20-90 s per test on
    a PVM guest (ASan's the most), and the tests that share one use it as any machine file: they
    check what tnbc decides from it, not the measurement (calibrate-* test that)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(a.tool)))
    launcher = os.path.basename(a.mpirun)
    quick = "_".join(QUICK_CALIBRATION[1::2])  # the quick options' values: 8m_4m
    return os.path.join(build, "tests", "mpi", "calibrations",
                        f"machine.{launcher}.np{a.np}.{max_bytes}.{seconds_per_size}.{quick}.json")


def newest_build_input(a):
    """When the tnbc that calibrates or reads the file last changed (the tool, its calibrate
    helper, the library): a calibration older than that is made again."""
    tool = os.path.abspath(a.tool)
    paths = [tool, os.path.join(os.path.dirname(tool), "tnbc-calibrate"), os.path.abspath(a.lib)]
    return max((os.path.getmtime(p) for p in paths if os.path.exists(p)), default=float("inf"))


def owed_load_warning(line, machine):
    """tnbc's warning that the machine file in use was calibrated while the machine was busy, where
    the file itself says so: on a host whose hypervisor takes more than DISTURBED_SHARE all the
    time no launch is quiet, calibrate() keeps the least disturbed one, and tnbc owes its user
    that word (session 50's CI: the hypervisor took 10-27 % in each of 3 launches). Any other warning,
    or this one with a quiet file, still fails a quiet run."""
    return ("was calibrated while" in line and bool(machine)
            and calibration.disturbance(machine) > calibration.DISTURBED_SHARE)


def run(a, args, env_extra, outdir, timeout=180, quiet=False):
    """Runs the program with libtnbc.so, TNBC_OUTPUT_DIR=outdir and env_extra; fails the test
    unless it exits 0 and prints " 0 failed" (every received byte equals the blocking result),
    and with `quiet` if tnbc printed a warning or an error (but the load warning a busy
    calibration owes: owed_load_warning)."""
    exports = {"LD_PRELOAD": os.path.abspath(a.lib), "TNBC_OUTPUT_DIR": outdir}
    exports.update(env_extra)
    code, out = run_mpirun(a.np, exports, [a.prog] + args, timeout, a)
    if code != 0 or " 0 failed" not in out:
        fail(f"run {outdir} failed (exit {code}) or results differ from the blocking collectives", out)
    said = [l for l in out.splitlines() if "tnbc[" in l and ("warning" in l or "error" in l)
            and not owed_load_warning(l, exports.get("TNBC_MACHINE"))]
    if quiet and said:
        fail(f"run {outdir}: unexpected tnbc messages: {said}", out)
    return out


def trace_and_merge(a, work, attempt, args):
    """A trace run (TNBC_MODE=trace) into work/trace<attempt>, merged by `tnbc merge` into
    work/trace<attempt>.profile: (profile path, merge output, the profile's JSON)."""
    outdir = os.path.join(work, f"trace{attempt}")
    run(a, args, {"TNBC_MODE": "trace"}, outdir)
    profile = outdir + ".profile"
    m = subprocess.run([a.tool, "merge", outdir, "-o", profile], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    print(m.stdout)
    if m.returncode != 0:
        fail("tnbc merge failed", m.stdout)
    with open(profile) as f:
        return profile, m.stdout, json.load(f)


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


def merge_verdicts(out, sites):
    """site symbol -> (verdict: plain, early_return or in_call; the `optimize:` line) from `tnbc merge`'s
    per-site lines, for the sites named by their innermost function; fails the test on a verdict of
    another form, or where a site named has none."""
    verdicts, symbol = {}, None
    for line in out.splitlines():
        m = re.match(r"  at   (\w+) \(", line)
        if m:
            symbol = m.group(1)
        if line.startswith("  optimize: ") and symbol in sites:
            if "plain MPI on every rank" in line:
                verdicts[symbol] = ("plain", line)
            elif line.startswith("  optimize: returns early"):
                verdicts[symbol] = ("early_return", line)
            elif line.startswith("  optimize: completes in the call"):
                verdicts[symbol] = ("in_call", line)
            else:
                fail(f"merge: unexpected verdict for {symbol}: {line}", out)
    if set(verdicts) != set(sites):
        fail(f"merge printed verdicts for {sorted(verdicts)}, expected {sorted(sites)}", out)
    return verdicts


def summaries(outdir):
    files = sorted(glob.glob(os.path.join(outdir, "tnbc-summary.*.json")))
    return [json.load(open(f)) for f in files]


def cost_between(trace_once, at_once, later):
    """trace_once(attempt) -> (profile, sites, nums: key -> (Tcomm, T_CURC + T_CRC)), run up to 3
    times until every site in `later` shows at least 2x the min(Tcomm, T_CURC + T_CRC) of every
    site in `at_once`. Returns (profile, sites, nums, cost in us): the geometric mean of the two,
    so that the test does not depend on how fast this machine communicates. A fixed cost is
    decided without margins (trace/gain.cc, decide: saved = min(Tcomm, T_CURC + T_CRC) - cost,
    from the same profile figures as these), so 2x leaves the cost 1.41x away from either side.
    Until session 40 this asked 4x, which a PVM guest (a page's first access after its
    protection changed ~6 us there) did not reach in three traces: 1.6x and 2.1x."""
    for attempt in range(3):
        profile, sites, nums = trace_once(attempt)
        gain = {key: min(comm, over) for key, (comm, over) in nums.items()}
        print(f"attempt {attempt}: min(Tcomm, T_CURC + T_CRC) in us: " +
              ", ".join(f"{key} {v / 1e3:.0f}" for key, v in gain.items()))
        low, high = max(gain[k] for k in at_once), min(gain[k] for k in later)
        if high >= 2 * low:
            cost_us = max(1, int(math.sqrt(low * high) / 1e3))
            print(f"cost model for the test: {cost_us} us per call")
            return profile, sites, nums, cost_us
    fail("in three trace runs the sites that compute first never showed 2x the overlap of those that read at "
         "once (a very busy machine?)")
