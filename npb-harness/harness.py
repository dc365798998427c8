#!/usr/bin/env python3
"""The user's main job: benchmarks through a baseline pass and tnbc passes, one comparison.

For each (benchmark, class, np) and each pass (baseline = no tnbc; nbc, trace, optimize =
`tnbc exec --mode ...`; off = the library preloaded with its interposers only, TNBC_MODE=off, no
summaries; optimize-order = optimize with TNBC_PROFILE_BLOCKING=off, the read order
only, no site run blocking; optimize-nodeoff / optimize-nodeon = optimize with
TNBC_NODE_PRIORITIES=off / on, against optimize's default auto (docs/settings.md); after a trace pass the ranks' traces are merged into a profile with
`tnbc merge`) it runs the program under the launcher (Open MPI's mpirun on the emulated link by
default; with --nodes K on K emulated nodes, ranks placed block-wise; see netrun.py; on a real
cluster --net none with mpirun/mpiexec and --hostfile, or srun inside a Slurm allocation),
checks NPB's "Verification = SUCCESSFUL" (a failed or missing verification is reported loudly
and makes the harness exit 1), parses times and communication timers, what tnbc's calls did and
where the ranks ran (its per-rank summaries), writes OUT/summary.json and prints a table, the
placement and mode optimize's site decisions. On a cluster OUT must be on a file system every
node sees (the ranks write their summaries there).

Benchmarks: the built-in proxies (is, ft, bcast: npb-harness/proxies) or, with --npb-src DIR (or the
NPB_SRC environment variable), real NPB 3.4 MPI IS and FT built from the user's tree (copied
into OUT/npb-build first; the user's tree is not modified).

Each tnbc run gets its overlap report (`tnbc report`: RUN/report.txt, .json, .html; the ideal of
Eq. 1 from the same benchmark's trace profile), and each (benchmark, class, np) one comparison page
of its passes (OUT/compare-BENCH.CLASS.npN.html); the table shows next to each pass the share of
the collectives' time it hid and the ideal (docs/reports.md), and the pages are listed under it.

The default network is an emulated cluster that fits this machine: one rank per CPU, one emulated
node per rank, a Gigabit link (--np CPUs --nodes NP --rate 1gbit); --shared-node puts the ranks
on one emulated node sharing one link (np 4, 4 Gbit/s unless given).

usage: harness.py [--tnbc PATH] [--build-dir build] [--benchmarks is,ft] [--classes S]
                  [--np CPUS] [--net shaped|loopback|none] [--rate 1gbit] [--nodes NP] [--shared-node]
                  [--launcher mpirun|mpiexec|srun] [--hostfile FILE] [--ranks-per-node M]
                  [--launcher-args ARGS] [--passes baseline,nbc,trace,optimize] [--npb-src DIR]
                  [--out DIR] [--repeat 1] [--max-repeat N] [--speedup-floor 0.99] [--confidence 0.95]
                  [--order rotate|fixed] [--settle S] [--steal-retries 2] [--steal-limit 1] [--trace-once]
                  [--timeout 600] [--predict] [--what-if-np N,...]

Repetitions: each runs every pass once, interleaved (--order rotate: each repetition starts one pass
later); per pass the median of the repetitions' ratios baseline time / pass time, with a
distribution-free confidence interval (order statistics) and a verdict against --speedup-floor:
not slower, slower, undecided; --max-repeat N adds repetitions to the undecided cells
(npb-harness/speedups.py, docs/harness.md). A pass named twice runs twice (baseline,baseline: A/A).
A run during which a virtual machine's hypervisor took more than --steal-limit % of the machine's CPU
time (steal), and 3x the campaign's usual share, is measured again, up to --steal-retries times
(hostload.py).
"""
import argparse
import atexit
import datetime
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibration  # noqa: E402  (tnbc calibrate per network configuration)
import hostload  # noqa: E402  (what the machine did during a run besides it)
import predict  # noqa: E402  (--predict, --what-if-np: npb-harness/predict.py)
import speedups  # noqa: E402  (paired speedups, their confidence interval and verdict)

HERE = os.path.dirname(os.path.abspath(__file__))
NETRUN = os.path.join(HERE, "netrun.py")
# How long a timed-out run gets to clean up after SIGTERM (netrun: namespaces) before SIGKILL.
STOP_GRACE_S = 30
# The CPUs /proc/stat's steal sums over (hostload.stolen).
MACHINE_CPUS = os.cpu_count() or 1
# The passes a --passes entry may name (a name given twice is run twice: `baseline,baseline` is an
# A/A comparison, the second recorded as baseline-2).
PASS_NAMES = ("baseline", "nbc", "trace", "optimize", "optimize-order", "optimize-nodeoff", "optimize-nodeon",
              "passthrough", "off")
# A tnbc pass may carry settings of its own: PASS:NAME=VALUE[:NAME=VALUE]... (NAME as `tnbc config`
# prints it, or its TNBC_ variable), e.g. optimize:early_return_margin_busy_poll_pct=0 beside optimize.
PASS_SETTING_SEP = ":"

MAKE_DEF = """# written by tnbc's npb-harness for the local MPI compilers
MPIFC = mpif90
FLINK = $(MPIFC)
FMPI_LIB =
FMPI_INC =
FFLAGS = -O3 -g {fextra}
FLINKFLAGS = $(FFLAGS)
MPICC = mpicc
CLINK = $(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = -O3 -g
CLINKFLAGS = $(CFLAGS)
UCC = cc
BINDIR = ../bin
RAND = randi8
WTIME = wtime.c
"""


