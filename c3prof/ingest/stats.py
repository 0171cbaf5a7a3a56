"""Medians and ratios of medians with bootstrap intervals, for the ingest summary.

Reuses c3prof.analysis.stats (exact bootstrap distribution of the median, percentile intervals,
per-quantity seeds) so ingest intervals mean what report intervals mean: each sample (alone
durations, overlapped durations, spans) is resampled independently, and the replicate of a ratio is
the ratio of the samples' median replicates.
"""

from __future__ import annotations

from functools import cached_property
from typing import Callable

import numpy as np

from c3prof.analysis.stats import (CI, DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_REPS, bootstrap_medians, no_ci,
                                   percentile_ci, rng_for, sorted_median)


class MedianSample:
    """One sample's median and its bootstrap median replicates (drawn once, shared by every ratio).

    The replicates are drawn when first asked for: most samples of a trace (those of scenarios
    without a reference, or too small for an interval) never are, and drawing them was most of the
    summary's time. Each sample has its own generator (seeded from its key), so when, or whether,
    another sample draws changes none of its values."""

    def __init__(self, values, key: tuple, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED):
        self.values = np.asarray(values, dtype=float)
        self.n = int(self.values.size)
        self._sorted = np.sort(self.values)
        # sorted_median is np.median's value for finite values (durations are), without its overhead.
        self.median = sorted_median(self._sorted) if self.n else float("nan")
        self._key, self._n_resamples, self._seed = key, n_resamples, seed

    @cached_property
    def replicates(self) -> np.ndarray:
        if not self.n:
            return np.full(self._n_resamples, np.nan)
        return bootstrap_medians(self._sorted, self._n_resamples, rng_for(self._seed, "ingest", *self._key),
                                 presorted=True)


def ratio_ci(fn: Callable[..., np.ndarray], *samples: MedianSample) -> CI:
    """Interval of ``fn(median_1, median_2, ...)`` from the samples' independent median replicates."""
    small = [s for s in samples if s.n < MIN_REPS]
    if small:
        return no_ci(f"fewer than {MIN_REPS} instances in a sample")
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = fn(*(s.replicates for s in samples))
    return percentile_ci(reps)


def quantiles(values, qs=(0.1, 0.9)) -> list[float] | None:
    v = np.asarray(values, dtype=float)
    return [float(x) for x in np.quantile(v, qs)] if v.size else None
