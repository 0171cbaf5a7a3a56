"""Speedups, fraction of ideal and slowdowns: values checked against medians computed by hand
(statistics.median over the raw JSON), intervals checked for their degenerate cases and properties."""

import math
import statistics

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from report_helpers import DATA, SYNTHETIC, med

from c3prof.analysis.dataset import Group, MergedRun, load
from c3prof.analysis.speedup import (BootstrapSettings, SeriesBank, analyze_group, fraction_of_ideal,
                                     run_metrics)


@pytest.fixture(scope="module")
def synthetic():
    group = load([str(SYNTHETIC)]).groups[0]
    metrics = analyze_group(group, SeriesBank(BootstrapSettings()))
    return group, {m.run.id: m for m in metrics}


def test_base_run_by_hand(synthetic):
    _, ms = synthetic
    rid = "cb4k-x-32M/base/default"
    tg, tc, ts, tcc = (med(SYNTHETIC, rid, p) for p in ("gemm", "comm", "serial", "concurrent"))
    ideal = ts / max(tg, tc)
    realized = ts / tcc
    m = ms[rid]
    assert m.reference == "base"
    assert m.ideal.value == pytest.approx(ideal, rel=1e-12)
    assert m.realized.value == pytest.approx(realized, rel=1e-12)
    assert m.fraction.value == pytest.approx((realized - 1) / (ideal - 1), rel=1e-12)
    # For the base run primary == own.
    assert m.own_fraction.value == m.fraction.value
    assert m.gemm_slowdown.value == pytest.approx(med(SYNTHETIC, rid, "concurrent", "gemm_ms") / tg, rel=1e-12)
    assert m.comm_slowdown.value == pytest.approx(med(SYNTHETIC, rid, "concurrent", "comm_ms") / tc, rel=1e-12)
    for est in (m.ideal, m.realized, m.fraction, m.gemm_slowdown, m.comm_slowdown):
        assert est.ci.ok and est.ci.contains(est.value)


def test_primary_uses_the_base_run_and_own_uses_the_run(synthetic):
    _, ms = synthetic
    rid, base = "cb4k-x-256M/dma/ce_peer", "cb4k-x-256M/base/default"
    bts, btg, btc = (med(SYNTHETIC, base, p) for p in ("serial", "gemm", "comm"))
    tg, tc, ts, tcc = (med(SYNTHETIC, rid, p) for p in ("gemm", "comm", "serial", "concurrent"))
    m = ms[rid]
    ideal, realized = bts / max(btg, btc), bts / tcc
    assert m.ideal.value == pytest.approx(ideal, rel=1e-12)
    assert m.realized.value == pytest.approx(realized, rel=1e-12)
    assert m.fraction.value == pytest.approx((realized - 1) / (ideal - 1), rel=1e-12)
    own_ideal, own_realized = ts / max(tg, tc), ts / tcc
    assert m.own_ideal.value == pytest.approx(own_ideal, rel=1e-12)
    assert m.own_fraction.value == pytest.approx((own_realized - 1) / (own_ideal - 1), rel=1e-12)


def test_reference_falls_back_to_own_without_base(synthetic):
    _, ms = synthetic
    m = ms["tiny-x-4M/sp/comm_first"]
    assert m.reference == "own" and "no base run" in m.reference_note
    assert m.fraction.value == m.own_fraction.value


def test_degenerate_intervals_are_null_with_a_reason(synthetic):
    _, ms = synthetic
    two = ms["cb4k-x-4M/base/default"]  # 2 repetitions per phase
    assert two.fraction.value is not None and not two.fraction.ci.ok
    assert "fewer than 3 repetitions" in two.fraction.ci.reason
    same = ms["cb4k-x-1G/base/default"]  # identical repetitions
    assert same.gemm_slowdown.value == pytest.approx(1.25)
    assert "no spread" in same.gemm_slowdown.ci.reason


def test_incomplete_runs_get_no_metrics(synthetic):
    group, ms = synthetic
    assert "mb64-x-256M/rp/sm96" in group.runs
    assert "mb64-x-256M/rp/sm96" not in ms


