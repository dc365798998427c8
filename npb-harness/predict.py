"""`--predict` and `--what-if-np N` of the harness (docs/predict.md): `tnbc predict --profile`
on each benchmark's trace profile, with the trace run's machine (tnbc-machine.json), next to the
measured passes, and a what-if table and picture (SVG) for other process counts: the picture is
`tnbc report`'s section "predicted at other process counts" (tools/predict_picture.cc, the one
source of it), put in each benchmark's comparison page by passing it the predictions
(`--predicted`, report_args below).

The rest of the program is not in the profile, so it is taken as measured; two predictions of a
pass's time (docs/predict.md, "Checked against runs here"):
- simulated ("alone"): the measured baseline time without its measured collective time (the
  baseline's comm timer), plus the pass's simulated collective sections (tnbc's call + CURC + CRC,
  x calls) without the program's own CURC + CRC work (in the measured rest already): every error
  of the simulation shows, in the blocking variant as in tnbc's;
- anchored: the measured baseline time - the predicted saving of the pass's collective sections
  (blocking call + CURC + CRC against tnbc's, x calls): an error the simulation makes alike in both
  variants cancels, so it flatters.
Kept apart from harness.py (which only calls `add_arguments`, `predict_runs`, `report_args` and `print_tables`).
"""
import json
import os
import subprocess
import tempfile

# The harness's tnbc passes and the simulated variant each is predicted by (optimize-nodeon: node-level
# priorities forced on; the simulation's optimize has none, as optimize-nodeoff).
VARIANTS = {"nbc": "nbc", "optimize": "optimize", "optimize-order": "optimize", "optimize-nodeoff": "optimize",
            "optimize-nodeon": "optimize+node"}
# Calls of each collective kind before the benchmark's timed part (`tnbc predict --skip-first`):
# NPB FT's initial FFT (one transpose) and IS's warm-up ranking (one Alltoall, one Alltoallv);
# the proxies' untimed iteration 0 (ft-proxy: two transposes; is-proxy: one of each).
UNTIMED_CALLS = {("npb", "ft"): 1, ("npb", "is"): 1, ("proxy", "ft"): 2, ("proxy", "is"): 1}


def untimed_calls(runs, bench):
    """--skip-first for a benchmark of this harness run (0 when unknown)."""
    kinds = {r.get("kind") for r in runs if r.get("benchmark") == bench}
    return UNTIMED_CALLS.get((kinds.pop() if len(kinds) == 1 else None, bench), 0)
CURVES = ("nbc", "optimize", "optimize+node")


def add_arguments(ap):
    ap.add_argument("--predict", action="store_true",
                    help="next to each measured pass, the time `tnbc predict` gives from the trace profile "
                         "(docs/predict.md)")
    ap.add_argument("--what-if-np", default=None, metavar="N[,N...]",
                    help="also predict each benchmark at these process counts (strong scaling): a table, and a "
                         "picture in its comparison page (OUT/compare-BENCH.CLASS.npN.html)")


