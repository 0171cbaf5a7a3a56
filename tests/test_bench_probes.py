"""The benchmark helpers behind the report's timings: the private bytecode cache bench_report gives
every timed report (so a host whose packages ship no bytecode does not time their compilation), and
the two probes of what a fresh report process and a machine's CPUs cost. Traces here are SYNTHETIC
(bench_report's generator)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_report  # noqa: E402


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "synthetic.jsonl"
    bench_report.build_trace(path, 2000, scenarios=5, rounds=True)
    return path


def test_bytecode_prefix_holds_every_module_the_report_imports(small_trace, tmp_path):
    who = bench_report.Candidate("worktree", sys.executable, ROOT)
    prefix, n, lacking = bench_report.bytecode_prefix([who], small_trace, tmp_path)
    compiled = {p.relative_to(prefix) for p in prefix.rglob("*.pyc")}
    assert n == len(compiled) and 0 <= lacking <= n
    names = {p.name.split(".")[0] for p in compiled}
    assert {"trace", "speedup", "build", "json_out", "numeric"} <= names   # c3prof's and numpy's own
    # A report run with the prefix reads numpy's bytecode from it, not from beside numpy's sources.
    code = "import numpy, sys; print(numpy.__cached__, sys.pycache_prefix)"
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPYCACHEPREFIX=str(prefix)),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == str(prefix) and out[0].startswith(str(prefix)) and Path(out[0]).is_file()


def test_probe_startup_splits_a_report_process(small_trace, tmp_path):
    out = tmp_path / "startup.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "probe_startup.py"), str(small_trace),
                           "--repeat", "1", "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = json.loads(out.read_text())["runs"]
    report = runs["report --json"][0]
    assert report["to_line_s"] > 0 and report["after_line_s"] >= 0
    assert report["to_line_s"] + report["after_line_s"] == pytest.approx(report["wall_s"])
    assert runs["python -S -c pass"][0]["wall_s"] < report["wall_s"]
    assert "after it" in proc.stdout


def test_probe_cpu_pairs_times_a_pair_alone_and_together(tmp_path):
    out = tmp_path / "pairs.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "probe_cpu_pairs.py"), "--pairs", "0,0",
                           "--repeat", "1", "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (round_,) = json.loads(out.read_text())["pairs"]["0,0"]
    # Both copies on one CPU: each takes about twice as long as alone (the probe's own control).
    # Against the faster run alone: on a busy machine one run alone was once as slow as 0.46 s
    # against 0.30 s for the other, which the slower one's 1.3 times missed (together: 0.55 s).
    assert len(round_["alone_s"]) == len(round_["together_s"]) == 2
    assert min(round_["together_s"]) > 1.3 * min(round_["alone_s"])


def test_bench_report_writes_a_trace_and_refuses_to_overwrite_one(small_trace, tmp_path):
    """--write-trace: the layout asked for (here 2 repetitions a phase, the layout that session 22
    found slow), and a one-line refusal for a path that exists, which is left as it was."""
    script = str(ROOT / "benchmarks" / "bench_report.py")
    path = tmp_path / "reps2.jsonl"
    args = [sys.executable, script, "--samples", "160", "--scenarios", "5", "--write-trace", str(path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "160 samples (SYNTHETIC)" in proc.stdout, proc.stdout + proc.stderr
    phases = [json.loads(line) for line in path.read_text().splitlines() if '"record":"phase"' in line]
    assert phases and {len(p["samples"]["total_ms"]) for p in phases} == {2}
    before = small_trace.read_bytes()
    proc = subprocess.run(args[:-1] + [str(small_trace)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "already exists" in proc.stderr and "Traceback" not in proc.stderr
    assert small_trace.read_bytes() == before


def test_paired_differences_compare_run_by_run():
    """bench_report's pairs: run k of the second candidate minus run k of the first. A machine whose
    speed drifts moves both runs of a pair alike, so the pairs show a steady difference that the
    two medians blur (SYNTHETIC timings)."""
    drift = [3.0, 4.0, 3.2, 4.5, 3.5]
    first = list(drift)
    second = [d + 0.2 for d in drift]
    second[2] -= 0.5   # one pair where the second was faster
    pairs = bench_report.paired_differences(first, second)
    assert pairs["n"] == 5 and pairs["first_faster"] == 4
    assert pairs["median_s"] == pytest.approx(0.2) and pairs["least_s"] == pytest.approx(-0.3)
    assert pairs["most_s"] == pytest.approx(0.2)
    with pytest.raises(ValueError):
        bench_report.paired_differences([1.0], [1.0, 2.0])


def test_bench_report_prints_and_saves_the_pairs(small_trace, tmp_path):
    """Two candidates timed side by side (this tree twice, as worktree and as a baseline tree): the
    pairs line and the JSON's ``pairs``."""
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_report.py"), "--samples", "2000",
                           "--scenarios", "5", "--rounds", "--repeat", "2", "--no-compile",
                           "--baseline-tree", str(ROOT), "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "pairs: tree " in done.stdout and " faster in " in done.stdout
    saved = json.loads(out.read_text())["pairs"]
    (key, pairs), = saved.items()
    assert key.endswith(" - worktree") and pairs["n"] == 2 and 0 <= pairs["first_faster"] <= 2


def test_cpu_timeline_sees_a_forked_child_and_the_stretch_it_left_one_core_alone(tmp_path):
    """benchmarks/cpu_timeline.py on a command that spins alone for a while, then forks a child that
    spins beside it: the children's CPU shows up, and the stretch before the fork is reported as one
    core alone. Exit status passed through."""
    spin = ("import os, sys, time\n"
            "def spin(s):\n"
            "    end = time.perf_counter() + s\n"
            "    while time.perf_counter() < end: pass\n"
            "spin(0.5)\n"
            "if os.fork() == 0:\n"
            "    spin(0.5); os._exit(0)\n"
            "spin(0.5); os.wait(); sys.exit(3)\n")
    out = tmp_path / "timeline.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cpu_timeline.py"), "--json", str(out), "--",
                           sys.executable, "-c", spin], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    saved = json.loads(out.read_text())
    assert saved["exit_status"] == 3 and saved["samples"][-1][2] > 0.25   # the child's CPU seconds
    first_alone = saved["alone"][0]
    assert first_alone[0] < 0.15 and 0.35 < first_alone[1] < 0.9   # alone until about the fork (0.5 s)
    assert "one core alone" in done.stderr
