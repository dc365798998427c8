#!/usr/bin/env python3
"""calibration.py's logic without MPI: how many launches a configuration gets, and the machine
file from several launches (each launch a fake `tnbc calibrate` that writes a file, or fails),
combined with a fake `tnbc calibrate --combine`. No timing."""
import json
import os
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibration  # noqa: E402

# A stand-in for tnbc: `calibrate -o P` writes P (failing on the launches FAIL names, counted in
# COUNT; with the load FAKE_LOAD gives the launch, OTHERS or OTHERS/STEAL, 1 % otherwise);
# `calibrate --combine A B .. -o P` writes P listing its inputs; `predict` succeeds. It runs on this
# test's interpreter: `env python3` may find a wrapper first (a pyenv shim starts in ~0.25 s, and the
# test launches it ~40 times).
FAKE_TNBC = "#!" + sys.executable + "\n" + r'''
import json, os, sys
a = sys.argv[1:]
count_file, fail = os.environ["FAKE_COUNT"], os.environ.get("FAKE_FAIL", "")
if a[0] == "predict":
    sys.exit(0)
out = a[a.index("-o") + 1]
if "--combine" in a:
    inputs = [x for x in a[2:] if x != "-o" and x != out]
    json.dump({"combined": inputs}, open(out, "w"))
    print("tnbc: calibrate --combine: the median of %d calibrations written to %s" % (len(inputs), out))
    sys.exit(0)
n = int(open(count_file).read()) if os.path.exists(count_file) else 0
open(count_file, "w").write(str(n + 1))
if str(n) in fail.split(","):
    print("launch %d failed" % n)
    sys.exit(3)
load = dict(x.split(":") for x in os.environ.get("FAKE_LOAD", "").split(",") if x)  # launch -> others[/steal]
others, _, steal = load.get(str(n), "0.01").partition("/")
json.dump({"launch": n, "load": {"others_cpu_share": float(others), "steal_share": float(steal or 0)}}, open(out, "w"))
'''

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def calibrations(tmp, fail="", launches=None, load=""):
    tnbc = os.path.join(tmp, "tnbc")
    with open(tnbc, "w") as f:
        f.write(FAKE_TNBC)
    os.chmod(tnbc, os.stat(tnbc).st_mode | stat.S_IXUSR)
    env = dict(os.environ, FAKE_COUNT=os.path.join(tmp, "count"), FAKE_FAIL=fail, FAKE_LOAD=load)
    said = []
    c = calibration.Calibrations(tnbc, tmp, lambda cmd, np: cmd, lambda np: f"none.np{np}", env, 60, said.append,
                                 launches)
    return c, said


