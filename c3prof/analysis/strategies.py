"""Per-strategy summary: the mean fraction of ideal over scenarios (the paper's 21% / 42% / 72% table).

For each strategy of a group, rows with ``selection``:

- ``default``            the strategy's default variant (the first variant listed for it in the trace),
- ``variant``            every variant on its own (only when the strategy has more than one),
- ``best_per_scenario``  per scenario the variant with the highest point estimate: an *oracle* choice,
                         biased upward (it picks noise in its favour), shown to bound what tuning could reach.

**Inclusion rule** (one rule, applied to the point estimate and to every bootstrap replicate alike):
a scenario enters the mean when its (base) ideal speedup is at least ``min_ideal`` (default 1.05) and
its fraction of ideal is defined. With less to gain, (realized - 1) / (ideal - 1) divides noise by
noise. The point estimate is the unweighted mean over the scenarios that pass on their point values
(the others are listed under ``excluded`` with the reason); in replicate b a drawn scenario enters
when its ideal-speedup replicate b passes, so a scenario near the threshold is sometimes in and
sometimes out, and the interval shows it. Each row lists its scenarios, since strategies run on
different scenario sets are not directly comparable.

Intervals. ``mean_fraction_ci`` is a two-level (hierarchical) percentile bootstrap: resample
scenarios, then for each drawn scenario one bootstrap replicate of its repetitions
(stats.hierarchical_mean_ci): the mean over scenarios like these, so it carries how much the
strategy's benefit differs between scenarios. ``mean_fraction_ci_suite`` holds the scenarios fixed:
the mean over this suite, measurement noise only; with several visits it also holds the replication
interval over the visits (``_replication_interval`` says why). Captures taken minutes apart can still
differ by a little more than it shows (docs/report.md gives the measured pairs).
``mean_fraction_pi_repeat`` (``repeat_interval``) widens it to where a repeat capture's mean should
land; ``mean_fraction_pi_repeat_all`` (``joint_repeat_intervals``, default rows only) widens it
further, so that a repeat's means of *all* strategies land inside at once. Fractions above 100%
(realized beyond the ideal: the GEMM or communication ran faster beside the other than alone) enter
the mean but are listed under ``above_ideal`` so a reader can check them.
"""

from __future__ import annotations

import math
from functools import partial
from statistics import NormalDist
from typing import Callable

import numpy as np

from c3prof.analysis.dataset import Group
from c3prof.analysis.speedup import BootstrapSettings, RunMetrics
from c3prof.analysis.stats import CI, MIN_REPS, fixed_units_mean_ci, hierarchical_mean_ci, no_ci, rng_for

SUITE_CI_BOOTSTRAP = ("scenarios held fixed: percentile bootstrap of visits then rounds (one visit: "
                      "noise within this capture only)")
SUITE_CI_REPLICATION = ("scenarios held fixed: hull of the bootstrap of visits then rounds and the replication "
                        "interval over the {v} visits (pooled mean +- t(V-1) x SD of the visit means / sqrt(V))")
CI_METHOD = ("hierarchical percentile bootstrap: resample scenarios with replacement, then one "
             "repetition-level bootstrap replicate per drawn scenario; mean of the drawn fractions")
# A repeat capture's mean differs from this one's by two captures' sampling errors: sqrt(1/V + 1/V) / sqrt(1/V).
REPEAT_FACTOR = float(np.sqrt(2.0))
# Scenarios whose (base) ideal speedup is below this are left out of the means: with less than 5%
# to gain, the fraction (realized - 1) / (ideal - 1) divides noise by noise and swamps the mean.
DEFAULT_MIN_IDEAL = 1.05
# Listed first in this order; other strategy names follow in order of appearance.
CANONICAL = ("base", "sp", "rp", "dma", "dma+rp")


class _IdealPasses:
    """Per replicate, whether each candidate's ideal speedup passes the inclusion rule: a (S, B) mask
    that every row over the same scenarios shares. The ideal replicates are the scenario's base's,
    one array for all its runs (speedup's memo), so the strategies' rows over one set of scenarios
    stack and compare the same arrays (20 MB of them for 2500 scenarios, per row). Kept by the
    arrays' identities, with the arrays (so that an identity is never reused while it is a key)."""

    def __init__(self, min_ideal: float) -> None:
        self._min_ideal = min_ideal
        self._masks: dict[tuple[int, ...], tuple[list[np.ndarray], np.ndarray]] = {}

    def of(self, ideals: list[np.ndarray]) -> np.ndarray:
        key = tuple(map(id, ideals))
        kept = self._masks.get(key)
        if kept is None:
            # One comparison of the stacked rows, in their stored precision (float32): the same as row by row.
            kept = self._masks[key] = (ideals, np.stack(ideals) >= self._min_ideal)
        return kept[1]


