"""The interference study's controls and rate knobs, GPU-free: scenario syntax (sleep, gap, ctas), the
plan (a sleep control runs once, as base), a capture on the SYNTHETIC backend (tests/fakes.py, nothing
measured) and the report's controls table."""

import functools
import json

import numpy as np
import pytest

from c3prof.analysis.interference import CONTROL_KINDS
from c3prof.capture.runner import CaptureOptions, Runner
from c3prof.errors import ScenarioError
from c3prof.plan.strategies import plan_runs
from c3prof.scenarios import dump_scenarios, load_suite, parse_scenarios
from c3prof.trace import TraceWriter, read_trace
from fakes import FakeBench
from report_helpers import run_cli
from test_runner_fake import PLAN, RULE, QuietProgress

GEMM = 'gemm = { m = 64, n = 16384, k = 16384, dtype = "bf16" }'


def one(comm: str):
    return parse_scenarios(f'[[scenario]]\nname = "s"\n{GEMM}\ncomm = {comm}\n', "test.toml")[0]


def test_sleep_gap_and_ctas_parse_and_round_trip():
    sleep = one('{ op = "sleep", duration = "1.5ms" }')
    assert (sleep.comm.op, sleep.comm.bytes, sleep.comm.duration_us) == ("sleep", 0, 1500.0)
    gap = one('{ op = "transfer", link = "pcie_h2d", bytes = "8MiB", chunk = "1MiB", gap = "20us", ctas = 2 }')
    assert (gap.comm.gap_us, gap.comm.ctas, gap.comm.chunks) == (20.0, 2, 8)
    assert gap.comm.label == "transfer 8MiB pcie_h2d (8x1MiB) gap 20us 2 CTAs"
    for s in (sleep, gap):
        again = parse_scenarios(dump_scenarios([s]), "again.toml")[0]
        assert again.comm == s.comm
        # a trace stores to_dict(); reading it back gives the same spec
        assert type(s).from_dict(json.loads(json.dumps(s.to_dict())), "trace").comm == s.comm


@pytest.mark.parametrize("comm, message", [
    ('{ op = "sleep" }', "needs a 'duration'"),
    ('{ op = "sleep", duration = "1ms", bytes = "8MiB" }', "moves no bytes"),
    ('{ op = "sleep", duration = "5" }', "as a duration"),
    ('{ op = "transfer", bytes = "8MiB", gap = "-3us" }', "as a duration"),
    ('{ op = "transfer", bytes = "8MiB", ctas = 0 }', "must be positive"),
    ('{ op = "all_gather", bytes = "8MiB", gap = "3us" }', "apply to op = .transfer. only"),
])
def test_bad_control_fields_are_one_line_errors(comm, message):
    with pytest.raises(ScenarioError, match=message):
        one(comm)


def test_a_sleep_control_is_planned_once_as_base():
    plans = plan_runs([one('{ op = "sleep", duration = "1ms" }')], ("base", "sp", "rp", "dma"), PLAN)
    assert [(p.variant.strategy, p.variant.transport) for p in plans] == [("base", "sm_sleep")]
    assert plan_runs([one('{ op = "sleep", duration = "1ms" }')], ("dma",), PLAN) == []


CONTROLS = ("mb64-sleep", "mb64-hbm-1cta", "mb64-h2d-1M-gap20us", "mb64-h2d-1copy")


