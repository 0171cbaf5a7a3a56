"""Like-for-like statistics: round-paired bootstrap, max over ranks, the link check, the inclusion rule.

Traces here are SYNTHETIC (built in the test from stated numbers); expected values are computed
by hand or by brute force, never by the code under test.
"""

import numpy as np
import pytest
from report_helpers import CEILINGS, full_run, scenario, write_trace

from c3prof.analysis.dataset import load
from c3prof.analysis.speedup import BootstrapSettings, SeriesBank, analyze_group
from c3prof.analysis.stats import draw_round_counts, round_resampled_medians
from c3prof.analysis.strategies import summarize_strategies
from c3prof.report.build import build_report

BOOT = BootstrapSettings(n_resamples=1000)


def test_round_resampled_medians_match_brute_force():
    rng = np.random.default_rng(3)
    for n_rounds, per_round in ((4, 3), (5, 2), (7, 1)):
        values = rng.random(n_rounds * per_round)
        rounds = np.repeat(np.arange(n_rounds), per_round)
        counts = draw_round_counts(n_rounds, 300, rng)
        got = round_resampled_medians(values, rounds, counts)
        want = [np.median(np.concatenate([np.repeat(values[rounds == r], k) for r, k in enumerate(row)]))
                for row in counts]
        np.testing.assert_allclose(got, want)
        assert (counts.sum(axis=1) == n_rounds).all()


