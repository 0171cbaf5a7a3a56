"""Bootstrap machinery: the exact median sampler against scipy.stats.bootstrap, degenerate cases,
reproducibility, the hierarchical mean."""

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from c3prof.analysis.stats import (CI, bootstrap_ci, bootstrap_medians, hierarchical_mean_ci, percentile_ci,
                                   rng_for, sorted_median)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 10, 31, 64])
def test_median_sampler_matches_scipy_resampling(n):
    # Same distribution as resampling: compare the probability of every value the median can take.
    x = np.round(np.random.default_rng(n).lognormal(0, 0.1, n), 2)  # rounding makes ties
    ours = bootstrap_medians(x, 40_000, rng_for(0, "t", n))
    ref = scipy.stats.bootstrap((x,), np.median, n_resamples=40_000, vectorized=True, method="percentile",
                                rng=np.random.default_rng(1)).bootstrap_distribution
    values = np.union1d(ours, ref)
    p_ours = np.array([(ours == v).mean() for v in values])
    p_ref = np.array([(ref == v).mean() for v in values])
    assert np.abs(p_ours - p_ref).max() < 0.015
    possible = np.concatenate([x, ((x[:, None] + x[None, :]) / 2).ravel()])
    assert np.isin(ours, possible).all()


def test_median_sampler_edge_cases():
    assert np.all(bootstrap_medians([3.0], 10, rng_for(0)) == 3.0)
    assert np.all(bootstrap_medians([2.0, 2.0, 2.0], 10, rng_for(0)) == 2.0)
    with pytest.raises(ValueError):
        bootstrap_medians([], 10, rng_for(0))
    assert sorted_median(np.array([1.0, 2.0, 10.0])) == 2.0
    assert sorted_median(np.array([1.0, 2.0, 4.0, 10.0])) == 3.0


def test_rng_for_is_stable_and_keyed():
    a = rng_for(7, "g", "run", "gemm").random(3)
    assert np.array_equal(a, rng_for(7, "g", "run", "gemm").random(3))
    assert not np.array_equal(a, rng_for(7, "g", "run", "comm").random(3))
    assert not np.array_equal(a, rng_for(8, "g", "run", "gemm").random(3))


def test_percentile_ci_matches_numpy_and_refuses_degenerate():
    reps = np.random.default_rng(0).normal(size=2001)
    ci = percentile_ci(reps, 0.95)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert ci.low == pytest.approx(lo, rel=1e-12) and ci.high == pytest.approx(hi, rel=1e-12)
    flat = percentile_ci(np.full(100, 1.5))
    assert flat.low is None and "no spread" in flat.reason
    bad = percentile_ci(np.array([1.0, np.inf, 2.0]))
    assert bad.low is None and "undefined in 1 of 3" in bad.reason


def test_bootstrap_ci_scalar_multi_and_degenerate():
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 30), rng.normal(5, 1, 40)
    ci = bootstrap_ci([a, b], lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis))
    assert isinstance(ci, CI) and ci.ok and ci.contains(np.median(a) / np.median(b))
    both = bootstrap_ci([a], lambda x, axis=-1: np.stack([np.mean(x, axis=axis), np.median(x, axis=axis)]))
    assert len(both) == 2 and all(c.ok for c in both)
    assert bootstrap_ci([a[:2]], np.median).reason.startswith("fewer than 3")
    assert "no spread" in bootstrap_ci([np.ones(5)], np.median).reason
    # Reproducible: a fixed seed gives the same interval.
    assert bootstrap_ci([a], np.median, seed=5) == bootstrap_ci([a], np.median, seed=5)
    assert bootstrap_ci([a], np.mean, method="BCa").ok


def test_hierarchical_mean():
    points = np.array([0.2, 0.4, 0.9])
    reps = points[:, None] + np.random.default_rng(0).normal(0, 0.01, (3, 2000))
    mean, ci = hierarchical_mean_ci(points, reps, rng_for(0, "h"))
    assert mean == pytest.approx(0.5)
    assert ci.low < 0.5 < ci.high
    # The outer level dominates: the interval is much wider than the repetition noise alone.
    assert ci.high - ci.low > 0.2
    one_mean, one_ci = hierarchical_mean_ci(points[:1], reps[:1], rng_for(0, "h1"))
    assert one_mean == pytest.approx(0.2) and one_ci.high - one_ci.low < 0.1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 100.0, allow_nan=False), min_size=3, max_size=40), st.integers(0, 2**31))
