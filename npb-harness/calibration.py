"""The harness's machine files: `tnbc calibrate` once per network configuration, for every tnbc pass.

The start-up probe (runtime/model/probe.hh) measures a few round trips in well under a second;
on the emulated link (netrun.py: tc shaping in network namespaces) it reads the link ~8x slower
than it is, and the cost model then judges every call on that. `tnbc calibrate` measures the same
launcher, placement and link properly (ping-pong, message trains, size sweeps:
runtime/model/calibrate.hh), so the harness runs it once per configuration -- (network, emulated
nodes, rate, np, ranks per node) -- and passes the file to every tnbc pass as TNBC_MACHINE
(`--set machine=FILE`): the trace pass's cost model, `tnbc merge`'s verdicts and optimize's
decisions then all rest on the same measured machine.

The files are kept in OUT/machines/ and reused when the harness runs again with the same OUT
(delete them to measure again). A user's own TNBC_MACHINE wins; a calibration that fails is said
once and the passes fall back to the probe (as without a machine file).
"""
import os
import re
import subprocess
import sys

# tnbc calibrate's sweep (its --max-bytes): the sizes NPB class A's collectives reach per message.
MAX_BYTES = "4m"


def config_key(net, nodes, rate, np, ranks_per_node):
    """A file name's part that tells the configurations apart: 2-nodes.1gbit.np2 (safe characters only)."""
    parts = [net if nodes <= 1 else f"{nodes}-nodes", rate or "", f"np{np}"]
    if ranks_per_node:
        parts.append(f"ppn{ranks_per_node}")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", ".".join(p for p in parts if p))


class Calibrations:
    """One machine file per network configuration, measured on first use.

    `wrap(cmd, np)`: the full command line that runs cmd (a list) with np ranks on the harness's
    network (launcher, netrun for emulated nodes); `key(np)`: config_key for np ranks."""

    def __init__(self, tnbc, out, wrap, key, env, timeout, log):
        self.tnbc, self.dir, self.wrap, self.key = tnbc, os.path.join(out, "machines"), wrap, key
        self.env, self.timeout, self.log = env, timeout, log
        self.files = {}  # key -> path, or None when the calibration failed

    def machine(self, np):
        """The machine file for np ranks (measured now if it is not in OUT/machines yet); None if
        tnbc calibrate failed (then the passes use the start-up probe)."""
        key = self.key(np)
        if key in self.files:
            return self.files[key]
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, f"machine.{key}.json")
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            problem = self.unreadable(path, np)
            if not problem:
                self.log(f"machine file for {key}: {path} (measured earlier; delete it to measure again)")
                self.files[key] = path
                return path
            self.log(f"machine file for {key}: {path} is not usable by this tnbc ({problem}): measuring again")
        cmd = self.wrap([self.tnbc, "calibrate", "-o", path, "--max-bytes", MAX_BYTES], np)
        self.log(f"tnbc calibrate for {key} (once per network configuration): {path}")
        try:
            p = subprocess.run(cmd, cwd=self.dir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=self.timeout)
            output, code = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            output, code = (e.stdout or "") if isinstance(e.stdout, str) else "", -1
        with open(os.path.join(self.dir, f"calibrate.{key}.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n" + output)
        if code != 0 or not os.path.isfile(path):
            self.log(f"  !!! tnbc calibrate failed for {key} (exit {code}; see "
                     f"{os.path.join(self.dir, f'calibrate.{key}.txt')}): the tnbc passes use the start-up probe")
            if os.path.exists(path):
                os.remove(path)
            self.files[key] = None
            return None
        self.files[key] = path
        return path


    def unreadable(self, path, np):
        """Why this tnbc cannot read an earlier machine file (another version, for example), or ''.
        `tnbc predict MACHINE` loads it as a run would, without MPI."""
        p = subprocess.run([self.tnbc, "predict", path, "--np", str(np), "--sizes", "1"], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        return "" if p.returncode == 0 else (p.stdout.strip().splitlines() or [f"exit {p.returncode}"])[-1]


def machine_args(calibrations, np):
    """tnbc exec's options that pass the calibrated machine (empty: the user's TNBC_MACHINE, or no file)."""
    if calibrations is None or os.environ.get("TNBC_MACHINE"):
        return []
    path = calibrations.machine(np)
    return ["--set", f"machine={path}"] if path else []


if __name__ == "__main__":
    sys.exit("calibration.py is a module of npb-harness/harness.py")
