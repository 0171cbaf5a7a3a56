"""The falsification test of the no-interference premise: verdict rule, arms, alerts."""

from types import SimpleNamespace

import numpy as np
import pytest
from report_helpers import SYNTHETIC, med

from c3prof.analysis.dataset import load
from c3prof.analysis.falsification import (PREMISE, FalsificationSettings, carrier_alerts, paired_difference,
                                           paired_differences, verdict)
from c3prof.analysis.speedup import Estimate
from c3prof.analysis.stats import CI, no_ci
from c3prof.report.build import ReportSettings, build_report


def arm(value, low, high, overlap=1.0, reps=None, paired=True):
    ci = CI(low, high) if low is not None else no_ci("test: no interval")
    return SimpleNamespace(gemm_slowdown=Estimate(value, ci, reps), overlap=Estimate(overlap, no_ci("n/a")),
                           paired=paired)


def diff(value, low, high):
    return Estimate(value, CI(low, high) if low is not None else no_ci("test: no interval"))


S = FalsificationSettings()


@pytest.mark.parametrize("dma, sm, d, expected", [
    (arm(1.05, 1.03, 1.07), None, None, "refuted"),                              # needs no control
    (arm(1.00, 0.99, 1.01), arm(1.25, 1.2, 1.3), diff(-0.25, -0.3, -0.2), "holds"),
    (arm(1.00, 0.99, 1.01), arm(1.01, 1.00, 1.02), diff(-0.01, -0.02, 0.005), "inconclusive"),  # blind test
    (arm(1.00, 0.99, 1.01, overlap=0.2), arm(1.25, 1.2, 1.3), diff(-0.25, -0.3, -0.2), "inconclusive"),
    (arm(1.02, 1.01, 1.03), arm(1.25, 1.2, 1.3), diff(-0.23, -0.3, -0.2), "inconclusive"),  # straddles 1.02
    (arm(1.00, 0.99, 1.01), None, None, "not enough data"),                      # no same-link control
    (arm(1.00, 0.99, 1.01), arm(1.25, 1.2, 1.3), diff(-0.25, None, None), "not enough data"),
    (arm(1.00, None, None), arm(1.25, 1.2, 1.3), diff(-0.25, -0.3, -0.2), "not enough data"),
    (None, arm(1.25, 1.2, 1.3), None, "not enough data"),
])
def test_verdict_rule(dma, sm, d, expected):
    assert verdict(dma, sm, S, d)[0] == expected


def test_overlap_requirement_can_be_disabled():
    low_overlap = arm(1.00, 0.99, 1.01, overlap=0.2)
    d = diff(-0.25, -0.3, -0.2)
    assert verdict(low_overlap, arm(1.25, 1.2, 1.3), FalsificationSettings(min_overlap=0.0), d)[0] == "holds"


def test_paired_difference_uses_one_interval_of_the_difference():
    """Two arms whose separate intervals overlap can still differ clearly when paired by round."""
    rng = np.random.default_rng(0)
    shared = rng.normal(0, 0.02, 2000)            # round-to-round drift that moves both arms
    a = arm(1.00, 0.96, 1.04, reps=(1.00 + shared + rng.normal(0, 0.001, 2000)).astype(np.float32))
    b = arm(1.01, 0.97, 1.05, reps=(1.01 + shared + rng.normal(0, 0.001, 2000)).astype(np.float32))
    d = paired_difference(a, b, 0.95)
    assert d.value == pytest.approx(-0.01)
    assert d.ci.high < 0 < d.ci.high + 0.02 and d.ci.high - d.ci.low < 0.01
    unpaired = paired_difference(arm(1.0, 0.9, 1.1, reps=a.gemm_slowdown.replicates, paired=False), b, 0.95)
    assert "independently" in unpaired.ci.reason


def test_paired_differences_in_one_call_equal_them_one_by_one():
    """The batch (falsify and the dose-response share it) gives each pair's paired_difference: value,
    interval and reason, for pairs with and without replicates or values, in their order."""
    rng = np.random.default_rng(1)
    reps = [rng.normal(1.0, 0.02, 2000).astype(np.float32) for _ in range(4)]
    pairs = [(arm(1.0, 0.9, 1.1, reps=reps[0]), arm(1.1, 1.0, 1.2, reps=reps[1])),
             (arm(None, None, None), arm(1.1, 1.0, 1.2, reps=reps[1])),
             (arm(1.2, 1.1, 1.3, reps=None), arm(1.1, 1.0, 1.2, reps=reps[2])),
             (arm(1.0, 0.9, 1.1, reps=reps[3], paired=False), arm(1.1, 1.0, 1.2, reps=reps[0])),
             (arm(1.0, 0.9, 1.1, reps=reps[2]), arm(1.0, 0.9, 1.1, reps=reps[2]))]   # no spread: no interval
    batch = paired_differences(pairs, 0.95)
    assert [(d.value, d.ci) for d in batch] == [(d.value, d.ci) for d in (paired_difference(a, b, 0.95) for a, b in pairs)]
    assert batch[0].ci.ok and batch[1].value is None and batch[2].ci.reason == "slowdown replicates not kept"
    assert "independently" in batch[3].ci.reason and not batch[4].ci.ok
    assert paired_differences([], 0.95) == []


