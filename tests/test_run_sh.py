"""scripts/run.sh, the README's main job, run GPU-free against stand-ins: a fake ``nvidia-smi`` on
PATH, a no-op ``scripts/setup.sh`` and a ``.venv/bin/c3prof`` that logs its arguments. Checks the
order of what it runs, not what those commands do (their own tests and the device runs do that)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _sandbox(tmp_path: Path, gpu: bool, fail_on_visit: int | None = None, rc: int = 130) -> dict:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    _executable(tmp_path / "scripts" / "setup.sh", "exit 0\n")
    fail = f'[ "$4" = "--visits" ] && [ "$5" = "{fail_on_visit}" ] && exit {rc}\n' if fail_on_visit else ""
    _executable(tmp_path / ".venv" / "bin" / "c3prof", f'echo "$*" >> "{tmp_path}/calls.log"\n{fail}exit 0\n')
    _executable(tmp_path / "bin" / "nvidia-smi",
                'echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)"\n' if gpu else "exit 9\n")
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return env


def _run(tmp_path: Path, env: dict) -> tuple[subprocess.CompletedProcess, list[str]]:
    proc = subprocess.run(["bash", "scripts/run.sh"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    log = tmp_path / "calls.log"
    return proc, log.read_text().splitlines() if log.exists() else []


def test_run_sh_captures_each_visit_in_a_fresh_process_then_reports(tmp_path):
    proc, calls = _run(tmp_path, _sandbox(tmp_path, gpu=True))
    assert proc.returncode == 0, proc.stderr
    captures, report = calls[:-1], calls[-1]
    assert len(captures) == 4
    outs = set()
    for v, call in enumerate(captures, start=1):
        args = call.split()
        assert args[:5] == ["capture", "--suite", "default", "--visits", str(v)]
        assert ("--resume" in args) == (v > 1)
        outs.add(args[args.index("--out") + 1])
    (trace,) = outs                                   # every visit appends to the same trace
    assert report.split()[:2] == ["report", trace]


def test_run_sh_stops_at_an_interrupted_visit_and_keeps_going_after_failed_runs(tmp_path):
    proc, calls = _run(tmp_path, _sandbox(tmp_path, gpu=True, fail_on_visit=2, rc=130))
    assert proc.returncode == 130 and len(calls) == 2 and not any(c.startswith("report") for c in calls)
    other = tmp_path / "other"
    other.mkdir()
    proc, calls = _run(other, _sandbox(other, gpu=True, fail_on_visit=2, rc=1))   # exit 1: some runs failed
    assert proc.returncode == 0 and len(calls) == 5 and calls[-1].startswith("report")


def test_run_sh_without_a_gpu_says_so_and_points_to_the_bundled_trace(tmp_path):
    proc, calls = _run(tmp_path, _sandbox(tmp_path, gpu=False))
    assert proc.returncode == 2 and not calls
    assert "no usable NVIDIA GPU" in proc.stderr
    bundled = next(w for w in proc.stderr.split() if w.startswith("tests/data/") and w.endswith(".jsonl"))
    assert (ROOT / bundled).is_file()