def test_overlap_fraction_by_hand(synthetic):
    _, ms = synthetic
    rid = "cb4k-x-32M/dma/ce_peer"
    from report_helpers import phase_samples
    s = phase_samples(SYNTHETIC)[(rid, "concurrent")]
    shares = []
    for gs, gd, cs, cd in zip(s["gemm_start_ms"], s["gemm_ms"], s["comm_start_ms"], s["comm_ms"]):
        shares.append(max(0.0, min(gs + gd, cs + cd) - max(gs, cs)) / gd)
    assert ms[rid].overlap.value == pytest.approx(statistics.median(shares), rel=1e-12)


def test_overlap_series_of_many_runs_are_each_runs_own():
    """The overlap shares computed over a batch of runs at once are each run's own, run by run (the
    formula written out), bit for bit: runs of different lengths, a run lacking an input (None) and
    one whose inputs differ in length (numpy broadcasts its one start, as before)."""
    from c3prof.analysis.speedup import _overlap_series, _overlap_series_of

    rng = np.random.default_rng(4)
    runs = []
    for n in (5, 1, 25, 3, 7):
        run = make_run(*(rng.lognormal(0, 0.1, n) for _ in range(4)), name=f"s{n}")
        run.phases["concurrent"].update(gemm_start_ms=rng.random(n) * 0.1, comm_start_ms=rng.random(n) * 0.3)
        runs.append(run)
    del runs[3].phases["concurrent"]["comm_start_ms"]
    runs[4].phases["concurrent"]["gemm_start_ms"] = np.array([0.05])
    got = _overlap_series_of(runs)
    assert got[3] is None and _overlap_series(runs[3]) is None
    for run, shares in zip(runs, got):
        if shares is None:
            continue
        c = run.phases["concurrent"]
        gs, gd, cs, cd = (c[k] for k in ("gemm_start_ms", "gemm_ms", "comm_start_ms", "comm_ms"))
        want = np.clip(np.minimum(gs + gd, cs + cd) - np.maximum(gs, cs), 0.0, None) / gd
        assert shares.shape == want.shape and np.array_equal(shares, want)


# ------------------------------------------------------------------------------------------------
# In-memory runs for properties
# ------------------------------------------------------------------------------------------------

def make_run(tg, tc, ts, tcc, gcc=None, ccc=None, name="s", strategy="base", variant="v"):
    arr = lambda v: np.asarray(v, dtype=float)  # noqa: E731
    conc = {"total_ms": arr(tcc), "gemm_ms": arr(tg if gcc is None else gcc), "comm_ms": arr(tc if ccc is None else ccc)}
    return MergedRun(id=f"{name}/{strategy}/{variant}", group="g", scenario={"name": name}, strategy=strategy,
                     variant=variant, params={}, phases={"gemm": {"total_ms": arr(tg)}, "comm": {"total_ms": arr(tc)},
                                                         "serial": {"total_ms": arr(ts)}, "concurrent": conc})


def metrics_of(run, resamples=2000):
    with np.errstate(divide="ignore", invalid="ignore"):
        return run_metrics(run, run, SeriesBank(BootstrapSettings(n_resamples=resamples)))


times = st.floats(0.01, 100.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(times, times, st.floats(1.01, 3.0))
def test_fraction_is_one_at_max_and_zero_at_serial(tg, tc, gain):
    ts = max(tg, tc) * gain  # T_s above the longer kernel: something to gain
    assert fraction_of_ideal(ts, tg, tc, max(tg, tc)) == pytest.approx(1.0, rel=1e-9)
    assert fraction_of_ideal(ts, tg, tc, ts) == pytest.approx(0.0, abs=1e-9)
    # And through the whole pipeline, with constant repetitions.
    n = 5
    for tcc, expected in ((max(tg, tc), 1.0), (ts, 0.0)):
        m = metrics_of(make_run([tg] * n, [tc] * n, [ts] * n, [tcc] * n), resamples=200)
        assert m.fraction.value == pytest.approx(expected, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 25), st.integers(0, 2**31 - 1), st.floats(0.001, 0.2))
