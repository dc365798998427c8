"""Paired speedups of the harness's passes, their confidence interval and verdict (docs/harness.md).

Each repetition runs every pass of a (benchmark, class, np) once, interleaved, so the ratio
baseline time / pass time of one repetition compares runs made seconds apart under the same
conditions; the repetitions' ratios are the sample. Their median gets a distribution-free
confidence interval from order statistics (the sign test): for n ratios sorted x(1) <= .. <= x(n),
P(x(k) <= true median <= x(n+1-k)) = 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), whatever the
ratios' distribution (continuous, independent repetitions). The interval used is the narrowest of
these whose coverage is at least the confidence asked for; its exact coverage is reported.

The verdict against a floor (--speedup-floor, 0.99): "not slower" when the interval lies at or
above it, "slower" when it lies below, "undecided" otherwise; each decided verdict is wrong with
probability at most (1 - coverage) / 2.

Adaptive repetitions (--max-repeat): the verdicts are looked at after a plan of repetition counts
fixed before any run (`look_plan`: the first, then x1.5 each, the maximum last), each look's
interval at confidence 1 - (1 - confidence) / looks (Bonferroni), so that the interval at
whichever look a cell stops still covers with the confidence asked for.
"""
import functools
import math
from fractions import Fraction

# The verdicts (summary.json `verdict`, the printed table).
NOT_SLOWER = "not slower"
SLOWER = "slower"
UNDECIDED = "undecided"
# How much the repetition count grows from one look at the verdicts to the next (--max-repeat):
# fewer looks (a larger factor) keep each look's interval narrower, more looks stop sooner.
LOOK_GROWTH = 1.5


def sign_tail(k, n):
    """P(B <= k) for B ~ Binomial(n, 1/2), exactly (a Fraction)."""
    if k < 0:
        return Fraction(0)
    return Fraction(sum(math.comb(n, i) for i in range(min(k, n) + 1)), 2 ** n)


