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
    # 6 repetitions: at least 6 rounds of one repetition each (min_reps 4 spread over 6 rounds).
    assert run.phases["gemm"].total_ms == [2.0] * 6
    assert run.phases["comm"].total_ms == [0.5] * 6
    assert run.phases["serial"].total_ms == [2.5] * 6
    assert run.phases["concurrent"].total_ms == [2.0] * 6
    conc = run.phases["concurrent"].samples
    assert conc["gemm_start_ms"].tolist() == [0.0] * 6 and conc["comm_start_ms"].tolist() == [0.0] * 6
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
        capture(p, FakeBench(interrupt_after_scenarios=1))
    t = read_trace(p)
    # The first scenario's three runs (base, sp x2) are complete; the second was never started.
    assert sum(len(r.phases) for r in t.runs.values()) == 12 and all(r.complete for r in t.runs.values())
    assert t.ends[-1]["status"] == "interrupted"
    bench = FakeBench()
    summary, _ = capture(p, bench, resume=True)
    assert summary.phases_measured == 24 - 12 and bench.runs_started == 3
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
    # min_reps 4 over at least 6 rounds -> 1 repetition per round, 6 rounds: 6 batches, each poisoned and checked.
    assert [x["batches_checked"] for x in v] == [6, 6, 6]
    assert all(x["bytes_checked"] == 6 * x["bytes_per_check"] for x in v)


def test_runs_of_a_scenario_are_measured_in_the_same_rounds(tmp_path):
    """Every phase of every run of a scenario gets one batch per round, in a fixed order, and records it."""
    p = tmp_path / "t.jsonl"
    capture(p, FakeBench(), strategies=("base", "sp"))
    t = read_trace(p)
    runs = [r for r in t.runs.values() if r.scenario["name"] == "smoke-cb2k-x-4M"]
    groups = {ph.record["round_group"] for r in runs for ph in r.phases.values()}
    assert len(groups) == 1 and next(iter(groups)).startswith("smoke-cb2k-x-4M@")
    for r in runs:
        for ph in r.phases.values():
            assert ph.record["rounds"] == [0, 1, 2, 3, 4, 5]
            assert ph.stop["rounds"] == 6 and ph.stop["reason"] == "noise"
    other = {ph.record["round_group"] for r in t.runs.values() if r.scenario["name"] == "smoke-mb-x-16M"
             for ph in r.phases.values()}
    assert other.isdisjoint(groups)


def test_interleaving_order_is_round_major(tmp_path):
    """Within a round the units run in plan order (base first), phase by phase; then the next round."""
    bench = FakeBench()
    calls = []
    from c3prof.capture import phases as phases_mod

    real = phases_mod.PhaseTimer.run_batch

    def spy(self, phase, reps):
        calls.append((id(self), phase))
        return real(self, phase, reps)

    phases_mod.PhaseTimer.run_batch = spy
    try:
        capture(tmp_path / "t.jsonl", bench, strategies=("base",))
    finally:
        phases_mod.PhaseTimer.run_batch = real
    first = calls[:4]   # warm-up: each phase once
    measured = calls[4:4 + 4 * 6]
    assert [ph for _, ph in first] == ["gemm", "comm", "serial", "concurrent"]
    assert [ph for _, ph in measured] == ["gemm", "comm", "serial", "concurrent"] * 6


def test_dma_on_a_link_without_copy_engines_is_not_applicable(tmp_path):
    """Engine evidence showing SMs for a copy-engine transport: the run is not measured, and says why."""
    p = tmp_path / "t.jsonl"
    summary, _ = capture(p, FakeBench(evidence_carrier="sm"), strategies=("base", "dma"))
    t = read_trace(p)
    assert not any(r.strategy == "dma" for r in t.runs.values())
    na = [e for e in t.errors if e.get("not_applicable")]
    assert len(na) == 2 and all("no other link is substituted" in e["message"] for e in na)
    assert summary.runs_failed == [] and all(r.complete for r in t.runs.values())


def test_a_run_not_applicable_is_reported_once_across_visits_and_resumes(tmp_path):
    """Visits 1 and 2 in one process, then visit 3 resumed in another (as scripts/run.sh does): the
    two dma runs are reported not applicable once each, not once per visit and resume."""
    p = tmp_path / "t.jsonl"
    capture(p, FakeBench(evidence_carrier="sm"), strategies=("base", "dma"), visits=2)
    capture(p, FakeBench(evidence_carrier="sm"), strategies=("base", "dma"), resume=True, visits=3)
    na = [e["run"] for e in read_trace(p).errors if e.get("not_applicable")]
    assert sorted(na) == ["smoke-cb2k-x-4M/dma/default", "smoke-mb-x-16M/dma/default"]


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
