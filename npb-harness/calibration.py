"""The harness's machine files: `tnbc calibrate` once per network configuration, for every tnbc pass.

The start-up probe (runtime/model/probe.hh) measures a few round trips in well under a second;
on the emulated link (netrun.py: tc shaping in network namespaces) it reads the link ~8x slower
than it is, and the cost model then judges every call on that. `tnbc calibrate` measures the same
launcher, placement and link properly (ping-pong, message trains, size sweeps:
runtime/model/calibrate.hh), so the harness runs it once per configuration -- (network, emulated
nodes, rate, np, ranks per node) -- and passes the file to every tnbc pass as TNBC_MACHINE
(`--set machine=FILE`): the trace pass's cost model, `tnbc merge`'s verdicts and optimize's
decisions then all rest on the same measured machine.

Where a node runs more ranks than it has CPUs (--shared-node np 4 on 2 CPUs), one launch of
`tnbc calibrate` is a draw: a launch there runs fast or slow as a whole, by up to 1.5x in the
node's exchange rate, whatever binds the ranks (docs/benchmarks.md, "The cost model against
measurements", session 13). There the harness calibrates with OVERSUBSCRIBED_LAUNCHES launches
(or --calibration-launches N) and combines them (`tnbc calibrate --combine`: every field the
median of the launches'); each launch's file is kept in OUT/machines/launches/. Launches that
fail are said and left out; if none succeeds, or the combination fails, the passes use the probe.

A launch during which other processes or the hypervisor took more than DISTURBED_SHARE of the
time of the CPUs its ranks may use (the file's `load`, runtime/model/calibrate_load.hh: a build
beside it, a busy host) measured transfers and tnbc's own call slow; it is measured again, up to
DISTURBED_RETRIES more times, and the least disturbed launch is kept (each said; the disturbed
files are kept beside it as machine.KEY.json.disturbedN). Where the hypervisor took more than that
share in every launch of a calibration and other processes little (a VM on a busy host: steady, not
a disturbance a later launch avoids), it is said, and later calibrations of the campaign count only
the steal above that share (steady_steal).

The files are kept in OUT/machines/ and reused when the harness runs again with the same OUT
(delete them to measure again). A user's own TNBC_MACHINE wins; a calibration that fails is said
once and the passes fall back to the probe (as without a machine file).
"""
import json
import os
import re
import shutil
import subprocess
import sys

# tnbc calibrate's sweep (its --max-bytes): the sizes NPB class A's collectives reach per message.
MAX_BYTES = "4m"
# Launches of tnbc calibrate combined where a node has more ranks than CPUs (one launch is a draw
# there: session 13); odd, so that each field's median is one launch's value.
OVERSUBSCRIBED_LAUNCHES = 5
# A launch whose machine file says other processes or the hypervisor took more than this share of
# the CPU time (`load`: others_cpu_share, steal_share) is measured again (tnbc calibrate warns above
# the same share: runtime/model/machine.hh, kLoadNoteShare), up to DISTURBED_RETRIES more times.
DISTURBED_SHARE = 0.05
DISTURBED_RETRIES = 2


def load_shares(path):
    """(others_cpu_share, steal_share) of the machine file's `load`; (0, 0) where it has none (a
    file of an older tnbc) or cannot be read."""
    try:
        with open(path) as f:
            load = json.load(f).get("load") or {}
        return max(0.0, float(load.get("others_cpu_share", 0))), max(0.0, float(load.get("steal_share", 0)))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0, 0.0


def disturbance(path, usual_steal=0.0):
    """The larger of the machine file's others_cpu_share and its steal_share above `usual_steal`
    (the hypervisor's steady share on this machine: steady_steal); 0 where the file has no `load`."""
    others, steal = load_shares(path)
    return max(others, steal - usual_steal)


def steady_steal(shares):
    """The hypervisor's steady share, from the (others, steal) shares of one calibration's launches:
    where there were several and every one had the hypervisor above DISTURBED_SHARE and the other
    processes at most that, the least of their steals (a VM on a busy host: a later launch meets the
    same, and runs too); else 0."""
    if len(shares) < 2 or any(o > DISTURBED_SHARE or s <= DISTURBED_SHARE for o, s in shares):
        return 0.0
    return min(s for _, s in shares)