def with_rounds(recs, group, per_round):
    """Add the rounds a capture records (``per_round`` repetitions per round) to phase records."""
    for r in recs:
        n = len(r["samples"]["total_ms"])
        r["rounds"] = [i // per_round for i in range(n)]
        r["round_group"] = group
    return recs


def drifting_pair(tmp_path, paired: bool):
    """base and dma of one scenario, 8 rounds of 2 repetitions, each round's times scaled by a shared
    drift factor (clocks moving by up to +-3%); the true realized speedup against base is 1.5."""
    drift = np.repeat([1.00, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.03], 2)
    s = scenario("drift")
    s["comm"]["link"] = "pcie_h2d"
    base = full_run(s, "base", "default", 1.0 * drift, 1.0 * drift, 2.0 * drift, 1.6 * drift)
    dma = full_run(s, "dma", "default", 1.0 * drift, 1.0 * drift, 2.0 * drift, (2.0 / 1.5) * drift)
    recs = base + dma
    if paired:
        recs = with_rounds(recs, "drift@test", 2)
    return write_trace(tmp_path / f"drift_{paired}.jsonl", recs)


def test_paired_bootstrap_cancels_shared_drift(tmp_path):
    widths = {}
    for paired in (True, False):
        group = load([str(drifting_pair(tmp_path, paired))]).groups[0]
        ms = {m.run.id: m for m in analyze_group(group, SeriesBank(BOOT))}
        m = ms["drift/dma/default"]
        assert m.realized.value == pytest.approx(1.5)
        assert m.paired is paired
        lo, hi = m.realized.ci.as_list()
        assert lo <= 1.5 <= hi
        widths[paired] = hi - lo
    # Drift moves both runs of a round together: resampled by round it cancels in the ratio.
    assert widths[True] < 1e-9 < widths[False]


def test_runs_of_separate_sweeps_are_not_called_paired(tmp_path):
    """base and dma both record rounds, but of two sweeps (a resumed scenario): nothing is shared."""
    s = scenario("resumed")
    s["comm"]["link"] = "pcie_h2d"
    base = with_rounds(full_run(s, "base", "default", [1.0] * 4, [1.0] * 4, [2.0] * 4, [1.6] * 4), "resumed@a", 1)
    dma = with_rounds(full_run(s, "dma", "default", [1.0] * 4, [1.0] * 4, [2.0] * 4, [1.4] * 4), "resumed@b", 1)
    group = load([str(write_trace(tmp_path / "r.jsonl", base + dma))]).groups[0]
    ms = {m.run.id: m for m in analyze_group(group, SeriesBank(BOOT))}
    assert ms["resumed/base/default"].paired and not ms["resumed/dma/default"].paired


def test_ranks_of_one_capture_combine_by_maximum(tmp_path):
    s = scenario("ranks")
    fast = full_run(s, "base", "default", [1.0, 1.0, 1.0], [0.5, 0.5, 0.5], [1.5, 1.5, 1.5], [1.1, 1.2, 1.0])
    slow = full_run(s, "base", "default", [1.1, 0.9, 1.2], [0.5, 0.6, 0.4], [1.6, 1.4, 1.7], [1.0, 1.3, 1.1])
    paths = []
    for rank, recs in ((0, fast), (1, slow)):
        machine = {"record": "machine", "gpu": {"name": "TEST GPU (synthetic)"}, "versions": {},
                   "clocks_start": {}, "distributed": {"capture_id": "cap1", "rank": rank}}
        paths.append(str(write_trace(tmp_path / f"r{rank}.jsonl", recs, machine=machine, rank=rank, world_size=2)))
    ds = load(paths)
    run = ds.groups[0].runs["ranks/base/default"]
    np.testing.assert_allclose(run.phases["gemm"]["total_ms"], [1.1, 1.0, 1.2])
    np.testing.assert_allclose(run.phases["concurrent"]["total_ms"], [1.1, 1.3, 1.1])
    assert run.n_reps("serial") == 3                      # repetitions, not rank-repetitions
    assert run.rank_medians()["gemm"] == [1.0, 1.1]
    assert set(run.rank_medians()) == {"gemm", "comm", "serial", "concurrent"}
    # A phase read from one part has no spread to show: no medians are computed for it.
    single = load([paths[0]], split_by="trace").groups[0].runs["ranks/base/default"]
    assert [len(t) for t in single.rank_totals.values()] == [1, 1, 1, 1] and single.rank_medians() == {}
    row = build_report(ds)["results"][0]
    assert row["n_reps"] == 3 and row["rank_spread"]["gemm"]["max_over_min"] == pytest.approx(1.1)
    # Kept apart on request.
    assert len(load(paths, split_by="trace").groups) == 2


def test_runs_over_different_links_are_not_compared(tmp_path):
    s_sm = scenario("links")
    recs = full_run(s_sm, "base", "default", [1.0] * 3, [0.2] * 3, [1.2] * 3, [1.1] * 3, transport="sm_kernel")
    recs += full_run(s_sm, "dma", "default", [1.0] * 3, [5.0] * 3, [6.0] * 3, [5.1] * 3, transport="ce_h2d")
    rep = build_report(load([str(write_trace(tmp_path / "l.jsonl", recs))]))
    dma = next(r for r in rep["results"] if r["strategy"] == "dma")
    assert dma["link"] == "pcie_h2d" and dma["reference"] == "own"
    assert "different links" in dma["reference_note"]
    base = next(r for r in rep["results"] if r["strategy"] == "base")
    assert base["link"] == "hbm"


def test_inclusion_rule_applies_to_replicates_too(tmp_path):
    """A scenario whose ideal speedup hovers at the threshold enters some replicates and not others."""
    rng = np.random.default_rng(5)
    recs = []
    for name, tc in (("big", 0.9), ("edge", 0.05)):
        s = scenario(name)
        s["comm"]["link"] = "pcie_h2d"
        n = 12
        tg = 1.0 + rng.normal(0, 0.002, n)
        tcs = tc * (1 + rng.normal(0, 0.02, n))
        ts = tg + tcs + rng.normal(0, 0.002, n)
        tcc = np.maximum(tg, tcs) + 0.02 + rng.normal(0, 0.002, n)
        recs += with_rounds(full_run(s, "base", "default", tg, tcs, ts, tcc), f"{name}@t", 2)
    group = load([str(write_trace(tmp_path / "i.jsonl", recs))]).groups[0]
    ms = analyze_group(group, SeriesBank(BOOT))
    edge = next(m for m in ms if m.run.name == "edge")
    share = float(np.mean(edge.ideal.replicates >= 1.05))
    assert 0.02 < share < 0.98   # the edge scenario passes in some replicates only
    row = summarize_strategies(group, ms, BOOT, min_ideal=1.05)[0]
    big = next(m for m in ms if m.run.name == "big")
    point_in = edge.ideal.value >= 1.05
    assert row["scenarios"] == (["big", "edge"] if point_in else ["big"])
    assert row["mean_fraction_ci"] is not None
    # With the threshold far below, both always enter: the interval then mixes both scenarios.
    loose = summarize_strategies(group, ms, BOOT, min_ideal=1.0)[0]
    assert loose["n_scenarios"] == 2
    assert loose["mean_fraction_of_ideal"] == pytest.approx((big.fraction.value + edge.fraction.value) / 2)


def test_fraction_above_ideal_is_flagged(tmp_path):
    s = scenario("above")
    s["comm"]["link"] = "pcie_h2d"
    recs = with_rounds(full_run(s, "base", "default", [1.0, 1.01, 0.99, 1.0], [1.0, 1.0, 1.01, 0.99],
                                [2.0, 2.01, 1.99, 2.0], [0.95, 0.96, 0.94, 0.95]), "a@t", 1)
    rep = build_report(load([str(write_trace(tmp_path / "a.jsonl", recs, ceilings=CEILINGS))]))
    row = rep["results"][0]
    assert row["fraction_of_ideal"] > 1 and any("> 100%" in f for f in row["flags"])
    assert rep["strategies"][0]["above_ideal"] == ["above"]


def test_summary_rows_share_their_ideal_masks_and_give_the_rows_computed_alone():
    """The strategy summary's rows over one set of scenarios stack and compare the same ideal
    replicates (the scenario's base's): computed once (strategies._IdealPasses) and shared, the rows
    are those each row computes alone. A recorded H200 capture (strategies with several variants)."""
    import json
    from functools import partial
    from pathlib import Path

    from c3prof.analysis import strategies

    trace = Path(__file__).parent / "data" / "h200_default_1.jsonl"
    group = load([str(trace)]).groups[0]
    ms = analyze_group(group, SeriesBank(BOOT))
    rows = strategies.summary_rows(group, ms, BOOT)
    shared = rows[0].args[-1]
    assert all(isinstance(r, partial) and r.args[-1] is shared for r in rows)
    together = [r() for r in rows]
    alone = [partial(r.func, *r.args[:-1], None)() for r in rows]
    assert json.dumps(together) == json.dumps(alone)
    computed = [r for r in together if r["mean_fraction_ci"] is not None]
    assert len(computed) >= 3 and 1 <= len(shared._masks) < len(computed)   # masks shared between rows