def test_intervals_contain_the_point_estimate(n, seed, sigma):
    rng = np.random.default_rng(seed)
    noisy = lambda v: v * rng.lognormal(0, sigma, n)  # noqa: E731
    m = metrics_of(make_run(noisy(1.0), noisy(0.8), noisy(1.9), noisy(1.3), noisy(1.2), noisy(1.1)))
    for est in (m.ideal, m.realized, m.fraction, m.gemm_slowdown, m.comm_slowdown):
        if est.value is not None and est.ci.ok:
            assert est.ci.contains(est.value)


def test_fraction_undefined_when_nothing_to_gain():
    m = metrics_of(make_run([1.0, 1.1, 0.9], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]))
    assert m.ideal.value == pytest.approx(1.0)
    assert m.fraction.value is None and "no gain possible" in m.fraction.ci.reason


def test_fraction_interval_agrees_with_scipy_bootstrap():
    # Our exact-median replicates vs scipy.stats.bootstrap resampling each phase independently.
    rng = np.random.default_rng(11)
    n = 15
    tg, tc, ts, tcc = (v * rng.lognormal(0, 0.03, n) for v in (1.0, 0.7, 1.75, 1.2))
    m = metrics_of(make_run(tg, tc, ts, tcc), resamples=20_000)

    def frac(a, b, c, d, axis=-1):
        s, g, k, cc = (np.median(x, axis=axis) for x in (c, a, b, d))
        return (s / cc - 1) / (s / np.maximum(g, k) - 1)

    ref = scipy.stats.bootstrap((tg, tc, ts, tcc), frac, n_resamples=20_000, vectorized=True, method="percentile",
                                rng=np.random.default_rng(2)).confidence_interval
    width = ref.high - ref.low
    assert m.fraction.value == pytest.approx(frac(tg, tc, ts, tcc), rel=1e-12)
    assert abs(m.fraction.ci.low - ref.low) < 0.1 * width
    assert abs(m.fraction.ci.high - ref.high) < 0.1 * width


def test_reports_are_reproducible():
    run = make_run(*(np.random.default_rng(1).lognormal(0, 0.05, 9) * v for v in (1.0, 0.7, 1.75, 1.2)))
    a, b = metrics_of(run), metrics_of(run)
    assert a.fraction.ci == b.fraction.ci and a.gemm_slowdown.ci == b.gemm_slowdown.ci


def test_group_analysis_order_and_base_choice():
    base = make_run([1.0] * 3, [0.5] * 3, [1.5] * 3, [1.2] * 3, name="s", strategy="base", variant="default")
    other = make_run([1.0] * 3, [0.5] * 3, [1.5] * 3, [1.0] * 3, name="s", strategy="dma", variant="ce")
    g = Group(key="g", gpu_name="g", runs={other.id: other, base.id: base},
              variant_order={"dma": ["ce"], "base": ["default"]})
    ms = {m.run.id: m for m in analyze_group(g, SeriesBank(BootstrapSettings(n_resamples=200)))}
    assert ms[other.id].reference == "base" and ms[other.id].base is base
    assert ms[other.id].fraction.value == pytest.approx((1.5 / 1.0 - 1) / (1.5 / 1.0 - 1))
    assert math.isclose(ms[base.id].fraction.value, (1.5 / 1.2 - 1) / 0.5)


def test_ideal_of_floats_takes_numpys_maximum():
    """ideal() of two floats skips the ufunc for distinct ones; every case gives np.maximum's value
    and type (ties and signed zeros, NaN and infinities included)."""
    import itertools
    import math

    from c3prof.analysis.speedup import _maximum

    values = [0.0, -0.0, 1.0, 2.5, 1e-300, 5e-324, float("nan"), float("inf"), -float("inf"), 3.0000000000000004, 3.0]
    for a, b in itertools.product(values, values):
        got, want = _maximum(a, b), np.maximum(a, b)
        assert type(got) is type(want)
        assert (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))
    arr = np.array([1.0, 3.0])
    assert np.array_equal(_maximum(arr, 2.0), [2.0, 3.0]) and np.array_equal(_maximum(2.0, arr), [2.0, 3.0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 2**40), max_size=30), max_size=6))