def _summary(group: Group, strategy: str, selection: str, variant: str | None, chosen: list[RunMetrics],
             excluded: list[dict], boot: BootstrapSettings, min_ideal: float,
             ideal_passes: _IdealPasses | None = None) -> dict:
    passes, undefined, too_little = [], [], []
    # The row's lists of passing scenarios, filled in the same pass: a large report's rows each hold
    # thousands of runs, once walked eight times here.
    names, values, reference_own, above_ideal, unpaired, small, gemm, comm = [], [], [], [], [], [], [], []
    # The replicates' candidates: every scenario with replicates, whether or not its point passes.
    cand_fractions, cand_ideals = [], []
    for m in chosen:
        fraction, ideal, run = m.fraction, m.ideal, m.run
        if fraction.replicates is not None and ideal.replicates is not None:
            cand_fractions.append(fraction.replicates)
            cand_ideals.append(ideal.replicates)
        if fraction.value is None:
            undefined.append({"scenario": run.name, "variant": run.variant, "reason": fraction.ci.reason})
            continue
        if ideal.value < min_ideal:
            too_little.append({"scenario": run.name, "variant": run.variant,
                               "reason": f"ideal speedup {ideal.value:.3f} < {min_ideal}: too little to gain"})
            continue
        passes.append(m)
        names.append(run.name)
        values.append(fraction.value)
        if m.reference == "own":
            reference_own.append(run.name)
        elif m.reference == "base" and not m.paired and run.strategy != "base":
            unpaired.append(run.name)
        if fraction.value > 1.0:
            above_ideal.append(run.name)
        if min(m.n_reps.values()) < MIN_REPS:
            small.append(run.name)
        gemm.append(m.gemm_slowdown.value)
        comm.append(m.comm_slowdown.value)
    excluded = excluded + undefined + too_little
    row = {"platform": group.key, "strategy": strategy, "selection": selection, "variant": variant,
           "oracle": selection == "best_per_scenario", "n_scenarios": len(passes),
           "scenarios": names, "ci_method": CI_METHOD,
           "mean_fraction_of_ideal": None, "mean_fraction_ci": None, "mean_fraction_ci_suite": None,
           "mean_fraction_pi_repeat": None, "mean_fraction_pi_repeat_all": None,
           "ci_reason": None,
           "reference_own": reference_own, "excluded": excluded, "above_ideal": above_ideal, "unpaired": unpaired,
           "mean_gemm_slowdown": _mean(gemm), "mean_comm_slowdown": _mean(comm)}
    if selection == "best_per_scenario":
        row["chosen_variants"] = {m.run.name: m.run.variant for m in passes}
    if not passes:
        row["ci_reason"] = "no scenario passes the inclusion rule"
        return row
    mean = float(np.mean(values))
    rng = rng_for(boot.seed, group.key, strategy, selection, variant or "")
    reps = np.stack(cand_fractions)
    ideal_passes = ideal_passes or _IdealPasses(min_ideal)
    include = ideal_passes.of(cand_ideals) & np.isfinite(reps)
    _, ci = hierarchical_mean_ci(np.array([mean]), reps, rng, boot.confidence, include=include)
    suite = fixed_units_mean_ci(reps, boot.confidence, include)
    row.update(_replication_interval(passes, mean, suite, boot.confidence, min_ideal))
    row["mean_fraction_pi_repeat"] = repeat_interval(mean, row["mean_fraction_ci_suite"])
    note = None
    if small and len(passes) == 1:
        ci = no_ci(f"one scenario, with fewer than {MIN_REPS} repetitions in a phase")
    elif small:
        note = f"within-scenario spread is crude for {', '.join(small)} (fewer than {MIN_REPS} repetitions)"
    elif len(passes) == 1:
        note = "one scenario: the interval covers repetition noise only"
    row["mean_fraction_of_ideal"] = mean
    row["mean_fraction_ci"] = ci.as_list()
    row["ci_reason"] = ci.reason or note
    return row


def _visit_means(passes: list[RunMetrics], min_ideal: float) -> list[float] | None:
    """The suite mean of each visit on its own (the inclusion rule applied to that visit's ideal),
    when every scenario was measured in the same number (2+) of complete visits; else None."""
    visits = {len(m.by_visit) if m.by_visit else 0 for m in passes}
    if len(visits) != 1 or min(visits) < 2:
        return None
    means = []
    for v in range(visits.pop()):
        kept = [m.by_visit[v][1] for m in passes if m.by_visit[v][0] >= min_ideal and np.isfinite(m.by_visit[v][1])]
        if not kept:
            return None
        means.append(float(np.mean(kept)))
    return means


