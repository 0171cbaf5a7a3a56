"""Counter summaries: L2 sectors and the non-SM share, against values computed from the raw records."""

import statistics

import pytest
from report_helpers import SYNTHETIC, records

from c3prof.analysis.counters import counter_series, l2_summary, metric_values, non_sm_share_values
from c3prof.analysis.dataset import load
from c3prof.analysis.speedup import BootstrapSettings


def _raw(run, phase, source="ncu"):
    return [r for r in records(SYNTHETIC) if r["record"] == "counters" and r["run"] == run
            and r["phase"] == phase and r["source"] == source]


@pytest.fixture(scope="module")
def group():
    return load([str(SYNTHETIC)]).groups[0]


def test_l2_traffic_and_share_by_hand(group):
    rid = "cb4k-x-32M/dma/ce_peer"
    run = group.runs[rid]
    g = [r["metrics"]["lts__t_sectors"]["value"] for r in _raw(rid, "gemm")]
    c = [r["metrics"]["lts__t_sectors"]["value"] for r in _raw(rid, "concurrent")]
    assert sorted(metric_values(run, "gemm", "lts__t_sectors")) == sorted(g)
    s = l2_summary(run, BootstrapSettings())
    assert s["l2_sectors_gemm"]["value"] == pytest.approx(statistics.median(g))
    assert s["l2_sectors_ratio"]["value"] == pytest.approx(statistics.median(c) / statistics.median(g))
    shares = [1 - r["metrics"]["lts__t_sectors_srcunit_tex"]["value"] / r["metrics"]["lts__t_sectors"]["value"]
              for r in _raw(rid, "concurrent")]
    assert s["non_sm_share_concurrent"]["value"] == pytest.approx(statistics.median(shares))
    assert s["non_sm_share_concurrent"]["n"] == 3 and s["non_sm_share_concurrent"]["ci"] is not None
    assert set(s["sources"]) == {"ncu", "pm_sampling"}


def test_single_measurement_is_said_to_be_one(group):
    s = l2_summary(group.runs["mb64-x-32M/dma/ce_peer"], BootstrapSettings())
    assert s["l2_sectors_gemm"]["ci"] is None and "single measurement" in s["l2_sectors_gemm"]["note"]
    assert "single measurement" in s["l2_sectors_ratio"]["note"]


def test_runs_without_counters(group):
    assert l2_summary(group.runs["cb4k-x-64M/dma/ce_peer"], BootstrapSettings()) is None


def test_series_fallback_and_series_listing(group):
    run = group.runs["cb4k-x-32M/dma/ce_peer"]
    series = counter_series(run, "concurrent")
    assert {m for _, m, _, _ in series} == {"lts__t_sectors", "lts__t_sectors_srcunit_tex"}
    # With the ncu records removed, the share comes from the PM-sampling series, and says so.
    saved = run.counters
    run.counters = [c for c in saved if c["source"] == "pm_sampling"]
    try:
        shares, basis = non_sm_share_values(run, "concurrent")
        pm = _raw(run.id, "concurrent", "pm_sampling")[0]["series"]
        expected = [1 - t / a for a, t in zip(pm["lts__t_sectors"], pm["lts__t_sectors_srcunit_tex"]) if a > 0]
        assert list(shares) == pytest.approx(expected)
        assert "series sample" in basis and "autocorrelated" in basis
    finally:
        run.counters = saved
