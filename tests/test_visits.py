"""Visits (``capture --visits N``): every scenario measured N times, minutes apart, and the report's
two-stage bootstrap (visits, then rounds) that puts drift between visits in the intervals. GPU-free:
the capture runs on the SYNTHETIC backend (tests/fakes.py, nothing measured)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import t as student_t

from c3prof.analysis.dataset import load
from c3prof.analysis.speedup import BootstrapSettings, SeriesBank, analyze_group
from c3prof.analysis.strategies import (SUITE_CI_REPLICATION, _replication_interval, joint_repeat_intervals,
                                         repeat_interval, t_quantile)
from c3prof.analysis.stats import CI, draw_round_counts, draw_visit_picks, draw_visit_round_counts, round_resampled_medians
from c3prof.plan.strategies import plan_runs
from c3prof.scenarios import load_suite
from c3prof.trace import PHASES, phase_key, read_trace, split_phase_key
from fakes import FakeBench
from report_helpers import run_cli
from test_runner_fake import PLAN, capture


def test_phase_keys_name_the_visit():
    assert phase_key("gemm") == phase_key("gemm", 1) == "gemm"
    assert phase_key("comm", 3) == "comm@visit3"
    assert split_phase_key("comm@visit3") == ("comm", 3) and split_phase_key("gemm") == ("gemm", 1)


def test_one_visit_is_the_round_bootstrap():
    a = draw_round_counts(7, 50, np.random.default_rng(3))
    b = draw_visit_round_counts(np.zeros(7, dtype=int), 50, np.random.default_rng(3))
    assert np.array_equal(a, b)


def test_two_stage_draws_whole_visits_then_rounds():
    visit_of_round = np.array([0, 0, 0, 1, 1, 1])
    counts = draw_visit_round_counts(visit_of_round, 4000, np.random.default_rng(1))
    per_visit = np.stack([counts[:, :3].sum(axis=1), counts[:, 3:].sum(axis=1)], axis=1)
    assert set(np.unique(per_visit)) <= {0, 3, 6}          # a visit is drawn whole: 0, 1 or 2 times
    one_visit_only = np.mean((per_visit == 0).any(axis=1))
    assert 0.45 < one_visit_only < 0.55                    # P(the same visit twice) = 1/2


def test_drift_between_visits_widens_the_interval():
    """Visit 2 runs 3% slower than visit 1, within-visit noise 3%: resampling rounds alone keeps the
    visits' mix near half and half, so the drift barely moves the median; resampling visits does."""
    rng = np.random.default_rng(0)
    rounds = np.repeat(np.arange(60), 3)
    values = 1.0 + 0.03 * rng.standard_normal(rounds.size) + 0.03 * (rounds >= 30)
    visit_of_round = (np.arange(60) >= 30).astype(int)
    spread = {}
    for name, counts in (("rounds", draw_round_counts(60, 2000, np.random.default_rng(2))),
                         ("visits", draw_visit_round_counts(visit_of_round, 2000, np.random.default_rng(2)))):
        med = round_resampled_medians(values, rounds, counts)
        spread[name] = np.percentile(med, 97.5) - np.percentile(med, 2.5)
    assert spread["visits"] > 1.5 * spread["rounds"]