def test_a_shared_memo_computes_each_pair_once(monkeypatch):
    """falsify and dose_response share a memo in the report: a pair the first computed is the same
    Estimate for the second, a new pair is computed, and the numbers are those without the memo."""
    import c3prof.analysis.falsification as fals

    rng = np.random.default_rng(2)
    a, b, c = (arm(1.0 + i / 10, 0.9, 1.2, reps=rng.normal(1.0, 0.02, 2000).astype(np.float32)) for i in range(3))
    computed = []
    real = fals._differences
    monkeypatch.setattr(fals, "_differences", lambda pairs, conf: computed.append(len(pairs)) or real(pairs, conf))
    memo: fals.DifferenceMemo = {}
    first = paired_differences([(a, b), (a, b)], 0.95, memo)    # a pair twice in one call: computed once
    second = paired_differences([(a, c), (a, b)], 0.95, memo)
    assert computed == [1, 1] and first[0] is first[1] is second[1] and second[0] is not first[0]
    assert paired_differences([(a, b)], 0.99, memo)[0] is not first[0]   # another confidence: another interval
    alone = paired_differences([(a, c), (a, b)], 0.95)
    assert [(d.value, d.ci) for d in second] == [(d.value, d.ci) for d in alone]


@pytest.fixture(scope="module")
def report():
    return build_report(load([str(SYNTHETIC)]))


def entry(rep, gemm_label, transfer_label):
    return next(f for f in rep["falsification"] if f["gemm"]["label"] == gemm_label
                and (f["transfer"] or {}).get("label") == transfer_label)


def test_synthetic_verdicts(report):
    assert entry(report, "4096x4096x4096 bf16", "transfer 64MiB")["verdict"] == "holds"
    assert entry(report, "64x16384x16384 bf16", "transfer 32MiB")["verdict"] == "refuted"
    low = entry(report, "4096x4096x4096 bf16", "transfer 32MiB")
    assert low["verdict"] == "inconclusive" and "overlapped" in low["reason"]
    nodma = next(f for f in report["falsification"] if f["gemm"]["label"] == "1024x1024x1024 fp32")
    assert nodma["verdict"] == "not enough data" and nodma["transfer"] is None and nodma["slowdown"] is None


def test_entry_contents_by_hand(report):
    f = entry(report, "64x16384x16384 bf16", "transfer 32MiB")
    rid, sm = "mb64-x-32M/dma/ce_peer", "mb64-x-32M/base/default"
    assert f["slowdown"] == pytest.approx(med(SYNTHETIC, rid, "concurrent", "gemm_ms") / med(SYNTHETIC, rid, "gemm"))
    assert f["sm_slowdown"] == pytest.approx(med(SYNTHETIC, sm, "concurrent", "gemm_ms") / med(SYNTHETIC, sm, "gemm"))
    assert f["transfer"]["carrier"] == "copy_engine" and f["sm_transfer"]["carrier"] == "sm"
    assert f["premise"] == PREMISE and "SYNTHETIC" in f["platform"] and "1.02" in f["rule"]
    assert f["slowdown_ci"][0] > 1.02
    assert PREMISE in f["evidence"] and f["gpu"] in f["evidence"]


def test_dma_not_on_copy_engines_is_flagged_and_excluded(report):
    group = load([str(SYNTHETIC)]).groups[0]
    alerts = carrier_alerts(group)
    assert [a["run"] for a in alerts] == ["cb4k-x-256M/dma/ce_d2d_local"]
    assert "not 'copy_engine'" in alerts[0]["message"]
    assert any(a["kind"] == "dma_carrier" for a in report["alerts"])
    used = {(f["transfer"] or {}).get("run") for f in report["falsification"]}
    assert "cb4k-x-256M/dma/ce_d2d_local" not in used


def test_tolerance_setting_changes_the_verdict():
    loose = FalsificationSettings(tolerance=0.1)
    f = entry(build_report(load([str(SYNTHETIC)]), ReportSettings(falsification=loose)),
              "64x16384x16384 bf16", "transfer 32MiB")
    # No longer refuted; not "holds" either: the transfer covered only about a third of the GEMM.
    assert f["verdict"] == "inconclusive" and "overlapped" in f["reason"] and "1.1" in f["rule"]
    loose = FalsificationSettings(tolerance=0.1, min_overlap=0.0)
    f = entry(build_report(load([str(SYNTHETIC)]), ReportSettings(falsification=loose)),
              "64x16384x16384 bf16", "transfer 32MiB")
    assert f["verdict"] == "holds"
