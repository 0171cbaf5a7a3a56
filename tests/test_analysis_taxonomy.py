"""Taxonomy rules, with thresholds and intensities computed by hand."""

import statistics

import pytest
from report_helpers import SYNTHETIC, med, records

from c3prof.analysis.dataset import load
from c3prof.analysis.taxonomy import (arithmetic_intensity, comm_sweeps, gemm_bound, length_class, rules)


def test_length_class_boundaries():
    assert length_class(1.16, 1.0) == "G-long"
    assert length_class(1.15, 1.0) == "GC-equal"  # "greater than", not "at least"
    assert length_class(1.0, 1.16) == "C-long"
    assert length_class(1.0, 1.0) == "GC-equal"
    assert length_class(1.3, 1.0, threshold=1.5) == "GC-equal"
    assert length_class(None, 1.0) == "unknown"


def test_arithmetic_intensity_and_bound_by_hand():
    m, n, k = 64, 16384, 16384
    ai = 2 * m * n * k / ((m * k + k * n + m * n) * 2)
    assert arithmetic_intensity({"m": m, "n": n, "k": k, "dtype": "bf16"}) == pytest.approx(ai)
    assert arithmetic_intensity({"m": 8, "n": 8, "k": 8, "dtype": "fp32"}) == pytest.approx(2 * 512 / (192 * 4))
    ceilings = {"gemm_flops_per_s": {"bf16": {"value": 6.8e14}}, "copy_bytes_per_s": {"d2d": {"value": 4.2e12}}}
    balance = 6.8e14 / 4.2e12  # about 162 FLOP per byte
    mb = gemm_bound({"m": m, "n": n, "k": k, "dtype": "bf16"}, ceilings)
    assert mb.cls == "memory-bound" and mb.balance == pytest.approx(balance)
    cb = gemm_bound({"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}, ceilings)
    assert cb.cls == "compute-bound" and cb.intensity == pytest.approx(4096 / 3)
    unknown = gemm_bound({"m": 1, "n": 1, "k": 1, "dtype": "fp16"}, ceilings)
    assert unknown.cls == "unknown" and "gemm_flops_per_s[fp16]" in unknown.reason
    assert gemm_bound({"m": 1, "n": 1, "k": 1}, {}).cls == "unknown"


def test_comm_sweep_by_hand():
    group = load([str(SYNTHETIC)]).groups[0]
    sweeps = comm_sweeps(group)
    # Independently: fastest median isolated T_c per size of transfer over sm_copy.
    best = {}
    for r in records(SYNTHETIC):
        if r["record"] == "phase" and r["phase"] == "comm" and r["params"]["transport"] == "sm_copy":
            size = r["scenario"]["comm"]["bytes"]
            best[size] = min(best.get(size, float("inf")), statistics.median(r["samples"]["total_ms"]))
    bw = {s: s / (t * 1e-3) for s, t in best.items()}
    plateau = max(bw.values())
    knee = min(s for s, b in bw.items() if b >= 0.8 * plateau)
    sweep = sweeps[("transfer", "sm_copy")]
    assert sweep.knee_bytes == knee and sweep.plateau == pytest.approx(plateau)
    assert sweep.classify(knee - 1)[0] == "latency-bound"
    assert sweep.classify(knee)[0] == "bandwidth-bound"
    few = sweeps[("transfer", "ce_d2d_local")]
    assert few.classify(1 << 28)[0] == "unknown" and "need 3" in few.reason


def test_scenario_class_comes_from_the_base_run():
    from c3prof.report.build import build_report

    rep = build_report(load([str(SYNTHETIC)]))
    rows = {r["run"]: r for r in rep["results"]}
    rid = "cb4k-x-64M/base/default"
    tg, tc = med(SYNTHETIC, rid, "gemm"), med(SYNTHETIC, rid, "comm")
    assert rows[rid]["taxonomy"] == length_class(tg, tc)
    # Every run of a scenario shares the base run's class, whatever its own isolated times.
    for r in rep["results"]:
        if r["scenario"] == "cb4k-x-64M":
            assert r["taxonomy"] == rows[rid]["taxonomy"] and r["taxonomy_detail"]["class_source"] == "base"
    assert rows["tiny-x-4M/sp/comm_first"]["taxonomy_detail"]["class_source"] == "own"


def test_rules_state_the_thresholds():
    text = " ".join(r["rule"] for r in rules(1.3, 0.7))
    assert "1.3 * T_c" in text and "70%" in text