def test_scenarios_of_a_group_share_the_visit_draw():
    """Visit v is one pass over the whole suite: every scenario of a group draws the same visits in
    replicate b (rounds within them stay the scenario's own), so a shift of the GPU between passes
    moves a suite mean together instead of averaging away over independently drawn scenarios."""
    picks = draw_visit_picks(2, 500, np.random.default_rng(5))
    a = draw_visit_round_counts(np.array([0, 0, 1, 1]), 500, np.random.default_rng(1), picks)
    b = draw_visit_round_counts(np.array([0, 0, 0, 1, 1, 1]), 500, np.random.default_rng(2), picks)
    assert np.array_equal(a[:, :2].sum(axis=1) // 2, b[:, :3].sum(axis=1) // 3)   # visit 0 drawn alike
    assert not np.array_equal(a[:, 0], a[:, 1])                                    # rounds drawn apart
    bank = SeriesBank(BootstrapSettings(n_resamples=500))
    assert bank._shared_visit_picks("g", 1) is bank._shared_visit_picks("g", 1)
    bank.clear()                                                  # per scenario; the visit draw stays
    assert ("g", 1) in bank._visit_picks
    try:
        draw_visit_round_counts(np.array([0, 1]), 500, np.random.default_rng(1), picks[:10])
    except ValueError as e:
        assert "visit_picks has shape" in str(e)
    else:
        raise AssertionError("a visit draw of the wrong shape was accepted")


STRATEGIES = ("base", "dma")


def _capture(path, visits, **bench):
    """test_runner_fake's capture of the smoke suite, with ``visits``; resumes an existing trace."""
    summary, _ = capture(path, FakeBench(**bench), STRATEGIES, resume=path.exists(), visits=visits)
    return summary, plan_runs(load_suite("smoke"), STRATEGIES, PLAN)


def test_a_two_visit_capture_measures_every_phase_twice_and_the_report_resamples_visits(tmp_path):
    path = tmp_path / "t.jsonl"
    bench = FakeBench()
    summary, _ = capture(path, bench, STRATEGIES, visits=2)
    plans = plan_runs(load_suite("smoke"), STRATEGIES, PLAN)
    assert summary.phases_measured == 2 * len(plans) * len(PHASES)
    # caches emptied once, between the visits (after visit 1's scenarios, before visit 2's)
    assert bench.released_after == [len(bench.opened) // 2]
    trace = read_trace(path)
    for run in trace.runs.values():
        assert set(run.phases) == set(PHASES) | {phase_key(p, 2) for p in PHASES}
        assert all(run.phases[phase_key(p, 2)].record["visit"] == 2 for p in PHASES)
    # the two visits' rounds are separate sweeps; pooled, each phase has both visits' repetitions
    group = load([str(path)]).groups[0]
    run = group.runs[plans[0].id]
    assert run.series("gemm", "total_ms").size == sum(len(trace.runs[plans[0].id].phases[k].total_ms)
                                                      for k in ("gemm", "gemm@visit2"))
    assert len({group.round_sweep[int(r)] for r in run.rounds["gemm"]}) == 2
    out = tmp_path / "r.json"
    assert run_cli(str(path), "--json", str(out), "--quiet").returncode == 0
    assert {r["visits"] for r in json.loads(out.read_text())["results"]} == {2}


def test_an_interrupted_second_visit_resumes_where_it_stopped(tmp_path):
    path = tmp_path / "t.jsonl"
    try:
        _capture(path, visits=2, interrupt_after_scenarios=3)     # smoke has 2 scenarios: stops in visit 2
    except KeyboardInterrupt:
        pass
    first = read_trace(path)
    assert any(k.endswith("@visit2") for r in first.runs.values() for k in r.phases)
    assert not all(phase_key("gemm", 2) in r.phases for r in first.runs.values())
    summary, plans = _capture(path, visits=2)
    done = read_trace(path)
    assert all(set(r.phases) == set(PHASES) | {phase_key(p, 2) for p in PHASES} for r in done.runs.values())
    assert summary.phases_measured < len(plans) * len(PHASES)      # only what was missing


def test_each_visit_gets_its_own_fraction_of_ideal(tmp_path):
    """RunMetrics.by_visit: (ideal, fraction) from each visit's repetitions alone, against the base
    run's T_s, T_g, T_c of the same visit."""
    path = tmp_path / "t.jsonl"
    capture(path, FakeBench(), STRATEGIES, visits=2)
    trace = read_trace(path)
    group = load([str(path)]).groups[0]
    metrics = analyze_group(group, SeriesBank(BootstrapSettings(n_resamples=200)))
    checked = 0
    for m in metrics:
        assert m.by_visit is not None and len(m.by_visit) == 2
        base = trace.runs[m.base.id]
        own = trace.runs[m.run.id]
        for v, (ideal_v, fraction_v) in enumerate(m.by_visit, start=1):
            ts, tg, tc, tcc = (float(np.median(run.phases[phase_key(p, v)].total_ms))
                               for run, p in ((base, "serial"), (base, "gemm"), (base, "comm"), (own, "concurrent")))
            assert ideal_v == pytest.approx(ts / max(tg, tc))
            if ideal_v > 1:
                assert fraction_v == pytest.approx((ts / tcc - 1) / (ideal_v - 1))
                checked += 1
    assert checked >= 2


def _passes(visit_fractions):
    """Stand-ins for RunMetrics with per-visit values only (ideal 1.5 everywhere)."""
    return [SimpleNamespace(by_visit=tuple((1.5, f) for f in fs)) for fs in visit_fractions]


def test_the_suite_interval_is_the_hull_of_bootstrap_and_replication_interval():
    passes = _passes([[0.40, 0.50, 0.45], [0.20, 0.30, 0.25]])          # visit means 0.30, 0.40, 0.35
    narrow = CI(0.34, 0.36)
    out = _replication_interval(passes, 0.35, narrow, 0.95, 1.05)
    assert out["mean_fraction_by_visit"] == pytest.approx([0.30, 0.40, 0.35])
    half = student_t.ppf(0.975, 2) * np.std([0.30, 0.40, 0.35], ddof=1) / np.sqrt(3)
    assert out["mean_fraction_ci_suite"] == pytest.approx([0.35 - half, 0.35 + half])
    assert "3 visits" in out["ci_suite_method"]
    wide = CI(0.0, 0.9)                                   # the bootstrap already wider: kept as it is
    assert _replication_interval(passes, 0.35, wide, 0.95, 1.05)["mean_fraction_ci_suite"] == [0.0, 0.9]


def test_one_visit_or_unequal_visits_keep_the_bootstrap_interval():
    boot = CI(0.1, 0.2)
    one = _replication_interval(_passes([[0.1], [0.2]]), 0.15, boot, 0.95, 1.05)
    mixed = _replication_interval(_passes([[0.1, 0.2], [0.2, 0.3, 0.4]]), 0.2, boot, 0.95, 1.05)
    for out in (one, mixed):
        assert out["mean_fraction_ci_suite"] == [0.1, 0.2] and out["mean_fraction_by_visit"] is None
        assert "one visit" in out["ci_suite_method"]
    # a visit whose scenarios all fall below the inclusion rule gives no replication interval
    low = [SimpleNamespace(by_visit=((1.5, 0.3), (1.01, 0.9)))]
    assert _replication_interval(low, 0.3, boot, 0.95, 1.05)["mean_fraction_by_visit"] is None


def test_the_repeat_interval_widens_each_side_of_the_suite_interval_by_sqrt2():
    """A repeat capture's mean carries its own error too: each side of the suite interval, measured
    from the point estimate, is sqrt(2) times wider (asymmetry kept); no suite interval, none."""
    lo, hi = repeat_interval(0.40, [0.38, 0.41])
    assert (0.40 - lo, hi - 0.40) == pytest.approx((0.02 * np.sqrt(2), 0.01 * np.sqrt(2)))
    assert repeat_interval(0.40, None) is None


def test_two_exact_intervals_miss_each_others_means_often_the_repeat_interval_rarely():
    """Why the repeat interval exists, checked by simulation: two captures of 4 visits each, visit
    means normal, nothing but noise. Both means inside the other's 95% replication interval: about
    82% of pairs. One capture's repeat interval holds the other's mean in 95% of pairs, as a
    prediction interval should; both ways at once in about 91%."""
    rng = np.random.default_rng(1)
    visits = rng.normal(0.4, 0.01, size=(20000, 2, 4))
    gap = np.abs(np.diff(visits.mean(axis=2), axis=1))[:, 0]
    half = student_t.ppf(0.975, 3) * visits.std(axis=2, ddof=1) / 2.0
    ci_both = (gap <= half[:, 0]) & (gap <= half[:, 1])
    pi_one, pi_both = gap <= np.sqrt(2) * half[:, 0], (gap[:, None] <= np.sqrt(2) * half).all(axis=1)
    assert 0.79 < ci_both.mean() < 0.86
    assert 0.94 < pi_one.mean() < 0.96 and 0.89 < pi_both.mean() < 0.94


def _default_row(mean, repeat, visits=None, selection="default"):
    return {"selection": selection, "mean_fraction_of_ideal": mean, "mean_fraction_pi_repeat": repeat,
            "mean_fraction_by_visit": visits}


def test_the_joint_repeat_band_widens_default_rows_by_the_bonferroni_quantile_ratio():
    """Four strategies, 4 visits: each side of the repeat interval widened by t3(1 - 0.05/8) / t3(0.975)
    (1.69); without visits by the normal's ratio; variant rows and rows without an interval get none."""
    rows = [_default_row(0.4, [0.38, 0.41], [0.39, 0.40, 0.41, 0.40]) for _ in range(4)]
    rows += [_default_row(0.3, [0.2, 0.4], selection="variant"), _default_row(None, None)]
    joint_repeat_intervals(rows, 0.95)
    widen = student_t.ppf(1 - 0.05 / 8, 3) / student_t.ppf(0.975, 3)
    assert widen == pytest.approx(1.69, abs=0.01)
    lo, hi = rows[0]["mean_fraction_pi_repeat_all"]
    assert (0.4 - lo, hi - 0.4) == pytest.approx((0.02 * widen, 0.01 * widen))
    assert "mean_fraction_pi_repeat_all" not in rows[4] and "mean_fraction_pi_repeat_all" not in rows[5]
    one_visit = [_default_row(0.4, [0.38, 0.42]) for _ in range(2)]
    joint_repeat_intervals(one_visit, 0.95)
    z = np.array([2.2414027, 1.9599640])                       # normal quantiles at 1 - 0.05/4 and 0.975
    assert one_visit[0]["mean_fraction_pi_repeat_all"] == pytest.approx([0.4 - 0.02 * z[0] / z[1], 0.4 + 0.02 * z[0] / z[1]])


def test_the_joint_band_holds_all_of_a_repeats_strategy_means_in_95_percent():
    """Why the joint band exists, by simulation: two captures of 4 strategies x 4 visits, nothing but
    noise. Per-strategy repeat intervals hold all four of the repeat's means in only about 81% of
    pairs (both ways: 69%); the joint band in 95% (both ways: about 90%)."""
    rng = np.random.default_rng(2)
    visits = rng.normal(0.4, 0.01, size=(20000, 2, 4, 4))          # pair, capture, strategy, visit
    means = visits.mean(axis=3)
    gap = np.abs(means[:, 0] - means[:, 1])                         # pair, strategy
    half = np.sqrt(2) * student_t.ppf(0.975, 3) * visits.std(axis=3, ddof=1) / 2.0
    widen = student_t.ppf(1 - 0.05 / 8, 3) / student_t.ppf(0.975, 3)
    per_one, per_both = (gap <= half[:, 1]).all(axis=1), (gap[:, None] <= half).all(axis=(1, 2))
    all_one, all_both = (gap <= widen * half[:, 1]).all(axis=1), (gap[:, None] <= widen * half).all(axis=(1, 2))
    assert 0.78 < per_one.mean() < 0.84 and 0.65 < per_both.mean() < 0.72
    assert 0.94 < all_one.mean() < 0.96 and 0.88 < all_both.mean() < 0.93


def test_t_quantile_is_scipys_without_importing_scipy():
    """The replication and repeat intervals' Student t quantile (no scipy import in a report) against
    scipy's, over the degrees of freedom a capture's visits give and well beyond, and the confidences
    the intervals ask (0.5 + c/2, and Bonferroni's 1 - alpha/2k) among a grid of others."""
    from scipy.special import stdtrit

    # (Not within 1e-9 of 0.5, where scipy's own is off by up to 3e-8 from the true, nearly 0, value.)
    ps = np.concatenate([np.linspace(1e-4, 1 - 1e-4, 60), [0.975, 0.99375, 0.995, 0.9995]])
    for df in [*range(1, 70), 99, 100, 255]:
        ours = np.array([t_quantile(float(p), df) for p in ps])
        np.testing.assert_allclose(ours, stdtrit(df, ps), rtol=1e-11, atol=1e-13, err_msg=f"df={df}")
        assert t_quantile(0.5, df) == 0.0
    assert t_quantile(0.975, 3) == pytest.approx(3.182446305284263, rel=1e-12)   # the textbook 3.182
    for p, df in ((0.0, 3), (1.0, 3), (0.9, 0), (0.9, 2.0), (0.9, True)):
        with pytest.raises(ValueError, match="t_quantile"):
            t_quantile(p, df)


def test_a_report_of_visits_does_not_import_scipy(tmp_path):
    """A report of a capture of several visits (the replication interval's t quantile) in a fresh
    process: scipy is never imported (its import was a quarter of such a report)."""
    import subprocess
    import sys

    from report_helpers import ROOT

    code = ("import sys; from c3prof.cli import main; "
            f"rc = main(['report', {str(ROOT / 'tests' / 'data' / 'h200_default_visits.jsonl')!r}, '-q', '-j', '1', "
            f"'--json', {str(tmp_path / 'r.json')!r}]); "
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines()[-1] == "0 []", out.stdout + out.stderr
    replicated = [r for r in json.loads((tmp_path / "r.json").read_text())["strategies"]
                  if r["ci_suite_method"] == SUITE_CI_REPLICATION.format(v=len(r["mean_fraction_by_visit"] or ()))]
    assert replicated and all(r["mean_fraction_pi_repeat_all"] for r in replicated if r["selection"] == "default")