def test_controls_capture_and_report_on_the_synthetic_backend(tmp_path):
    scenarios = [s for s in load_suite("interference") if s.name in CONTROLS]
    plans = plan_runs(scenarios, ("base", "dma"), PLAN)
    path = tmp_path / "controls.jsonl"
    writer = TraceWriter(path, fsync=False)
    bench = FakeBench(gemm_ms=0.14, comm_ms=2.0, evidence_carrier="copy_engine")
    try:
        Runner(bench, writer, CaptureOptions(rule=RULE), QuietProgress()).run(plans)
    finally:
        writer.close()
    trace = read_trace(path)
    assert sorted(trace.runs) == sorted(p.id for p in plans)
    assert "mb64-sleep/dma/default" not in trace.runs
    # the sleep control moves no bytes: complete, and never validated; every transfer is
    validated = {rid for rid, r in trace.runs.items() if r.validations}
    assert trace.runs["mb64-sleep/base/default"].complete and "mb64-sleep/base/default" not in validated
    assert {"mb64-h2d-1M-gap20us/dma/default", "mb64-hbm-1cta/base/default"} <= validated
    assert not any(e["transport"] == "sm_sleep" for e in trace.engine_evidence)
    out = tmp_path / "report.json"
    proc = run_cli(str(path), "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    (dose,) = json.loads(out.read_text())["interference"]
    kinds = {c["scenario"]: c["kind"] for c in dose["controls"]}
    assert kinds == {"mb64-sleep": "sleep", "mb64-hbm-1cta": "sm_device_copy"}
    assert set(kinds.values()) == set(CONTROL_KINDS.values())
    gap = next(a for a in dose["arms"] if a["scenario"] == "mb64-h2d-1M-gap20us")
    assert (gap["gap_us"], gap["copies"]) == (20.0, 8)


def test_window_bytes_counts_only_the_copies_inside_the_gemm():
    from c3prof.analysis.interference import window_bytes

    mib = 2**20
    # one 8 MiB copy of 0.16 ms beside a 0.13 ms GEMM: 13/16 of it falls inside
    assert window_bytes(8 * mib, 8 * mib, 0.0, 0.16, 0.13) == pytest.approx(8 * mib * 0.13 / 0.16)
    # 8 copies of 1 MiB, 0.025 ms each, 0.2 ms apart: a 0.13 ms GEMM meets only the first
    t_c = 8 * 0.025 + 7 * 0.2
    assert window_bytes(8 * mib, mib, 0.2, t_c, 0.13) == pytest.approx(mib)
    # started 0.01 ms after the GEMM: the first copy still fits
    assert window_bytes(8 * mib, mib, 0.2, t_c, 0.13, offset_ms=0.01) == pytest.approx(mib)
    # a transfer shorter than the GEMM is inside it entirely
    assert window_bytes(4 * mib, mib, 0.0, 0.08, 0.13) == pytest.approx(4 * mib)


def _h200_interference_report(tmp_path) -> dict:
    out = tmp_path / "r.json"
    proc = run_cli("tests/data/h200_interference_controls.jsonl", "tests/data/h200_interference_grid_counters.jsonl",
                   "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    (dose,) = json.loads(out.read_text())["interference"]
    return dose


def test_h200_controls_and_mechanism(tmp_path):
    """The measured study (committed H200 captures): the claims analysis/interference.md makes."""
    d = _h200_interference_report(tmp_path)
    controls = {c["scenario"]: c for c in d["controls"]}
    assert controls["mb64-sleep"]["slowdown_ci"][0] < 1.0 < controls["mb64-sleep"]["slowdown_ci"][1]
    # an SM copy inside HBM at about a copy engine's byte rate (2 CTAs) slows the GEMM by more than 5%
    assert 40 < controls["mb64-hbm-2cta"]["hbm_write_gbps"] < 80 and controls["mb64-hbm-2cta"]["slowdown_ci"][0] > 1.05
    mech = {(r["scenario"], r["carrier"]): r for r in d["mechanism"]}
    h2d, d2h = mech[("mb64-h2d-1copy", "copy_engine")], mech[("mb64-d2h-1copy", "copy_engine")]
    # host->device adds DRAM writes only, device->host reads only: 8 MiB per repetition
    assert abs(h2d["dram_read_added_mb"]) < 1 and 8 < h2d["dram_write_added_mb"] < 9
    assert abs(d2h["dram_write_added_mb"]) < 1 and 8 < d2h["dram_read_added_mb"] < 9
    assert h2d["slowdown"] > 1.05 and d2h["slowdown"] < 1.02
    # the GEMM's L2 hit rate is unchanged beside every copy-engine arm (no eviction of its operands)
    for r in d["mechanism"]:
        if r["carrier"] == "copy_engine":
            assert abs(r["l2_sm_read_hit_beside"] - r["l2_sm_read_hit_alone"]) < 0.001, r
    (h2d_threshold,) = [t for t in d["thresholds"] if t["link"] == "pcie_h2d"]
    assert 5 < h2d_threshold["no_slowdown_up_to_gbps"] < h2d_threshold["slowdown_from_gbps"] < 20


def test_a_trace_with_counters_of_an_untimed_run_is_read_with_a_note():
    """c3prof 0.1.0 profiled runs it had reported not applicable; such a trace (committed, measured)
    stays readable: the records are kept aside and named, not attached to a run."""
    from c3prof.analysis.dataset import load
    from c3prof.trace import read_trace

    path = "tests/data/h200_interference_grid_counters.jsonl"
    trace = read_trace(path)
    assert {o["run"] for o in trace.orphans} == {"mb64-hbm-2cta/dma/default"}
    assert any("name runs without timed phases" in n for n in load([path]).notes)


def test_counters_are_not_collected_for_runs_reported_not_applicable(tmp_path, monkeypatch):
    import c3prof.capture.counters as counters

    chosen = []
    monkeypatch.setattr(counters, "collect_profiled", lambda source, plans, *a, **k: chosen.extend(p.id for p in plans))
    scenarios = [s for s in load_suite("interference") if s.name == "mb64-hbm-2cta"]
    plans = plan_runs(scenarios, ("base", "dma"), PLAN)
    bench = FakeBench(evidence_carrier="sm")     # every transport measured on SMs: dma is not applicable
    bench.release_memory = lambda: None
    writer = TraceWriter(tmp_path / "t.jsonl", fsync=False)
    try:
        Runner(bench, writer, CaptureOptions(rule=RULE, ncu=True), QuietProgress()).run(plans)
    finally:
        writer.close()
    assert chosen == ["mb64-hbm-2cta/base/default"]


CONTROL_ARMS = ("mb64-sleep/base/default", "mb64-h2d-256M/dma/default", "mb64-h2d-256M-1M/dma/default",
                "mb64-d2h-256M/dma/default", "mb64-hbm-allsm/base/default", "mb64-h2d-1M-gap60us/dma/default")


@functools.cache
def _h200_control_slowdowns() -> dict[str, list[float]]:
    """GEMM slowdown per control arm in the four committed controls captures (sessions 6, 7, 7, 10)."""
    from c3prof.analysis.dataset import load
    from c3prof.report.build import build_report
    from report_helpers import DATA

    values: dict[str, list[float]] = {}
    for name in ("", "_s7_1", "_s7_2", "_s10"):
        rep = build_report(load([str(DATA / f"h200_interference_controls{name}.jsonl")]))
        for r in rep["results"]:
            if r["run"] in CONTROL_ARMS:
                values.setdefault(r["run"], []).append(r["gemm_slowdown"])
    return values


def test_the_controls_repeat_across_four_captures_on_three_h200s():
    """analysis/interference.md: sessions 6, 7 (twice) and 10 agree within 1.5% on every control arm."""
    values = _h200_control_slowdowns()
    assert set(values) == set(CONTROL_ARMS) and all(len(v) == 4 for v in values.values())
    for run, v in values.items():
        assert max(v) / min(v) < 1.015, (run, v)


def test_a_gated_standalone_script_is_stable_and_an_ungated_one_is_not():
    """benchmarks/standalone_interference.py on three H200s (runs a-e; results committed): the gated
    mode gives the same slowdowns to within 1.5% in every run, the side-first mode does not, and its
    GEMM-alone window holds more than the 0.125 ms kernel (the host's launch). Batched (c3prof's
    scheme: repetitions back to back), the host->device arm lands where c3prof's captures do."""
    from pathlib import Path

    results = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
    runs = [json.loads((results / f"standalone_interference_session10_{k}.json").read_text())["arms"] for k in "abcde"]
    for arm in ("ce_h2d_256MiB", "ce_h2d_256x1MiB", "ce_d2h_256MiB", "sm_add_256MiB"):
        gated = [r[f"{arm}/gated"]["slowdown"] for r in runs]
        side = [r[f"{arm}/side_first"]["slowdown"] for r in runs]
        assert max(gated) / min(gated) < 1.015, (arm, gated)
        assert max(side) / min(side) > 1.02, (arm, side)
    assert all(abs(r["alone/gated"]["median_ms"] - 0.125) < 0.001 for r in runs)
    assert all(r["alone/side_first"]["median_ms"] > 0.135 for r in runs)
    c3prof = _h200_control_slowdowns()["mb64-h2d-256M/dma/default"]
    for run in runs[3:]:
        batched, gated = run["ce_h2d_256MiB/batched"], run["ce_h2d_256MiB/gated"]
        assert batched["ci95"][0] > gated["ci95"][1]            # back to back costs the GEMM more
        assert batched["ci95"][0] <= float(np.median(c3prof)) <= batched["ci95"][1]
    # a copy engine kept busy up to the release (primed) costs the GEMM more than one starting idle
    for arm in ("ce_h2d_256MiB", "ce_h2d_256x1MiB"):
        assert runs[4][f"{arm}/primed"]["ci95"][0] > runs[4][f"{arm}/gated"]["ci95"][1] + 0.02
