"""forked.in_background (the strategy summary computed in a forked child while the report goes on):
the child's value or error comes back, a refused fork computes here and says so, and a report that
uses it equals the one computed in one process (tests/data/h200_smoke.jsonl, a real H200 capture)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from c3prof.analysis import forked

if not forked.can_fork():
    pytest.skip("needs the fork start method", allow_module_level=True)

SMOKE = Path(__file__).parent / "data" / "h200_smoke.jsonl"


def test_background_work_runs_in_a_child_and_comes_back():
    later = forked.in_background(lambda: (os.getpid(), [1.5, None, "x"]))
    pid, value = later.result()
    assert pid != os.getpid() and value == [1.5, None, "x"]
    assert later.result() == (pid, value)   # asked again: the same value, no second wait


def test_background_error_is_raised_where_the_result_is_asked():
    def fail():
        raise ValueError("summary failed")

    later = forked.in_background(fail)
    for _ in range(2):
        with pytest.raises(ValueError, match="summary failed"):
            later.result()


def test_refused_fork_computes_here_and_says_so(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked.ProcessPoolExecutor, "submit", refuse)
    assert forked.in_background(os.getpid).result() == os.getpid()
    assert "could not start another process (Resource temporarily unavailable); computing in this one" in \
        capsys.readouterr().err


def test_report_with_the_summary_beside_equals_the_one_process_report(monkeypatch):
    from c3prof.analysis import speedup
    from c3prof.analysis.dataset import load
    from c3prof.report import build

    dataset = load([str(SMOKE)])
    serial = build.build_report(dataset, build.ReportSettings(jobs=1))
    started = []
    real = forked.in_background
    monkeypatch.setattr(forked, "in_background", lambda work: started.append(1) or real(work))
    monkeypatch.setattr(speedup, "AUTO_MIN_RUNS", 1)      # the smoke capture's few runs count as large
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    beside = build.build_report(load([str(SMOKE)]), build.ReportSettings())
    assert started == [1] * len(dataset.groups) and serial["strategies"]
    assert json.dumps(beside, sort_keys=True) == json.dumps(serial, sort_keys=True)
