"""Visits (``capture --visits N``): every scenario measured N times, minutes apart, and the report's
two-stage bootstrap (visits, then rounds) that puts drift between visits in the intervals. GPU-free:
the capture runs on the SYNTHETIC backend (tests/fakes.py, nothing measured)."""

import json

import numpy as np

from c3prof.analysis.dataset import load
from c3prof.analysis.speedup import BootstrapSettings, SeriesBank
from c3prof.analysis.stats import draw_round_counts, draw_visit_picks, draw_visit_round_counts, round_resampled_medians
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
    assert bank._shared_visit_picks("g") is bank._shared_visit_picks("g")
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
