"""benchmarks/bench_ingest.py's side-by-side harness, without running a tool: the order of the runs
(every tool once per repetition, after one unmeasured warm-up run each), the per-repetition
speed-up, and the bytecode-cache environment. The measurements here are SYNTHETIC stand-ins (made-up
work times returned by a fake ``_measure``), not measurements.
"""

import sys
from pathlib import Path

import pytest

# c3prof is imported first, so that it stays the installed package once the repository root is put
# first on sys.path for `benchmarks` (as tests/test_bench_collectives.py does).
import c3prof  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_ingest  # noqa: E402


def test_every_repetition_runs_every_tool_after_one_warm_up_each(monkeypatch, tmp_path):
    calls = []

    def fake_measure(tool, trace, timeout, root, env):
        calls.append((tool, root.name))
        return {"tool": tool, "ok": True, "work_s": float(len(calls)), "peak_mb": 1.0}

    monkeypatch.setattr(bench_ingest, "_measure", fake_measure)
    roots = {"": tmp_path / "worktree", "@main": tmp_path / "main"}
    runs, loads = bench_ingest._measure_all(["c3prof-ingest", "hta-overlap"], Path("t.json"), 1.0, 2, roots,
                                            env=None, warm_up=True)
    one_round = [("c3prof-ingest", "worktree"), ("c3prof-ingest", "main"), ("hta-overlap", bench_ingest.REPO.name)]
    assert calls == one_round * 3  # the warm-up round, then two repetitions
    assert len(loads) == 2
    assert {tool: [r["work_s"] for r in rs] for tool, rs in runs.items()} == {
        "c3prof-ingest": [4.0, 7.0], "c3prof-ingest@main": [5.0, 8.0], "hta-overlap": [6.0, 9.0]}


def test_no_warm_up_run_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(bench_ingest, "_measure",
                        lambda tool, *a: calls.append(tool) or {"ok": True, "work_s": 1.0, "peak_mb": 1.0})
    bench_ingest._measure_all(["hta-overlap"], Path("t.json"), 1.0, 3, {"": ROOT}, env=None, warm_up=False)
    assert calls == ["hta-overlap"] * 3


def test_speed_up_per_repetition_pairs_the_runs_of_one_repetition():
    assert bench_ingest.per_run_speedups([4.0, 3.0, 9.0], [1.0, 1.5, 3.0]) == pytest.approx([4.0, 2.0, 3.0])


def test_bytecode_cache_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = bench_ingest._bytecode_env(tmp_path / "pycache")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache")
    assert env["PATH"] == bench_ingest.os.environ["PATH"]


def test_median_run_keeps_every_run_and_reports_a_failure_first():
    runs = [{"ok": True, "work_s": w, "peak_mb": m} for w, m in ((3.0, 10.0), (1.0, 30.0), (2.0, 20.0))]
    best = bench_ingest._median_run("c3prof-ingest", runs)
    assert (best["work_s"], best["work_s_runs"], best["peak_mb"]) == (2.0, [3.0, 1.0, 2.0], 30.0)
    failed = bench_ingest._median_run("hta-overlap", runs + [{"ok": False, "error": "exit 1: boom"}])
    assert failed == {"ok": False, "error": "exit 1: boom", "tool": "hta-overlap"}
