"""The capture runner on a SYNTHETIC GPU (tests/fakes.py): phases, validation, resume, failures."""

import pytest

from c3prof.capture.runner import CaptureOptions, Runner
from c3prof.capture.stopping import StoppingRule
from c3prof.plan.model import PlanOptions
from c3prof.plan.strategies import plan_runs
from c3prof.scenarios import load_suite
from c3prof.trace import TraceWriter, read_trace
from fakes import FakeBench


class QuietProgress:
    def __init__(self):
        self.lines = []

    def start(self, total):
        self.total = total

    def advance(self, n=1):
        pass

    def describe(self, text):
        pass

    def note(self, message):
        self.lines.append(message)

    def scenario_done(self, name, rows):
        from c3prof.capture.progress import scenario_line

        self.lines.append(scenario_line(name, rows))

    def stop(self):
        pass


RULE = StoppingRule(min_reps=4, max_reps=6, warmup=1)
PLAN = PlanOptions(sm_count=132, greatest_priority=-5)


def capture(path, bench, strategies=("base", "sp"), resume=False, **opts):
    plans = plan_runs(load_suite("smoke"), strategies, PLAN)
    writer = TraceWriter(path, resume=resume, fsync=False)
    runner = Runner(bench, writer, CaptureOptions(rule=RULE, **opts), QuietProgress(), existing=writer.existing)
    try:
        return runner.run(plans), runner
    finally:
        writer.close()


def test_phase_times_follow_the_schedule(tmp_path):
    p = tmp_path / "t.jsonl"
    summary, runner = capture(p, FakeBench(gemm_ms=2.0, comm_ms=0.5))
    assert summary.status == "complete" and summary.phases_measured == 2 * 3 * 4
    t = read_trace(p)
    assert len(t.runs) == 6 and all(r.complete for r in t.runs.values())
    run = t.runs["smoke-cb2k-x-4M/sp/comm_first"]
    # Hand-computed from the simulated schedule: serial = 2 + 0.5, concurrent = max(2, 0.5).
    assert run.phases["gemm"].total_ms == [2.0] * 4
    assert run.phases["comm"].total_ms == [0.5] * 4
    assert run.phases["serial"].total_ms == [2.5] * 4
    assert run.phases["concurrent"].total_ms == [2.0] * 4
    conc = run.phases["concurrent"].samples
    assert conc["gemm_start_ms"] == [0.0] * 4 and conc["comm_start_ms"] == [0.0] * 4
    assert run.phases["concurrent"].stop["reason"] == "noise"
    # Three validated communication phases per run, each recorded.
    assert [v["phase"] for v in run.validations] == ["comm", "serial", "concurrent"]
    assert t.finished and t.ceilings and t.engine_evidence
    # One quick result line per scenario: fraction 1.0 (no interference simulated).
    assert any("smoke-cb2k-x-4M" in line and "base/default +1.00" in line for line in runner.progress.lines)


def test_injected_corruption_is_reported(tmp_path):
    p = tmp_path / "t.jsonl"
    summary, _ = capture(p, FakeBench(), strategies=("base",), inject_corruption=True)
    assert len(summary.validation_failures) == 2
    bad = [v for r in read_trace(p).runs.values() for v in r.validations if not v["ok"]]
    assert {v["phase"] for v in bad} == {"concurrent"} and all(v["mismatched_bytes"] == 1 for v in bad)
    assert all(v["injected_corruption"] for v in bad)


def test_interrupt_keeps_completed_runs_and_resume_finishes(tmp_path):
    p = tmp_path / "t.jsonl"
    with pytest.raises(KeyboardInterrupt):
        capture(p, FakeBench(interrupt_after_runs=2))
    t = read_trace(p)
    assert sum(len(r.phases) for r in t.runs.values()) == 8 and all(r.complete for r in t.runs.values())
    assert t.ends[-1]["status"] == "interrupted"
    bench = FakeBench()
    summary, _ = capture(p, bench, resume=True)
    assert summary.phases_measured == 24 - 8 and bench.runs_started == 4
    t = read_trace(p)
    assert all(r.complete for r in t.runs.values()) and t.finished
    assert len(t.ceilings) == 1 and len(t.machines) == 2   # ceilings kept, new session's machine record


def test_resume_measures_only_missing_phases(tmp_path):
    p = tmp_path / "t.jsonl"
    capture(p, FakeBench(), strategies=("base",))
    lines = p.read_text().splitlines(keepends=True)
    last_phase = max(i for i, ln in enumerate(lines) if '"record":"phase"' in ln)
    p.write_text("".join(ln for i, ln in enumerate(lines) if i != last_phase and '"record":"end"' not in ln))
    bench = FakeBench()
    summary, _ = capture(p, bench, strategies=("base",), resume=True)
    assert summary.phases_measured == 1 and bench.phases_measured == ["concurrent"]
    assert all(r.complete for r in read_trace(p).runs.values())


def test_every_batch_is_validated(tmp_path):
    p = tmp_path / "t.jsonl"
    capture(p, FakeBench(), strategies=("base",))
    v = read_trace(p).runs["smoke-cb2k-x-4M/base/default"].validations
    # min_reps 4 -> batches of 2 (a third, rounded up), 2 batches per phase, each poisoned and checked.
    assert [x["batches_checked"] for x in v] == [2, 2, 2]
    assert all(x["bytes_checked"] == 2 * x["bytes_per_check"] for x in v)


def test_failed_run_is_recorded_and_the_sweep_continues(tmp_path):
    p = tmp_path / "t.jsonl"
    summary, _ = capture(p, FakeBench(fail_variant="gemm_first"))
    assert summary.runs_failed == ["smoke-cb2k-x-4M/sp/gemm_first", "smoke-mb-x-16M/sp/gemm_first"]
    t = read_trace(p)
    assert len(t.errors) == 2 and "simulated out of memory" in t.errors[0]["message"]
    assert sum(r.complete for r in t.runs.values()) == 4


def test_quick_fraction_uses_the_report_formula():
    from c3prof.capture.progress import quick_fraction

    base = {"gemm": 2.0, "comm": 1.0, "serial": 3.0}
    # ideal 3/2 = 1.5, realized 3/2.5 = 1.2: (1.2 - 1) / (1.5 - 1) = 0.4
    assert quick_fraction(base, {"concurrent": 2.5}) == pytest.approx(0.4)
    assert quick_fraction({**base, "serial": 2.0}, {"concurrent": 2.0}) is None     # ideal 1: nothing to gain
    assert quick_fraction(base, {}) is None
