"""Bootstrap confidence intervals, reproducible and vectorized.

Two entry points:

``bootstrap_ci(data, statistic, ...)``
    A thin, safe wrapper of ``scipy.stats.bootstrap`` for any vectorized statistic of one or more
    independent samples (each resampled on its own). It handles the degenerate cases the way every
    c3prof output does: fewer than ``MIN_REPS`` values in a sample, or no spread at all, gives a
    ``CI`` with ``low = high = None`` and a ``reason``. Other modules (and other engineers) reuse it.

``bootstrap_medians(x, n_resamples, rng)``
    ``n_resamples`` bootstrap replicates of the median of ``x``, drawn from their *exact*
    distribution instead of by materializing resamples. This is what the speedup analysis uses:
    every c3prof ratio is a function of per-phase medians, and the phases are resampled independently,
    so the bootstrap replicate of a ratio is the ratio of independent median replicates.

Why the exact median sampler: scipy resamples ``n_resamples x n`` values per sample (about 30 ns
each). At 2000 resamples a trace with 10^6 repetitions would need ~10^9 draws, far over the
report's time budget. A bootstrap resample of ``x`` is ``x_(ceil(n U_i))`` for iid uniforms
``U_i``, so its r-th order statistic is ``x_(ceil(n U_(r)))`` with ``U_(r) ~ Beta(r, n - r + 1)``,
and given ``U_(r) = u`` the next one is ``u + (1 - u) Beta(1, n - r)``. For odd n the resample
median is ``x_(J)`` with ``J = ceil(n U_(r))``, one Beta draw; for even n (the mean of the two
middle order statistics, like ``np.median``) the two Betas are drawn. Same distribution as
resampling, in O(n log n + n_resamples) work. No repetitions are dropped and no cap changes the
interval. tests/test_analysis_stats.py checks the sampler against scipy.stats.bootstrap.

Only the rank J matters, and it is discrete: ``P(J <= j) = P(N_j >= r)`` with ``N_j ~ Binomial(n, j/n)``.
Up to ``_TABLE_MAX_N`` repetitions that distribution is tabled once per n (``_median_rank_table``)
and each replicate is one uniform through its alias table: the same distribution as the Beta route,
at a fraction of the cost (a numpy Beta draw is ~40 ns; a 10^6-sample report draws 1.4 * 10^8 of them).

Interval method: percentile. BCa needs a jackknife estimate of acceleration, and the jackknife is
inconsistent for the median (a non-smooth statistic); with 9-odd repetitions per phase its BCa
correction is noise. The percentile interval is transformation-respecting (a ratio's interval maps
through 1/x), which matters for speedups. ``bootstrap_ci`` still offers ``method="BCa"``.

Seeds: every quantity gets its own generator from ``rng_for(seed, *key)`` (the key names the trace
group, run, phase and series), so a report is reproducible and does not change when runs are
added, removed or processed in another order.
"""

from __future__ import annotations

import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable, Iterator, Sequence

import numpy as np

from c3prof.forked import available_cpus

try:  # the compiled kernels: the same numbers as the numpy code below, faster (_bootstrap.pyx)
    from c3prof.analysis import _bootstrap
except ImportError:  # not built (a source checkout without build_ext): the numpy code alone
    _bootstrap = None


# Threads the compiled kernels share independent series and interval rows with (the same numbers
# for any count; _bootstrap.set_threads). At most 4: past that, starting them costs more than a
# report's kernels save.
KERNEL_THREADS = max(1, min(4, available_cpus()))
if _bootstrap is not None:
    _bootstrap.set_threads(KERNEL_THREADS)