def _replication_interval(passes: list[RunMetrics], mean: float, suite: CI, confidence: float,
                          min_ideal: float) -> dict:
    """``mean_fraction_ci_suite``: the suite mean's interval, scenarios held fixed.

    The bootstrap (``suite``) resamples visits, then rounds; with 2-3 visits its visit stage is far
    too coarse (drawing from two visits, the replicates never leave the range of the two visits'
    means), and back-to-back captures of the default suite on one H200 landed outside each other's
    bootstrap intervals. Visits are independent replications of the whole suite, so the classical
    replication interval applies: mean +- t(V-1) x (SD of the V visit means) / sqrt(V), centred on
    the pooled estimate. The reported interval is the hull of the two: it never claims less noise
    than the repetitions show, and carries the pass-to-pass spread that the visits show."""
    visit_means = _visit_means(passes, min_ideal)
    out = {"mean_fraction_by_visit": visit_means, "ci_suite_method": SUITE_CI_BOOTSTRAP}
    if visit_means is None or not suite.ok:
        out["mean_fraction_ci_suite"] = suite.as_list()
        return out
    v = len(visit_means)
    half = float(t_quantile(0.5 + confidence / 2, v - 1) * np.std(visit_means, ddof=1) / np.sqrt(v))
    lo, hi = suite.as_list()
    out["mean_fraction_ci_suite"] = [min(lo, mean - half), max(hi, mean + half)]
    out["ci_suite_method"] = SUITE_CI_REPLICATION.format(v=v)
    return out


def repeat_interval(mean: float, suite_ci: list[float] | None) -> list[float] | None:
    """``mean_fraction_pi_repeat``: where the suite mean of a repeat capture of the same design (same
    suite, visits and repetitions, same GPU, minutes later) should fall, at the same confidence.

    ``mean_fraction_ci_suite`` is an interval for the mean this capture estimates; a repeat capture's
    mean carries its own sampling error as well, so the two means differ by about sqrt(2) times one
    capture's error (the classical prediction interval: t(V-1) x s x sqrt(1/V + 1/V) for the
    replication part, the normal approximation of the bootstrap part). With 4 visits per capture and
    nothing but noise, both means lie inside the other's 95% confidence interval in only about 82% of
    pairs (tests/test_visits.py simulates it); a capture's repeat interval holds the repeat's mean in
    95%, both ways at once in about 91%. This is the interval that answers "will a repeat agree?".
    Each side is widened from the point estimate, so an asymmetric interval stays asymmetric."""
    return None if suite_ci is None else _widened(mean, suite_ci, REPEAT_FACTOR)


def _widened(mean: float, interval: list[float], factor: float) -> list[float]:
    """``interval`` with each side, measured from ``mean``, ``factor`` times as long."""
    lo, hi = interval
    return [mean - factor * (mean - lo), mean + factor * (hi - mean)]


