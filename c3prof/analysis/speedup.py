"""Per-run speedups, fraction of ideal and per-kernel slowdowns, each with a bootstrap interval.

Definitions (DESIGN.md; medians over repetitions):

- own metrics:      ideal_own = T_s / max(T_g, T_c); realized_own = T_s / T_cc;
                    fraction_own = (realized_own - 1) / (ideal_own - 1)
- primary metrics:  the same with the scenario's ``base`` run as reference for the work:
                    ideal = T_s,base / max(T_g,base, T_c,base); realized = T_s,base / T_cc(run);
                    fraction_of_ideal = (realized - 1) / (ideal - 1). For the base run primary == own.
                    Without a (complete) base run in the group: primary = own, ``reference = "own"``.
- slowdowns:        gemm_slowdown = median(concurrent gemm_ms) / median(gemm phase total_ms), same run;
                    comm_slowdown likewise.
- overlap:          per repetition of the concurrent phase, the share of the GEMM's interval during
                    which the communication ran; its median.

- drift:            gemm_drift = median(gemm total_ms of this run) / median(gemm total_ms of base):
                    the same GEMM alone, measured for two runs; 1 when nothing drifted between them.
                    Only for runs whose GEMM is not partitioned (otherwise the GEMM itself differs).

Resampling. Each series gets one set of bootstrap median replicates, shared by every ratio that
uses it; a ratio's replicate b is the ratio of the series' replicates b.

- Captures that measure all runs of a scenario interleaved in rounds (each repetition knows its
  round) are resampled **by round**: replicate b draws the scenario's rounds with replacement and
  every series of every run of the scenario takes the repetitions of the drawn rounds. Ratios across
  runs (against base) and across phases are then paired by round, so drift that moves a whole round
  cancels, and the interval carries the round-to-round variation.
- A scenario measured in several complete visits (``capture --visits N``, or several captures of
  the same runs pooled) is resampled in two stages: visits with replacement, then rounds within
  each drawn visit (stats.draw_visit_round_counts). Drift between visits, minutes apart, then
  widens the intervals as it would move a new capture's numbers. The visit draw is shared by all
  scenarios of a group (visit v is one pass over the whole suite), so a suite mean's interval
  carries a shift of the whole GPU between passes instead of averaging it away.
- Older captures (no rounds) resample each series independently, from the exact bootstrap
  distribution of its median (stats.bootstrap_medians): their against-base intervals do not
  include drift between runs, and the report says so (``paired`` is false).
"""

from __future__ import annotations

import math
import mmap
from dataclasses import dataclass, field, fields
from operator import attrgetter, itemgetter
from typing import Callable, Iterator, cast

import numpy as np

from c3prof import forked
from c3prof.analysis.dataset import Group, MergedRun
from c3prof.analysis.stats import (CI, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_REPS,
                                   bootstrap_medians, draw_visit_picks, draw_visit_round_counts, fast_median,
                                   kernel_threads_shared, keyed_bootstrap_medians, keyed_round_draws, no_ci, RoundDraw,
                                   paired_medians, percentile_ci, percentile_cis_of_rows, ROW_FRACTION, ROW_IDEAL,
                                   ROW_RATIO, ROW_SAME, rng_for, row_intervals, row_intervals_apply, sorted_by_length,
                                   sorted_median, sorted_row_medians)
from c3prof.trace import PHASES


@dataclass(frozen=True)
class BootstrapSettings:
    n_resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = DEFAULT_SEED


@dataclass
class Series:
    """One measured series (e.g. the serial phase's total_ms of one run) and its median replicates."""

    label: str
    values: np.ndarray
    median: float
    replicates: np.ndarray
    paired: bool = False  # replicates drawn by round (shared with the scenario's other series)

    @property
    def n(self) -> int:
        return int(self.values.size)