def launches_for(ranks_per_node, cpus_per_node, configured=None):
    """How many launches of tnbc calibrate make the machine file of a configuration: `configured`
    (--calibration-launches) if given, else OVERSUBSCRIBED_LAUNCHES where a node has more ranks
    than CPUs (cpus_per_node 0 or None: not known, as on real nodes of a hostfile: one)."""
    if configured is not None:
        if configured < 1:
            raise ValueError(f"--calibration-launches must be at least 1 (got {configured})")
        return configured
    if cpus_per_node and ranks_per_node > cpus_per_node:
        return OVERSUBSCRIBED_LAUNCHES
    return 1


def config_key(net, nodes, rate, np, ranks_per_node, yields=False, burst=None):
    """A file name's part that tells the configurations apart: 2-nodes.1gbit.np2 (safe characters only);
    `yields`: the ranks of crowded emulated nodes yield while waiting (netrun.py --yield), .yield;
    `burst`: the emulated links' bucket where not netrun's default (netrun.py --burst), .burst32kb."""
    parts = [net if nodes <= 1 else f"{nodes}-nodes", rate or "", f"np{np}"]
    if ranks_per_node:
        parts.append(f"ppn{ranks_per_node}")
    if yields:
        parts.append("yield")
    if burst:
        parts.append(f"burst{burst}")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", ".".join(p for p in parts if p))


def say(line):
    """until_undisturbed's default `log`: the line on standard output, at once."""
    print(line.strip(), flush=True)


def until_undisturbed(launch, path, what, log=say, usual_steal=0.0, shares=None):
    """Runs `launch(first)` (one tnbc calibrate writing `path`; False, said, if it failed; `first`:
    no earlier launch is kept to fall back on) until its file says the machine was quiet
    (disturbance with `usual_steal` <= DISTURBED_SHARE), at most 1 + DISTURBED_RETRIES times.
    Disturbed files are moved aside (PATH.disturbedN); if none was quiet the least disturbed is
    copied to `path`, said (through `log`). Each launch's (others, steal) shares are appended to
    `shares` if given. False if no launch wrote a file."""
    kept = []  # (disturbance, file) of the disturbed launches
    seen = shares if shares is not None else []  # (others, steal) of every launch that wrote a file
    for attempt in range(DISTURBED_RETRIES + 1):
        if not launch(not kept):
            break
        seen.append(load_shares(path))
        share = disturbance(path, usual_steal)
        if share <= DISTURBED_SHARE:
            return True
        aside = f"{path}.disturbed{attempt}"
        os.replace(path, aside)
        kept.append((share, aside))
        again = ": measured again" if attempt < DISTURBED_RETRIES else ""
        log(f"  tnbc calibrate for {what}: other processes or the hypervisor took {100 * share:.0f}% of the CPU "
            f"time during it (above {100 * DISTURBED_SHARE:.0f}%){again}")
    if not kept:
        return False
    share, best = min(kept)
    shutil.copyfile(best, path)
    steady = steady_steal(seen)
    if steady > 0:
        log(f"  tnbc calibrate for {what}: the hypervisor took {100 * steady:.0f}-"
            f"{100 * max(s for _, s in seen):.0f}% in each of the {len(seen)} launches, other processes little: "
            f"this machine's steady share (runs here meet it too); the least disturbed launch is kept")
    else:
        log(f"  tnbc calibrate for {what}: no undisturbed launch; the least disturbed ({100 * share:.0f}%) is kept, "
            "its prices likely high")
    return True