def joint_repeat_intervals(rows: list[dict], confidence: float) -> None:
    """``mean_fraction_pi_repeat_all``: a simultaneous prediction band, one interval per strategy
    (its default row), that holds a repeat capture's means of all k strategies at once with the
    given confidence.

    Why: per strategy, ``mean_fraction_pi_repeat`` holds the repeat's mean in 95% of repeats, so with
    four strategies all four land inside in only about 81% (tests/test_visits.py simulates it); the
    question "does my second capture agree with the first?" is asked of every strategy at once.
    Bonferroni: each interval at confidence 1 - (1 - confidence) / k, i.e. each side of the repeat
    interval widened by q(1 - alpha / 2k) / q(1 - alpha / 2), with q Student's t with V - 1 degrees of
    freedom when the suite interval holds the replication interval over V visits (else the normal).
    For k = 4 and 4 visits that is 1.69x (both captures' means inside each other's bands in about 90%
    of pairs, against 69% with the per-strategy interval)."""
    family = [r for r in rows if r["selection"] == "default" and r["mean_fraction_pi_repeat"] is not None]
    alpha = 1.0 - confidence
    for r in family:
        visits = r.get("mean_fraction_by_visit")
        if visits and len(visits) >= 2:
            df = len(visits) - 1
            quantile = lambda p: t_quantile(p, df)  # noqa: E731
        else:
            quantile = NormalDist().inv_cdf
        widen = float(quantile(1 - alpha / (2 * len(family))) / quantile(1 - alpha / 2))
        r["mean_fraction_pi_repeat_all"] = _widened(r["mean_fraction_of_ideal"], r["mean_fraction_pi_repeat"], widen)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile for an integer number of degrees of freedom: what ``scipy.stats.t.ppf(p,
    df)`` (``scipy.special.stdtrit(df, p)``) gives, within 1e-11 relative for p in [1e-4, 1 - 1e-4]
    (tests/test_visits.py compares them), without importing scipy: scipy.special's import took
    0.25-0.34 s, a quarter of a report of the default suite's four visits (this is that report's only
    use of scipy).

    The inverse of the exact distribution function for integer ``df`` (Abramowitz and Stegun 26.7.3
    and 26.7.4: P(|T| <= t) is a finite series in theta = atan(t / sqrt(df))), found by bisecting
    theta in [0, pi/2), on which it rises monotonically."""
    if not 0.0 < p < 1.0 or isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"t_quantile: p in (0, 1) and an integer df >= 1, not p={p!r}, df={df!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    target, lo, hi = 2.0 * p - 1.0, 0.0, math.pi / 2
    while True:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):   # the interval is down to adjacent floats
            return math.sqrt(df) * math.tan(mid)
        if _t_central_probability(mid, df) < target:
            lo = mid
        else:
            hi = mid


def _t_central_probability(theta: float, df: int) -> float:
    """P(|T| <= sqrt(df) tan(theta)) for Student's t with integer ``df`` (A&S 26.7.3, 26.7.4)."""
    cos2 = math.cos(theta) ** 2
    term = total = 1.0
    if df % 2 == 0:   # sin(theta) (1 + 1/2 cos^2 + 1.3/(2.4) cos^4 + ... + cos^(df-2) term)
        for k in range(2, df, 2):
            term *= cos2 * (k - 1) / k
            total += term
        return math.sin(theta) * total
    for k in range(3, df, 2):   # 2/pi (theta + sin cos (1 + 2/3 cos^2 + 2.4/(3.5) cos^4 + ...)), df > 1
        term *= cos2 * (k - 1) / k
        total += term
    return 2.0 / math.pi * (theta + (math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0))


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def strategy_order(group: Group) -> list[str]:
    seen = list(group.variant_order)
    return [s for s in CANONICAL if s in seen] + [s for s in seen if s not in CANONICAL]


def summarize_strategies(group: Group, metrics: list[RunMetrics], boot: BootstrapSettings,
                         min_ideal: float = DEFAULT_MIN_IDEAL) -> list[dict]:
    rows = [row() for row in summary_rows(group, metrics, boot, min_ideal)]
    joint_repeat_intervals(rows, boot.confidence)
    return rows


def summary_rows(group: Group, metrics: list[RunMetrics], boot: BootstrapSettings,
                 min_ideal: float = DEFAULT_MIN_IDEAL) -> list[Callable[[], dict]]:
    """The rows of summarize_strategies, in order, each still to be computed (``row()``), before
    joint_repeat_intervals. Each row draws from a generator keyed by its own names, so rows may be
    computed in any order and in any process: the same numbers (the report shares them between two)."""
    rows: list[Callable[[], dict]] = []
    ideal_passes = _IdealPasses(min_ideal)   # shared by the rows (in each process that computes some)
    # One pass over the metrics (a large report's 10,000 runs, before the summary's child is forked).
    by_strategy: dict[str, list[RunMetrics]] = {}
    for m in metrics:
        by_strategy.setdefault(m.run.strategy, []).append(m)
    for strategy in strategy_order(group):
        ms = by_strategy.get(strategy)
        if not ms:
            continue
        runs_of: dict[str, list[RunMetrics]] = {}
        for m in ms:
            runs_of.setdefault(m.run.variant, []).append(m)
        variants = [v for v in group.variant_order[strategy] if v in runs_of]
        default = group.variant_order[strategy][0]
        by_variant = {v: runs_of[v] for v in variants}
        default_runs = by_variant.get(default, [])
        excl = [] if default_runs else [{"scenario": None, "variant": default,
                                         "reason": "the default variant has no complete run"}]
        rows.append(partial(_summary, group, strategy, "default", default, default_runs, excl, boot, min_ideal,
                            ideal_passes))
        if len(variants) > 1:
            for v in variants:
                rows.append(partial(_summary, group, strategy, "variant", v, by_variant[v], [], boot, min_ideal,
                                    ideal_passes))
            best: dict[str, RunMetrics] = {}
            for m in ms:
                if m.fraction.value is None:
                    continue
                cur = best.get(m.run.name)
                if cur is None or m.fraction.value > cur.fraction.value:
                    best[m.run.name] = m
            rows.append(partial(_summary, group, strategy, "best_per_scenario", None, list(best.values()), [], boot,
                                min_ideal, ideal_passes))
    return rows