class SeriesBank:
    """Creates each series' bootstrap replicates once, with a seed derived from its name.

    ``begin_scenario`` draws one set of round multiplicities for all runs of a scenario that were
    measured in interleaved rounds; their series are resampled by round with it (paired). The
    replicates of a scenario's base run are shared by all its runs; ``clear()`` after each scenario
    keeps memory bounded by one scenario's series, not the whole trace's.
    """

    def __init__(self, settings: BootstrapSettings):
        self.settings = settings
        self._cache: dict[tuple, Series] = {}
        self.memo: dict[tuple, "Estimate"] = {}   # estimates several runs of the scenario share
        self._ideal_reps: dict[tuple[str, str, str], np.ndarray] = {}   # ideal_replicates
        self._round_ids = np.empty(0, dtype=np.int64)   # group-wide round ids (sorted): the columns of _counts
        self._columns_of: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}   # _columns, per rounds array
        self._counts: RoundDraw | None = None   # (n_resamples, n_rounds) of the current scenario
        self.visit_rounds: list[np.ndarray] | None = None   # round ids of each visit (2+ visits)
        # The first (visit) stage, drawn once per group and number of visits and shared by every
        # scenario of the group (stats.draw_visit_round_counts says why); kept across clear().
        self._visit_picks: dict[tuple[str, int], np.ndarray] = {}
        # run_metrics' intervals: computed at the end of each run_metrics unless defer_cis (then
        # by whoever set it, many runs at once: analyze_group).
        self.pending = PendingCIs(settings.confidence, settings.n_resamples)
        self.defer_cis = False

    def clear(self) -> None:
        self._cache.clear()
        self.memo.clear()
        self._ideal_reps.clear()
        self._round_ids = np.empty(0, dtype=np.int64)
        self._columns_of.clear()
        self._counts = None
        self.visit_rounds = None

    @property
    def visits(self) -> int:
        """Visits resampled in the current scenario (two-stage bootstrap when > 1)."""
        return 1 if self.visit_rounds is None else len(self.visit_rounds)

    def plan_rounds(self, group_key: str, scenario: str, runs: list[MergedRun],
                    sweep_of: dict[int, str] | None = None) -> ScenarioRounds:
        """The round resampling shared by every run of ``scenario`` that records rounds (drawn from
        the scenario's own keyed generator, so plans can be drawn ahead, in any order).

        ``sweep_of`` maps a round to its sweep (one visit of the scenario). When the scenario was
        measured in several complete visits, visits are resampled first, then rounds within them.
        """
        return self.plan_scenarios(group_key, [(scenario, runs)], sweep_of)[0]

    def plan_scenarios(self, group_key: str, scenarios: list[tuple[str, list[MergedRun]]],
                       sweep_of: dict[int, str] | None = None) -> list[ScenarioRounds]:
        """plan_rounds of each (scenario, runs): the same plans, the one-visit round draws of all of
        them in one call (stats.keyed_round_draws)."""
        n, seed = self.settings.n_resamples, self.settings.seed
        plans: dict[int, ScenarioRounds] = {}
        by_round: list[tuple[int, str, np.ndarray]] = []   # (place, scenario, round ids): one visit
        for at, (scenario, runs) in enumerate(scenarios):
            ids = _round_ids(runs)
            if len(ids) < 2:
                plans[at] = ScenarioRounds(ids[:0], None, None)
                continue
            visits = _complete_visits(runs, ids.tolist(), sweep_of or {})
            if visits is None:
                by_round.append((at, scenario, ids))
                continue
            visit_rounds = [ids[visits == v] for v in range(int(visits.max()) + 1)]  # indices 0..V-1
            picks = self._shared_visit_picks(group_key, len(visit_rounds))
            rng = rng_for(seed, group_key, scenario, "rounds")
            plans[at] = ScenarioRounds(ids, draw_visit_round_counts(visits, n, rng, picks), visit_rounds)
        counts = keyed_round_draws([ids.size for _, _, ids in by_round], n, seed,
                                   [(group_key, scenario, "rounds") for _, scenario, _ in by_round])
        for (at, _, ids), drawn in zip(by_round, counts):
            plans[at] = ScenarioRounds(ids, drawn, None)
        return [plans[at] for at in range(len(scenarios))]

    def begin_scenario(self, group_key: str, scenario: str, runs: list[MergedRun],
                       sweep_of: dict[int, str] | None = None, plan: ScenarioRounds | None = None) -> None:
        """Start ``scenario``: its round resampling (``plan``, or plan_rounds now) for every series."""
        self.clear()
        plan = plan if plan is not None else self.plan_rounds(group_key, scenario, runs, sweep_of)
        self._round_ids, self._counts, self.visit_rounds = plan.ids, plan.counts, plan.visit_rounds

    def _shared_visit_picks(self, group_key: str, visits: int) -> np.ndarray:
        key = (group_key, visits)
        if key not in self._visit_picks:
            rng = rng_for(self.settings.seed, group_key, "visits", visits)
            self._visit_picks[key] = draw_visit_picks(visits, self.settings.n_resamples, rng)
        return self._visit_picks[key]

    def _make(self, key: tuple, label: str, values: np.ndarray, rounds: np.ndarray | None = None) -> Series:
        cols = self._columns(rounds)
        if cols is not None:
            (median,), reps = paired_medians([values], [cols], [self._counts], [0])
            return Series(label=label, values=values, median=median, replicates=reps[0], paired=True)
        srt = np.sort(values)
        reps = bootstrap_medians(srt, self.settings.n_resamples, rng_for(self.settings.seed, *key), presorted=True)
        return Series(label=label, values=values, median=sorted_median(srt), replicates=reps)

    def _columns(self, rounds: np.ndarray | None) -> np.ndarray | None:
        """The columns of the scenario's round draw that weight a series recorded in ``rounds``;
        None when it is not resampled by round (no draw, or a round outside the scenario's)."""
        if rounds is None or self._counts is None:
            return None
        return _columns_in(self._round_ids, rounds, self._columns_of)

    def draw(self, batch: list[tuple[list[MergedRun], ScenarioRounds]]) -> list[dict[tuple, Series]]:
        """The replicates of every series run_metrics asks of several scenarios' runs (each with its
        plan_rounds): per scenario, the Series ``get`` would make one by one after its
        begin_scenario, with the same numbers; what ``adopt`` gives the bank then. A series is
        paired exactly when its scenario is resampled by round and it records rounds: all of those
        in one kernel call (stats.paired_medians); the others in one call per repetition count,
        each from its own keyed generator (_draw_unpaired)."""
        unpaired: list[tuple[int, tuple, str, np.ndarray]] = []
        paired: list[tuple[int, tuple, str, np.ndarray, np.ndarray]] = []
        which, draws = [], []
        overlaps = iter(_overlap_series_of([run for runs, _ in batch for run in runs]))
        for at, (runs, plan) in enumerate(batch):
            columns: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
            for key, label, values, rounds in _wanted_series(runs, overlaps):
                cols = None if rounds is None or plan.counts is None else _columns_in(plan.ids, rounds, columns)
                if cols is None:
                    unpaired.append((at, key, label, values))
                else:
                    paired.append((at, key, label, values, cols))
                    which.append(len(draws))
            if plan.counts is not None:
                draws.append(plan.counts)
        out: list[dict[tuple, Series]] = [{} for _ in batch]
        drawn = self._draw_unpaired([item[1:] for item in unpaired])
        for at, key, _, _ in unpaired:
            out[at][key] = drawn[key]
        if paired:
            medians, reps = paired_medians([p[3] for p in paired], [p[4] for p in paired], draws, which)
            for (at, key, label, values, _), median, row in zip(paired, medians, reps):
                out[at][key] = Series(label=label, values=values, median=median, replicates=row, paired=True)
        return out

    def adopt(self, series: dict[tuple, Series]) -> None:
        """Series from ``draw`` for the scenario just begun."""
        self._cache.update(series)

    def _draw_unpaired(self, wanted: list[tuple[tuple, str, np.ndarray]]) -> dict[tuple, Series]:
        out = {}
        for where, srt in sorted_by_length([values for _, _, values in wanted]):
            items = [wanted[i] for i in where]
            reps = keyed_bootstrap_medians(srt, self.settings.seed, [k for k, _, _ in items], self.settings.n_resamples)
            for (key, label, values), m, r in zip(items, sorted_row_medians(srt).tolist(), reps):
                out[key] = Series(label=label, values=values, median=m, replicates=r)
        return out

    def get_all(self, run: MergedRun, names: dict[str, tuple[str, str]]) -> dict[str, Series | None]:
        """{key: get(run, phase, name)} of ``names`` ({key: (phase, series)}); those drawn already
        (SeriesBank.draw) found with one lookup each."""
        group, rid, cache = run.group, run.id, self._cache
        out = {}
        for k, (phase, name) in names.items():
            series = cache.get((group, rid, phase, name))
            out[k] = series if series is not None else self.get(run, phase, name)
        return out

    def get(self, run: MergedRun, phase: str, name: str) -> Series | None:
        key = (run.group, run.id, phase, name)
        if key not in self._cache:
            values = run.series(phase, name)
            if values is None or values.size == 0:
                return None
            self._cache[key] = self._make(key, f"{run.id}:{phase}.{name}", values, run.rounds.get(phase))
        return self._cache[key]

    def ideal_replicates(self, ts: Series, tg: Series, tc: Series) -> np.ndarray:
        """ideal() of the series' replicates, once per scenario: the ideal speedup's interval, the
        fractions of ideal of every run compared with it and their stability checks all use it."""
        key = (ts.label, tg.label, tc.label)
        if key not in self._ideal_reps:
            self._ideal_reps[key] = ideal(ts.replicates, tg.replicates, tc.replicates)
        return self._ideal_reps[key]

    def cached(self, key: tuple) -> Series | None:
        """The series ``key`` if the bank holds it already, else None."""
        return self._cache.get(key)

    def cached_values(self, key: tuple) -> np.ndarray | None:
        """The values of the series ``key`` if the bank holds it already, else None."""
        series = self.cached(key)
        return None if series is None else series.values

    def derived(self, key: tuple, label: str, values: np.ndarray, rounds: np.ndarray | None = None) -> Series:
        """A series computed per repetition (e.g. the overlap fraction), resampled like a measured one."""
        if key not in self._cache:
            self._cache[key] = self._make(key, label, values, rounds)
        return self._cache[key]


def _complete_visits(runs: list[MergedRun], ids: list[int], sweep_of: dict[int, str]) -> np.ndarray | None:
    """Each round's visit index, when the scenario's rounds fall in 2+ sweeps that every measured
    (run, phase) covers; else None (one visit, or a resumed capture whose sweeps hold different runs)."""
    sweeps = sorted({sweep_of.get(r, "") for r in ids})
    if len(sweeps) < 2 or "" in sweeps:
        return None
    for run in runs:
        for rounds in run.rounds.values():
            if {sweep_of[int(r)] for r in rounds} != set(sweeps):
                return None
    index = {s: i for i, s in enumerate(sweeps)}
    return np.array([index[sweep_of[r]] for r in ids])


@dataclass(frozen=True)
class ScenarioRounds:
    """How a scenario is resampled by round (SeriesBank.plan_rounds): its round ids (sorted: the
    columns of ``counts``), the (n_resamples, rounds) multiplicities (stats.RoundDraw: as a
    RoundTable where the kernels drew them; None: fewer than two rounds, not resampled by round)
    and, for a scenario of 2+ complete visits, each visit's round ids."""

    ids: np.ndarray
    counts: RoundDraw | None
    visit_rounds: list[np.ndarray] | None


