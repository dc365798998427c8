#!/usr/bin/env python3
"""What an early return really costs, against the cost model's estimate (docs/benchmarks.md,
"The early-return margin, measured"; TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT).

usage: early_return_cost.py [--build-dir build] [--np 2] [--nodes 2] [--rate 1gbit | --net none]
                            [--cases alltoall:1m,bcast:4m] [--iterations 8] [--machine FILE] [--out DIR]
                            [--measured]

Mode optimize returns early at a site when the model's predicted saving exceeds a margin; the
margin covers what the model misses of tnbc's own cost per early-returned call (time in the
call, the progress thread's CPU where it shares the rank's CPU, publication, wake-ups). This
measures that miss over Table 1's five scenarios: `tnbc calibrate` (unless --machine), then per
case tests/bench/table1_<kind> with libtnbc.so preloaded (TNBC_MODE=nbc, TNBC_MIN_BYTES=4096 so
that every call returns early, TNBC_MACHINE the calibrated machine); per scenario the measured
Tcomm, T_CURC and T_CRC go to `tnbc predict MACHINE --program` and the model's total of call +
CURC + CRC after an early return is compared with tnbc's measured one:

    excess = (measured tnbc total - predicted total) / Tcomm

i.e. how much of Tcomm the model's predicted saving overstates the real one (> 0: the model is
optimistic; the margin must cover it for optimize never to lose). The paired excess is the same
miss taken per iteration against that iteration's blocking total (predicted saving - (blocking
total - tnbc total), median over the iterations, / Tcomm): the variants run interleaved, so a
disturbance of a whole iteration cancels; the margin is derived from it. Prints per scenario and the
median and the largest excess, and the model's relative error on the time in the call and on
the total (median and worst), and on the time in the call once more with the launch's own copy
rate in place of the machine file's (the summaries' overhead.in_call_copies: what is left when the
input the model cannot know from another launch is taken out); writes OUT/early_return_cost.json. --measured: predict again
from the Table 1 JSON files already in OUT (after a change to the estimators). A benchmark: run
it under tnbc-quiet, never as a timed test.
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_validation import calibrate, launcher, median, parse_placement, placement_parser, run  # noqa: E402  (one launcher for the model's benchmarks)


def copy_misprice_per_call(out_dir, kind):
    """Per call, how much longer tnbc's own copies took than the machine file priced them at
    (seconds; the summaries' overhead.in_call_copies, the largest over the ranks), None without
    summaries that have it."""
    worst = None
    for path in sorted(glob.glob(os.path.join(out_dir, "tnbc-summary.*.json"))):
        s = json.load(open(path))
        cc = s.get("overhead", {}).get("in_call_copies")
        calls = s.get("collectives", {}).get(kind, {}).get("calls", 0)
        if not cc or not calls:
            continue
        miss = (cc["s"] - cc["priced_s"]) / calls
        worst = miss if worst is None else max(worst, miss)
    return worst


def parse_cases(text):
    cases = []
    for tok in text.split(","):
        kind, _, size = tok.partition(":")
        if kind not in ("alltoall", "bcast") or not size:
            sys.exit(f"early_return_cost: --cases wants KIND:SIZE,... (alltoall or bcast), not '{tok}'")
        cases.append((kind, size))
    return cases


def main():
    ap = placement_parser()
    ap.add_argument("--cases", default="alltoall:1m,bcast:4m")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--machine")
    ap.add_argument("--measured", action="store_true", help="predict again from the Table 1 files in OUT")
    ap.add_argument("--out", default="early-return-cost")
    a = parse_placement(ap)
    os.makedirs(a.out, exist_ok=True)
    tnbc = os.path.join(a.build_dir, "tools", "tnbc")
    lib = os.path.abspath(os.path.join(a.build_dir, "libtnbc.so"))
    machine = os.path.abspath(a.machine or os.path.join(a.out, "machine.json"))
    if not a.machine and not a.measured:
        calibrate(a, tnbc, machine)
    per_node = (a.np + a.nodes - 1) // a.nodes
    rows = []
    for kind, size in parse_cases(a.cases):
        out = os.path.join(a.out, f"table1_{kind}_{size}.json")
        if not a.measured:
            env = ["-x", "LD_PRELOAD=" + lib, "-x", "TNBC_MODE=nbc", "-x", "TNBC_MIN_BYTES=4096",
                   "-x", "TNBC_MACHINE=" + machine, "-x", "TNBC_OUTPUT_DIR=" + os.path.join(a.out, f"tnbc-{kind}-{size}")]
            run(launcher(a, env + [os.path.join(a.build_dir, "tests", "bench", f"table1_{kind}"), "--bytes", size,
                                   "--iterations", str(a.iterations), "--json", out]))
        d = json.load(open(out))
        nbytes = d["parameters"]["bytes"]
        own_copies = copy_misprice_per_call(os.path.join(a.out, f"tnbc-{kind}-{size}"), kind)
        for sc in d["scenarios"]:
            m = sc["measured"]
            var = {v["name"]: v for v in sc["variants"]}
            tnbc_v = var.get("tnbc") or var.get("tnbc-optimize")
            tcomm, curc, crc = m["tcomm_s"], m["t_curc_s"], m["t_crc_s"]
            # Table 1 keeps each part's largest over the ranks. A broadcast's root computes while its
            # kernel still sends what its blocking call left buffered, so its T_CURC is the largest
            # (0.94 ms where the receivers', the slowest total's, took 0.50: 1 MiB at 4 Gbit/s) and
            # the model's blocking total came out above the measured one. The computation the
            # slowest rank's total holds, where less (docs/benchmarks.md, "Session 33").
            curc = max(0.0, min(curc, var["blocking"]["total_s"] - tcomm - crc))
            # Every rank reads the blocks in one order (all but `self`, where each reads its own first):
            # the rank whose block it puts last reads its own after every peer's.
            own_last = ["--own-last"] if kind == "alltoall" and d["parameters"].get("order") != "self" else []
            pred = json.loads(run([tnbc, "predict", machine, "--np", str(a.np), "--per-node", str(per_node), "--sizes",
                                   str(nbytes), "--program", f"{curc * 1e3:.6f},{crc * 1e3:.6f}",
                                   "--tcomm-ms", f"{tcomm * 1e3:.6f}"] + own_last + ["--json"]))
            p = next(r for r in pred["results"] if r["kind"] == kind)
            # The same miss per iteration, against the blocking variant's total of that iteration (the
            # variants run interleaved in every iteration): what disturbs an iteration as a whole
            # (another process, a slow launch's first iterations) cancels out.
            per_it = [b - t for b, t in zip(var["blocking"].get("total_per_iteration_s", []),
                                            tnbc_v.get("total_per_iteration_s", []))]
            paired = median([p["saved_s"] - x for x in per_it]) / tcomm if per_it else None
            rows.append({"kind": kind, "bytes": nbytes, "scenario": sc["id"], "tcomm_s": tcomm, "t_curc_s": curc,
                         "t_crc_s": crc, "blocking_total_s": var["blocking"]["total_s"], "tnbc_total_s": tnbc_v["total_s"],
                         "tnbc_init_s": tnbc_v["init_s"], "predicted_total_s": p["early_total_s"],
                         "predicted_in_call_s": p["in_call_s"], "predicted_saved_s": p["saved_s"],
                         "predicted_in_call_own_copies_s": p["in_call_s"] + own_copies if own_copies is not None else None,
                         "measured_saved_s": var["blocking"]["total_s"] - tnbc_v["total_s"],
                         "excess_of_tcomm": (tnbc_v["total_s"] - p["early_total_s"]) / tcomm,
                         "paired_excess_of_tcomm": paired})
    where = f"np={a.np}, {a.nodes} node(s), " + (f"emulated link {a.rate}" if a.net == "shaped" else "shared memory")
    print(f"\nearly return: measured against the model ({where}; machine {machine}):")
    print(f"  {'kind':9} {'bytes':>9} sc {'Tcomm ms':>9} {'Tinit ms':>9} {'(model)':>8} {'total ms':>9} {'(model)':>8} "
          f"{'saved ms':>9} {'(model)':>8} {'excess':>7} {'paired':>7}")
    for r in rows:
        print(f"  {r['kind']:9} {r['bytes']:>9} {r['scenario']}  {r['tcomm_s'] * 1e3:9.2f} {r['tnbc_init_s'] * 1e3:9.2f} "
              f"{r['predicted_in_call_s'] * 1e3:8.2f} {r['tnbc_total_s'] * 1e3:9.2f} {r['predicted_total_s'] * 1e3:8.2f} "
              f"{r['measured_saved_s'] * 1e3:9.2f} {r['predicted_saved_s'] * 1e3:8.2f} {100 * r['excess_of_tcomm']:+6.0f}% "
              + (f"{100 * r['paired_excess_of_tcomm']:+6.0f}%" if r["paired_excess_of_tcomm"] is not None else "      -"))
    ex = [r["excess_of_tcomm"] for r in rows]
    summary = {"median_excess_of_tcomm": median(ex) if ex else None, "largest_excess_of_tcomm": max(ex) if ex else None}
    # The margin's basis (docs/settings.md, TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT): the largest paired
    # excess among the calls a margin of 0 would let return early (a positive predicted saving).
    pos = [r["paired_excess_of_tcomm"] for r in rows
           if r["predicted_saved_s"] > 0 and r["paired_excess_of_tcomm"] is not None]
    summary["largest_paired_excess_of_gainers"] = max(pos) if pos else None
    # The validation figures: the model's relative error on tnbc's time in the call and on
    # the scenario's total (|predicted / measured - 1|), median and worst over the rows.
    # With the run's own copy rate (the summaries' in_call_copies): what is left of the error on
    # the time in the call once the machine file's price of tnbc's copies is replaced by what this
    # launch's copies took (docs/benchmarks.md, "Session 22": this VM's launches copy at one of two
    # rates ~1.6x apart, which no calibration in another launch can know).
    for what, meas, pred in (("in_call", "tnbc_init_s", "predicted_in_call_s"),
                             ("in_call_own_copies", "tnbc_init_s", "predicted_in_call_own_copies_s"),
                             ("total", "tnbc_total_s", "predicted_total_s")):
        errs = [abs(r[pred] / r[meas] - 1) for r in rows if r[meas] > 0 and r[pred] is not None]
        summary[f"median_error_{what}"] = median(errs) if errs else None
        summary[f"worst_error_{what}"] = max(errs) if errs else None
    if ex:
        print(f"  excess over Tcomm: median {100 * summary['median_excess_of_tcomm']:+.0f}%, "
              f"largest {100 * summary['largest_excess_of_tcomm']:+.0f}%")
        if pos:
            print(f"  paired excess (per iteration against the blocking total) among the {len(pos)} calls with a positive "
                  f"predicted saving: largest {100 * summary['largest_paired_excess_of_gainers']:+.0f}%")
        print(f"  relative error, time in the call: median {100 * summary['median_error_in_call']:.0f}%, "
              f"worst {100 * summary['worst_error_in_call']:.0f}%; total: median {100 * summary['median_error_total']:.0f}%, "
              f"worst {100 * summary['worst_error_total']:.0f}%")
        if summary["median_error_in_call_own_copies"] is not None:
            print(f"  the time in the call with this launch's own copy rate instead of the file's: median "
                  f"{100 * summary['median_error_in_call_own_copies']:.0f}%, "
                  f"worst {100 * summary['worst_error_in_call_own_copies']:.0f}%")
    with open(os.path.join(a.out, "early_return_cost.json"), "w") as f:
        json.dump({"format": "tnbc-early-return-cost", "version": 1, "where": where, "machine": machine, "rows": rows,
                   **summary}, f, indent=1)


if __name__ == "__main__":
    main()