def test_round_ids_are_np_unique_of_every_runs_rounds(lists):
    """speedup._round_ids: np.unique's values (sorted, distinct, int64) of all the runs' rounds,
    without calling it (its first plain call imports numpy.ma). SYNTHETIC round lists."""
    from c3prof.analysis.speedup import _round_ids

    runs = []
    for at, values in enumerate(lists):
        run = MergedRun(id=f"r{at}", group="g", scenario={"name": "s"}, strategy="base", variant="d", params={})
        run.rounds = {"gemm": np.array(values, dtype=np.int64), "serial": np.array(values[::-1], dtype=np.int64)}
        runs.append(run)
    got = _round_ids(runs)
    recorded = [r for run in runs for r in run.rounds.values()]
    want = np.unique(np.concatenate(recorded)).astype(np.int64) if recorded else np.empty(0, np.int64)
    assert got.dtype == np.int64 and np.array_equal(got, want)


def test_report_does_not_import_numpy_ma():
    """A report of a committed capture never imports numpy.ma (31 ms in each analysis process, after
    the fork, when np.unique's first plain call imported it)."""
    import subprocess
    import sys
    from pathlib import Path

    trace = Path(__file__).parent / "data" / "h200_default_1.jsonl"
    probe = ("import sys\nfrom c3prof.cli import main\n"
             f"assert main(['report', {str(trace)!r}, '--json', '-', '-q']) == 0\n"
             "print('numpy.ma' in sys.modules, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("names", [["h200_default_pair_a.jsonl"], ["h200_default_visits.jsonl"], ["h200_smoke.jsonl"],
                                   ["h200x2_llama70b.rank0.jsonl", "h200x2_llama70b.rank1.jsonl"],
                                   ["synthetic_small.jsonl"]])
def test_plain_estimates_are_the_general_paths(names, monkeypatch):
    """run_metrics' one-function path (speedup._plain_estimates: every series there with enough
    repetitions, intervals from the kernel's rows) gives what estimate() per formula gives: every
    estimate's value, interval, reason and kept replicates, and every other field, run by run, on
    recorded traces (paired by round, two visits, a smoke run with too few repetitions, two ranks)
    and the synthetic one (unpaired)."""
    from c3prof.analysis import speedup
    from c3prof.analysis.stats import row_intervals_apply

    settings = BootstrapSettings()
    if not row_intervals_apply(settings.n_resamples, settings.confidence):
        pytest.skip("the compiled kernel is not built: the plain path is not taken")
    group = load([str(DATA / n) for n in names]).groups[0]
    taken = []
    plain = speedup._plain_estimates
    monkeypatch.setattr(speedup, "_plain_estimates", lambda *a: taken.append(1) or plain(*a))
    fast = analyze_group(group, SeriesBank(settings))
    monkeypatch.setattr(speedup, "_plain", lambda *a: False)
    general = analyze_group(group, SeriesBank(settings))
    assert taken and len(fast) == len(general) > 0
    for f, g in zip(fast, general):
        assert f.run is g.run and f.base is g.base
        for name in speedup._ESTIMATE_FIELDS:
            a, b = getattr(f, name), getattr(g, name)
            assert (a.value, a.ci) == (b.value, b.ci), (f.run.id, name)
            assert (a.replicates is None) == (b.replicates is None), (f.run.id, name)
            if a.replicates is not None:
                assert np.array_equal(a.replicates, b.replicates, equal_nan=True), (f.run.id, name)
        for name in ("reference", "reference_note", "medians", "base_medians", "n_reps", "paired", "visits",
                     "by_visit"):
            assert getattr(f, name) == getattr(g, name), (f.run.id, name)