def main():
    # config_key: one file per configuration; a yielding library (--yield) is another one.
    check(calibration.config_key("shaped", 2, "1gbit", 4, 0) == "2-nodes.1gbit.np4", "the emulated nodes' key")
    check(calibration.config_key("shaped", 2, "1gbit", 4, 0, yields=True) == "2-nodes.1gbit.np4.yield",
          "--yield: a key of its own (a spinning library's calibration is not reused)")
    check(calibration.config_key("none", 1, "", 8, 4) == "none.np8.ppn4", "real nodes, ranks per node")
    check(calibration.config_key("shaped", 2, "1gbit", 2, 0, burst="32kb") == "2-nodes.1gbit.np2.burst32kb",
          "another burst of the emulated links is another configuration")
    # launches_for: the draw only where a node has more ranks than CPUs.
    check(calibration.launches_for(4, 2) == calibration.OVERSUBSCRIBED_LAUNCHES, "np 4 on 2 CPUs: several launches")
    check(calibration.OVERSUBSCRIBED_LAUNCHES > 1, "more than one launch on an oversubscribed node")
    check(calibration.launches_for(2, 2) == 1, "np 2 on 2 CPUs: one launch")
    check(calibration.launches_for(1, 1) == 1, "one rank per one-CPU node: one launch")
    check(calibration.launches_for(8, 0) == 1, "CPUs not known (real nodes): one launch")
    check(calibration.launches_for(2, 2, configured=3) == 3, "--calibration-launches wins")
    check(calibration.launches_for(4, 2, configured=1) == 1, "--calibration-launches 1 on an oversubscribed node")
    try:
        calibration.launches_for(4, 2, configured=0)
        check(False, "--calibration-launches 0 refused")
    except ValueError as e:
        check("at least 1" in str(e), f"--calibration-launches 0: clear message ({e})")

    # One launch: one file, as before.
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp)
        path = c.machine(4)
        check(path == os.path.join(tmp, "machines", "machine.none.np4.json"), f"one launch: path {path}")
        check(json.load(open(path))["launch"] == 0, "one launch: the launch's file")
        check(not os.path.exists(os.path.join(tmp, "machines", "launches")), "one launch: no launches/ directory")
        check(c.machine(4) == path and int(open(os.path.join(tmp, "count")).read()) == 1, "measured once per key")

    # Three launches combined: every launch's file in launches/, the combination in machines/.
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, launches=lambda np: 3)
        path = c.machine(4)
        sub = os.path.join(tmp, "machines", "launches")
        combined = json.load(open(path))["combined"]
        check(combined == [os.path.join(sub, f"machine.none.np4.{i}.json") for i in range(3)],
              f"three launches combined in order: {combined}")
        check(all(os.path.isfile(p) for p in combined), "each launch's file kept")
        check(any("3 launches combined" in s for s in said), f"the harness says it combines: {said}")
        # Measured earlier: reused, not measured again.
        c2, said2 = calibrations(tmp, launches=lambda np: 3)
        check(c2.machine(4) == path and int(open(os.path.join(tmp, "count")).read()) == 3, "reused from OUT")

    # A launch that fails is said and left out; the others are combined.
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, fail="1", launches=lambda np: 3)
        path = c.machine(4)
        combined = json.load(open(path))["combined"] if path else []
        check(len(combined) == 2 and not any(p.endswith(".1.json") for p in combined), f"failed launch left out: {combined}")
        check(any("launch 2 of 3" in s and "failed" in s for s in said), f"the failed launch is said: {said}")
        check(any("2 of 3 launches measured" in s for s in said), f"how many were combined is said: {said}")

    # Only one launch succeeds: its file is the machine (no combination of one).
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, fail="0,2", launches=lambda np: 3)
        path = c.machine(4)
        check(path and json.load(open(path))["launch"] == 1, "one launch left: its file")

    # Every launch fails: no machine (the passes use the probe), said once.
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, fail="0,1,2", launches=lambda np: 3)
        check(c.machine(4) is None, "every launch failed: no machine file")
        check(any("start-up probe" in s for s in said), f"the fallback is said: {said}")
        check(not os.path.exists(os.path.join(tmp, "machines", "machine.none.np4.json")), "no partial machine file")
        check(c.failed() == ["none.np4"], f"the failed configuration is listed for the end of the output: {c.failed()}")
        c.machine(2)
        check(c.failed() == ["none.np4"], f"a configuration that calibrated is not listed: {c.failed()}")

    # A disturbed launch (a build beside it) is measured again; the undisturbed one is the machine.
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, load="0:0.31")
        path = c.machine(4)
        check(path and json.load(open(path))["launch"] == 1, "disturbed launch measured again, the quiet one kept")
        check(os.path.isfile(path + ".disturbed0"), "the disturbed launch's file kept aside")
        check(any("31%" in s and "measured again" in s for s in said), f"the disturbance is said: {said}")

    # Every launch disturbed: the least disturbed is kept, said; no more than DISTURBED_RETRIES more.
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, load="0:0.31,1:0.12,2:0.40,3:0.01")
        path = c.machine(4)
        check(int(open(os.path.join(tmp, "count")).read()) == 1 + calibration.DISTURBED_RETRIES, "retries bounded")
        check(path and json.load(open(path))["launch"] == 1, "the least disturbed launch kept")
        check(any("least disturbed (12%)" in s for s in said), f"which one is kept is said: {said}")

    # A disturbed launch, then a failed one: the disturbed file serves (not the probe).
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, fail="1", load="0:0.2")
        path = c.machine(4)
        check(path and json.load(open(path))["launch"] == 0, "the disturbed launch kept when the next fails")
        check(not any("start-up probe" in s for s in said), f"no probe fallback said: {said}")

    # The hypervisor steadily above the share in every launch, other processes quiet: said as this
    # machine's steady share; the next configuration counts only the steal above it (one launch).
    with tempfile.TemporaryDirectory() as tmp:
        c, said = calibrations(tmp, load="0:0.01/0.09,1:0.01/0.08,2:0.02/0.10,3:0.01/0.11,4:0.01/0.30,5:0.01/0.02")
        path = c.machine(4)
        check(path and json.load(open(path))["launch"] == 1, "steady steal: the least disturbed launch kept")
        check(any("hypervisor took 8-10%" in s and "steady" in s for s in said), f"the steady share is said: {said}")
        check(abs(c.usual_steal - 0.08) < 1e-9, f"the campaign's usual steal learnt: {c.usual_steal}")
        c.machine(2)
        check(int(open(os.path.join(tmp, "count")).read()) == 4, "steal within the steady share: not measured again")
        # Far above the steady share (30 % against 8 %): still a disturbance, measured again.
        c.machine(3)
        check(int(open(os.path.join(tmp, "count")).read()) == 6, "steal far above the steady share: measured again")
        check(json.load(open(c.machine(3)))["launch"] == 5, "the quiet launch kept")

    # Steal alone in some launches only, or other processes too: no steady share.
    check(calibration.steady_steal([(0.01, 0.09), (0.01, 0.02), (0.01, 0.10)]) == 0.0, "a quiet launch: not steady")
    check(calibration.steady_steal([(0.31, 0.09), (0.01, 0.08), (0.01, 0.10)]) == 0.0,
          "other processes too: not steady")
    check(calibration.steady_steal([(0.01, 0.09)]) == 0.0, "one launch: not steady")
    check(calibration.steady_steal([(0.01, 0.09), (0.02, 0.07)]) == 0.07, "every launch stolen: the least")

    # An older tnbc's file (no `load`) is not a disturbance.
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "m.json")
        json.dump({"launch": 0}, open(old, "w"))
        check(calibration.disturbance(old) == 0.0, "no load: undisturbed")
        check(calibration.disturbance(os.path.join(tmp, "missing.json")) == 0.0, "no file: undisturbed")

    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("calibration_test: all checks passed")


if __name__ == "__main__":
    main()
