"""Medians and ratios of medians with bootstrap intervals, for the ingest summary.

Reuses c3prof.analysis.stats (exact bootstrap distribution of the median, percentile intervals,
per-quantity seeds) so ingest intervals mean what report intervals mean: each sample (alone
durations, overlapped durations, spans) is resampled independently, and the replicate of a ratio is
the ratio of the samples' median replicates.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from c3prof.analysis.stats import (CI, DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_REPS, bootstrap_medians, no_ci,
                                   percentile_ci, rng_for)


class MedianSample:
    """One sample's median and its bootstrap median replicates (drawn once, shared by every ratio)."""

    def __init__(self, values, key: tuple, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED):
        self.values = np.asarray(values, dtype=float)
        self.n = int(self.values.size)
        self.median = float(np.median(self.values)) if self.n else float("nan")
        self.replicates = (bootstrap_medians(self.values, n_resamples, rng_for(seed, "ingest", *key))
                           if self.n else np.full(n_resamples, np.nan))


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