def _predict(tnbc, profile, machine, np, per_node, out_json, scaling="strong", skip_first=0):
    cmd = [tnbc, "predict", "--profile", profile, "--machine", machine, "--np", str(np), "--scaling", scaling,
           "--json", out_json, "--skip-first", str(skip_first)]
    if per_node:
        cmd += ["--ranks-per-node", str(per_node), "--traced-ranks-per-node", str(per_node)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(out_json[:-len(".json")] + ".txt", "w") as f:
        f.write(r.stdout)
    if r.returncode != 0:
        return None, r.stdout.strip().splitlines()[-1] if r.stdout.strip() else f"exit {r.returncode}"
    with open(out_json) as f:
        return json.load(f), None


def predict_runs(a, tnbc, out, runs, profiles, per_node_for):
    """Predictions per (benchmark, class, np) that has a trace profile: {key: {"np": json, "what_if": {N: json}}}."""
    if not (a.predict or a.what_if_np):
        return {}
    what_if = [int(n) for n in (a.what_if_np or "").split(",") if n.strip()]
    results = {}
    for (bench, cls, np), profile in sorted(profiles.items()):
        machine = os.path.join(os.path.dirname(profile), "tnbc", "tnbc-machine.json")
        if not os.path.exists(machine):
            results[(bench, cls, np)] = {"error": f"no machine file next to {profile}"}
            continue
        entry = {"what_if": {}, "what_if_files": []}
        per_node = per_node_for(np)
        skip = untimed_calls(runs, bench)
        got, err = _predict(tnbc, profile, machine, np, per_node,
                            os.path.join(out, f"predict-{bench}.{cls}.np{np}.json"), skip_first=skip)
        entry["np"], entry["error"] = got, err
        for n in what_if:
            path = os.path.join(out, f"predict-{bench}.{cls}.np{np}-at{n}.json")
            got, err = _predict(tnbc, profile, machine, n, per_node, path, skip_first=skip)
            entry["what_if"][n] = got if got else {"error": err}
            if got:
                entry["what_if_files"].append(path)
        results[(bench, cls, np)] = entry
    return results


def report_args(results):
    """{(benchmark, class, np): the `tnbc report` options that put its what-if picture and table in its
    comparison page} (`--predicted` with the `tnbc predict --json` files of --what-if-np)."""
    return {key: ["--predicted", ",".join(e["what_if_files"])] for key, e in results.items()
            if e.get("what_if_files")}


def predicted_time(base_time, pred, pass_name):
    """Anchored: the measured baseline time minus the predicted saving of the pass (None if unknown)."""
    v = VARIANTS.get(pass_name)
    if base_time is None or not pred or not v:
        return None
    prog = pred["program"]
    return base_time - (prog["blocking_total_s"] - prog[v]["total_s"])


def predicted_alone(base_time, base_comm, pred, pass_name):
    """Simulated: the measured baseline without its measured collective time, plus the pass's simulated
    collective sections without the program's CURC + CRC (None if unknown). pass_name "baseline":
    the simulated blocking calls."""
    v = "blocking" if pass_name == "baseline" else VARIANTS.get(pass_name)
    if base_time is None or base_comm is None or not pred or not v:
        return None
    prog = pred["program"]
    own_work = prog["blocking_total_s"] - prog["blocking_s"]  # CURC + CRC, x calls
    sections = prog["blocking_total_s"] if v == "blocking" else prog[v]["total_s"]
    return base_time - base_comm + sections - own_work


def _err(pred, meas):
    return (pred - meas) / meas if pred is not None and meas else None


def _pct(err, digits=0):
    return "-" if err is None else f"{100 * err:+.{digits}f}%"


def _summary(errors, what):
    """One line: median and worst of |error| over the (benchmark, np, pass) medians."""
    errors = sorted(errors)
    if errors:
        print(f"{what}: median {100 * _median(errors):.1f}%, worst {100 * errors[-1]:.1f}% over {len(errors)} "
              f"(benchmark, np, pass) medians")


def print_tables(results, runs, median):
    if not results:
        return
    print("\npredicted (tnbc predict from the trace profile; docs/predict.md) against measured, time per pass"
          " (simulated: the baseline's measured rest + the simulated collective sections; anchored: the measured"
          " baseline - the simulated saving):")
    print(f"{'benchmark':10} {'class':5} {'np':>3} {'pass':14} {'measured s':>10} {'simulated s':>11} {'error':>7} "
          f"{'anchored s':>10} {'error':>7}")
    alone, anchored = [], []
    for (bench, cls, np), e in sorted(results.items()):
        if e.get("error") and not e.get("np"):
            print(f"{bench:10} {cls:5} {np:>3} prediction failed: {e['error']}")
            continue
        group = [r for r in runs if (r["benchmark"], r["class"], r["np"]) == (bench, cls, np)]
        base = median([r["time"] for r in group if r["pass"] == "baseline"])
        base_comm = median([(r.get("comm_timers") or {}).get("comm") for r in group if r["pass"] == "baseline"])
        for p in sorted({r["pass"] for r in group} & set(VARIANTS)):
            meas = median([r["time"] for r in group if r["pass"] == p])
            sim, anc = predicted_alone(base, base_comm, e["np"], p), predicted_time(base, e["np"], p)
            es, ea = _err(sim, meas), _err(anc, meas)
            if es is not None:
                alone.append(abs(es))
            if ea is not None:
                anchored.append(abs(ea))
            nan = float("nan")
            print(f"{bench:10} {cls:5} {np:>3} {p:14} {meas if meas is not None else nan:10.3f} "
                  f"{sim if sim is not None else nan:11.3f} {_pct(es):>7} {anc if anc is not None else nan:10.3f} "
                  f"{_pct(ea):>7}")
    _summary(alone, "relative error, simulated (the goal's measure)")
    _summary(anchored, "relative error, anchored on the measured baseline (flatters: only the saving is simulated; "
                       "`python3 npb-harness/predict.py OUT` also judges the simulated collective time alone)")
    for (bench, cls, np), e in sorted(results.items()):
        if not e.get("what_if"):
            continue
        print(f"\nwhat if {bench}.{cls} (traced at np {np}) ran on N processes (strong scaling): hidden share / speedup")
        print(f"{'N':>6} {'Tcomm s':>9} " + " ".join(f"{c:>22}" for c in CURVES))
        for n, j in sorted(e["what_if"].items()):
            if "program" not in j:
                print(f"{n:>6} {j.get('error')}")
                continue
            p = j["program"]
            cells = " ".join(f"{100 * p[c]['hidden_share']:>10.0f}% {p[c]['speedup']:>9.3f}x" for c in CURVES)
            print(f"{n:>6} {p['blocking_s']:>9.3f} {cells}")


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def block_sources(results):
    """[(key, how)] for the runs with uneven-size exchanges (Alltoallv, Allgatherv): whether `tnbc
    predict` simulated the profile's blocks per peer (sub_bytes), found them even, or fell back to
    the ranks' mean block (a profile merged before sub_bytes existed)."""
    out = []
    for key, e in sorted(results.items()):
        got = sorted({s.get("blocks", "mean") for x in e["np"] for s in x["sites"]
                      if s["kind"] in ("alltoallv", "allgatherv")})
        if got:
            out.append((key, "/".join({"per_peer": "per peer", "even": "even (per peer)",
                                       "mean": "the ranks' mean block"}.get(g, g) for g in got)))
    return out


def validate(argv=None):
    """Predicted against measured for a finished harness run directory (its summary.json and trace
    profiles): `python3 npb-harness/predict.py OUT [--machine FILE] [--tnbc PATH] [--platform FILE]`.
    Every trace profile of a (benchmark, class, np) is predicted; the median prediction is used."""
    import argparse
    ap = argparse.ArgumentParser(description=validate.__doc__)
    ap.add_argument("out")
    ap.add_argument("--tnbc", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "tools",
                                                   "tnbc"))
    ap.add_argument("--machine", default=None, help="default: the trace run's tnbc/tnbc-machine.json, else any run's")
    ap.add_argument("--platform", default=None)
    ap.add_argument("--ranks-per-node", type=int, default=0)
    ap.add_argument("--skip-first", type=int, default=None,
                    help="tnbc predict --skip-first (default: the benchmark's untimed calls, UNTIMED_CALLS)")
    a = ap.parse_args(argv)
    with open(os.path.join(a.out, "summary.json")) as f:
        runs = json.load(f)["runs"]
    groups = {}
    for r in runs:
        groups.setdefault((r["benchmark"], r["class"], r["np"]), []).append(r)
    results = {}
    for key, group in sorted(groups.items()):
        bench, cls, np = key
        nodes = max([r.get("nodes") or 1 for r in group])
        per_node = a.ranks_per_node or -(-np // nodes)
        preds = []
        for r in group:
            if r["pass"] != "trace" or not r.get("profile") or not os.path.exists(r["profile"]):
                continue
            machine = a.machine
            if not machine:
                cands = [os.path.join(os.path.dirname(x["output"]), "tnbc", "tnbc-machine.json") for x in group]
                cands = [c for c in cands if os.path.exists(c)]
                machine = cands[0] if cands else None
            if not machine:
                print(f"{bench}.{cls} np={np}: no machine file (give --machine)")
                break
            with tempfile.TemporaryDirectory() as d:
                skip = a.skip_first if a.skip_first is not None else untimed_calls(runs, bench)
                cmd = [a.tnbc, "predict", "--profile", r["profile"], "--machine", machine, "--np", str(np),
                       "--ranks-per-node", str(per_node), "--traced-ranks-per-node", str(per_node),
                       "--skip-first", str(skip), "--any-version", "--json", os.path.join(d, "p.json")]
                if a.platform:
                    cmd += ["--platform", a.platform]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if p.returncode != 0:
                    print(f"{bench}.{cls} np={np}: {p.stderr.strip()}")
                    continue
                with open(os.path.join(d, "p.json")) as f:
                    preds.append(json.load(f))
        if preds:
            results[key] = {"np": preds}
    print(f"{'benchmark':10} {'class':5} {'np':>3} {'nodes':>5} {'pass':10} {'measured s':>10} {'spread':>7} "
          f"{'simulated s':>11} {'error':>7} {'anchored s':>10} {'error':>7}")
    alone, anchored, comm_errors = [], [], []
    for key, e in sorted(results.items()):
        bench, cls, np = key
        group = groups[key]
        base = _median([r["time"] for r in group if r["pass"] == "baseline"])
        comm = _median([r["comm_timers"].get("comm") for r in group if r["pass"] == "baseline"])
        simulated = _median([x["program"]["blocking_s"] for x in e["np"]])
        for p in ["baseline"] + sorted({r["pass"] for r in group} & set(VARIANTS)):
            times = [r["time"] for r in group if r["pass"] == p and r["time"] is not None]
            meas = _median(times)
            sim = _median([predicted_alone(base, comm, x, p) for x in e["np"]])
            anc = None if p == "baseline" else _median([predicted_time(base, x, p) for x in e["np"]])
            es, ea = _err(sim, meas), _err(anc, meas)
            if p == "baseline":
                if comm:
                    comm_errors.append(abs(simulated - comm) / comm)
            else:
                if es is not None:
                    alone.append(abs(es))
                if ea is not None:
                    anchored.append(abs(ea))
            spread = f"{100 * (max(times) - min(times)) / meas:.0f}%" if times and meas else "-"
            nan = float("nan")
            print(f"{bench:10} {cls:5} {np:>3} {max(r.get('nodes') or 1 for r in group):>5} {p:10} "
                  f"{meas if meas is not None else nan:10.3f} {spread:>7} {sim if sim is not None else nan:11.3f} "
                  f"{_pct(es, 1):>7} {anc if anc is not None else nan:10.3f} {_pct(ea, 1):>7}")
            if p == "baseline" and comm:
                print(f"{'':38} comm: measured {comm:.3f} s, simulated {simulated:.3f} s "
                      f"({100 * (simulated - comm) / comm:+.1f}%)")
    blocks = block_sources(results)
    if blocks:
        print("Alltoallv/Allgatherv blocks: " + "; ".join(f"{b}.{c} np {n}: {how}" for (b, c, n), how in blocks))
    _summary(alone, "relative error of the tnbc passes, simulated (the measured rest of the program + the simulated "
                    "collective sections)")
    _summary(anchored, "relative error of the tnbc passes, anchored on the measured baseline (only the predicted "
                       "saving is simulated: flatters)")
    if comm_errors:
        comm_errors.sort()
        print(f"relative error of the simulated blocking collective time against the baseline's measured one: "
              f"median {100 * _median(comm_errors):.1f}%, worst {100 * comm_errors[-1]:.1f}% over "
              f"{len(comm_errors)} (benchmark, np) medians (the simulation alone)")


if __name__ == "__main__":
    validate()