def log(msg):
    print(f"[harness {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def gfortran_major():
    try:
        out = subprocess.run(["gfortran", "-dumpversion"], stdout=subprocess.PIPE, text=True).stdout
        return int(out.split(".")[0])
    except (OSError, ValueError):
        return 0


def find_npb_dir(src):
    """The NPB3.x-MPI directory inside what the user pointed at."""
    for cand in (src, os.path.join(src, "NPB3.4-MPI")):
        if os.path.isfile(os.path.join(cand, "config", "make.def.template")) or \
           os.path.isdir(os.path.join(cand, "FT")) and os.path.isdir(os.path.join(cand, "IS")):
            return cand
    for root, dirs, _ in os.walk(src):
        if "FT" in dirs and "IS" in dirs and "config" in dirs:
            return root
    return None


def build_npb(src, out, benchmarks, classes):
    npb = find_npb_dir(src)
    if npb is None:
        sys.exit(f"harness: {src} does not look like an NPB 3.4 MPI tree (no FT/ IS/ config/)")
    dst = os.path.join(out, "npb-build")
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(npb, dst)
    fextra = "-fallow-argument-mismatch -fallow-invalid-boz" if gfortran_major() >= 10 else ""
    with open(os.path.join(dst, "config", "make.def"), "w") as f:
        f.write(MAKE_DEF.format(fextra=fextra))
    os.makedirs(os.path.join(dst, "bin"), exist_ok=True)
    progs = {}
    for b in benchmarks:
        for c in classes:
            log(f"building NPB {b.upper()} class {c} in {dst}")
            r = subprocess.run(["make", b, f"CLASS={c}"], cwd=dst, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            exe = os.path.join(dst, "bin", f"{b}.{c}.x")
            if r.returncode != 0 or not os.path.exists(exe):
                print(r.stdout[-3000:])
                sys.exit(f"harness: building NPB {b}.{c} failed (see above)")
            progs[(b, c)] = [exe]
    return progs


def proxy_programs(build_dir, benchmarks, classes):
    progs = {}
    for b in benchmarks:
        exe = os.path.join(build_dir, "npb-harness", f"{b}-proxy")
        if not os.path.exists(exe):
            sys.exit(f"harness: {exe} not found (build first: ninja -C {build_dir})")
        for c in classes:
            progs[(b, c)] = [exe, c]
    return progs


def launcher_flavor(launcher):
    """Which options the launcher takes: "openmpi" (mpirun/mpiexec of Open MPI), "hydra"
    (MPICH's mpiexec) or "slurm" (srun)."""
    path = shutil.which(launcher)
    if path is None:
        sys.exit(f"harness: the launcher {launcher} is not in PATH")
    if os.path.basename(launcher) == "srun":
        return "slurm"
    try:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"harness: {launcher} --version failed: {e}")
    if "Open MPI" in out or "OpenRTE" in out:
        return "openmpi"
    if "HYDRA" in out.upper():
        return "hydra"
    sys.exit(f"harness: {path} is neither Open MPI's nor MPICH's (hydra) launcher: {out.strip()[:200]}")


def srun_mpi_plugin(prog):
    """srun's --mpi for the MPI library the program is linked with: Open MPI's PMIx client needs
    pmix, MPICH's PMI client pmi2 (with --mpi=none MPICH starts every task as its own one-rank
    job and Open MPI stops in MPI_Init); None when neither is found."""
    out = subprocess.run(["ldd", prog], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    if re.search(r"libmpich\.so", out):
        return "pmi2"
    if re.search(r"libmpi\.so", out):
        return "pmix"
    return None


def launch_command(a, flavor, np, net, prog, nodes=1):
    """The launcher's command line for np ranks of prog (a list; the tnbc exec part comes after
    it): the hosts (--hostfile), ranks per node (--ranks-per-node), the emulated network's
    restrictions (`nodes` emulated nodes), the user's --launcher-args."""
    extra = shlex.split(a.launcher_args)
    if flavor == "slurm":
        cmd = [a.launcher, "-n", str(np)]
        if a.ranks_per_node:
            cmd += [f"--ntasks-per-node={a.ranks_per_node}", f"--nodes={-(-np // a.ranks_per_node)}"]
        if not any(x == "--mpi" or x.startswith("--mpi=") for x in extra):
            plugin = srun_mpi_plugin(prog[0])
            if plugin:
                cmd += [f"--mpi={plugin}"]
        return cmd + extra
    if flavor == "hydra":
        cmd = [a.launcher, "-n", str(np)]
        if a.hostfile:
            cmd += ["-f", a.hostfile]
        if a.ranks_per_node:
            cmd += ["-ppn", str(a.ranks_per_node)]
        return cmd + extra
    cmd = [a.launcher, "-np", str(np)]
    if a.hostfile:
        cmd += ["--hostfile", a.hostfile]
    elif "SLURM_JOB_ID" not in os.environ:
        cmd += ["--oversubscribe"]  # one machine: more ranks than cores
    if a.ranks_per_node and net != "shaped":  # netrun places the ranks of emulated nodes itself
        cmd += ["--map-by", f"ppr:{a.ranks_per_node}:node"]
    if net == "loopback":
        cmd += ["--mca", "btl", "self,vader,tcp"]
    if net == "shaped" and nodes > 1 and not any(x.startswith("--bind-to") for x in extra):
        # netrun gives each emulated node its own CPUs (a cpuset per node): unbound, a rank and its
        # progress thread may use all of its node's CPUs, as on a cluster node. (Were the CPUs
        # shared, netrun --node-cpus shared, each node's daemon would bind its rank to core 0.)
        cmd += ["--bind-to", "none"]
    return cmd + extra


def placement(summary_dir):
    """Where the ranks of one run ran, from tnbc's per-rank summaries (`placement`,
    docs/formats.md): one entry per host with its ranks and their CPU lists; None without any."""
    hosts = {}
    for s in summaries(summary_dir):
        where = s.get("placement")
        if where:
            h = hosts.setdefault(where["host"], {"host": where["host"], "ranks": [], "cpus": []})
            h["ranks"].append(s.get("rank"))
            h["cpus"].append(where.get("cpus"))
    for h in hosts.values():
        order = sorted(range(len(h["ranks"])), key=lambda i: h["ranks"][i])
        h["ranks"], h["cpus"] = [h["ranks"][i] for i in order], [h["cpus"][i] for i in order]
    return sorted(hosts.values(), key=lambda h: h["ranks"][0]) or None


def ranges(xs):
    """"0-3,6" for [0, 1, 2, 3, 6]."""
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def placement_line(hosts):
    parts = []
    for h in hosts:
        cpus = set(h["cpus"])
        on = f"CPUs {h['cpus'][0]} each" if len(cpus) == 1 else "CPUs " + " | ".join(h["cpus"])
        parts.append(f"{h['host']}: {len(h['ranks'])} ranks ({ranges(h['ranks'])}), {on}")
    return f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}: " + "; ".join(parts)


def namespaces_allowed():
    r = subprocess.run([sys.executable, NETRUN, "--skip-code", "--", "true"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


def run_bounded(cmd, cwd, env, timeout, preexec=None):
    """(output, exit status) of cmd (preexec run in its first process before the exec); after
    `timeout` seconds it gets SIGTERM (netrun then removes its namespaces, which SIGKILL would leave
    behind) and the status is -1."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=preexec)
    try:
        return p.communicate(timeout=timeout)[0], p.returncode
    except subprocess.TimeoutExpired:
        p.terminate()
        try:
            output = p.communicate(timeout=STOP_GRACE_S)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            output = p.communicate()[0]
        return output + f"\nharness: timed out after {timeout:.0f} s", -1


def split_pass(entry):
    """A --passes entry: (pass name, [(setting, value)...]); the settings' names as tnbc's table has them
    (TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT and early_return_margin_tcomm_pct alike). ValueError if malformed."""
    name, *sets = entry.split(PASS_SETTING_SEP)
    settings = []
    for kv in sets:
        key, eq, value = kv.partition("=")
        key = key.strip()
        if not eq or not key or not value.strip():
            raise ValueError(f"'{kv}' in pass '{entry}' is not NAME=VALUE")
        if key.upper().startswith("TNBC_"):
            key = key[len("TNBC_"):]
        settings.append((key.lower(), value.strip()))
    return name.strip(), settings


def check_pass_settings(tnbc, settings):
    """The message of `tnbc exec --set` for settings it refuses (unknown name, invalid value), or None."""
    cmd = [tnbc, "exec", "--mode", "off"] + [x for k, v in settings for x in ("--set", f"{k}={v}")] + ["--", "true"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return None if p.returncode == 0 else p.stdout.strip()


def pass_labels(passes):
    """(label, pass) per --passes entry: the pass's name, with -2, -3 .. for its later occurrences."""
    seen, out = {}, []
    for p in passes:
        seen[p] = seen.get(p, 0) + 1
        out.append((p if seen[p] == 1 else f"{p}-{seen[p]}", p))
    return out


def setting_pairs(labelled):
    """(label, reference) for each pass with settings of its own whose pass without them runs too
    (optimize:NAME=VALUE beside optimize): the setting measured against the default."""
    parsed = [(label, *split_pass(p)) for label, p in labelled]
    plain = {label for label, _, settings in parsed if not settings}
    return [(label, name) for label, name, settings in parsed if settings and name in plain]


def setting_comparisons(runs, cells, labelled, confidence, floor):
    """Per cell and pass with settings of its own (setting_pairs), its paired speedups against the same
    pass without them: the reference's time / the setting's, per repetition (> 1: the setting is
    faster), with the interval and verdict of the speedups against the baseline (speedups.py)."""
    out = []
    for cell in cells:
        for label, ref in setting_pairs(labelled):
            s = speedups.cell_speedups(runs, cell, [label], confidence, floor, reference=ref)[0]
            out.append(dict(s, reference=ref))
    return out


def ratio_columns(s):
    """The median, its interval and the range of one paired-speedup entry (speedups.cell_speedups), as printed."""
    med = f"{s['median']:.3f}" if s["median"] is not None else "-"
    ci = f"[{s['low']:.3f}, {s['high']:.3f}]" if s["low"] is not None else "-"
    spread = f"{min(s['ratios']):.3f}-{max(s['ratios']):.3f}" if s["ratios"] else "-"
    return med, ci, spread


def print_setting_comparisons(comparisons, net_for):
    if not comparisons:
        return
    print("\na pass's own settings against the same pass without them: that pass's time / the setting's time in "
          "the same repetition (> 1: the setting is faster);\nmedian, interval and verdict as above (\"slower\": "
          "keep the default)")
    pw = max(len(s["pass"]) for s in comparisons)
    rw = max(len(s["reference"]) for s in comparisons)
    print(f"{'benchmark':10} {'class':5} {'np':>3} {'net':8} {'pass':{pw}} {'against':{rw}} {'n':>3} {'median':>7} "
          f"{'interval':>17} {'range':>13}  verdict")
    for s in comparisons:
        med, ci, spread = ratio_columns(s)
        what = s["verdict"] + (" (faster: the whole interval above 1)" if s["low"] is not None and s["low"] > 1 else "")
        print(f"{s['benchmark']:10} {s['class']:5} {s['np']:>3} {net_for(s['np']):8} {s['pass']:{pw}} "
              f"{s['reference']:{rw}} {s['n']:>3} {med:>7} {ci:>17} {spread:>13}  {what}")


def judged_passes(labelled, trace_once):
    """The labels that get a verdict against the first baseline: every other pass that runs in every
    repetition (not a --trace-once trace pass, which runs once); none without a baseline pass."""
    if not any(label == "baseline" for label, _ in labelled):
        return []
    return [label for label, p in labelled
            if label != "baseline" and not (split_pass(p)[0] == "trace" and trace_once)]


def net_stats(output):
    """netrun --stats of a run, summed over the links and nodes: the queues' drops and the TCP
    counters (retransmitted segments, timeouts, loss probes, SYN retransmissions); None without."""
    drops = [int(d) for d in re.findall(r"^netrun: .* tbf sent \d+ bytes \d+ pkt \(dropped (\d+),", output, re.M)]
    if not drops:
        return None
    out = {"tbf_dropped": sum(drops)}
    for line in re.findall(r"^netrun: .* tcp ((?:[a-z-]+ \d+ ?)+)$", output, re.M):
        fields = line.split()
        for key, value in zip(fields[::2], fields[1::2]):
            out[f"tcp_{key.replace('-', '_')}"] = out.get(f"tcp_{key.replace('-', '_')}", 0) + int(value)
    return out


def parse(output):
    res = {"verified": "Verification    =               SUCCESSFUL" in output or
           re.search(r"Verification\s*=\s*SUCCESSFUL", output) is not None}
    m = re.search(r"Time in seconds\s*=\s*([0-9.eE+-]+)", output)
    res["time"] = float(m.group(1)) if m else None
    m = re.search(r"Comm time[^=]*=\s*([0-9.eE+-]+)", output)
    timers = {}
    if m:
        timers["comm"] = float(m.group(1))
    # NPB's timer.flag output: " timer  8(      transpose ) :   min   max   avg" (FT: totcomm,
    # IS: rcomm are the communication totals); the average over ranks is kept.
    for t in re.finditer(r"timer\s+\d+\s*\(\s*([\w ]+?)\s*\)\s*:\s*([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", output):
        timers[t.group(1).strip().lower()] = float(t.group(4))
    for name in ("totcomm", "rcomm"):
        if "comm" not in timers and name in timers:
            timers["comm"] = timers[name]
    res["timers"] = timers
    # The same timed section as "Time in seconds" (NPB's timer 1, `total`, on the slowest rank)
    # to 0.1 ms, where NPB printed its timers: "Time in seconds" has 10 ms steps, 1.25 % of IS.A's
    # 0.8 s (docs/harness.md, "Which clock").
    m = re.search(r"timer\s+1\s*\(\s*total\s*\)\s*:\s*[0-9.]+\s+([0-9.]+)\s+[0-9.]+", output)
    res["time_fine"] = float(m.group(1)) if m else None
    return res


def summaries(summary_dir):
    """The per-rank summaries tnbc wrote in one run (docs/formats.md); unreadable ones left out."""
    for path in sorted(glob.glob(os.path.join(summary_dir, "tnbc-summary.*.json"))):
        try:
            with open(path) as f:
                yield json.load(f)
        except (OSError, ValueError):
            continue


def tnbc_calls(summary_dir):
    """What tnbc did in one run, from its per-rank summaries (docs/formats.md): per kind the calls
    that returned early, completed in the call (of those for lack of overlap to gain) or ran as
    plain MPI, and mode optimize's site decisions with the ranks that made them."""
    kinds, decisions, contention, held, predicted, trial, undescribed = {}, {}, None, {}, [], [], 0
    for s in summaries(summary_dir):
        # Mode optimize: calls at sites the profile does not hold, or at sizes it did not record.
        undescribed += sum((s.get("profile") or {}).get(k, 0) for k in ("calls_unknown_site", "calls_other_sizes"))
        if (saving := predicted_saving_s(s)) is not None:
            predicted.append(saving)
        if (priced := trial_priced_saving_s(s)) is not None:
            trial.append(priced)
        for kind, c in s.get("collectives", {}).items():
            k = kinds.setdefault(kind, {"early": 0, "in_call": 0, "no_gain": 0, "trial": 0, "slower": 0, "priced": 0,
                                        "plain": 0, "agreed": 0})
            why = c.get("reasons", {})
            k["early"] += c.get("early_return", 0)
            k["in_call"] += c.get("completed_in_call", 0)
            k["no_gain"] += why.get("no_overlap_to_gain", 0)
            k["trial"] += why.get("site_trial", 0)  # the site trial (runtime/site_trial.hh)
            k["slower"] += why.get("early_return_slower", 0)
            k["priced"] += why.get("priced_loss", 0)  # a site on trial leaning to the call
            k["plain"] += c.get("passthrough", 0)
            k["agreed"] += why.get("agreed_plain", 0)  # runtime/call_vote.hh
        contention = contention or (s.get("node") or {}).get("cpu_contention")
        for d in (s.get("profile") or {}).get("decisions", []):
            e = decisions.setdefault((d["kind"], d["where"], d["site"], d["decision"], d["basis"]),
                                     {"calls": 0, "ranks": []})
            e["calls"] += d.get("calls", 0)
            e["ranks"].append(s.get("rank"))
            if d.get("basis") == "within_margin":  # what the site trial made of its calls
                ran = ran_at(s, d["where"])
                if ran is not None:
                    e["ran"] = [a + b for a, b in zip(e.get("ran", [0, 0, 0]), ran)]
        for m in held_back(s):
            e = held.setdefault((m["kind"], m["where"], m["site"], m["margin_setting"]),
                                {"early_at_pct": m["early_at_pct"], "saved_ns": m.get("saved_ns") or 0, "ranks": []})
            e["early_at_pct"] = min(e["early_at_pct"], m["early_at_pct"])
            e["saved_ns"] = min(e["saved_ns"], m.get("saved_ns") or 0)
            e["ranks"].append(s.get("rank"))
    return {"kinds": kinds, "decisions": [dict(zip(("kind", "where", "site", "decision", "basis"), k), **v)
                                          for k, v in decisions.items()],
            "held_back": [dict(zip(("kind", "where", "site", "margin_setting"), k), **v) for k, v in held.items()],
            "cpu_contention": contention, "profile_undescribed": undescribed,
            # The ranks' median of the model's predicted saving (s; predicted_saving_s), or None.
            "predicted_saving_s": speedups.median(predicted),
            # The same of the early returns at the sites left to the trial (trial_priced_saving_s): no claim.
            "trial_priced_saving_s": speedups.median(trial)}


def last_of_passes(runs, field):
    """Per (benchmark, class, np, pass) its last repetition whose `tnbc_calls` has `field`, latest first."""
    shown = set()
    for r in reversed(runs):
        key = (r["benchmark"], r["class"], r["np"], r["pass"])
        if key in shown or not r.get("tnbc_calls") or not r["tnbc_calls"].get(field):
            continue
        shown.add(key)
        yield r


def print_site_decisions(runs):
    """Mode optimize's site decisions (the last repetition of each pass): which sites returned early
    and which completed in the call, on which ranks (ranks may decide differently); for a site left
    to the trial (within_margin), how the calls at its return address ran (the summaries count calls
    by return address: sites that differ deeper in the stack, NPB IS's first call and its loop, are
    counted together there)."""
    for r in last_of_passes(runs, "decisions"):
        print(f"\nsite decisions, {r['benchmark']}.{r['class']} np={r['np']} {r['pass']} (repetition {r['repeat']}):")
        for d in r["tnbc_calls"]["decisions"]:
            what = ("completed in the call" if d["decision"] == "blocking" else
                    "on trial" if d["basis"] == "within_margin" else "returned early")
            ranks = ",".join(str(x) for x in sorted(d["ranks"]))
            ran = (f"; the calls at its return address (every stack): early {d['ran'][0]}, in the call "
                   f"{d['ran'][1]}, plain MPI {d['ran'][2]}" if d.get("ran") else "")
            print(f"  {d['kind']} at {decision_where(r, d)} [{d['site']}]: {what} ({d['basis']}), {d['calls']} calls "
                  f"on ranks {ranks}{ran}")


def ran_at(summary, where):
    """How one rank's calls at the site a profile decision names ran: [early returns, completed in
    the call, plain MPI] from its summary's site of that return address (the decision's `where`
    ends in "+0xOFFSET)", its module and offset), or None where no site matches."""
    m = re.search(r"\+0x([0-9a-f]+)\)$", where or "")
    if not m:
        return None
    offset = int(m.group(1), 16)
    for site in summary.get("sites") or []:
        if int(site.get("offset", "-1"), 16) == offset and os.path.basename(site.get("module", "")) in where:
            return [site.get("early_return", 0), site.get("completed_in_call", 0), site.get("passthrough", 0)]
    return None


# Mode optimize's decisions completed in the call by tnbc's schedule because it beats the library's
# call (docs/formats.md `decisions`): each saves Tcomm less that schedule's time a call.
IN_CALL_SAVES = ("own_call_faster", "partner_in_call")


def predicted_saving_s(summary):
    """The cost model's predicted saving of one rank's run against the plain program, in seconds,
    from its summary's profile decisions (docs/formats.md): per site its calls times an early
    return's `saved_ns`, or, completed in the call by tnbc's schedule (IN_CALL_SAVES), `comm_ns` less
    `own_call_ns`; nothing for a site run as the library's call (0 for a run of the plain program:
    its profile loaded, no decision recorded), nor for one the model left to the site trial
    (`within_margin`: no claim). None without a loaded profile."""
    profile = summary.get("profile") or {}
    if profile.get("status") != "loaded":
        return None
    total = 0.0
    for d in profile.get("decisions") or []:
        calls = d.get("calls") or 0
        if d.get("basis") == "within_margin":
            continue
        if d.get("decision") == "early_return" and d.get("saved_ns") is not None:
            total += calls * d["saved_ns"]
        elif d.get("basis") in IN_CALL_SAVES and d.get("comm_ns") is not None and d.get("own_call_ns") is not None:
            total += calls * (d["comm_ns"] - d["own_call_ns"])
    return total / 1e9


def trial_priced_saving_s(summary):
    """What the cost model priced the early returns at the sites left to the site trial at, in seconds,
    on one rank: per such site (`within_margin`) its `saved_ns` times its calls that returned early,
    the trial's own among them (ran_at; the decisions naming one return address share its count, in
    order). The model claims nothing there (its saving lies within its margins), so no verdict is
    drawn from it: beside the measured saving it shows how far the model's price was off. None
    without a loaded profile."""
    profile = summary.get("profile") or {}
    if profile.get("status") != "loaded":
        return None
    total, early_left = 0.0, {}
    for d in profile.get("decisions") or []:
        if d.get("basis") != "within_margin" or d.get("saved_ns") is None:
            continue
        where = d.get("where")
        if where not in early_left:
            early_left[where] = (ran_at(summary, where) or [0])[0]
        early = min(d.get("calls") or 0, early_left[where])
        early_left[where] -= early
        total += early * d["saved_ns"]
    return total / 1e9


def held_back(summary):
    """The sites of one rank's summary that mode optimize's margin alone kept from returning early:
    the model block's sites with `early_at_pct` (docs/formats.md, docs/settings.md)."""
    return [m for m in ((summary.get("model") or {}).get("sites") or [])
            if isinstance(m.get("early_at_pct"), int) and m.get("margin_setting")]


def print_held_back(runs):
    """Under the table: the sites the margin alone kept from returning early, per pass (its last
    repetition): the gain optimize leaves, and the setting that would take it."""
    for r in last_of_passes(runs, "held_back"):
        print(f"\nheld back by the margin alone, {r['benchmark']}.{r['class']} np={r['np']} {r['pass']} "
              f"(repetition {r['repeat']}):")
        for d in r["tnbc_calls"]["held_back"]:
            print("  " + held_back_line(dict(d, where=decision_where(r, d))))


def held_back_line(d):
    """One site the margin alone held back, as the harness prints it under the table."""
    pct = d["early_at_pct"]
    return (f"{d['kind']} at {d['where']} [{d['site']}]: predicted saving {d['saved_ns'] / 1e6:.2f} ms per call; "
            f"it would return early at {d['margin_setting']}={pct} "
            f"(ranks {','.join(str(x) for x in sorted(d['ranks']))}; measure it beside the default before keeping it: "
            f"--passes baseline,trace,optimize,optimize{PASS_SETTING_SEP}{d['margin_setting']}={pct} --trace-once; "
            f"docs/settings.md)")


def calls_line(calls):
    def trial(k):  # the site trial, where it completed calls in the call (and the lean's, where some)
        priced = f", priced at a loss {k['priced']}" if k.get("priced", 0) else ""
        return (f", site trial {k['trial']}, early return slower {k['slower']}{priced}"
                if k.get("trial", 0) + k.get("slower", 0) + k.get("priced", 0) else "")
    def agreed(k):  # the trials' calls the ranks agreed to run as the library's own
        return f" (agreed by the ranks' trials {k['agreed']})" if k.get("agreed", 0) else ""
    undescribed = calls.get("profile_undescribed", 0)
    return "; ".join(f"{kind} early {k['early']}, in the call {k['in_call']} (no overlap to gain {k['no_gain']}"
                     f"{trial(k)}), plain MPI {k['plain']}{agreed(k)}" for kind, k in sorted(calls["kinds"].items())
                     if k["early"] + k["in_call"] + k["plain"]) + (
        f"; the profile does not describe {undescribed} calls (sites or sizes it did not record)" if undescribed else "")


def share_text(x):
    return f"{100 * x:.0f}%" if x is not None else "-"


def tnbc_report(tnbc, args, text_path):
    """Runs `tnbc report ARGS`, its text into text_path; the report JSON's first run, or None."""
    r = subprocess.run([tnbc, "report", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(text_path, "w") as f:
        f.write(r.stdout)
    if r.returncode != 0:
        log(f"  !!! tnbc report failed: {r.stdout.strip()[-500:]}")
        return None
    return r


def decision_where(run, d):
    """A site decision's place as the run's overlap report names it (function and file:line where
    the report resolved it, tools/symbolize.hh), else as the summaries record it (symbol (module+0xoffset))."""
    return ((run.get("report") or {}).get("decision_where") or {}).get(d["site"], d["where"])


def overlap_reports(tnbc, out, runs, profiles, extra=None):
    """Each tnbc run's overlap report (RUN/report.txt, .json, .html; docs/reports.md), with the ideal of
    Eq. 1 from its benchmark's trace profile, and one comparison page per (benchmark, class, np) of the
    passes' last repetitions (with `extra[key]`'s options: --what-if-np's picture, npb-harness/predict.py).
    Records the figures in the runs; returns the comparisons."""
    for r in runs:
        if r["pass"] == "baseline" or not r.get("tnbc_report") or not os.path.isdir(r["tnbc_report"]):
            continue
        rundir = os.path.dirname(r["output"])
        profile = profiles.get((r["benchmark"], r["class"], r["np"]))
        paths = {k: os.path.join(rundir, "report." + k) for k in ("text", "json", "html")}
        paths["text"] = os.path.join(rundir, "report.txt")
        args = [r["tnbc_report"], "--json", paths["json"], "--html", paths["html"]] + \
               (["--profile", profile] if profile else [])
        if tnbc_report(tnbc, args, paths["text"]) is None:
            continue
        with open(paths["json"]) as f:
            world = json.load(f)["runs"][0]["worlds"][0]
        t = world["totals"]
        r["report"] = dict(paths, early_returns=world.get("early_returns", 0),
                           decision_where={d["site"]: d["where"] for d in world.get("decisions", [])},
                           **{k: t.get(k) for k in ("hidden_share", "tinit_share", "blocked_share", "ideal_share",
                                                    "run_share")})
    comparisons = []
    keys = sorted({(r["benchmark"], r["class"], r["np"]) for r in runs if r.get("report")})
    order = ["optimize", "nbc", "optimize-order", "optimize-nodeoff", "optimize-nodeon", "trace", "passthrough"]
    for key in keys:
        last = {}
        for r in runs:
            if (r["benchmark"], r["class"], r["np"]) == key and r.get("report"):
                last[r["pass"]] = r  # the last repetition of each pass
        rank = {p: order.index(p) if p in order else len(order) for p in last}
        # The page's own run (its per-site timelines) is the pass with the most early returns: a
        # pass whose calls all completed in the call has no arrivals after the return to draw.
        first = max(last, key=lambda p: (last[p]["report"]["early_returns"] or 0, -rank[p]))
        passes = [first] + sorted((p for p in last if p != first), key=lambda p: rank[p])
        main_run = last[first]
        page = os.path.join(out, f"compare-{key[0]}.{key[1]}.np{key[2]}.html")
        args = [main_run["tnbc_report"]]
        for p in passes[1:]:
            args += ["--compare", last[p]["tnbc_report"]]
        args += ["--labels", ",".join(passes), "--html", page, "--json", page[:-len(".html")] + ".json"]
        if profiles.get(key):
            args += ["--profile", profiles[key]]
        args += (extra or {}).get(key, [])
        if tnbc_report(tnbc, args, page[:-len(".html")] + ".txt") is not None:
            comparisons.append({"benchmark": key[0], "class": key[1], "np": key[2], "passes": passes, "html": page,
                                "json": page[:-len(".html")] + ".json", "text": page[:-len(".html")] + ".txt"})
    return comparisons


def print_speedups(paired, repetitions, net_for):
    """The paired speedups with their interval and verdict, and how many repetitions each cell ran."""
    if not paired:
        return
    rep = repetitions
    level = f">= {100 * rep['look_confidence']:.2f}%"
    if rep["max_repeat"] is not None and len(rep["looks"]) > 1:
        level += f" at each of {len(rep['looks'])} looks ({', '.join(map(str, rep['looks']))} repetitions), " \
                 f">= {100 * rep['confidence']:.0f}% over them"
    print(f"\nspeedup per repetition: baseline time / the pass's time in the same repetition (passes interleaved, "
          f"order {rep['order']});\nmedian with its distribution-free confidence interval (sign test, order "
          f"statistics; confidence {level}; the exact coverage shown), verdict against {rep['speedup_floor']}")
    pw = max([14] + [len(s["pass"]) for s in paired.values()])
    print(f"{'benchmark':10} {'class':5} {'np':>3} {'net':8} {'pass':{pw}} {'n':>3} {'median':>7} "
          f"{'interval':>17} {'coverage':>8} {'range':>13}  verdict")
    for s in paired.values():
        med, ci, spread = ratio_columns(s)
        cov = f"{100 * s['coverage']:.1f}%" if s["low"] is not None else "-"
        what = s["verdict"] or "- (runs once)"
        if s["verdict"] == speedups.UNDECIDED and s["low"] is None:
            what += f" (too few repetitions for {100 * s['confidence']:.2f}%)"
        print(f"{s['benchmark']:10} {s['class']:5} {s['np']:>3} {net_for(s['np']):8} {s['pass']:{pw}} {s['n']:>3} "
              f"{med:>7} {ci:>17} {cov:>8} {spread:>13}  {what}")
    for c in rep["cells"]:
        print(f"repetitions, {c['benchmark']}.{c['class']} np={c['np']}: {c['ran']}; stopped: {c['stopped']}")
    clocks = {(s["benchmark"], s["class"], s["np"]): s["clock"] for s in paired.values()}
    fine = sorted(f"{b}.{c} np={n}" for (b, c, n), k in clocks.items() if k == "time_fine")
    if fine:
        print(f"times: NPB's timer 1 (total, slowest rank, 0.1 ms) in {', '.join(fine)}; elsewhere \"Time in seconds\"")
    for s in paired.values():
        if s["disturbed"] and s["verdict"] is not None:
            print(f"shared machine, {s['benchmark']}.{s['class']} np={s['np']} {s['pass']}: in {len(s['disturbed'])} of "
                  f"{s['n']} repetitions other work took more than {100 * hostload.OTHER_SHARE_NOTE:g} % of the "
                  f"machine's CPU time beside a run (repetitions {ranges(s['disturbed'])}; kept; summary.json runs' host)")


def print_against_model(rows, net_for):
    """The cost model's predicted saving of each mode-optimize pass against the measured one."""
    if not rows:
        return
    print(f"\nthe cost model's predicted saving against the measured (mode optimize; per rank, the early returns' "
          f"and tnbc's in-call schedules' savings by their calls, the ranks' median; measured: the baseline's time "
          f"less the pass's in the same repetition; medians over the repetitions): where the prediction is above "
          f"{100 * speedups.CLAIM_SHARE:g} % of the baseline's time, at least half of it should be measured; "
          f"on trial s: what the model priced the early returns at, at the sites it left to the site trial (the "
          f"saving within its margins: no claim, no verdict)")
    pw = max([14] + [len(x["pass"]) for x in rows])
    print(f"{'benchmark':10} {'class':5} {'np':>3} {'net':8} {'pass':{pw}} {'n':>3} {'predicted s':>11} {'share':>6} "
          f"{'on trial s':>10} {'measured s':>10} {'measured/predicted':>18}  verdict")
    for x in rows:
        ratio = f"{x['measured_s'] / x['predicted_s']:.2f}" if x["predicted_s"] > 0 else "-"
        trial = f"{x['trial_priced_s']:10.3f}" if x.get("trial_priced_s") is not None else f"{'-':>10}"
        print(f"{x['benchmark']:10} {x['class']:5} {x['np']:>3} {net_for(x['np']):8} {x['pass']:{pw}} {x['n']:>3} "
              f"{x['predicted_s']:11.3f} {100 * x['share']:5.1f}% {trial} {x['measured_s']:10.3f} {ratio:>18}  "
              f"{x['verdict']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tnbc", default=None, help="path of the tnbc command (default: BUILD/tools/tnbc)")
    ap.add_argument("--build-dir", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--benchmarks", default="is,ft")
    ap.add_argument("--classes", default="S")
    ap.add_argument("--np", default=None, help="ranks, a comma-separated list (default: this machine's CPUs; "
                                                "--shared-node: 4)")
    ap.add_argument("--net", choices=["shaped", "loopback", "none"], default=None,
                    help="shaped (emulated link, needs namespaces; the default with a local mpirun), loopback, or "
                         "none: the machine's own network (the default with --hostfile, mpiexec of MPICH or srun)")
    ap.add_argument("--rate", default=None, help="each emulated node's link (default 1gbit; --shared-node: 4gbit)")
    ap.add_argument("--burst", default=None,
                    help="the emulated links' tbf bucket (netrun.py --burst; default netrun's, 256kb): 32kb emulates "
                         "a NIC without the credit an idle link gets; its calibrations are kept apart")
    ap.add_argument("--nodes", type=int, default=None,
                    help="emulated nodes K of the shaped network (default: one per rank; --shared-node: 1)")
    ap.add_argument("--shared-node", action="store_true",
                    help="all ranks on one emulated node, sharing its cores and one link (the contended case)")
    ap.add_argument("--launcher", default="mpirun",
                    help="mpirun or mpiexec (Open MPI's or MPICH's hydra, told apart by --version; a path works too), "
                         "or srun (Slurm)")
    ap.add_argument("--hostfile", default=None,
                    help="hosts for mpirun/mpiexec, in the launcher's format (Open MPI: 'node1 slots=4', passed as "
                         "--hostfile; hydra: 'node1:4', passed as -f)")
    ap.add_argument("--ranks-per-node", type=int, default=0, metavar="M",
                    help="ranks per node (Open MPI --map-by ppr:M:node, hydra -ppn, srun --ntasks-per-node)")
    waiting = ap.add_mutually_exclusive_group()
    waiting.add_argument("--yield", dest="yield_crowded", action="store_true", default=True,
                         help="emulated nodes (--nodes) with more ranks than CPUs: MPI's waiting ranks yield their "
                              "CPU (netrun.py --yield), as a rank with a core of its own leaves the others theirs; "
                              "the machine file is calibrated so too (the default)")
    waiting.add_argument("--spin", dest="yield_crowded", action="store_false",
                         help="there, MPI's waiting ranks spin instead (a slot per rank: the benchmarks before "
                              "session 70)")
    ap.add_argument("--launcher-args", default="", metavar="ARGS",
                    help="more launcher options, one string (e.g. '--mca pml ucx', '--mpi=pmix --cpu-bind=cores')")
    ap.add_argument("--passes", default="baseline,nbc,trace,optimize",
                    help="comma-separated passes, run interleaved; a tnbc pass may add settings of its own, "
                         "PASS:NAME=VALUE[:NAME=VALUE] (e.g. optimize:TNBC_EARLY_RETURN_MARGIN_BUSY_POLL_PCT=0 "
                         "beside optimize)")
    ap.add_argument("--npb-src", default=os.environ.get("NPB_SRC"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeat", type=int, default=1,
                    help="repetitions of every (benchmark, class, np); each runs every pass once, interleaved")
    ap.add_argument("--max-repeat", type=int, default=None, metavar="N",
                    help="adaptive: after --repeat, more repetitions of the cells whose verdict against "
                         "--speedup-floor is undecided, up to N (looked at x1.5 apart; docs/harness.md)")
    ap.add_argument("--speedup-floor", type=float, default=0.99, metavar="F",
                    help="the verdict's threshold for the median per-repetition speedup baseline / pass "
                         "(default 0.99: 'not slower' when its confidence interval lies at or above F)")
    ap.add_argument("--confidence", type=float, default=0.95,
                    help="of the median speedup's interval (default 0.95; the exact coverage is reported)")
    ap.add_argument("--order", choices=["rotate", "fixed"], default="rotate",
                    help="the passes' order in repetition r: the given order shifted by r (rotate, the "
                         "default) or always the given one (fixed)")
    ap.add_argument("--settle", type=float, default=0.0, metavar="S",
                    help="seconds to wait before each run (default 0)")
    ap.add_argument("--steal-retries", type=int, default=2, metavar="N",
                    help="measure a run again, up to N times, when the hypervisor took CPU from the machine during "
                         "it (steal above --steal-limit; a virtual machine's host was busy): the last run is kept "
                         "(default 2; 0: never)")
    ap.add_argument("--steal-limit", type=float, default=1.0, metavar="PCT",
                    help="steal that makes a run be measured again: %% of the machine's CPU time during the run "
                         "(default 1)")
    ap.add_argument("--trace-once", action="store_true",
                    help="the trace pass in the first repetition only: every later optimize pass uses its profile "
                         "(saves a trace run per repetition in a measurement campaign)")
    ap.add_argument("--timeout", type=float, default=600)
    predict.add_arguments(ap)
    ap.add_argument("--calibration-launches", type=int, default=None, metavar="N",
                    help="launches of `tnbc calibrate` combined into each configuration's machine file (default: "
                         f"{calibration.OVERSUBSCRIBED_LAUNCHES} where a node has more ranks than CPUs, else 1; "
                         "npb-harness/calibration.py)")
    ap.add_argument("--calibrate-cache", metavar="SIZE",
                    help="the last-level cache `tnbc calibrate` empties before its cold measurements (its "
                         "--cache-bytes; default: the CPU's). Smaller is quicker and prices cold copies too low: "
                         "for tests, not measurements")
    ap.add_argument("--calibrate-copy", metavar="SIZE",
                    help="the largest copy `tnbc calibrate` measures (its --copy-bytes; default 16 MiB, 64 MiB in a "
                         "call). Smaller maps far less memory and prices large copies by the line: for tests")
    ap.add_argument("--calibrate-max-bytes", metavar="SIZE",
                    help=f"the largest message of `tnbc calibrate`'s sweep (its --max-bytes; default "
                         f"{calibration.MAX_BYTES}, NPB class A's). Smaller is quicker and prices larger messages "
                         "from the line: for tests")
    ap.add_argument("--no-calibrate", action="store_true",
                    help="do not run `tnbc calibrate` per network configuration (the passes then use the "
                         "start-up probe's machine; TNBC_MACHINE set by the user is used either way)")
    a = ap.parse_args()

    build = os.path.abspath(a.build_dir)
    tnbc = os.path.abspath(a.tnbc or os.path.join(build, "tools", "tnbc"))
    out = os.path.abspath(a.out or os.path.join("tnbc-out", "harness-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    os.makedirs(out, exist_ok=True)
    benchmarks = [b.strip().lower() for b in a.benchmarks.split(",") if b.strip()]
    classes = [c.strip().upper() for c in a.classes.split(",") if c.strip()]
    if a.np is None:
        a.np = "4" if a.shared_node else str(os.cpu_count() or 2)
    if a.rate is None:
        a.rate = "4gbit" if a.shared_node else "1gbit"
    if a.nodes is not None and a.nodes < 1:
        sys.exit("harness: --nodes must be at least 1")
    nps = [int(n) for n in a.np.split(",")]
    passes = [p.strip() for p in a.passes.split(",") if p.strip()]
    try:
        parsed = {p: split_pass(p) for p in passes}  # each entry's pass name and own settings
    except ValueError as e:
        sys.exit(f"harness: {e}")
    for p, (name, settings) in parsed.items():
        if name not in PASS_NAMES:
            sys.exit(f"harness: unknown pass '{name}' ({', '.join(PASS_NAMES)}; a tnbc pass may add settings: "
                     f"optimize{PASS_SETTING_SEP}NAME=VALUE)")
        if settings and name == "baseline":
            sys.exit(f"harness: pass '{p}': the baseline runs without tnbc, it takes no settings")
    labelled = pass_labels(passes)
    if a.repeat < 1:
        sys.exit("harness: --repeat must be at least 1")
    if a.max_repeat is not None and a.max_repeat < a.repeat:
        sys.exit(f"harness: --max-repeat {a.max_repeat} is below --repeat {a.repeat}")
    if not 0 < a.confidence < 1:
        sys.exit("harness: --confidence must lie between 0 and 1 (e.g. 0.95)")
    if a.speedup_floor <= 0 or a.settle < 0:
        sys.exit("harness: --speedup-floor must be positive and --settle not negative")
    if a.steal_retries < 0 or a.steal_limit <= 0:
        sys.exit("harness: --steal-retries must not be negative and --steal-limit must be positive")
    if any(p != "baseline" for p in passes) and not os.path.exists(tnbc):
        sys.exit(f"harness: {tnbc} not found (build first, or --tnbc PATH)")
    for p, (_, settings) in parsed.items():
        refused = settings and check_pass_settings(tnbc, settings)
        if refused:
            sys.exit(f"harness: pass '{p}': {refused}")
    flavor = launcher_flavor(a.launcher)
    if a.hostfile and flavor == "slurm":
        sys.exit("harness: with --launcher srun the hosts are the Slurm allocation's (salloc/sbatch -N); "
                 "--hostfile is for mpirun/mpiexec")
    if a.hostfile and not os.path.isfile(a.hostfile):
        sys.exit(f"harness: hostfile {a.hostfile} not found")
    if a.ranks_per_node < 0:
        sys.exit("harness: --ranks-per-node must be positive")
    if a.calibration_launches is not None and a.calibration_launches < 1:
        sys.exit("harness: --calibration-launches must be at least 1")
    local_mpirun = flavor == "openmpi" and not a.hostfile
    net = a.net or ("shaped" if local_mpirun else "none")
    if net in ("shaped", "loopback") and not local_mpirun:
        sys.exit(f"harness: --net {net} drives Open MPI's mpirun on this machine only (netrun.py; its transports); "
                 f"with {a.launcher}{' and --hostfile' if a.hostfile else ''} use --net none")
    if a.hostfile:
        a.hostfile = os.path.abspath(a.hostfile)
    if net == "shaped" and not namespaces_allowed():
        log("network namespaces are not allowed here (needs root: CAP_SYS_ADMIN and CAP_NET_ADMIN): "
            "running on plain loopback instead; overlap figures then mean little")
        net = "loopback"
    if net in ("loopback", "none") and (a.nodes or 1) > 1:
        log(f"--nodes {a.nodes} (emulated nodes) needs the shaped network: ignored")
    if net in ("loopback", "none") and a.burst:
        log(f"--burst {a.burst} (the emulated links' bucket) needs the shaped network: ignored")
        a.burst = None
    shaped = net == "shaped"

    def nodes_for(np):
        """Emulated nodes of a run of np ranks: --nodes, else one per rank (--shared-node: one;
        --ranks-per-node M: as many as M per node takes)."""
        if not shaped:
            return 1
        if a.nodes:
            return a.nodes
        if a.shared_node:
            return 1
        return -(-np // a.ranks_per_node) if a.ranks_per_node else np

    def cpus_per_node(np):
        """CPUs of each node of a run of np ranks where the harness knows them: this machine's (the
        shaped network's nodes split them: netrun.py --node-cpus split); 0 on real nodes."""
        if a.hostfile or flavor == "slurm":
            return 0
        return max(1, len(os.sched_getaffinity(0)) // nodes_for(np))

    def ranks_per_node(np):
        """Ranks on each node of a run of np ranks: --ranks-per-node, else np spread over nodes_for(np)."""
        return a.ranks_per_node or -(-np // nodes_for(np))

    def yields(np):
        """Emulated nodes whose ranks outnumber their CPUs, unless --spin (netrun.py --yield)."""
        return a.yield_crowded and shaped and nodes_for(np) > 1 and ranks_per_node(np) > cpus_per_node(np)

    def net_for(np):
        k = nodes_for(np)
        return f"{k}-nodes" if shaped and k > 1 else net
    def emulated(cmd, np):
        """cmd on the emulated network (netrun.py; --stats: its queues' drops and TCP counters)."""
        if not shaped:
            return cmd
        return [sys.executable, NETRUN, "--stats", "--rate", a.rate, "--nodes", str(nodes_for(np))] + \
            (["--burst", a.burst] if a.burst else []) + \
            (["--ranks-per-node", str(a.ranks_per_node)] if a.ranks_per_node else []) + \
            (["--yield"] if yields(np) else []) + ["--"] + cmd

    def on_network(inner, np):
        """The command that runs `inner` with np ranks on this network (launcher, emulated nodes)."""
        return emulated(launch_command(a, flavor, np, net, inner, nodes_for(np)) + inner, np)

    # The cost model's machine, measured once per network configuration (npb-harness/calibration.py).
    run_env = dict(os.environ)
    if os.geteuid() == 0:
        run_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    calibrations = None
    if not a.no_calibrate and any(p != "baseline" for p in passes):
        calibrations = calibration.Calibrations(
            tnbc, out, on_network, lambda np: calibration.config_key(net, nodes_for(np), a.rate if shaped else "", np,
                                                                     a.ranks_per_node, yields(np), a.burst),
            run_env, a.timeout, log,
            lambda np: calibration.launches_for(ranks_per_node(np), cpus_per_node(np), a.calibration_launches),
            a.calibrate_cache, a.calibrate_copy, a.calibrate_max_bytes)
    progs = build_npb(a.npb_src, out, benchmarks, classes) if a.npb_src else proxy_programs(build, benchmarks, classes)
    kind = "npb" if a.npb_src else "proxy"

    runs, failures = [], []
    profiles = {}  # (benchmark, class, np) -> profile of its latest trace pass, for optimize
    progress = {"done": 0, "total": 0}
    load = hostload.HostLoad()
    atexit.register(load.close)
    steal_shares = []  # the kept runs' steal shares: what is usual on this machine (hostload.stolen)
    reporting = hostload.free_page_reporting()
    if reporting is not None:
        log(f"note: this virtual machine hands freed memory back to its hypervisor (virtio-balloon free page "
            f"reporting, blocks of order {reporting} and above): a run that allocates memory freed shortly before "
            f"waits while the hypervisor backs it again (steal; such runs are measured again, --steal-retries). "
            f"For a measurement campaign, as root: echo {hostload.LARGEST_PAGE_ORDER + 1} > "
            f"{hostload.PAGE_REPORTING_ORDER} (and {reporting} again after; docs/harness.md)")

    def passes_of(rep):
        """(label, pass) of repetition rep in the order they run: the given order, or with --order
        rotate shifted by rep, so that each pass follows each other as often (a position's effect, the
        run before, spreads over the passes instead of favouring one). --trace-once: the trace pass in
        repetition 0 only, which keeps the given order (the trace before the optimize using it)."""
        ps = [(label, p) for label, p in labelled if not (split_pass(p)[0] == "trace" and rep > 0 and a.trace_once)]
        if a.order == "rotate" and ps:
            ps = ps[rep % len(ps):] + ps[:rep % len(ps)]
        return ps

    def run_one(bench, cls, prog, np, label, p, rep):
        """One run of pass p (recorded as label) in repetition rep: into runs (and failures)."""
        progress["done"] += 1
        # A pass's setting may hold a path (optimize:machine=/x/m.json): one directory per run all the same.
        rundir = os.path.join(out, f"{bench}.{cls}.np{np}.{label.replace(os.sep, '_')}.{rep}")
        os.makedirs(rundir, exist_ok=True)
        open(os.path.join(rundir, "timer.flag"), "w").close()  # NPB prints its timers
        cmd = launch_command(a, flavor, np, net, prog, nodes_for(np))
        p, settings = split_pass(p)
        if p != "baseline":
            mode = "optimize" if p in ("optimize-order", "optimize-nodeoff", "optimize-nodeon") else p
            cmd += [tnbc, "exec", "--mode", mode, "--output-dir", os.path.join(rundir, "tnbc")]
            if p == "optimize-order":
                cmd += ["--set", "profile_blocking=off"]
            if p in ("optimize-nodeoff", "optimize-nodeon"):
                cmd += ["--set", "node_priorities=" + p[len("optimize-node"):]]
            # Every pass's cost model on the calibrated machine (calibration.py).
            calibrated = calibration.machine_args(calibrations, np)
            cmd += calibrated
            if mode == "optimize" and (bench, cls, np) in profiles:
                cmd += ["--profile", profiles[(bench, cls, np)]]
                # Without a calibrated machine, the one the trace run's cost model
                # measured (what `tnbc merge` judged the sites with): optimize decides
                # as merge printed.
                machine = os.path.join(os.path.dirname(profiles[(bench, cls, np)]), "tnbc",
                                       "tnbc-machine.json")
                if not calibrated and os.path.exists(machine) and not os.environ.get("TNBC_MACHINE"):
                    cmd += ["--set", f"machine={machine}"]
            cmd += [x for k, v in settings for x in ("--set", f"{k}={v}")]  # the pass's own settings last: they win
            cmd += ["--"]
        cmd = emulated(cmd + prog, np)
        if a.settle > 0:
            time.sleep(a.settle)
        log(f"[{progress['done']}/{progress['total']}] {bench}.{cls} np={np} {label} repetition {rep} "
            f"({net_for(np)}, {a.rate}{', ranks yield' if yields(np) else ''})")
        env = dict(os.environ)
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        usual = hostload.usual_steal_share(steal_shares)

        def run_once():
            t0 = time.time()
            before = load.sample()
            output, code = run_bounded(cmd, rundir, env, a.timeout, load.preexec)
            return output, code, load.between(before, load.sample()), t0, time.time() - t0

        def again(r):
            log(f"  the hypervisor took {r[2]['steal_s']:.2f} s of the machine's CPU during the run (steal, more than "
                f"{a.steal_limit:g}% of {MACHINE_CPUS} CPUs x {r[4]:.1f} s"
                + (f" and {hostload.STEAL_OUTLIER:g}x the usual {100 * usual:.1f}%" if usual > 0 else "") + "): measured again")
            shutil.rmtree(os.path.join(rundir, "tnbc"), ignore_errors=True)  # the next run writes its own

        (output, code, host, t0, wall), repeated = hostload.run_until_undisturbed(
            run_once, lambda r: hostload.stolen(r[2], r[4], MACHINE_CPUS, a.steal_limit, usual), a.steal_retries, again)
        steal_shares.append(hostload.steal_share(host, wall, MACHINE_CPUS))
        with open(os.path.join(rundir, "output.txt"), "w") as f:
            f.write(output)
        res = parse(output)
        profile = None
        if p == "trace" and code == 0:
            # Merge the ranks' traces into a profile (the optimized pass's input).
            profile = os.path.join(rundir, "app.profile")
            m = subprocess.run([tnbc, "merge", os.path.join(rundir, "tnbc"), "-o", profile],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            with open(os.path.join(rundir, "merge.txt"), "w") as f:
                f.write(m.stdout)
            if m.returncode != 0:
                log(f"  !!! tnbc merge failed: {m.stdout.strip()[-500:]}")
                profile = None
            else:
                profiles[(bench, cls, np)] = profile
        summarized = p not in ("baseline", "off")  # runs that leave tnbc summaries
        where = placement(os.path.join(rundir, "tnbc")) if summarized else None
        # Emulated nodes, or the real hosts the ranks ran on (unknown for baseline).
        nodes = {"loopback": 1, "none": len(where) if where else None}.get(net, nodes_for(np))
        run = {"benchmark": bench, "kind": kind, "class": cls, "np": np, "net": net_for(np), "rate": a.rate,
               **({"mpi_yields": True} if yields(np) else {}), **({"burst": a.burst} if a.burst else {}),
               "launcher": a.launcher, "command": cmd, "nodes": nodes, "placement": where, "pass": label,
               "repeat": rep, "time": res["time"], "time_fine": res["time_fine"],
               "verified": res["verified"] and code == 0,
               "exit": code, "comm_timers": res["timers"], "net_stats": net_stats(output),
               "wall": wall, "started": t0, "host": host, "stolen_runs": [r[2]["steal_s"] for r in repeated],
               "output": os.path.join(rundir, "output.txt"),
               "tnbc_report": os.path.join(rundir, "tnbc") if summarized else None,
               "tnbc_calls": tnbc_calls(os.path.join(rundir, "tnbc")) if summarized else None,
               "profile": profile}
        runs.append(run)
        if not run["verified"]:
            failures.append(run)
            log(f"  !!! {bench}.{cls} np={np} {label}: VERIFICATION FAILED or missing (exit {code}); "
                f"see {run['output']}")
        else:
            log(f"  verified, time {res['time']} s, comm {res['timers'].get('comm')}")
        if run["net_stats"]:
            log("  network: " + ", ".join(f"{k} {v}" for k, v in run["net_stats"].items()))
        # `host` in summary.json has the figures of every run; the log names the runs that shared the machine.
        if hostload.shared(host, wall, MACHINE_CPUS):
            log(f"  machine: {host['other_cpu_s']:.2f} CPU s outside this run during it, "
                f"{100 * host['other_cpu_s'] / (wall * MACHINE_CPUS):.0f} % of the machine's (steal {host['steal_s']:.2f} s)")
        if run["tnbc_calls"]:
            log(f"  tnbc (all ranks): {calls_line(run['tnbc_calls'])}")
        if summarized and code == 0:
            found = sum(len(h["ranks"]) for h in where) if where else 0
            if found != np:
                log(f"  !!! {found} of {np} ranks left a tnbc summary in {os.path.join(rundir, 'tnbc')}: "
                    f"is {out} on a file system every node sees, and did the ranks form one MPI job "
                    f"(srun's --mpi)?")

    # Repetitions: --repeat of every cell, then with --max-repeat more of the cells whose verdicts
    # are still undecided, up to the next count of the look plan (speedups.py), until none is left.
    cells = [(bench, cls, prog, np) for (bench, cls), prog in sorted(progs.items()) for np in nps]
    looks, look_confidence = speedups.look_plan(a.repeat, a.max_repeat or a.repeat, a.confidence)
    judged = judged_passes(labelled, a.trace_once)
    ran, stopped, pending = {}, {}, list(cells)
    for i, look in enumerate(looks):
        progress["total"] += sum(len(passes_of(rep)) for bench, cls, _, np in pending
                                 for rep in range(ran.get((bench, cls, np), 0), look))
        for bench, cls, prog, np in pending:
            for rep in range(ran.get((bench, cls, np), 0), look):
                for label, p in passes_of(rep):  # passes interleaved within one repetition
                    run_one(bench, cls, prog, np, label, p, rep)
            ran[(bench, cls, np)] = look
        still = []
        for bench, cls, prog, np in pending:
            verdicts = [s["verdict"] for s in speedups.cell_speedups(runs, (bench, cls, np), judged, look_confidence,
                                                                     a.speedup_floor)]
            undecided = verdicts.count(speedups.UNDECIDED)
            if a.max_repeat is None:
                stopped[(bench, cls, np)] = f"--repeat {a.repeat} (fixed)"
            elif not undecided:
                stopped[(bench, cls, np)] = f"every verdict decided at look {i + 1} of {len(looks)}"
            elif i == len(looks) - 1:
                stopped[(bench, cls, np)] = f"--max-repeat {a.max_repeat} reached, {undecided} verdict(s) undecided"
            else:
                still.append((bench, cls, prog, np))
        if still:
            log(f"look {i + 1} of {len(looks)} after {look} repetitions: {len(still)} cell(s) undecided, "
                f"on to {looks[i + 1]}")
        pending = still
        if not pending:
            break
    predictions = predict.predict_runs(a, tnbc, out, runs, profiles, lambda np: -(-np // nodes_for(np)))
    comparisons = overlap_reports(tnbc, out, runs, profiles, predict.report_args(predictions))
    # Per cell and pass its paired speedups against the baseline with their interval; a verdict for
    # the judged passes (a --trace-once trace pass runs once: its ratio, no verdict).
    paired = {}
    for bench, cls, _, np in cells:
        for s in speedups.cell_speedups(runs, (bench, cls, np), [label for label, _ in labelled if label != "baseline"],
                                        look_confidence, a.speedup_floor):
            if s["pass"] not in judged:
                s["verdict"] = None
            # The repetitions in which the baseline's or the pass's run shared the machine (hostload.py):
            # kept in the figures (dropping them could favour a pass), named so that a reader can judge.
            s["disturbed"] = sorted({r["repeat"] for r in runs if (r["benchmark"], r["class"], r["np"]) == (bench, cls, np)
                                     and r["pass"] in ("baseline", s["pass"])
                                     and hostload.shared(r.get("host"), r["wall"], MACHINE_CPUS)})
            paired[(bench, cls, np, s["pass"])] = s
    against_default = setting_comparisons(runs, [(b, c, n) for b, c, _, n in cells], labelled, look_confidence,
                                          a.speedup_floor)
    # Mode optimize's passes: the model's predicted saving against the measured one (issue 16's claim).
    optimizing = [label for label, p in labelled if split_pass(p)[0].startswith("optimize")]
    against_model = [x for b, c, _, n in cells for x in speedups.predicted_against_measured(runs, (b, c, n), optimizing)]
    repetitions = {"repeat": a.repeat, "max_repeat": a.max_repeat, "order": a.order, "settle_s": a.settle,
                   "steal_retries": a.steal_retries, "steal_limit_pct": a.steal_limit,
                   "free_page_reporting_order": reporting,
                   "confidence": a.confidence, "speedup_floor": a.speedup_floor, "looks": looks,
                   "look_confidence": look_confidence,
                   "cells": [{"benchmark": b, "class": c, "np": n, "ran": ran.get((b, c, n), 0),
                              "stopped": stopped.get((b, c, n))} for b, c, _, n in cells]}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"format": "tnbc-harness-summary", "version": 1, "runs": runs, "comparisons": comparisons,
                   "speedups": list(paired.values()), "settings_against_default": against_default,
                   "predicted_against_measured": against_model,
                   "repetitions": repetitions,
                   "machines": dict(calibrations.files) if calibrations else {}}, f, indent=1)

    # Comparison: medians per (benchmark, class, np, pass), speedup and hidden share vs baseline.
    def median(xs):
        return speedups.median([x for x in xs if x is not None])  # an even count: the mean of the middle two

    print()
    pw = max([14] + [len(label) for label, _ in labelled])  # the pass column: its longest label
    print(f"{'benchmark':10} {'class':5} {'np':>3} {'net':8} {'pass':{pw}} {'time s':>9} {'speedup':>8} "
          f"{'comm s':>8} {'in-call cut':>11} {'hidden':>7} {'ideal':>7}")
    for (bench, cls), _ in sorted(progs.items()):
        for np in nps:
            group = [r for r in runs if r["benchmark"] == bench and r["class"] == cls and r["np"] == np]
            base_t = median([r["time"] for r in group if r["pass"] == "baseline"])
            base_c = median([r["comm_timers"].get("comm") for r in group if r["pass"] == "baseline"])
            for p, _ in labelled:
                sel = [r for r in group if r["pass"] == p]
                t = median([r["time"] for r in sel])
                c = median([r["comm_timers"].get("comm") for r in sel])
                ok = all(r["verified"] for r in sel)
                ratio = (paired.get((bench, cls, np, p)) or {}).get("median")
                speed = "1.00x" if p == "baseline" and base_t else f"{ratio:.2f}x" if ratio else "-"
                cut = f"{100 * (1 - c / base_c):.0f}%" if base_c and c is not None and p != "baseline" else "-"
                hidden = share_text(median([(r.get("report") or {}).get("hidden_share") for r in sel]))
                ideal = share_text(median([(r.get("report") or {}).get("ideal_share") for r in sel]))
                print(f"{bench:10} {cls:5} {np:>3} {net_for(np):8} {p:{pw}} {t if t is not None else float('nan'):9.3f} "
                      f"{speed:>8} {c if c is not None else float('nan'):8.3f} {cut:>11} {hidden:>7} {ideal:>7}"
                      f"{'' if ok else '   VERIFICATION FAILED'}")
    print_speedups(paired, repetitions, net_for)
    print_against_model(against_model, net_for)
    print_setting_comparisons(against_default, net_for)
    again = [r for r in runs if r.get("stolen_runs")]
    if again:
        still = [r for r in again if hostload.stolen(r["host"], r["wall"], MACHINE_CPUS, a.steal_limit,
                                                     hostload.usual_steal_share(steal_shares))]
        dropped = sum(len(r["stolen_runs"]) for r in again)
        print(f"steal: {len(again)} run{'s' if len(again) != 1 else ''} measured again because the hypervisor took the "
              f"machine's CPU during {'them' if len(again) != 1 else 'it'} ({dropped} run{'s' if dropped != 1 else ''} "
              f"discarded; summary.json runs' stolen_runs)"
              + (f"; {len(still)} kept with steal still above {a.steal_limit:g}% after {a.steal_retries} repeats"
                 if still else ""))
    predict.print_tables(predictions, runs, median)
    print_site_decisions(runs)
    print_held_back(runs)
    # Where the ranks ran (tnbc's summaries; baseline runs carry no tnbc and are not recorded):
    # per (benchmark, class, np) its placement, per pass when the passes differ.
    print()
    for (bench, cls), _ in sorted(progs.items()):
        for np in nps:
            lines = {}
            for r in runs:
                if (r["benchmark"], r["class"], r["np"]) == (bench, cls, np) and r.get("placement"):
                    lines.setdefault(placement_line(r["placement"]), []).append(r["pass"])
            for text, ps in lines.items():
                which = "" if len(lines) == 1 else f" ({', '.join(sorted(set(ps)))})"
                print(f"placement, {bench}.{cls} np={np}{which}: {text}")
    # What tnbc found about the nodes' CPUs (runtime/cpu_share.hh): why little may be hidden.
    said = sorted({r["tnbc_calls"]["cpu_contention"] for r in runs
                   if r.get("tnbc_calls") and r["tnbc_calls"].get("cpu_contention")})
    for text in said:
        print(f"\nCPUs: {text} (docs/limitations.md)")
    for key in calibrations.failed() if calibrations else []:
        print(f"\n!!! machine {key}: every tnbc calibrate failed ({os.path.join(out, 'machines')}): the tnbc passes' "
              "cost model ran on the start-up probe, not on a calibrated machine")
    # The overlap reports: one comparison page per benchmark, and each run's report.
    if comparisons or any(r.get("report") for r in runs):
        print("\noverlap reports (tnbc report; hidden and ideal above are shares of each pass's collective time, "
              "docs/reports.md):")
        for c in comparisons:
            print(f"  {c['benchmark']}.{c['class']} np={c['np']}: comparison of {', '.join(c['passes'])}: {c['html']}")
            for r in runs:
                if (r["benchmark"], r["class"], r["np"]) == (c["benchmark"], c["class"], c["np"]) and r.get("report"):
                    print(f"    {r['pass']} (repetition {r['repeat']}): {r['report']['html']}  (text: {r['report']['text']})")
    print(f"\nsummary: {os.path.join(out, 'summary.json')}; per-run output and tnbc summaries under {out}")
    print("comm s = time inside the collective calls; in-call cut = 1 - comm(pass) / comm(baseline): "
          "how much of it the calls no longer take (what the program then waits for at its first touch "
          "of the data is in 'time s', not here; calls that optimize completes in the call for lack of "
          "overlap to gain spend all of it inside, as baseline's do)")
    written = [r["profile"] for r in runs if r.get("profile")]
    if written:
        print("trace profiles (tnbc merge): " + ", ".join(written))
        print("the trace pass runs every call blocking and guards its pages to see the first reads: slower than "
              "the plain program by a cost per guarded page, paid once (each trace run's merge.txt: what the "
              "pages' first accesses took; docs/trace.md, \"What the trace pass costs\")")
    if failures:
        print(f"\nharness: {len(failures)} run(s) FAILED verification", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