@functools.lru_cache(maxsize=None)
def order_rank(n, confidence):
    """(k, coverage): the largest k with [x(k), x(n+1-k)] covering the median with probability
    1 - 2 P(B <= k-1) >= confidence, and that coverage (a float); (None, best) when even
    [x(1), x(n)] falls short (n too small for the confidence), best being its coverage."""
    if n < 1:
        return None, 0.0
    k = None
    for j in range(1, (n + 1) // 2 + 1):
        if 1 - 2 * sign_tail(j - 1, n) >= Fraction(confidence).limit_denominator(10 ** 9):
            k = j
        else:
            break
    if k is None:
        return None, float(1 - 2 * sign_tail(0, n))
    return k, float(1 - 2 * sign_tail(k - 1, n))


def min_repetitions(confidence):
    """The fewest ratios that give any interval at this confidence (2 / 2^n <= 1 - confidence)."""
    n = 1
    while order_rank(n, confidence)[0] is None:
        n += 1
    return n


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def median_ci(xs, confidence):
    """The median of xs with its distribution-free interval: {"n", "median", "low", "high",
    "coverage", "confidence"}; low/high None when n is too small for the confidence."""
    xs = sorted(xs)
    n = len(xs)
    k, coverage = order_rank(n, confidence)
    return {"n": n, "median": median(xs), "low": xs[k - 1] if k else None, "high": xs[n - k] if k else None,
            "coverage": coverage, "confidence": confidence}


def verdict(ci, floor):
    """NOT_SLOWER when the interval lies at or above the floor, SLOWER when below it, else UNDECIDED."""
    if ci["low"] is None:
        return UNDECIDED
    if ci["low"] >= floor:
        return NOT_SLOWER
    if ci["high"] < floor:
        return SLOWER
    return UNDECIDED


def paired_ratios(base_times, pass_times):
    """Per repetition, base / pass, for the repetitions where both have a time (dicts repetition -> time or
    None: a failed run's repetition is left out); in repetition order."""
    return [base_times[r] / pass_times[r] for r in sorted(pass_times)
            if r in base_times and base_times[r] and pass_times[r]]


def look_plan(first, last, confidence):
    """(repetition counts at which the verdicts are looked at, each look's confidence). Counts from
    `first`, x LOOK_GROWTH each, `last` last; the confidence split over the looks (Bonferroni), and
    looks with too few repetitions for that confidence dropped (they cannot decide, so they spend none
    of it). first == last: one look at the confidence asked for."""
    if first < 1 or last < first:
        raise ValueError(f"look_plan: need 1 <= first <= last, got {first}, {last}")
    counts = [first]
    while counts[-1] < last:
        counts.append(min(last, max(counts[-1] + 1, math.ceil(counts[-1] * LOOK_GROWTH))))
    while True:
        level = 1 - (1 - confidence) / len(counts)
        kept = [n for n in counts if n >= min_repetitions(level)]
        if not kept:
            return [last], confidence  # nothing can decide: one look at the end, at the level asked for
        if kept == counts:
            return counts, level
        counts = kept


def cell_clock(runs, cell):
    """The run record's field a cell's speedups use: `time_fine` (NPB's timer 1 to 0.1 ms, the
    harness's parse) where every verified run of the cell has it, else `time` ("Time in seconds":
    10 ms steps for NPB, finer for the proxies), so that all ratios of a cell come from one clock."""
    mine = [r for r in runs if (r["benchmark"], r["class"], r["np"]) == tuple(cell) and r["verified"]]
    return "time_fine" if mine and all(r.get("time_fine") for r in mine) else "time"


def cell_runs(runs, cell, label):
    """One pass label's verified runs in one (benchmark, class, np) cell."""
    return [r for r in runs
            if (r["benchmark"], r["class"], r["np"]) == tuple(cell) and r["pass"] == label and r["verified"]]


def cell_times(runs, cell, label, clock):
    """{repeat: time on `clock`} of one pass label's verified runs in one (benchmark, class, np) cell."""
    return {r["repeat"]: r[clock] for r in cell_runs(runs, cell, label)}


def cell_speedups(runs, cell, labels, confidence, floor, reference="baseline"):
    """Per pass label of `labels`, its paired speedups against the reference pass in one (benchmark,
    class, np) `cell`: {"benchmark", "class", "np", "pass", "clock", "ratios" (by repetition), "n",
    "median", "low", "high", "coverage", "confidence", "floor", "verdict"}. Runs: the harness's
    records (pass, repeat, time, time_fine, verified); an unverified run's repetition is left out of
    its pass's ratios; `clock` is the field the times came from (cell_clock)."""
    clock = cell_clock(runs, cell)
    base = cell_times(runs, cell, reference, clock)
    out = []
    for label in labels:
        ratios = paired_ratios(base, cell_times(runs, cell, label, clock))
        ci = median_ci(ratios, confidence)
        out.append({"benchmark": cell[0], "class": cell[1], "np": cell[2], "pass": label, "clock": clock,
                    "ratios": ratios, **ci, "floor": floor, "verdict": verdict(ci, floor)})
    return out


# The model's claim that the harness checks (issue 16's "Done when"): where it predicts mode optimize
# saves more than this share of the plain program's time, at least half of the saving is measured.
CLAIM_SHARE = 0.05
HALF_MEASURED = "at least half measured"
LESS_THAN_HALF = "less than half measured"
NO_CLAIM = "no claim"


def predicted_against_measured(runs, cell, labels, reference="baseline"):
    """Per pass label of `labels` (mode optimize's), in one (benchmark, class, np) `cell`: the cost
    model's predicted saving over the run (`predicted_s`: the median over the pass's repetitions of
    the record's `predicted_saving_s`, from tnbc's summaries) against the measured one (`measured_s`:
    the median over the repetitions of the reference's time less the pass's, paired by repetition,
    on the cell's clock), with `share` (the prediction over the reference's median time) and the
    verdict: where the share is above CLAIM_SHARE, whether at least half of the prediction was
    measured; else no claim. `trial_priced_s`: the median of the records' `trial_priced_saving_s`
    (the model's price of the early returns at the sites left to the trial; no verdict), None where
    none has one. Labels without a prediction or a paired run are left out."""
    clock = cell_clock(runs, cell)
    base = {k: t for k, t in cell_times(runs, cell, reference, clock).items() if t is not None}
    out = []
    for label in labels:
        predicted = [x for x in ((r.get("tnbc_calls") or {}).get("predicted_saving_s")
                                 for r in cell_runs(runs, cell, label)) if x is not None]
        measured = [base[k] - t for k, t in cell_times(runs, cell, label, clock).items() if k in base and t is not None]
        if not predicted or not measured:
            continue
        trial = [x for x in ((r.get("tnbc_calls") or {}).get("trial_priced_saving_s")
                             for r in cell_runs(runs, cell, label)) if x is not None]
        p, m, b = median(predicted), median(measured), median(list(base.values()))
        share = p / b if b > 0 else 0.0
        what = NO_CLAIM if share <= CLAIM_SHARE else HALF_MEASURED if m >= p / 2 else LESS_THAN_HALF
        out.append({"benchmark": cell[0], "class": cell[1], "np": cell[2], "pass": label, "clock": clock,
                    "predicted_s": p, "measured_s": m, "share": share, "n": len(measured), "verdict": what,
                    "trial_priced_s": median(trial)})
    return out