@contextmanager
def kernel_threads_shared(processes: int) -> Iterator[None]:
    """While ``processes`` processes run kernels at once (report -j), each uses its share of the threads."""
    if _bootstrap is None or processes < 2:
        yield
        return
    _bootstrap.set_threads(max(1, KERNEL_THREADS // processes))
    try:
        yield
    finally:
        _bootstrap.set_threads(KERNEL_THREADS)


DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 2412_14335  # the paper's arXiv number: any fixed value makes reports reproducible
MIN_REPS = 3  # fewer repetitions than this: no interval (a bootstrap of 1 or 2 values is not one)
# scipy.stats.bootstrap materializes batch x n values per sample; keep one batch under ~16 MB.
_MAX_BATCH_VALUES = 2_000_000


@dataclass(frozen=True)
class CI:
    """A confidence interval, or ``None`` bounds with the reason there is none."""

    low: float | None
    high: float | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.low is not None

    def as_list(self) -> list[float] | None:
        return None if self.low is None else [self.low, self.high]

    def contains(self, x: float, rel: float = 1e-12) -> bool:
        if self.low is None:
            return False
        slack = rel * max(abs(self.low), abs(self.high), abs(x))
        return self.low - slack <= x <= self.high + slack


def no_ci(reason: str) -> CI:
    return CI(None, None, reason)


_NO_SPREAD_CI = no_ci("no spread: the resampled statistic is constant (identical repetitions)")


def key_digest(*key: object) -> int:
    """The 32-bit word that names a quantity's generator; crc32 (not Python's salted hash) keeps it
    stable across runs."""
    try:   # names are strings (a report digests some 70,000 of them): joined as they are, no str() each
        text = "\x1f".join(key)   # type: ignore[arg-type]
    except TypeError:
        text = "\x1f".join(str(k) for k in key)
    return zlib.crc32(text.encode("utf-8"))


def rng_for(seed: int, *key: object) -> np.random.Generator:
    """A generator for one named quantity: PCG64 seeded with the words [seed, key_digest(*key)]."""
    digest = key_digest(*key)
    # What np.random.default_rng(seed) builds, the same stream, without its wrapper's overhead (a
    # report makes one generator per series: tens of thousands).
    # The entropy as a uint32 array: the same SeedSequence words as the list [seed, digest] (each
    # below 2**32 is one word), without numpy's per-element conversion of a list.
    return np.random.Generator(np.random.PCG64(np.array([int(seed) & 0xFFFFFFFF, digest], dtype=np.uint32)))


# ------------------------------------------------------------------------------------------------
# Exact bootstrap distribution of the median
# ------------------------------------------------------------------------------------------------

# Up to this many repetitions the sampler draws the median's *rank* from a table of its exact
# probabilities (built once per n, O(n^2) work); above it, from Beta draws (O(1) setup, but about
# 40 ns per draw, which dominated a 10^6-sample report).
_TABLE_MAX_N = 2048


def _order_index(u: np.ndarray, n: int) -> np.ndarray:
    # Resample value x_(ceil(n u)) (1-based); Beta draws lie in (0, 1) but guard the ends anyway.
    return np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1)


def sorted_median(xs: np.ndarray) -> float:
    """Median of an already sorted array (what np.median computes, without sorting again)."""
    n = xs.size
    return float(xs[n // 2]) if n % 2 else float(0.5 * (xs[n // 2 - 1] + xs[n // 2]))


def sorted_row_medians(rows: np.ndarray) -> np.ndarray:
    """sorted_median of each row of an (S, n) array whose rows are sorted, in one operation."""
    n = rows.shape[1]
    return rows[:, n // 2] if n % 2 else 0.5 * (rows[:, n // 2 - 1] + rows[:, n // 2])


def sorted_by_length(arrays: Sequence[np.ndarray]) -> Iterator[tuple[list[int], np.ndarray]]:
    """The 1-D arrays grouped by length: per length, the indices of its arrays and their values as
    one (S, n) array with each row sorted. Sorting the rows of one length in one call, instead of
    each array on its own, is what makes 10^5 short series cheap."""
    by_size: dict[int, list[int]] = {}
    for i, a in enumerate(arrays):
        by_size.setdefault(a.size, []).append(i)
    for where in by_size.values():
        yield where, np.sort(np.stack([arrays[i] for i in where]), axis=1)


def fast_median(x: np.ndarray) -> float:
    """np.median of a 1-D array of finite values, without np.median's per-call overhead (several
    times the work on the short series of a trace, called once per run)."""
    return sorted_median(np.sort(x))


def _binomial_pmf_rows(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """P(N_j = k) and P(N_j >= k) for N_j ~ Binomial(n, j/n), j = 0..n, as two (n+1,) arrays.

    N_j counts the resampled values that fall among the j smallest (each of the n draws does so
    with probability j/n). Log-factorials from a cumulative sum keep this scipy-free (see below)."""
    logfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    ks = np.arange(k, n + 1)
    p = np.arange(n + 1) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        logp, log1p = np.log(p), np.log1p(-p)
        terms = (logfact[n] - logfact[ks] - logfact[n - ks])[None, :] \
            + ks[None, :] * logp[:, None] + (n - ks)[None, :] * log1p[:, None]
    pmf = np.exp(np.nan_to_num(terms, nan=-np.inf))        # 0 * log(0) terms: probability 0 or 1 below
    pmf[0] = 0.0                                           # j = 0: N_0 = 0 < k
    pmf[n] = 0.0
    pmf[n, -1] = 1.0                                       # j = n: N_n = n
    return pmf[:, 0], np.minimum(pmf.sum(axis=1), 1.0)


@lru_cache(maxsize=64)
def _median_rank_table(n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(cdf of J1, P(J2 = J1 | J1)) for the resample median's order-statistic ranks, J in 1..n.

    With r = ceil(n/2) (odd n) or n/2 (even n), J1 is the rank of the resample's r-th smallest value:
    P(J1 <= j) = P(N_j >= r). For even n the median also needs J2, the rank of the (r+1)-th:
    J2 > J1 = j exactly when N_{j-1} < r = N_j, whose probability is P(N_j = r) (1 - ((j-1)/j)^r)
    (given N_j = r the j-1 smallest hold fewer than r of those r draws)."""
    r = (n + 1) // 2 if n % 2 else n // 2
    eq, tail = _binomial_pmf_rows(n, r)
    cdf = np.maximum.accumulate(tail[1:])                  # P(J1 <= j), j = 1..n; rounding kept monotone
    cdf[-1] = 1.0
    if n % 2:
        return cdf, None
    p_j = np.diff(np.concatenate([[0.0], cdf]))
    j = np.arange(1, n + 1)
    split = eq[1:] * (1.0 - ((j - 1) / j) ** r)            # P(J1 = j, J2 > j)
    with np.errstate(divide="ignore", invalid="ignore"):
        same = np.where(p_j > 0, 1.0 - split / p_j, 1.0)
    return cdf, np.clip(same, 0.0, 1.0)


@lru_cache(maxsize=64)
def _median_rank_alias(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of J1's distribution: J1 - 1 = i with probability ``keep[i]``, else
    ``alias[i]``, for i uniform in 0..n-1. One comparison per draw instead of a binary search of the
    cdf, whose unpredictable branches made it the slowest step of a large report."""
    cdf, _ = _median_rank_table(n)
    scaled = list(np.diff(np.concatenate([[0.0], cdf])) * n)
    keep, alias = np.ones(n), np.arange(n)
    small = [i for i, p in enumerate(scaled) if p < 1.0]
    large = [i for i, p in enumerate(scaled) if p >= 1.0]
    while small and large:  # Vose's construction
        s, big = small.pop(), large.pop()
        keep[s], alias[s] = scaled[s], big
        scaled[big] -= 1.0 - scaled[s]
        (small if scaled[big] < 1.0 else large).append(big)
    return keep, alias  # entries left in either list keep probability 1 (rounding leftovers)


def _tabled_medians(xs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Median replicates from the exact rank distribution, drawn through its alias table."""
    u, u2 = _rank_uniforms(xs.size, n_resamples, rng)
    return tabled_medians_from_uniforms(xs[None, :], u[None, :], None if u2 is None else u2[None])[0]


def _rank_uniforms(n: int, n_resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """The uniforms one series' tabled median replicates consume, in the generator's order: (B,) for
    J1, and for even n (2, B) more for J2."""
    return rng.random(n_resamples), (rng.random((2, n_resamples)) if n % 2 == 0 else None)


def tabled_medians_from_uniforms(xs: np.ndarray, u: np.ndarray, u2: np.ndarray | None) -> np.ndarray:
    """(S, B) median replicates of S sorted series of one length n (rows of ``xs``, (S, n)), from their
    uniforms: ``u`` (S, B), and for even n ``u2`` (S, 2, B) (what _rank_uniforms draws per series).
    One call serves many series; elementwise it is the per-series computation, so the replicates are
    bitwise those of bootstrap_medians given the same generators."""
    return medians_from_ranks(xs, _alias_draw(u, xs.shape[1]), u2)


def medians_from_ranks(xs: np.ndarray, j1: np.ndarray, u2: np.ndarray | None,
                       out: np.ndarray | None = None) -> np.ndarray:
    """(S, B) median replicates of the sorted rows of ``xs`` (S, n) from J1 - 1 of each replicate
    (``j1``, (S, B)) and, for even n, the uniforms ``u2`` (S, 2, B) that place J2; written into
    ``out`` (C-contiguous float64, (S, B)) when given, else into a new array."""
    s, n = xs.shape
    _, same = _median_rank_table(n)
    out = np.empty(j1.shape) if out is None else out
    if same is not None and _bootstrap is not None and j1.dtype == np.intp and u2 is not None:
        # the same values, without numpy's dozen (S, B) temporaries
        _bootstrap.even_medians(np.ascontiguousarray(xs, dtype=float), np.ascontiguousarray(j1),
                                np.ascontiguousarray(u2, dtype=float), same, out)
        return out
    flat = xs.ravel()
    row = (np.arange(s) * n)[:, None]
    if same is None:
        return np.take(flat, row + j1, out=out)
    # Even n. Given J2 > J1 = j (N_j = r): the other n - r draws fall uniformly above the j smallest,
    # so J2 - j is the ceiling of (n - j) times the minimum of n - r uniforms, 1 - W^(1/(n-r)).
    jj = j1 + 1                                             # 1-based J1
    step = np.ceil((n - jj) * -np.expm1(np.log(u2[:, 1]) / (n - n // 2))).astype(np.int64)
    j2 = np.where(u2[:, 0] < same[j1], j1, np.clip(j1 + np.maximum(step, 1), 0, n - 1))
    return np.multiply(0.5, flat[row + j1] + flat[row + j2], out=out)


def _alias_draw_exact(u: np.ndarray, n: int) -> np.ndarray:
    """J1 - 1 from uniforms through the alias table: cell floor(u n) kept with probability keep[cell]
    (the fraction of u n below it), else its alias."""
    keep, alias = _median_rank_alias(n)
    scaled = u * n
    cell = scaled.astype(np.intp)                          # uniform in 0..n-1; the fraction is uniform too
    return np.where(scaled - cell < keep[cell], cell, alias[cell])


_BUCKET_BITS = 16


@lru_cache(maxsize=64)
def _alias_buckets(n: int) -> np.ndarray:
    """_alias_draw_exact's answer for every u in each of 2^16 equal buckets of [0, 1), or -1 where it
    is not the same for the whole bucket (a cell boundary or a keep threshold falls inside it).

    u -> fl(u n) is monotone, so over a bucket the scaled value lies between those of its lowest and
    highest double, and the answer is fixed when both ends fall in one cell on the same side of that
    cell's keep threshold: the same floating-point operations as the draw itself, so the table is
    exact, not an approximation. About 2n of the 65536 buckets are ambiguous."""
    keep, alias = _median_rank_alias(n)
    k = 1 << _BUCKET_BITS
    first = np.arange(k) / k                                  # exact: k is a power of two
    last = np.nextafter((np.arange(k) + 1) / k, 0.0)          # the largest double of each bucket
    lo, hi = first * n, last * n
    cell = lo.astype(np.intp)
    same_cell = hi.astype(np.intp) == cell
    kept_all, kept_none = hi - cell < keep[cell], lo - cell >= keep[cell]
    table = np.where(kept_all, cell, alias[cell])
    return np.where(same_cell & (kept_all | kept_none), table, -1)


# Draws of one n made by the arithmetic before its bucket table is built: the table costs about as
# much as 10^5 draws, so an ingest with a few hundred short series of many lengths never builds one,
# and a report with 10^8 draws of a few lengths builds each once.
_DRAWS_BEFORE_TABLE = 1 << 18
_exact_draws: dict[int, int] = {}


def _alias_draw(u: np.ndarray, n: int) -> np.ndarray:
    """_alias_draw_exact's values, mostly by one lookup of u's bucket (cheaper than the alias
    arithmetic over 10^8 draws); the few draws in ambiguous buckets get the arithmetic itself."""
    seen = _exact_draws.get(n, 0)
    if seen < _DRAWS_BEFORE_TABLE:
        _exact_draws[n] = seen + u.size
        return _alias_draw_exact(u, n)
    j1 = _alias_buckets(n).take((u * (1 << _BUCKET_BITS)).astype(np.intp))
    odd = np.flatnonzero(j1 < 0)
    if odd.size:
        j1.flat[odd] = _alias_draw_exact(u.flat[odd], n)
    return j1


def many_bootstrap_medians(xs: np.ndarray, rngs: Sequence[np.random.Generator], n_resamples: int) -> np.ndarray:
    """bootstrap_medians for S sorted series of one length (rows of ``xs``), series i drawing from
    ``rngs[i]``: the same (S, B) replicates, with the arithmetic done once for all of them."""
    s, n = xs.shape
    if n <= 1 or n > _TABLE_MAX_N:
        return np.stack([bootstrap_medians(x, n_resamples, g, presorted=True) for x, g in zip(xs, rngs)])
    u = np.empty((s, n_resamples))
    u2 = np.empty((s, 2, n_resamples)) if n % 2 == 0 else None
    for i, g in enumerate(rngs):  # each generator's draws in _rank_uniforms' order
        g.random(out=u[i])
        if u2 is not None:
            g.random(out=u2[i])
    return tabled_medians_from_uniforms(xs, u, u2)


EVEN_ROWS = 64   # keyed_bootstrap_medians' series per pass for even n (4 kernel threads' worth)


def _seed_words(seed: int, keys: Sequence[tuple]) -> tuple[int, np.ndarray]:
    """The words a keyed kernel seeds each generator with: rng_for's seed word and each key's digest."""
    return int(seed) & 0xFFFFFFFF, np.array([key_digest(*k) for k in keys], dtype=np.uint32)


def keyed_bootstrap_medians(xs: np.ndarray, seed: int, keys: Sequence[tuple], n_resamples: int) -> np.ndarray:
    """many_bootstrap_medians with series i drawing from ``rng_for(seed, *keys[i])``: the same (S, B)
    replicates, from the compiled kernel when it is built (it runs those generators itself, without
    creating them in Python), else from numpy."""
    s, n = xs.shape
    if _bootstrap is None or n <= 1 or n > _TABLE_MAX_N:
        return many_bootstrap_medians(xs, [rng_for(seed, *k) for k in keys], n_resamples)
    xs = np.ascontiguousarray(xs, dtype=float)
    word, digests = _seed_words(seed, keys)
    keep, alias = _median_rank_alias(n)
    if n % 2:
        out = np.empty((s, n_resamples))
        _bootstrap.odd_tabled_medians(xs, word, digests, keep, alias, out)
        return out
    # Even n: the ranks and further uniforms of EVEN_ROWS series at a time, then their medians, in
    # buffers reused (3 MB for 2000 replicates) instead of (S, B) and (S, 2, B) arrays that the
    # allocator maps afresh and faults in for every call (86 MB for a batch of 64 scenarios).
    out = np.empty((s, n_resamples))
    rows = min(s, EVEN_ROWS)
    j1, u2 = np.empty((rows, n_resamples), dtype=np.intp), np.empty((rows, 2, n_resamples))
    for lo in range(0, s, rows):
        k = min(s, lo + rows) - lo
        _bootstrap.tabled_ranks(n, word, digests[lo:lo + k], keep, alias, j1[:k], u2[:k])
        medians_from_ranks(xs[lo:lo + k], j1[:k], u2[:k], out[lo:lo + k])
    return out


def bootstrap_medians(x, n_resamples: int, rng: np.random.Generator, *, presorted: bool = False) -> np.ndarray:
    """``n_resamples`` replicates of ``median(resample of x)``, from their exact distribution."""
    xs = np.asarray(x, dtype=float).ravel()
    if not presorted:
        xs = np.sort(xs)
    n = xs.size
    if n == 0:
        raise ValueError("bootstrap_medians needs at least one value")
    if n == 1:
        return np.full(n_resamples, xs[0])
    if n <= _TABLE_MAX_N:
        return _tabled_medians(xs, n_resamples, rng)
    return _beta_medians(xs, n_resamples, rng)


def _beta_medians(xs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The same distribution through Beta draws of the order statistics' uniforms (large n)."""
    n = xs.size
    if n % 2:
        # Odd n: the median is the single order statistic x_(J), J = ceil(n U_(r)), r = (n+1)/2,
        # U_(r) ~ Beta(r, n-r+1). numpy draws the Beta directly (no scipy import on this path:
        # importing scipy.special costs about 0.3 s, more than a whole ingest of a 35 MB trace).
        r = (n + 1) // 2
        return xs[_order_index(rng.beta(r, n - r + 1, n_resamples), n)]
    # Even n: the mean of x_(ceil(n U_(r))) and x_(ceil(n U_(r+1))), r = n/2, U_(r) ~ Beta(r, n-r+1) and
    # U_(r+1) = U_(r) + (1 - U_(r)) V with V ~ Beta(1, n-r) = 1 - W^(1/(n-r)), W uniform.
    r = n // 2
    u1 = rng.beta(r, n - r + 1, n_resamples)
    v = -np.expm1(np.log(rng.random(n_resamples)) / (n - r))
    u2 = u1 + (1.0 - u1) * v
    return 0.5 * (xs[_order_index(u1, n)] + xs[_order_index(u2, n)])


# ------------------------------------------------------------------------------------------------
# Round-paired (cluster) bootstrap of medians
# ------------------------------------------------------------------------------------------------

def draw_round_counts(n_rounds: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n_rounds) multiplicities: each replicate draws ``n_rounds`` rounds with replacement.

    One draw serves every series of the runs measured in those rounds, so a ratio of two series
    (T_s of base over T_cc of another strategy) is resampled *paired by round*: slow drift of the
    GPU that moves both sides of a round together cancels in the ratio instead of widening, or
    worse biasing, it.
    """
    picks = rng.integers(0, n_rounds, size=(n_resamples, n_rounds), dtype=np.int64)
    counts = np.empty((n_resamples, n_rounds), dtype=np.int64)
    if _bootstrap is not None:  # the same counts (a report draws them once per scenario: 0.3 ms in numpy)
        _bootstrap.round_counts(picks, counts)
        return counts
    counts.fill(0)
    np.add.at(counts, (np.arange(n_resamples)[:, None], picks), 1)
    return counts


def keyed_round_counts(n_rounds: Sequence[int], n_resamples: int, seed: int,
                       keys: Sequence[tuple]) -> list[np.ndarray]:
    """``draw_round_counts(n_rounds[i], n_resamples, rng_for(seed, *keys[i]))`` for every i: the same
    counts. The compiled kernel seeds each generator in C and shares the scenarios out to threads
    (a report draws 2000 x 25 rounds for each of thousands of scenarios: most of planning them)."""
    if _bootstrap is None or any(not 1 <= r < 2**32 for r in n_rounds):
        return [draw_round_counts(r, n_resamples, rng_for(seed, *k)) for r, k in zip(n_rounds, keys)]
    counts = [np.empty((n_resamples, r), dtype=np.int64) for r in n_rounds]
    _bootstrap.keyed_round_counts(*_seed_words(seed, keys), counts)
    return counts


class RoundTable:
    """A scenario's one-visit round draw as the compiled kernels make and read it (keyed_round_draws):
    ``table`` holds its counts transposed, (rounds, n_resamples) int8. round_median_tables reads it
    as it is; what needs the (n_resamples, rounds) int64 counts of draw_round_counts (the numpy
    code, a series the int8 sums cannot hold) gets them from ``counts``, the same numbers."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    @cached_property
    def counts(self) -> np.ndarray:
        return np.ascontiguousarray(self.table.T, dtype=np.int64)


RoundDraw = np.ndarray | RoundTable   # a scenario's round counts: as draw_round_counts gives them, or its RoundTable


def round_counts_of(draw: RoundDraw) -> np.ndarray:
    """The (n_resamples, rounds) int64 counts of a round draw, whichever form it has."""
    return draw.counts if isinstance(draw, RoundTable) else draw


def keyed_round_draws(n_rounds: Sequence[int], n_resamples: int, seed: int, keys: Sequence[tuple]) -> list[RoundDraw]:
    """keyed_round_counts' draws, as RoundTables where the compiled kernel can make them (up to
    127 rounds: every count fits int8), all in one allocation: the kernel counts each draw straight
    into the layout paired_medians' kernel reads, instead of int64 counts that it transposes first
    (a report of 2500 scenarios draws 2000 x 25 rounds for each: 1 GB of int64 written and read
    back, about a fifth of the round medians' time). Elsewhere the int64 counts themselves."""
    if _bootstrap is None or not n_rounds or any(not 1 <= r <= _bootstrap.MAX_TABLE_ROUNDS for r in n_rounds):
        return list(keyed_round_counts(n_rounds, n_resamples, seed, keys))
    buffer = np.empty(sum(n_rounds) * n_resamples, dtype=np.int8)
    ends = np.cumsum(n_rounds) * n_resamples
    tables = [buffer[end - r * n_resamples:end].reshape(r, n_resamples) for r, end in zip(n_rounds, ends.tolist())]
    _bootstrap.keyed_round_tables(*_seed_words(seed, keys), tables)
    return [RoundTable(t) for t in tables]


def draw_visit_picks(n_visits: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n_visits) multiplicities: each replicate draws ``n_visits`` visits with replacement."""
    return rng.multinomial(n_visits, np.full(n_visits, 1.0 / n_visits), size=n_resamples)


def draw_visit_round_counts(visit_of_round: np.ndarray, n_resamples: int, rng: np.random.Generator,
                            visit_picks: np.ndarray | None = None) -> np.ndarray:
    """(n_resamples, n_rounds) multiplicities of a two-stage (visit, then round) cluster bootstrap.

    A scenario measured in several visits (``capture --visits``, or several captures pooled) has
    rounds nested in visits. Each replicate draws as many visits as there are, with replacement,
    then, for every visit drawn, as many of its rounds as it has, with replacement. Drift between
    visits (minutes apart) then moves the replicates, as it moves a new capture's estimate; drawing
    rounds alone would average it away. With one visit this is ``draw_round_counts``.

    ``visit_picks`` (n_resamples, n_visits), from ``draw_visit_picks``, lets several scenarios share
    the first stage: visit v of every scenario is the same pass over the suite, so a shift of the
    whole GPU between passes moves all scenarios together, and a suite mean must see it move
    together rather than average it away over independently drawn scenarios.
    """
    visit_of_round = np.asarray(visit_of_round)
    visits = np.unique(visit_of_round)
    if visits.size < 2:
        return draw_round_counts(visit_of_round.size, n_resamples, rng)
    picked = draw_visit_picks(visits.size, n_resamples, rng) if visit_picks is None else visit_picks   # (B, V)
    if picked.shape != (n_resamples, visits.size):
        raise ValueError(f"visit_picks has shape {picked.shape}, expected {(n_resamples, visits.size)}")
    counts = np.zeros((n_resamples, visit_of_round.size), dtype=np.int64)
    for j, v in enumerate(visits):
        cols = np.flatnonzero(visit_of_round == v)
        draws = picked[:, j] * cols.size            # rounds drawn from visit v in each replicate
        counts[:, cols] = rng.multinomial(draws, np.full(cols.size, 1.0 / cols.size))
    return counts


def round_resampled_medians(values: np.ndarray, round_index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Median of each replicate in which every value of round r appears ``counts[b, r]`` times.

    Same convention as ``np.median`` (mean of the two middle values for an even count). A replicate
    that drew none of this series' rounds gives NaN (its interval is then refused, with the reason).
    """
    return paired_medians([np.asarray(values, dtype=float)], [np.asarray(round_index)], [counts], [0])[1][0]


def paired_medians(values: list[np.ndarray], cols: list[np.ndarray], draws: list[RoundDraw],
                   which: list[int]) -> tuple[list[float], np.ndarray]:
    """(medians, replicates (S, B)) of S series, each resampled by round: series i is ``values[i]``,
    each value weighted by the counts of ``draws[which[i]]`` in its columns ``cols[i]``
    (round_resampled_medians, row by row; a draw per scenario, as counts or as a RoundTable). With
    the compiled kernel, one call for all of them."""
    sizes = [v.size for v in values]
    flat = np.concatenate(values) if values else np.empty(0)
    b = _replicates_of(draws[0]) if draws else 0
    if _paired_kernel_applies(flat, sizes, draws):
        starts = np.zeros(len(values) + 1, dtype=np.intp)
        np.cumsum(sizes, out=starts[1:])
        out, medians = np.empty((len(values), b)), np.empty(len(values))
        series = (flat, np.concatenate(cols).astype(np.intp, copy=False), starts, np.asarray(which, dtype=np.intp))
        # False: the sums would not fit the kernel's integers (int8 for tables, int32 for counts);
        # then the counts in int64, then numpy below.
        if all(isinstance(d, RoundTable) for d in draws) and \
                _bootstrap.round_median_tables(*series, [d.table for d in draws], out, medians):
            return medians.tolist(), out
        if _bootstrap.round_median_rows(*series, [np.ascontiguousarray(round_counts_of(d)) for d in draws],
                                        out, medians):
            return medians.tolist(), out
    draws = [round_counts_of(d) for d in draws]
    rows, medians = [], []
    for v, c, k in zip(values, cols, which):
        order = np.argsort(v, kind="stable")
        medians.append(sorted_median(v[order]))
        rows.append(_round_resampled_medians_numpy(v[order], np.asarray(c)[order], draws[k]))
    return medians, np.stack(rows) if rows else np.empty((0, b))


def _paired_kernel_applies(flat: np.ndarray, sizes: list[int], draws: list[RoundDraw]) -> bool:
    """Whether round_median_rows may serve these series: built, every series non-empty and finite,
    int64 draws (or RoundTables) of one B. (Weights too large for its sums it refuses itself.)"""
    if _bootstrap is None or not sizes or not all(sizes) or not draws:
        return False
    b = _replicates_of(draws[0])
    if any(not isinstance(d, RoundTable) and (d.dtype != np.int64 or d.ndim != 2) or _replicates_of(d) != b
           for d in draws):
        return False
    return bool(np.isfinite(flat).all())


def _replicates_of(draw: RoundDraw) -> int:
    return draw.table.shape[1] if isinstance(draw, RoundTable) else draw.shape[0]


def _round_resampled_medians_numpy(v: np.ndarray, cols: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """round_resampled_medians from the sorted values ``v`` and their columns of ``counts``."""
    w = counts[:, cols]                                      # (B, n) weight of each sorted value
    cw = np.cumsum(w, axis=1)
    total = cw[:, -1]
    lo_rank = (total + 1) // 2                              # 1-based ranks of the two middle values
    hi_rank = total // 2 + 1
    i_lo = np.minimum((cw < lo_rank[:, None]).sum(axis=1), v.size - 1)
    i_hi = np.minimum((cw < hi_rank[:, None]).sum(axis=1), v.size - 1)
    out = 0.5 * (v[i_lo] + v[i_hi])
    out[total == 0] = np.nan
    return out


# ------------------------------------------------------------------------------------------------
# Intervals from replicates
# ------------------------------------------------------------------------------------------------

def percentile_ci(replicates: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> CI:
    """Percentile interval of bootstrap replicates, refusing degenerate or unstable distributions."""
    reps = np.asarray(replicates, dtype=float).ravel()
    if _bootstrap is not None:  # the same interval, from the compiled kernel where it applies
        return percentile_cis_of_rows([np.ascontiguousarray(reps)], confidence)[0]
    return _percentile_ci_numpy(reps, confidence)


def _percentile_ci_numpy(reps: np.ndarray, confidence: float) -> CI:
    """percentile_ci in numpy (without the compiled kernel)."""
    if reps.size == 0:
        return _NO_SPREAD_CI
    low, high = reps.min(), reps.max()  # NaN or inf anywhere shows in these: no separate isfinite pass
    if not (np.isfinite(low) and np.isfinite(high)):
        bad = int((~np.isfinite(reps)).sum())
        return no_ci(f"statistic undefined in {bad} of {reps.size} resamples")
    if low == high:
        return _NO_SPREAD_CI
    alpha = (1.0 - confidence) / 2.0
    return CI(*_linear_quantiles(reps, (alpha, 1.0 - alpha)))


def percentile_cis(replicates: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> list[CI]:
    """percentile_ci of every row of ``replicates`` (E, B), the same CIs, from one pass over the block
    (one call per row cost more in numpy overhead than the row's arithmetic)."""
    reps = np.asarray(replicates, dtype=float)
    e, b = reps.shape
    if b == 0:
        return [_NO_SPREAD_CI] * e
    low, high = reps.min(axis=1), reps.max(axis=1)
    finite = np.isfinite(low) & np.isfinite(high)
    spread = finite & (low != high)
    alpha = (1.0 - confidence) / 2.0
    # Every row's quantiles, those without an interval included (a few; their NaN or constant values
    # partition like any others): cheaper than copying out the rows that have one.
    with np.errstate(invalid="ignore"):  # inf - inf in a row without an interval: its NaN is not used
        lows, highs = (q.tolist() for q in _linear_quantiles_rows(reps, (alpha, 1.0 - alpha)))
    out: list[CI] = []
    for i, (ok, fin) in enumerate(zip(spread.tolist(), finite.tolist())):
        if ok:
            out.append(CI(lows[i], highs[i]))
        elif not fin:
            bad = int((~np.isfinite(reps[i])).sum())
            out.append(no_ci(f"statistic undefined in {bad} of {b} resamples"))
        else:
            out.append(_NO_SPREAD_CI)
    return out


def percentile_cis_of_rows(rows: Sequence[np.ndarray], confidence: float = DEFAULT_CONFIDENCE) -> list[CI]:
    """percentile_ci of every replicate array in ``rows`` (1-D float64, of any lengths): the same CIs.
    Rows of one length share one call; the compiled kernel reads them in place (no stacked copy)."""
    by_size: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        by_size.setdefault(r.size, []).append(i)
    out: list[CI] = [_NO_SPREAD_CI] * len(rows)
    for b, idx in by_size.items():
        positions = _fast_positions(b, confidence)
        group = [rows[i] for i in idx]
        if _bootstrap is None or positions is None \
                or not all(r.dtype == np.float64 and r.ndim == 1 and r.flags.c_contiguous for r in group):
            cis = percentile_cis(np.stack(group), confidence)
        else:
            cis = _kernel_cis(group, b, *positions)
        for i, ci in zip(idx, cis):
            out[i] = ci
    return out



def _kernel_cis(rows: list[np.ndarray], b: int, p_lo: float, p_hi: float) -> list[CI]:
    """percentile_cis' intervals and reasons, from _bootstrap.percentile_pairs."""
    e = len(rows)
    low, high, status, bad = np.empty(e), np.empty(e), np.empty(e, dtype=np.int8), np.empty(e, dtype=np.int64)
    _bootstrap.percentile_pairs(rows, p_lo, p_hi, low, high, status, bad)
    return _cis_from_status(low, high, status, bad, b)


def _cis_from_status(low: np.ndarray, high: np.ndarray, status: np.ndarray, bad: np.ndarray, b: int) -> list[CI]:
    """The CIs (and reasons) the kernels' outputs stand for."""
    out: list[CI] = []
    for lo, hi, st, nb in zip(low.tolist(), high.tolist(), status.tolist(), bad.tolist()):
        if st == _bootstrap.OK:
            out.append(CI(lo, hi))
        elif st == _bootstrap.NOT_FINITE:
            out.append(no_ci(f"statistic undefined in {nb} of {b} resamples"))
        else:
            out.append(_NO_SPREAD_CI)
    return out


def _fast_positions(b: int, confidence: float) -> tuple[float, float] | None:
    """The interval's positions (q * (B - 1), as percentile_cis_of_rows computes them) when the
    kernels' fast case holds for B replicates (floor(p_lo) + 1 < floor(p_hi) < B - 1), else None."""
    alpha = (1.0 - confidence) / 2.0
    last = b - 1
    p_lo, p_hi = alpha * last, (1.0 - alpha) * last
    return (p_lo, p_hi) if int(p_lo) + 1 < int(p_hi) < last else None


def row_intervals_apply(n_resamples: int, confidence: float) -> bool:
    """Whether row_intervals can serve B = n_resamples replicates at this confidence: the kernel
    built and its fast case (otherwise the replicate rows are computed and passed to
    percentile_cis_of_rows)."""
    return _bootstrap is not None and _fast_positions(n_resamples, confidence) is not None


# The kinds of row row_intervals computes (_bootstrap.estimate_rows): a; a / b; a / max(b, c) (the
# ideal speedup); (a / d - 1) / (a / max(b, c) - 1) (the fraction of ideal).
ROW_SAME, ROW_RATIO, ROW_IDEAL, ROW_FRACTION = 0, 1, 2, 3


def row_intervals(series: list[np.ndarray], kinds: list[int], args: Sequence[Sequence[int]] | np.ndarray,
                  kept: list[np.ndarray | None], confidence: float) -> tuple[list[CI], list[int]]:
    """percentile_ci of rows computed from replicate series without storing them: row i is kind
    ``kinds[i]`` of ``series[args[i][k]]`` (k = 0..3, as many as the kind takes). Returns the CIs and,
    per row, how many of its ideal-speedup replicates are at most 1 (fractions; 0 otherwise).
    ``kept[i]``, a float32 array of B or None, receives row i. Needs row_intervals_apply."""
    b = series[0].size if series else 0
    positions = _fast_positions(b, confidence)
    if _bootstrap is None or positions is None:
        raise ValueError("row_intervals needs the compiled kernel and its fast case (row_intervals_apply)")
    e = len(kinds)
    low, high, status = np.empty(e), np.empty(e), np.empty(e, dtype=np.int8)
    bad, below = np.empty(e, dtype=np.int64), np.empty(e, dtype=np.int64)
    _bootstrap.estimate_rows(series, np.array(kinds, dtype=np.int8), np.array(args, dtype=np.intp).reshape(e, 4),
                             *positions, low, high, status, bad, below, kept)
    return _cis_from_status(low, high, status, bad, b), below.tolist()


def _linear_quantiles_rows(values: np.ndarray, qs: Sequence[float]) -> list[np.ndarray]:
    """_linear_quantiles of every row of ``values`` (E, B): per q an (E,) array, the same numbers.

    For the two tail quantiles of an interval (positions lo < hi), one partition placing ranks lo+1
    and hi suffices: rank lo is then the largest value left of lo+1, and rank hi+1 the smallest right
    of hi, each a max or min over a short tail instead of two more selection passes."""
    last = values.shape[1] - 1
    pos = [q * last for q in qs]
    los = [int(p) for p in pos]
    if len(los) == 2 and los[0] + 1 < los[1] and los[1] + 1 <= last:
        lo, hi = los
        part = np.partition(values, [lo + 1, hi], axis=1)
        ranks = {lo: part[:, :lo + 1].max(axis=1), lo + 1: part[:, lo + 1],
                 hi: part[:, hi], hi + 1: part[:, hi + 1:].min(axis=1)}
    else:
        kth = sorted(set(los + [min(lo + 1, last) for lo in los]))
        part = np.partition(values, kth, axis=1)
        ranks = {k: part[:, k] for k in kth}
    return [ranks[lo] + (p - lo) * (ranks[min(lo + 1, last)] - ranks[lo]) for p, lo in zip(pos, los)]


def _linear_quantiles(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    """np.quantile(values, qs, method='linear'), from a partial sort.

    Only the order statistics around each quantile are needed, so np.partition places those (the
    same values a full sort puts there) at a fraction of a sort's cost; np.quantile's own overhead
    dominates at a few thousand replicates."""
    last = values.size - 1
    pos = [q * last for q in qs]
    los = [int(p) for p in pos]                          # floor: positions are >= 0
    part = np.partition(values, sorted(set(los + [min(lo + 1, last) for lo in los])))  # kth ascending, unique
    out = []
    for p, lo in zip(pos, los):
        low = float(part[lo])
        out.append(low + (p - lo) * (float(part[min(lo + 1, last)]) - low))
    return out


def bootstrap_ci(data: Sequence, statistic: Callable, *, n_resamples: int = DEFAULT_RESAMPLES,
                 confidence: float = DEFAULT_CONFIDENCE, method: str = "percentile",
                 seed: int = DEFAULT_SEED, key: Sequence = (), min_n: int = MIN_REPS,
                 paired: bool = False) -> CI | list[CI]:
    """Bootstrap interval of ``statistic(*data, axis=-1)`` via ``scipy.stats.bootstrap``.

    ``data`` is a sequence of 1-D samples, resampled independently (``paired=False``) or together.
    ``statistic`` must be vectorized (numpy reductions over ``axis``). A statistic returning k values
    gives a list of k CIs. Degenerate inputs give CIs with a reason instead of raising.
    """
    from scipy import stats  # local: scipy's import is the slowest part of a small report

    samples = [np.asarray(s, dtype=float).ravel() for s in data]
    point = np.asarray(statistic(*samples, axis=-1), dtype=float)
    multi = point.ndim > 0

    def every(ci: CI):
        return [ci] * point.size if multi else ci

    small = [i for i, s in enumerate(samples) if s.size < min_n]
    if small:
        return every(no_ci(f"fewer than {min_n} values in sample(s) {', '.join(map(str, small))}"))
    if all(np.ptp(s) == 0 for s in samples):
        return every(no_ci("no spread: all values identical"))
    if not np.all(np.isfinite(point)):
        return every(no_ci("statistic undefined on the data"))
    batch = max(1, min(n_resamples, _MAX_BATCH_VALUES // max(s.size for s in samples)))
    kw = dict(n_resamples=n_resamples, vectorized=True, paired=paired, axis=-1, confidence_level=confidence,
              method=method, batch=batch)
    gen = rng_for(seed, "bootstrap_ci", *key)
    try:
        res = stats.bootstrap(tuple(samples), statistic, rng=gen, **kw)
    except TypeError:  # scipy < 1.15 calls the generator argument random_state
        res = stats.bootstrap(tuple(samples), statistic, random_state=gen, **kw)
    dist = np.atleast_2d(res.bootstrap_distribution)
    lows = np.atleast_1d(res.confidence_interval.low)
    highs = np.atleast_1d(res.confidence_interval.high)
    cis = []
    for d, lo, hi in zip(dist, lows, highs):
        if not np.all(np.isfinite(d)):
            cis.append(no_ci("statistic undefined in some resamples"))
        elif np.ptp(d) == 0:
            cis.append(no_ci("no spread: the resampled statistic is constant"))
        elif not (np.isfinite(lo) and np.isfinite(hi)):
            cis.append(no_ci(f"{method} interval undefined for this distribution"))
        else:
            cis.append(CI(float(lo), float(hi)))
    return cis if multi else cis[0]


def hierarchical_mean_ci(points: np.ndarray, replicates: np.ndarray, rng: np.random.Generator,
                         confidence: float = DEFAULT_CONFIDENCE,
                         include: np.ndarray | None = None) -> tuple[float, CI]:
    """Mean over units (scenarios) with a two-level bootstrap interval.

    ``points`` (S,) are the units' estimates; ``replicates`` (S, B) their repetition-level bootstrap
    replicates. Each outer replicate resamples S units with replacement, and for each drawn unit one
    of its replicates (a fresh resample of its repetitions), then averages: the interval carries both
    between-scenario spread and measurement noise. With one unit only the second level remains.

    ``include`` (S, B), optional: whether unit s enters the mean in replicate b. The caller applies
    to every replicate the same rule that chose the units of the point estimate (e.g. "ideal speedup
    at least 1.05"), so the interval does not treat the choice of scenarios as fixed. Replicates in
    which no drawn unit is included are dropped (the interval is then conditional on at least one
    scenario entering; the CI's reason says how many were dropped); if more than half are, the
    interval is refused.
    """
    points = np.asarray(points, dtype=float)
    reps = np.asarray(replicates)
    if reps.dtype.kind != "f":
        reps = reps.astype(float)
    b = reps.shape[1]
    mean = float(points.mean())
    keep = None if include is None else np.asarray(include, dtype=bool)
    outer, empty = (_kernel_hierarchical_means(reps, keep, rng) if _kernel_takes(reps, keep, rng)
                    else _hierarchical_means(reps, keep, rng))
    if empty > 0.5 * b:
        return mean, no_ci(f"no scenario passes the inclusion rule in {empty} of {b} resamples")
    ci = percentile_ci(outer, confidence)
    if ci.ok and empty:
        ci = CI(ci.low, ci.high, f"{empty} of {b} resamples drew no scenario passing the inclusion rule; "
                                 "the interval is over the others")
    return mean, ci


def _hierarchical_means(reps: np.ndarray, include: np.ndarray | None,
                        rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """hierarchical_mean_ci's outer replicates (those that include a unit) and how many include none."""
    s, b = reps.shape
    units = rng.integers(0, s, size=(b, s))
    draws = rng.integers(0, b, size=(b, s))
    # Gather by flat index: the same values as reps[units, draws], at about half the cost (S x B
    # elements per call, in the millions for a large suite). Gathered in the stored precision (the
    # strategy summary keeps float32: half the memory traffic), then widened: the same float64 values.
    flat = units * b + draws
    drawn = reps.take(flat).astype(float, copy=False)
    keep = np.ones(drawn.shape, dtype=bool) if include is None else include.take(flat)
    return _included_means(drawn, keep, axis=1)


def _kernel_takes(reps: np.ndarray, include: np.ndarray | None, rng: np.random.Generator | None = None) -> bool:
    """Whether the summary kernels apply: built, float32 replicates (what the strategy summary keeps),
    an ``include`` of their shape, and (hierarchical_mean_ci) a PCG64 generator, the one they
    re-implement, and at least one unit."""
    s, b = reps.shape
    return (_bootstrap is not None and reps.dtype == np.float32 and (include is None or include.shape == reps.shape)
            and (rng is None or (type(rng.bit_generator) is np.random.PCG64 and 1 <= s < 2**32 - 1
                                 and 1 <= b < 2**32 - 1)))


def _kernel_hierarchical_means(reps: np.ndarray, include: np.ndarray | None,
                               rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """_hierarchical_means from the compiled kernel: the same draws from ``rng`` (left in the same
    state), the same sums in numpy's order, without the (B, S) temporaries (S x B is 5 x 10^6 for
    2500 scenarios, and the summary draws it for every strategy row)."""
    def draw(values, mask, sums, counts) -> None:
        rng.bit_generator.state = _bootstrap.hierarchical_sums(values, mask, rng.bit_generator.state, sums, counts)

    return _kernel_means(draw, reps, include)


def _kernel_means(kernel: Callable, reps: np.ndarray, include: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The replicates' means (those that include a unit) and how many include none, from a summary
    kernel that fills per-replicate sums and unit counts: kernel(values, mask, sums, counts)."""
    b = reps.shape[1]
    sums, counts = np.empty(b), np.empty(b, dtype=np.int64)
    mask = None if include is None else np.ascontiguousarray(include).view(np.uint8)
    kernel(np.ascontiguousarray(reps), mask, sums, counts)
    ok = counts > 0
    return sums[ok] / counts[ok], int((~ok).sum())


def fixed_units_mean_ci(replicates: np.ndarray, confidence: float = DEFAULT_CONFIDENCE,
                        include: np.ndarray | None = None) -> CI:
    """Interval of the mean over *these* units (scenarios held fixed): replicate b averages every
    unit's replicate b. It carries measurement noise only, so it answers "the mean over this suite"
    and not "the mean over scenarios like these" (hierarchical_mean_ci). ``include`` as there."""
    reps = np.asarray(replicates)
    keep = None if include is None else np.asarray(include, dtype=bool)
    if _kernel_takes(reps, keep):  # the same sums, without (S, B) temporaries
        means, empty = _kernel_means(_bootstrap.fixed_sums, reps, keep)
    else:
        reps = reps.astype(float, copy=False)
        means, empty = _included_means(reps, np.ones(reps.shape, dtype=bool) if keep is None else keep, axis=0)
    if empty == reps.shape[1]:
        return no_ci("no scenario passes the inclusion rule in any resample")
    return percentile_ci(means, confidence)


def _included_means(values: np.ndarray, keep: np.ndarray, axis: int) -> tuple[np.ndarray, int]:
    """Per replicate, the mean of the values ``keep`` admits (over ``axis``), for the replicates that
    admit at least one; and how many admitted none."""
    n_in = keep.sum(axis=axis)
    ok = n_in > 0
    return np.where(keep, values, 0.0).sum(axis=axis)[ok] / n_in[ok], int((~ok).sum())