def test_median_interval_contains_the_median(values, seed):
    x = np.array(values)
    ci = percentile_ci(bootstrap_medians(x, 2000, rng_for(seed)))
    if ci.ok:
        assert ci.contains(float(np.median(x)))


def _enumerated_median_pmf(n):
    """Exact distribution of the resample median of x = 1..n, by enumerating all n^n resamples."""
    import itertools
    from collections import Counter
    counts = Counter(float(np.median(r)) for r in itertools.product(range(1, n + 1), repeat=n))
    return {v: c / n**n for v, c in counts.items()}


def _tabled_median_pmf(n):
    """The distribution the rank table of stats._median_rank_table implies (no sampling)."""
    from c3prof.analysis.stats import _median_rank_table
    cdf, same = _median_rank_table(n)
    p1 = np.diff(np.concatenate([[0.0], cdf]))
    out: dict[float, float] = {}
    for j in range(1, n + 1):
        if same is None:
            out[float(j)] = out.get(float(j), 0.0) + p1[j - 1]
            continue
        out[float(j)] = out.get(float(j), 0.0) + p1[j - 1] * same[j - 1]
        m = n - n // 2  # draws left above the j smallest when J2 > J1 = j
        for k in range(j + 1, n + 1):
            pk = ((n - k + 1) / (n - j)) ** m - ((n - k) / (n - j)) ** m
            v = (j + k) / 2
            out[v] = out.get(v, 0.0) + p1[j - 1] * (1 - same[j - 1]) * pk
    return out


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_median_rank_table_is_the_exact_distribution(n):
    # No Monte Carlo here: the table's probabilities equal those of all n^n equally likely resamples.
    exact, tabled = _enumerated_median_pmf(n), _tabled_median_pmf(n)
    assert set(k for k, p in tabled.items() if p > 1e-15) == set(exact)
    assert max(abs(tabled.get(v, 0.0) - p) for v, p in exact.items()) < 1e-12


@pytest.mark.parametrize("n", [25, 26])
def test_tabled_and_beta_median_samplers_agree(n):
    # Above the table's size limit the Beta sampler is used; both draw the same distribution.
    from c3prof.analysis.stats import _beta_medians
    x = np.sort(np.random.default_rng(n).lognormal(0, 0.1, n))
    tabled = bootstrap_medians(x, 100_000, rng_for(0, "tab", n), presorted=True)
    beta = _beta_medians(x, 100_000, rng_for(0, "beta", n))
    values = np.union1d(tabled, beta)
    assert max(abs((tabled == v).mean() - (beta == v).mean()) for v in values) < 0.01
    assert abs(np.quantile(tabled, 0.025) - np.quantile(beta, 0.025)) < 0.2 * np.std(x)


def test_percentile_ci_is_the_linear_quantile_of_the_sorted_replicates():
    # The partial sort must give exactly what interpolating the fully sorted replicates gives (ties
    # included), and np.quantile's linear method up to its own rounding.
    rng = np.random.default_rng(3)
    for size in (2, 3, 41, 2000, 2001):
        reps = np.round(rng.normal(size=size), 1)
        srt = np.sort(reps)
        expected = []
        alpha = (1 - 0.9) / 2  # as percentile_ci computes it (0.04999...)
        for q in (alpha, 1 - alpha):
            pos = q * (size - 1)
            lo = int(np.floor(pos))
            hi = min(lo + 1, size - 1)
            expected.append(float(srt[lo] + (pos - lo) * (srt[hi] - srt[lo])))
        ci = percentile_ci(reps, 0.9)
        assert [ci.low, ci.high] == expected
        assert np.allclose(expected, np.quantile(reps, [0.05, 0.95]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 7, 25, 26, 1001, 2048])
def test_median_rank_alias_table_holds_the_tabled_distribution(n):
    # Walker's alias table draws J1 - 1 = i with probability keep[i] / n plus (1 - keep[k]) / n for
    # every k aliased to i: exactly the tabled probabilities of the rank.
    from c3prof.analysis.stats import _median_rank_alias, _median_rank_table
    keep, alias = _median_rank_alias(n)
    implied = keep / n
    np.add.at(implied, alias, (1.0 - keep) / n)
    cdf, _ = _median_rank_table(n)
    assert np.abs(implied - np.diff(np.concatenate([[0.0], cdf]))).max() < 1e-14