def _columns_in(ids: np.ndarray, rounds: np.ndarray, memo: dict[int, tuple[np.ndarray, np.ndarray | None]]):
    """The columns (positions in the sorted ``ids``) of ``rounds``, None if one is not among them;
    ``memo`` keeps them per rounds array (the series of one phase share theirs)."""
    known = memo.get(id(rounds))
    if known is not None and known[0] is rounds:
        return known[1]
    cols = np.searchsorted(ids, rounds)
    if cols.size and (cols.max() >= ids.size or not np.array_equal(ids[cols], rounds)):
        cols = None
    memo[id(rounds)] = (rounds, cols)
    return cols


def _round_ids(runs: list[MergedRun]) -> np.ndarray:
    """The rounds a scenario's runs were measured in, sorted and distinct (plan_rounds resamples by
    round when there are two or more): np.unique's values, by its own sort and comparison of
    neighbours, without np.unique, whose first plain call imports numpy.ma (31 ms in each analysis
    process on the development VM, after the fork)."""
    recorded = [rounds for run in runs for rounds in run.rounds.values()]
    if not recorded:
        return np.empty(0, np.int64)
    ids = np.sort(np.concatenate(recorded).astype(np.int64, copy=False))
    first = np.empty(ids.size, dtype=bool)
    first[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return ids[first]


def _wanted_series(runs: list[MergedRun], overlaps: Iterator[np.ndarray | None]):
    """(key, label, values, rounds) of every series run_metrics asks of these runs (the measured ones
    and the overlap, the next of ``overlaps`` for each run), leaving out those that are absent or empty."""
    for run in runs:
        wanted = [(phase, name, run.series(phase, name)) for phase, name in METRIC_SERIES]
        wanted.append(("concurrent", "overlap", next(overlaps)))
        for phase, name, values in wanted:
            if values is None or values.size == 0:
                continue
            label = f"{run.id}:overlap" if name == "overlap" else f"{run.id}:{phase}.{name}"
            yield (run.group, run.id, phase, name), label, values, run.rounds.get(phase)


@dataclass
class Estimate:
    """A point estimate, its interval (or the reason for none) and its bootstrap replicates."""

    value: float | None
    ci: CI
    replicates: np.ndarray | None = None

    @property
    def ci_list(self):
        return self.ci.as_list()


def missing(reason: str) -> Estimate:
    return Estimate(None, no_ci(reason))


class KeptRows:
    """Room for the float32 replicate rows (B each) that estimates keep (the strategy summary's
    inputs), handed out a block at a time (PendingCIs), in one anonymous shared mapping.

    Why shared: analyze_group's forked children write the rows they keep here, and the parent then
    reads them in place. Pickled back instead, they were 89 MB for 10^6 samples on two processes:
    0.24 s to pickle alone, against the child's 1.1 s of work. Pages are only allocated where rows
    are written."""

    def __init__(self, n_resamples: int, capacity: int):
        self._map = mmap.mmap(-1, max(1, capacity * n_resamples) * 4)   # MAP_SHARED | MAP_ANONYMOUS
        self.rows = np.frombuffer(self._map, dtype=np.float32, count=capacity * n_resamples).reshape(
            capacity, n_resamples)
        self.used = 0
        self.owners: list[Estimate] = []   # the estimate holding each row given out since hand_over, in row order
        self._first_owned = 0              # the row of owners[0]

    def hand_over(self) -> list[tuple[int, Estimate]]:
        """(row, estimate) of every row given out since the last call (a child sends its results
        batch by batch: each batch names its own rows)."""
        owned = list(enumerate(self.owners, self._first_owned))
        self._first_owned += len(self.owners)
        self.owners = []
        return owned

    def take(self, n: int) -> np.ndarray | None:
        """The next ``n`` rows, or None when fewer are left (the caller allocates them itself). The
        caller appends to ``owners`` the ``n`` estimates it gives them to, in order."""
        if self.used + n > len(self.rows):
            return None
        block = self.rows[self.used:self.used + n]
        self.used += n
        return block


class PendingCIs:
    """Intervals computed later, many at once: ``estimate(..., later=this)`` registers an estimate's
    replicates and ``flush()`` sets every registered estimate's CI (stats.percentile_cis_of_rows).
    The CIs are the ones percentile_ci gives; only the per-call numpy overhead is shared.

    ``rows``: with the compiled kernel (and B = ``n_resamples`` in its fast case), ``estimate``
    registers instead which series and which formula make the replicates (``add_row``), and the
    kernel computes each row and its interval in one pass (stats.row_intervals): the same numbers,
    without a numpy call per formula and estimate (a 10^6-sample report has about 80,000)."""

    def __init__(self, confidence: float, n_resamples: int | None = None):
        self.confidence = confidence
        self.rows = n_resamples is not None and row_intervals_apply(n_resamples, confidence)
        self._items: list[tuple[Estimate, Callable[[], str | None] | None]] = []
        self._reps: list[np.ndarray] = []
        # The rows, as columns (a large report registers about 80,000): each row's estimate, kind,
        # whether it is kept, and its series' replicate arrays, four per row (padded with its first).
        self._row_estimates: list[Estimate] = []
        self._row_kinds: list[int] = []
        self._row_keep: list[bool] = []
        self._row_parts: list[np.ndarray] = []
        self.kept_rows: KeptRows | None = None   # where kept rows go (else arrays of their own)

    def __len__(self) -> int:
        return len(self._items) + len(self._row_estimates)

    def add(self, est: Estimate, reps: np.ndarray, veto: Callable[[], str | None] | None = None) -> None:
        """``veto``: asked only if the interval comes out defined; a reason it returns replaces it."""
        self._items.append((est, veto))
        self._reps.append(reps)

    def add_row(self, est: Estimate, kind: int, series: list[np.ndarray], keep: bool) -> None:
        """The estimate's replicates are row ``kind`` (stats.ROW_*) of ``series`` (replicate arrays);
        ``keep``: est.replicates receives them as float32. A fraction's interval is refused when
        its ideal speedup is at most 1 in some replicates (_fraction_estimate's veto)."""
        self._row_estimates.append(est)
        self._row_kinds.append(kind)
        self._row_keep.append(keep)
        self._row_parts += series
        if len(series) < 4:
            self._row_parts += series[:1] * (4 - len(series))

    def row(self, value, kind: int, keep: bool, a: Series, b: Series, c: Series, d: Series) -> Estimate:
        """estimate()'s row case where the caller knows every series is there with enough
        repetitions (speedup._plain_estimates): ``value`` the formula of their medians, its interval
        the kernel's row ``kind`` of the four series' replicates (add_row; a formula of fewer series
        passes its first again, as add_row pads); undefined where the value is not finite."""
        value = float(value)
        if not math.isfinite(value):
            return Estimate(None, no_ci("undefined"), None)
        est = Estimate(value, NOT_YET, None)
        self.add_row(est, kind, [a.replicates, b.replicates, c.replicates, d.replicates], keep)
        return est

    def flush(self) -> None:
        items, reps, self._items, self._reps = self._items, self._reps, [], []
        if items:
            _set_cis(items, reps, self.confidence)
        if self._row_estimates:
            estimates, kinds, keep, parts = self._row_estimates, self._row_kinds, self._row_keep, self._row_parts
            self._row_estimates, self._row_kinds, self._row_keep, self._row_parts = [], [], [], []
            _set_row_cis(estimates, kinds, keep, parts, self.confidence, self.kept_rows)


def _set_row_cis(estimates: list[Estimate], kinds: list[int], keep: list[bool], parts: list[np.ndarray],
                 confidence: float, kept_rows: KeptRows | None = None) -> None:
    """The rows' intervals from one kernel call (stats.row_intervals). Each replicate array is passed
    once (runs of a scenario share their base's): rows name theirs by index, found by the arrays' ids
    in one np.unique instead of a dict lookup per part."""
    ids = np.fromiter(map(id, parts), dtype=np.uintp, count=len(parts))
    _, first, at = np.unique(ids, return_index=True, return_inverse=True)
    series = [parts[i] for i in first.tolist()]   # replicates are C-ordered float64 (the kernel checks)
    b = series[0].size
    n_kept = sum(keep)
    store = kept_rows.take(n_kept) if kept_rows is not None else None
    if store is not None:
        kept_rows.owners += [est for est, k in zip(estimates, keep) if k]
    else:
        store = np.empty((n_kept, b), dtype=np.float32)   # the kept rows, one allocation for all
    rows = iter(store)
    kept = [next(rows) if k else None for k in keep]
    cis, below = row_intervals(series, kinds, at.reshape(-1, 4), kept, confidence)
    for est, ci, n_below, reps in zip(estimates, cis, below, kept):
        est.ci = no_ci(_unstable_reason(n_below, b)) if ci.ok and n_below else ci
        if reps is not None:
            est.replicates = reps


def _unstable_reason(below: int, n_resamples: int) -> str:
    return f"ideal speedup <= 1 in {below} of {n_resamples} resamples: fraction of ideal unstable"


def _set_cis(items: list[tuple["Estimate", Callable[[], str | None] | None]], reps: list[np.ndarray],
             confidence: float) -> None:
    for (est, veto), ci in zip(items, percentile_cis_of_rows(reps, confidence)):
        why = veto() if ci.ok and veto is not None else None
        est.ci = no_ci(why) if why else ci


NOT_YET = no_ci("interval not computed yet (PendingCIs.flush)")


def estimate(fn: Callable, series: list[Series | None], names: list[str], confidence: float,
             undefined: Callable[[float], str | None] | None = None, keep: bool = False,
             later: PendingCIs | None = None, veto: Callable[[], str | None] | None = None,
             reps: np.ndarray | None = None, row: int | None = None) -> Estimate:
    """Apply ``fn`` to the series' medians (point) and replicates (interval).

    ``keep`` retains the replicates (the strategy summary needs the fraction's); others are dropped
    once the interval is known, to keep memory per run small. ``later``: the interval is computed
    at ``later.flush()`` (with many others) instead of now. ``veto``: asked when the interval is
    defined; a reason it returns refuses the interval. ``reps``: ``fn`` of the replicates, when the
    caller has it already (the same values; it is not changed). ``row``: the stats.ROW_* kind that
    is ``fn`` of these series; when ``later.rows``, the kernel computes the replicates at flush (a
    fraction's veto is then the kernel's count of ideal replicates at most 1, as _fraction_estimate's).
    """
    # Called some 10^5 times by a large report: one plain loop and math.isfinite, not numpy, on scalars.
    medians, too_few = [], False
    for s in series:
        if s is None:
            absent = [n for n, s in zip(names, series) if s is None]
            return missing(f"no {', '.join(absent)} series in the trace")
        medians.append(s.median)
        too_few = too_few or s.values.size < MIN_REPS
    value = float(fn(*medians))  # callers silence numpy's divide warnings (analyze_group)
    why = undefined(value) if undefined else None
    if why or not math.isfinite(value):
        return Estimate(None, no_ci(why or "undefined"), None)
    if row is not None and later is not None and later.rows and not too_few:
        est = Estimate(value, NOT_YET, None)
        later.add_row(est, row, [s.replicates for s in series], keep)
        return est
    if too_few and not keep:   # no interval, and no replicates kept: none to compute (a capture of 2 repetitions)
        return Estimate(value, _too_few_ci(series), None)
    reps = np.asarray(fn(*[s.replicates for s in series]) if reps is None else reps, dtype=float)
    # float32 is ample for replicates (they only feed percentiles) and halves what a run keeps.
    est = Estimate(value, NOT_YET, reps.astype(np.float32) if keep else None)
    if too_few:
        est.ci = _too_few_ci(series)
    elif later is not None:
        later.add(est, reps, veto)
    else:
        ci = percentile_ci(reps, confidence)
        why = veto() if ci.ok and veto is not None else None
        est.ci = no_ci(why) if why else ci
    return est


def _too_few_ci(series: list[Series]) -> CI:
    small = sorted({s.label for s in series if s.n < MIN_REPS})
    return no_ci(f"fewer than {MIN_REPS} repetitions in {', '.join(small)}")


# The formulas, written once; they work elementwise on floats and on replicate arrays.
def ideal(ts, tg, tc):
    return ts / _maximum(tg, tc)


def _maximum(a, b):
    """np.maximum(a, b); for two distinct floats the same np.float64 without the ufunc's
    microsecond (a large report takes some 50,000 maxima of medians). Ties, signed zeros and NaN
    go to numpy, which settles them its own way."""
    if type(a) is float and type(b) is float:
        if a > b:
            return np.float64(a)
        if b > a:
            return np.float64(b)
    return np.maximum(a, b)


def realized(ts, tcc):
    return ts / tcc


def fraction(ts, tg, tc, tcc):
    return (realized(ts, tcc) - 1.0) / (ideal(ts, tg, tc) - 1.0)


def ratio(a, b):
    return a / b


def fraction_of_ideal(ts: float, tg: float, tc: float, tcc: float) -> float:
    """The scalar formula, for callers and tests: (T_s/T_cc - 1) / (T_s/max(T_g, T_c) - 1)."""
    return float(fraction(ts, tg, tc, tcc))


_NO_GAIN = "ideal speedup <= 1 (T_s <= max(T_g, T_c)): no gain possible, fraction undefined"


def _fraction_estimate(ts, tg, tc, tcc, names, confidence, keep: bool = True,
                       later: PendingCIs | None = None, bank: SeriesBank | None = None) -> Estimate:
    """Fraction of ideal, undefined when the ideal speedup is not above 1 (nothing to gain).
    ``bank``: where the ideal speedup's replicates are kept for the scenario (SeriesBank.ideal_replicates)."""
    parts = [ts, tg, tc, tcc]
    if any(p is None for p in parts):
        return estimate(fraction, parts, names, confidence)
    if ideal(ts.median, tg.median, tc.median) <= 1.0:
        return missing(_NO_GAIN)
    if later is not None and later.rows:  # the kernel computes the replicates and the veto (PendingCIs)
        return estimate(fraction, parts, names, confidence, keep=keep, later=later, row=ROW_FRACTION)
    ideal_reps = ideal(ts.replicates, tg.replicates, tc.replicates) if bank is None else bank.ideal_replicates(ts, tg, tc)

    def unstable() -> str | None:
        below = int(np.sum(ideal_reps <= 1.0))
        return _unstable_reason(below, ts.replicates.size) if below else None

    reps = (realized(ts.replicates, tcc.replicates) - 1.0) / (ideal_reps - 1.0)  # fraction(), operation for operation
    return estimate(fraction, parts, names, confidence, keep=keep, later=later, veto=unstable, reps=reps)


@dataclass
class RunMetrics:
    run: MergedRun
    base: MergedRun | None  # the reference run (the run itself for a base run); None when reference is own
    reference: str  # "base" or "own"
    reference_note: str | None
    medians: dict[str, float | None]
    base_medians: dict[str, float | None]
    ideal: Estimate
    realized: Estimate
    fraction: Estimate
    own_ideal: Estimate
    own_realized: Estimate
    own_fraction: Estimate
    gemm_slowdown: Estimate
    comm_slowdown: Estimate
    overlap: Estimate
    n_reps: dict[str, int] = field(default_factory=dict)
    gemm_drift: Estimate = field(default_factory=lambda: missing("no base run to compare with"))
    paired: bool = False  # against-base ratios resampled by round (run and base measured interleaved)
    visits: int = 1       # visits of the scenario resampled (two-stage bootstrap when > 1)
    # Per visit (2+ complete visits): (ideal, fraction of ideal) from that visit's repetitions alone,
    # NaN where undefined. The strategy summary's replication interval (strategies.py) uses them.
    by_visit: tuple[tuple[float, float], ...] | None = None


def _overlap_series(run: MergedRun) -> np.ndarray | None:
    """Per repetition: share of the GEMM's interval during which the communication was running."""
    return _overlap_series_of([run])[0]


_OVERLAP_INPUTS = ("gemm_start_ms", "gemm_ms", "comm_start_ms", "comm_ms")


def _overlap_series_of(runs: list[MergedRun]) -> list[np.ndarray | None]:
    """_overlap_series of each run (None where its concurrent phase lacks an input), computed over
    all of them at once: each run's values are the same elementwise operations on its own
    repetitions, as views of one array. (Run by run, the six numpy calls on arrays of tens of
    values took about 20 us per run on the development VM: 0.2 s of a 10^6-sample report.)"""
    out: list[np.ndarray | None] = []
    batched: list[tuple[int, list[np.ndarray]]] = []   # (place in out, inputs) of the runs computed together
    for run in runs:
        concurrent = run.phases.get("concurrent", {})
        arrays = [concurrent.get(name) for name in _OVERLAP_INPUTS]
        if any(a is None for a in arrays):
            out.append(None)
        elif len({a.size for a in arrays}) == 1:
            batched.append((len(out), arrays))
            out.append(None)
        else:   # series of unequal lengths (not in a valid trace): numpy's own broadcasting, as before
            out.append(_overlap_shares(*arrays))
    if batched:
        shares = _overlap_shares(*(np.concatenate([arrays[k] for _, arrays in batched]) for k in range(4)))
        at = 0
        for place, arrays in batched:
            out[place] = shares[at:at + arrays[0].size]
            at += arrays[0].size
    return out


def _overlap_shares(gs: np.ndarray, gd: np.ndarray, cs: np.ndarray, cd: np.ndarray) -> np.ndarray:
    inter = np.minimum(gs + gd, cs + cd) - np.maximum(gs, cs)
    return np.clip(inter, 0.0, None) / gd


# The measured series behind a run's metrics: name in RunMetrics.medians -> (phase, series).
_METRIC_NAMES = {"T_g": ("gemm", "total_ms"), "T_c": ("comm", "total_ms"), "T_s": ("serial", "total_ms"),
                 "T_cc": ("concurrent", "total_ms"), "T_g_cc": ("concurrent", "gemm_ms"),
                 "T_c_cc": ("concurrent", "comm_ms")}
METRIC_SERIES = tuple(_METRIC_NAMES.values())
# Each phase (trace.PHASES order) and the name of its total_ms series in _METRIC_NAMES.
_PHASE_TOTALS = tuple((phase, next(k for k, v in _METRIC_NAMES.items() if v == (phase, "total_ms")))
                      for phase in PHASES)
# The base run's medians a RunMetrics keeps (the ideal speedup's inputs).
_BASE_MEDIAN_KEYS = ("T_g", "T_c", "T_s")


def _medians(bank: SeriesBank, run: MergedRun) -> dict[str, Series | None]:
    return bank.get_all(run, _METRIC_NAMES)


def _ideal_estimate(bank: SeriesBank, parts: list[Series | None], names: list[str], keep: bool) -> Estimate:
    """The ideal speedup from T_s, T_g, T_c. Every run of a scenario compared with its base run has
    the base's ideal: computed once per scenario (the bank's memo) and shared by their RunMetrics."""
    conf, later = bank.settings.confidence, bank.pending
    if any(p is None for p in parts):  # the reason names the missing series, as this run calls them
        return estimate(ideal, parts, names, conf, later=later, keep=keep)
    key = ("ideal", keep, *(p.label for p in parts))
    if key not in bank.memo:
        bank.memo[key] = estimate(ideal, parts, names, conf, later=later, keep=keep, row=ROW_IDEAL,
                                  reps=None if later.rows else bank.ideal_replicates(*parts))
    return bank.memo[key]


def run_metrics(run: MergedRun, base: MergedRun | None, bank: SeriesBank, base_note: str | None = None) -> RunMetrics:
    conf = bank.settings.confidence
    later = bank.pending
    own = _medians(bank, run)
    if base is not None and base is not run:
        ref, note = "base", None
        b = _medians(bank, base)
    elif base is run:
        ref, note, b = "base", None, own
    else:
        ref, note, b = "own", base_note, own
    ov_key = (run.group, run.id, "concurrent", "overlap")
    if later.rows:
        overlap_series = bank.cached(ov_key)   # SeriesBank.draw made it, with the measured ones
        if _plain(own, b, overlap_series):
            plain = _plain_estimates(bank, own, b, overlap_series)
            drift, paired = _drift(run, base, own, b, conf, later=later)
            return _run_metrics_of(run, base, bank, ref, note, own, b, drift, paired, *plain)
    names = ["T_s", "T_g", "T_c"]
    own_ideal = _ideal_estimate(bank, [own[k] for k in names], names, keep=b is own)
    own_realized = estimate(realized, [own["T_s"], own["T_cc"]], ["T_s", "T_cc"], conf, later=later, row=ROW_RATIO)
    # Only the primary fraction's replicates are kept (the strategy summary resamples them).
    own_fraction = _fraction_estimate(own["T_s"], own["T_g"], own["T_c"], own["T_cc"], names + ["T_cc"], conf,
                                      keep=b is own, later=later, bank=bank)
    if b is own:
        p_ideal, p_realized, p_fraction = own_ideal, own_realized, own_fraction
    else:
        p_ideal = _ideal_estimate(bank, [b[k] for k in names], [f"base {k}" for k in names], keep=True)
        p_realized = estimate(realized, [b["T_s"], own["T_cc"]], ["base T_s", "T_cc"], conf, later=later,
                              row=ROW_RATIO)
        p_fraction = _fraction_estimate(b["T_s"], b["T_g"], b["T_c"], own["T_cc"],
                                        [f"base {k}" for k in names] + ["T_cc"], conf, later=later, bank=bank)
    gemm_sd = estimate(ratio, [own["T_g_cc"], own["T_g"]], ["concurrent gemm_ms", "gemm total_ms"], conf, later=later,
                       keep=True, row=ROW_RATIO)
    comm_sd = estimate(ratio, [own["T_c_cc"], own["T_c"]], ["concurrent comm_ms", "comm total_ms"], conf, later=later,
                       row=ROW_RATIO)
    ov_values = bank.cached_values(ov_key)  # SeriesBank.draw computed the series already
    if ov_values is None:
        ov_values = _overlap_series(run)
    if ov_values is None:
        overlap = missing("concurrent phase lacks gemm/comm start offsets or durations")
    else:
        s = bank.derived(ov_key, f"{run.id}:overlap", ov_values, run.rounds.get("concurrent"))
        overlap = estimate(lambda x: x, [s], ["overlap"], conf, later=later, row=ROW_SAME)
    drift, paired = _drift(run, base, own, b, conf, later=later)
    return _run_metrics_of(run, base, bank, ref, note, own, b, drift, paired, own_ideal, own_realized, own_fraction,
                           p_ideal, p_realized, p_fraction, gemm_sd, comm_sd, overlap)


def _run_metrics_of(run: MergedRun, base: MergedRun | None, bank: SeriesBank, ref: str, note: str | None,
                    own: dict[str, Series | None], b: dict[str, Series | None], drift: Estimate, paired: bool,
                    own_ideal: Estimate, own_realized: Estimate, own_fraction: Estimate, p_ideal: Estimate,
                    p_realized: Estimate, p_fraction: Estimate, gemm_sd: Estimate, comm_sd: Estimate,
                    overlap: Estimate) -> RunMetrics:
    metrics = RunMetrics(
        run=run, base=base, reference=ref, reference_note=note, gemm_drift=drift, paired=paired, visits=bank.visits,
        medians={k: (v.median if v else None) for k, v in own.items()},
        base_medians={k: (b[k].median if b[k] else None) for k in _BASE_MEDIAN_KEYS},
        ideal=p_ideal, realized=p_realized, fraction=p_fraction,
        own_ideal=own_ideal, own_realized=own_realized, own_fraction=own_fraction,
        gemm_slowdown=gemm_sd, comm_slowdown=comm_sd, overlap=overlap,
        n_reps={p: _size(own[k]) for p, k in _PHASE_TOTALS},   # run.n_reps(p): the total_ms series own holds
        by_visit=_visit_fractions(run, base if base is not None else run, bank.visit_rounds),
    )
    if not bank.defer_cis:
        bank.pending.flush()
    return metrics


def _size(series: Series | None) -> int:
    return 0 if series is None else series.values.size


def _plain(own: dict[str, Series | None], b: dict[str, Series | None], overlap: Series | None) -> bool:
    """Whether run_metrics may take _plain_estimates: every series it reads is there, with enough
    repetitions for an interval (MIN_REPS)."""
    if overlap is None or overlap.values.size < MIN_REPS:
        return False
    for s in own.values():
        if s is None or s.values.size < MIN_REPS:
            return False
    if b is not own:
        for k in _BASE_MEDIAN_KEYS:
            s = b[k]
            if s is None or s.values.size < MIN_REPS:
                return False
    return True


def _plain_estimates(bank: SeriesBank, own: dict[str, Series | None], b: dict[str, Series | None],
                     overlap: Series) -> tuple[Estimate, ...]:
    """run_metrics' estimates (own ideal, realized and fraction; primary ideal, realized and fraction;
    GEMM and comm slowdowns; overlap) where every series is there with enough repetitions (_plain)
    and the compiled kernel computes the intervals (PendingCIs.rows): what estimate() gives for each
    formula (the same values, rows and order: tests/test_analysis_speedup.py compares the two paths),
    in one function. With it (and SeriesBank.get_all, and the repetitions counted from the series
    at hand), run_metrics of a 10^6-sample report took 47-55 us per run instead of 81-89 on the
    development VM (3 runs each): estimate() pays for its generality (absent series, too few
    repetitions, replicates made in numpy) at every formula."""
    later = bank.pending
    ts, tg, tc, tcc = cast(Series, own["T_s"]), cast(Series, own["T_g"]), cast(Series, own["T_c"]), \
        cast(Series, own["T_cc"])
    gain = ideal(ts.median, tg.median, tc.median)
    own_ideal = _plain_ideal(bank, gain, ts, tg, tc, keep=b is own)
    own_realized = later.row(realized(ts.median, tcc.median), ROW_RATIO, False, ts, tcc, ts, ts)
    own_fraction = _plain_fraction(later, gain, ts, tg, tc, tcc, keep=b is own)
    if b is own:
        p_ideal, p_realized, p_fraction = own_ideal, own_realized, own_fraction
    else:
        bts, btg, btc = cast(Series, b["T_s"]), cast(Series, b["T_g"]), cast(Series, b["T_c"])
        base_gain = ideal(bts.median, btg.median, btc.median)
        p_ideal = _plain_ideal(bank, base_gain, bts, btg, btc, keep=True)
        p_realized = later.row(realized(bts.median, tcc.median), ROW_RATIO, False, bts, tcc, bts, bts)
        p_fraction = _plain_fraction(later, base_gain, bts, btg, btc, tcc, keep=True)
    tgcc, tccc = cast(Series, own["T_g_cc"]), cast(Series, own["T_c_cc"])
    gemm_sd = later.row(ratio(tgcc.median, tg.median), ROW_RATIO, True, tgcc, tg, tgcc, tgcc)
    comm_sd = later.row(ratio(tccc.median, tc.median), ROW_RATIO, False, tccc, tc, tccc, tccc)
    ov = later.row(overlap.median, ROW_SAME, False, overlap, overlap, overlap, overlap)
    return own_ideal, own_realized, own_fraction, p_ideal, p_realized, p_fraction, gemm_sd, comm_sd, ov


def _plain_ideal(bank: SeriesBank, gain, ts: Series, tg: Series, tc: Series, keep: bool) -> Estimate:
    """_ideal_estimate's row case (``gain``: ideal() of the medians), with its memo (runs compared
    with one base share its estimate)."""
    key = ("ideal", keep, ts.label, tg.label, tc.label)
    est = bank.memo.get(key)
    if est is None:
        est = bank.memo[key] = bank.pending.row(gain, ROW_IDEAL, keep, ts, tg, tc, ts)
    return est


def _plain_fraction(later: PendingCIs, gain, ts: Series, tg: Series, tc: Series, tcc: Series,
                    keep: bool) -> Estimate:
    """_fraction_estimate's row case (``gain``: ideal() of the medians): fraction(), operation for
    operation, with the ideal speedup it has."""
    if gain <= 1.0:
        return missing(_NO_GAIN)
    return later.row((realized(ts.median, tcc.median) - 1.0) / (gain - 1.0), ROW_FRACTION, keep, ts, tg, tc, tcc)


def _visit_fractions(run: MergedRun, ref: MergedRun,
                     visit_rounds: list[np.ndarray] | None) -> tuple[tuple[float, float], ...] | None:
    """Per visit: (ideal, fraction of ideal) from the medians of that visit's repetitions alone (T_s,
    T_g, T_c of ``ref``, T_cc of ``run``). Visits are independent replications of the whole suite,
    so their spread measures what moves a capture's numbers from one pass to the next."""
    if visit_rounds is None:
        return None
    out = []
    for rounds in visit_rounds:
        med = []
        for src, phase in ((ref, "serial"), (ref, "gemm"), (ref, "comm"), (run, "concurrent")):
            values, ids = src.series(phase, "total_ms"), src.rounds.get(phase)
            if values is None or ids is None or values.size != np.size(ids):
                return None
            chosen = values[np.isin(ids, rounds)]
            if chosen.size == 0:
                return None
            med.append(fast_median(chosen))
        ts, tg, tc, tcc = med
        gain = float(ideal(ts, tg, tc))
        out.append((gain, float(fraction(ts, tg, tc, tcc)) if gain > 1.0 else float("nan")))
    return tuple(out)


def _drift(run: MergedRun, base: MergedRun | None, own: dict, b: dict, conf: float,
           later: PendingCIs | None = None) -> tuple[Estimate, bool]:
    """(this run's GEMM alone / base's GEMM alone, whether the against-base ratios are round-paired)."""
    if base is None or base is run:
        return missing("base run (its own reference)" if base is run else "no base run to compare with"), \
            bool(own["T_s"] and own["T_s"].paired)
    # Paired only when the two runs were measured in the same rounds: runs of separate sweeps (a
    # resumed scenario) are both resampled by round, but by rounds they do not share.
    # Runs of one sweep usually hold the very same array (Group.round_ids shares it): no intersection then.
    ours, theirs = run.rounds.get("concurrent"), base.rounds.get("serial")
    shared = ours is not None and theirs is not None and (
        ours.size > 0 if ours is theirs else np.intersect1d(ours, theirs).size > 0)
    paired = shared and all(s is not None and s.paired for s in (own["T_cc"], b["T_s"]))
    if run.params.get("gemm_sms") is not None:
        return missing("the GEMM runs on an SM partition in this run: its time alone differs by design"), paired
    return estimate(ratio, [own["T_g"], b["T_g"]], ["gemm total_ms", "base gemm total_ms"], conf, later=later,
                    row=ROW_RATIO), paired


def find_base(group: Group, run: MergedRun) -> tuple[MergedRun | None, str | None]:
    """The scenario's base run in the same group, or None with the reason primary falls back to own."""
    return base_runs(group).get(run.name, (None, f"no base run for scenario {run.name!r} in this group"))


def base_runs(group: Group) -> dict[str, tuple[MergedRun | None, str | None]]:
    """Per scenario name: (its reference base run, None) or (None, why there is none)."""
    out: dict[str, tuple[MergedRun | None, str | None]] = {}
    order = group.variant_order.get("base", [])
    # Several base variants of a scenario: the first listed (the default variant) is the reference.
    bases = sorted((r for r in group.runs.values() if r.strategy == "base"), key=lambda r: order.index(r.variant))
    for r in bases:
        best, _ = out.get(r.name, (None, None))
        if best is not None:
            continue
        if r.complete:
            out[r.name] = (r, None)
        else:
            out[r.name] = (None, f"base run of {r.name!r} is incomplete (missing {', '.join(r.missing_phases)})")
    return out


# Estimates whose intervals analyze_group computes together (memory: CI_BATCH x n_resamples floats).
CI_BATCH = 2048
# Scenarios whose replicates analyze_group draws together (SeriesBank.draw; memory:
# their series x n_resamples doubles, about 30 MB for 64 scenarios of 4 runs).
PREPARE_SCENARIOS = 64
# ... and fewer where their round draws would pass this many bytes (n_resamples x rounds int64 per
# scenario: 40 MB for 2500 rounds, so 64 such scenarios held 2.5 GB, and the paired kernel's copy
# of them more).
PREPARE_BYTES = 256 << 20
# Batches of scenarios each of analyze_group's processes claims, about (scenario_batches), and the
# fewest scenarios in a batch where the batches shrink towards the end.
BATCHES_PER_JOB = 8
MIN_BATCH_SCENARIOS = 4


# analyze_group's jobs: AUTO lets auto_jobs choose. A group of fewer complete runs than
# AUTO_MIN_RUNS is analysed in one process: the analysis of the 10^6-sample benchmark's 10,000 runs
# takes about 1.5 s on one core, so 2000 runs take about 0.3 s, and the fork, the copied pages and
# the return trip would take most of what a second process saves.
AUTO = -1
AUTO_MIN_RUNS = 2000
MAX_AUTO_JOBS = 4
# Rows a run keeps at most (its fraction, own ideal and fraction, GEMM slowdown, and the scenario's
# shared ideal): the room a child's KeptRows gets per run.
KEPT_PER_RUN = 4


def auto_jobs(n_runs: int) -> int:
    """Processes for ``jobs=AUTO``: one for a small group or where fork is not available, else one
    per CPU this process may use, at most MAX_AUTO_JOBS."""
    if n_runs < AUTO_MIN_RUNS or not forked.can_fork():
        return 1
    return max(1, min(MAX_AUTO_JOBS, forked.available_cpus()))


def resolve_jobs(jobs: int, n_runs: int) -> int:
    """The processes ``jobs`` (a count, or AUTO) asks for ``n_runs`` complete runs."""
    return auto_jobs(n_runs) if jobs == AUTO else jobs


def analyze_group(group: Group, bank: SeriesBank, jobs: int = 1) -> list[RunMetrics]:
    """Metrics of every complete run of a group, scenario by scenario (first-appearance order).

    ``jobs``: processes sharing the scenarios (forked.py; AUTO: auto_jobs): the same numbers, in
    less wall time when the machine has idle cores (on a busy one, only more CPU time)."""
    by_scenario: dict[str, list[MergedRun]] = {}
    for run in group.runs.values():
        if run.complete:
            by_scenario.setdefault(run.name, []).append(run)
    names = list(by_scenario)
    n_runs = sum(len(runs) for runs in by_scenario.values())
    jobs = resolve_jobs(jobs, n_runs)
    bases = base_runs(group)
    if jobs < 2 or len(names) < 2:
        return _analyze_scenarios(group, bank, by_scenario, names, bases)
    if not forked.can_fork():
        raise ValueError("analysing in several processes needs the fork start method (not available here)")
    batches = scenario_batches(names, jobs)
    # Each child keeps its rows in a mapping of its own, made before the fork (keyed by the child's
    # number); this process keeps arrays of its own. A child may claim most of the batches, so its
    # mapping has room for twice its even share (at most all rows; pages are only allocated where
    # rows are written). Where the system refuses the mappings (strict memory overcommit), or one
    # is full, the rows come back pickled: the same rows, slower.
    rows = KEPT_PER_RUN * n_runs
    try:
        stores = {k: KeptRows(bank.settings.n_resamples, min(rows, -(-2 * rows // (jobs - 1)))) for k in range(1, jobs)}
    except OSError:
        stores = {}

    def start(child: int) -> None:
        bank.pending.kept_rows = stores.get(child)

    def work(at: int) -> list[RunMetrics]:
        return _analyze_scenarios(group, bank, by_scenario, batches[at], bases)

    with kernel_threads_shared(jobs):
        parts = forked.in_processes(len(batches), jobs, work, lambda metrics: _pack_metrics(metrics, stores),
                                    lambda packed: _unpack_metrics(group, packed, stores), start)
    return [m for part in parts for m in part]


def scenario_batches(names: list[str], jobs: int) -> list[list[str]]:
    """The scenarios in the consecutive batches that analyze_group's processes claim: at most
    PREPARE_SCENARIOS (drawn together), and few enough scenarios that each process claims about
    BATCHES_PER_JOB of them. Towards the end they shrink (guided scheduling: at most the scenarios
    left over 2 x jobs, and at least MIN_BATCH_SCENARIOS), because the last batches claimed decide
    how evenly the processes finish: with 40 batches of 64 scenarios for 10^6 samples, one process
    waited for the other's last batch for up to 0.1 s (dev VM)."""
    full = max(1, min(PREPARE_SCENARIOS, len(names) // (jobs * BATCHES_PER_JOB)))
    batches, at = [], 0
    while at < len(names):
        left = len(names) - at
        size = min(full, max(MIN_BATCH_SCENARIOS, -(-left // (2 * jobs))))
        batches.append(names[at:at + size])
        at += size
    return batches


def _analyze_scenarios(group: Group, bank: SeriesBank, by_scenario: dict[str, list[MergedRun]],
                       names: list[str], bases: dict[str, tuple[MergedRun | None, str | None]]) -> list[RunMetrics]:
    out = []
    bank.defer_cis = True
    # Ratios of resampled medians may divide by zero (ideal == 1): those replicates are flagged, not warned.
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            first = end = 0
            for at, name in enumerate(names):
                if at == end:
                    first, end = at, _batch_end(names, by_scenario, at, bank.settings.n_resamples)
                    part = names[first:end]
                    plans = bank.plan_scenarios(group.key, [(n, by_scenario[n]) for n in part], group.round_sweep)
                    drawn = bank.draw([(by_scenario[n], p) for n, p in zip(part, plans)])
                runs = by_scenario[name]
                default = (None, f"no base run for scenario {name!r} in this group")
                bank.begin_scenario(group.key, name, runs, group.round_sweep, plans[at - first])
                bank.adopt(drawn[at - first])
                for run in runs:
                    # A base run is its own reference (primary == own), whatever its variant.
                    base, why = (run, None) if run.strategy == "base" else bases.get(name, default)
                    if base is not None and base.link != run.link:
                        base, why = None, (f"not compared with base: base moves its bytes over {base.link}, this "
                                           f"run over {run.link} (runs over different links do different work)")
                    out.append(run_metrics(run, base, bank, why))
                bank.clear()  # the next scenario shares no series with this one
                if len(bank.pending) >= CI_BATCH:
                    bank.pending.flush()
            bank.pending.flush()
    finally:
        bank.defer_cis = False
    return out


def _batch_end(names: list[str], by_scenario: dict[str, list[MergedRun]], start: int, n_resamples: int) -> int:
    """Where the batch of scenarios drawn together from ``start`` ends: PREPARE_SCENARIOS of them, or
    fewer where their round draws (n_resamples x rounds each, int64) would pass PREPARE_BYTES. A
    scenario's rounds are taken from its first run's longest round list (its runs share one; a
    bound on memory needs no more, and every run's every phase took twice as long: 22 ms against
    11 ms for the 2500 scenarios of the 10^6-sample trace, dev VM)."""
    end, held = start, 0
    while end < len(names) and end - start < PREPARE_SCENARIOS:
        rounds = max((r.size for r in by_scenario[names[end]][0].rounds.values()), default=0)
        held += 8 * n_resamples * rounds
        if held > PREPARE_BYTES and end > start:
            break
        end += 1
    return end


# The RunMetrics fields that hold an Estimate, and the keys of its medians.
_ESTIMATE_FIELDS = tuple(f.name for f in fields(RunMetrics) if f.type == "Estimate")
_MEDIAN_KEYS = tuple(_METRIC_NAMES)
_estimates_of = attrgetter(*_ESTIMATE_FIELDS)
_medians_of, _base_medians_of = itemgetter(*_MEDIAN_KEYS), itemgetter(*_BASE_MEDIAN_KEYS)


@dataclass
class PackedMetrics:
    """RunMetrics as columns, for the trip from a forked child to the parent (which has the runs:
    they travel as ids). Pickled as objects, 5000 runs' metrics (some 130,000 Estimates, CIs and
    dicts) took 0.3-0.4 s to pickle and rebuild; as columns, about 0.25 s to pack and rebuild (the
    pickle itself a few milliseconds). Estimates shared by several runs (a scenario's ideal speedup)
    are one row of the table, and one object again after.
    Floats travel as float64 with None marked apart, so every value comes back exactly."""

    runs: list[tuple]              # per run: (id, base id, reference, note, paired, visits, by_visit)
    numbers: np.ndarray            # (runs, 6 + 3): medians, then base medians (NaN where None)
    numbers_none: np.ndarray       # which of those are None
    n_reps: np.ndarray             # (runs, 4) repetitions per phase (trace.PHASES)
    which: np.ndarray              # (runs, len(_ESTIMATE_FIELDS)): each field's row in the estimate table
    estimates: np.ndarray          # (estimates, 3): value, CI low, CI high (NaN where None)
    estimates_none: np.ndarray     # which of those are None
    reasons: list[str | None]      # each estimate's CI reason
    kept: dict[int, tuple[int, int] | np.ndarray]   # estimate -> (store, row) in a KeptRows, or its own array


def _floats(flat: list[float | None], width: int) -> tuple[np.ndarray, np.ndarray]:
    """``flat`` as rows of ``width`` float64 (NaN where None), and where it holds None."""
    objects = np.array(flat, dtype=object).reshape(-1, width)
    none = np.equal(objects, None)
    objects[none] = np.nan
    return objects.astype(float), none


def _pack_metrics(metrics: list[RunMetrics], stores: dict[int, KeptRows]) -> PackedMetrics:
    """The child's side: RunMetrics without their runs, as columns. Kept replicates written in a
    store are left there (named by store and row); others travel as arrays."""
    flat = [est for m in metrics for est in _estimates_of(m)]
    unique = {id(est): est for est in flat}              # first appearance order: the table's rows
    row_of = {key: at for at, key in enumerate(unique)}
    table = list(unique.values())
    kept: dict[int, tuple[int, int] | np.ndarray] = {}
    for key, store in stores.items():
        for row, est in store.hand_over():
            at = row_of.get(id(est))
            if at is not None:
                kept[at] = (key, row)
    for at, est in enumerate(table):
        if est.replicates is not None and at not in kept:
            kept[at] = est.replicates
    numbers, numbers_none = _floats(
        [x for m in metrics for x in (*_medians_of(m.medians), *_base_medians_of(m.base_medians))],
        len(_MEDIAN_KEYS) + len(_BASE_MEDIAN_KEYS))
    estimates, estimates_none = _floats([x for e in table for x in (e.value, e.ci.low, e.ci.high)], 3)
    return PackedMetrics(
        runs=[(m.run.id, m.base.id if m.base is not None else None, m.reference, m.reference_note, m.paired, m.visits,
               m.by_visit) for m in metrics],
        numbers=numbers, numbers_none=numbers_none,
        n_reps=np.array([[m.n_reps[p] for p in PHASES] for m in metrics], dtype=np.int64).reshape(-1, len(PHASES)),
        which=np.array([row_of[id(est)] for est in flat], dtype=np.int64).reshape(-1, len(_ESTIMATE_FIELDS)),
        estimates=estimates, estimates_none=estimates_none, reasons=[e.ci.reason for e in table], kept=kept)


def _unpack_metrics(group: Group, packed: PackedMetrics, stores: dict[int, KeptRows]) -> list[RunMetrics]:
    """The parent's side: the RunMetrics again, with the parent's runs and the stores' rows."""
    table = [Estimate(value, CI(low, high, reason)) for (value, low, high), reason in
             zip(_nones(packed.estimates, packed.estimates_none), packed.reasons)]
    for at, reps in packed.kept.items():
        table[at].replicates = stores[reps[0]].rows[reps[1]] if isinstance(reps, tuple) else reps
    n_medians = len(_MEDIAN_KEYS)
    out = []
    for (rid, bid, reference, note, paired, visits, by_visit), numbers, n_reps, which in zip(
            packed.runs, _nones(packed.numbers, packed.numbers_none), packed.n_reps.tolist(), packed.which.tolist()):
        out.append(RunMetrics(
            run=group.runs[rid], base=group.runs[bid] if bid is not None else None, reference=reference,
            reference_note=note, medians=dict(zip(_MEDIAN_KEYS, numbers[:n_medians])),
            base_medians=dict(zip(_BASE_MEDIAN_KEYS, numbers[n_medians:])), n_reps=dict(zip(PHASES, n_reps)),
            paired=paired, visits=visits, by_visit=by_visit,
            **{name: table[at] for name, at in zip(_ESTIMATE_FIELDS, which)}))
    return out


def _nones(values: np.ndarray, none: np.ndarray) -> list[list[float | None]]:
    """The rows of ``values`` as lists of floats, None where ``none`` says."""
    rows = values.tolist()
    for i, j in zip(*np.nonzero(none)):
        rows[i][j] = None
    return rows
