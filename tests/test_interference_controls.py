"""The interference study's controls and rate knobs, GPU-free: scenario syntax (sleep, gap, ctas), the
plan (a sleep control runs once, as base), a capture on the SYNTHETIC backend (tests/fakes.py, nothing
measured) and the report's controls table."""

import json

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