class Calibrations:
    """One machine file per network configuration, measured on first use.

    `wrap(cmd, np)`: the full command line that runs cmd (a list) with np ranks on the harness's
    network (launcher, netrun for emulated nodes); `key(np)`: config_key for np ranks;
    `launches(np)`: launches of tnbc calibrate to combine for np ranks (launches_for; default 1)."""

    def __init__(self, tnbc, out, wrap, key, env, timeout, log, launches=None, cache_bytes=None, copy_bytes=None,
                 max_bytes=None):
        self.tnbc, self.dir, self.wrap, self.key = tnbc, os.path.join(out, "machines"), wrap, key
        self.env, self.timeout, self.log = env, timeout, log
        self.options = ["--max-bytes", max_bytes or MAX_BYTES]  # tnbc calibrate's sweep
        self.options += ["--cache-bytes", cache_bytes] if cache_bytes else []  # tnbc calibrate --cache-bytes
        self.options += ["--copy-bytes", copy_bytes] if copy_bytes else []  # tnbc calibrate --copy-bytes
        self.launches = launches or (lambda np: 1)
        self.files = {}  # key -> path, or None when the calibration failed
        # The hypervisor's steady share, once a calibration found it in every launch (steady_steal):
        # later launches count only the steal above it, so that they are not all measured thrice.
        self.usual_steal = 0.0

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
        n = self.launches(np)
        if n <= 1:
            self.log(f"tnbc calibrate for {key} (once per network configuration): {path}")
            ok = self.calibrate_once(np, path, os.path.join(self.dir, f"calibrate.{key}.txt"), key)
        else:
            ok = self.calibrate_combined(np, path, key, n)
        self.files[key] = path if ok else None
        return self.files[key]

    def failed(self):
        """The configurations whose calibration failed (their passes' cost model ran on the start-up
        probe), sorted: what the harness repeats at the end of its output, where a reader of the
        tables looks (a failure said only in the run's log went unseen in sessions 22-24)."""
        return sorted(key for key, path in self.files.items() if path is None)

    def calibrate_once(self, np, path, text, what, alone=True):
        """One launch of tnbc calibrate writing `path` (its output in `text`), measured again while the
        machine was disturbed (until_undisturbed: the steal counted above the campaign's usual_steal,
        which this calibration's launches may set). False, said, if it failed (`alone`: the machine
        file itself, whose failure sends the passes to the probe)."""
        shares = []
        ok = until_undisturbed(lambda first: self.launch(np, path, text, what, alone and first), path, what, self.log,
                               self.usual_steal, shares)
        steady = steady_steal(shares)
        if steady > self.usual_steal:
            self.usual_steal = steady
            self.log(f"  later calibrations of this campaign count only the hypervisor's share above "
                     f"{100 * steady:.0f}%")
        return ok

    def launch(self, np, path, text, what, alone):
        """One launch of tnbc calibrate writing `path` (its output in `text`); False, said, if it failed."""
        cmd = self.wrap([self.tnbc, "calibrate", "-o", path] + self.options, np)
        code, output = self.run(cmd, self.timeout)
        with open(text, "w") as f:
            f.write(" ".join(cmd) + "\n" + output)
        if code != 0 or not os.path.isfile(path):
            self.log(f"  !!! tnbc calibrate failed for {what} (exit {code}; see {text})"
                     + (": the tnbc passes use the start-up probe" if alone else ""))
            if os.path.exists(path):
                os.remove(path)
            return False
        return True

    def calibrate_combined(self, np, path, key, n):
        """n launches of tnbc calibrate (OUT/machines/launches/), combined into `path`: the median of
        the launches that succeeded. False, said, if none did or the combination failed."""
        sub = os.path.join(self.dir, "launches")
        os.makedirs(sub, exist_ok=True)
        self.log(f"tnbc calibrate for {key}: {n} launches combined (a node with more ranks than CPUs: one launch "
                 f"is a draw), {path}")
        done = []
        for i in range(n):
            one = os.path.join(sub, f"machine.{key}.{i}.json")
            if self.calibrate_once(np, one, os.path.join(sub, f"calibrate.{key}.{i}.txt"), f"{key}, launch {i + 1} of {n}",
                                   alone=False):
                done.append(one)
        if not done:
            self.log(f"  !!! every launch of tnbc calibrate failed for {key}: the tnbc passes use the start-up probe")
            return False
        if len(done) == 1:
            self.log(f"  only 1 of {n} launches measured for {key}: its file is the machine (a draw)")
            shutil.copyfile(done[0], path)
            return True
        if len(done) < n:
            self.log(f"  {len(done)} of {n} launches measured for {key}: combining those")
        cmd = [self.tnbc, "calibrate", "--combine"] + done + ["-o", path]
        code, output = self.run(cmd, 60)
        text = os.path.join(self.dir, f"calibrate.{key}.txt")
        with open(text, "w") as f:
            f.write(" ".join(cmd) + "\n" + output)
        if code != 0 or not os.path.isfile(path):
            self.log(f"  !!! tnbc calibrate --combine failed for {key} (exit {code}; see {text}): the tnbc passes use "
                     "the start-up probe")
            if os.path.exists(path):
                os.remove(path)
            return False
        self.log("  " + (output.strip().splitlines() or [""])[-1])
        return True

    def run(self, cmd, timeout):
        """(exit code, output) of cmd in OUT/machines; -1 and what it printed if it timed out."""
        try:
            p = subprocess.run(cmd, cwd=self.dir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=timeout)
            return p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            return -1, (e.stdout or "") if isinstance(e.stdout, str) else ""


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
