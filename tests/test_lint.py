"""ruff and mypy pass with the configuration in pyproject.toml (both come with the `dev` extra).

Skipped, with the reason shown, where they are not installed (e.g. a GPU image without the dev
tools); CI installs the dev extra, so there they always run.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_tool(module: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install 'c3prof[dev]')")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing():
    proc = _run_tool("ruff", "check", "--no-cache", "c3prof", "tests", "benchmarks/bench_collectives.py",
                      "benchmarks/nccl_tests_format.py", "benchmarks/bench_report.py", "benchmarks/report_stages.py",
                      "benchmarks/probe_startup.py", "benchmarks/probe_cpu_pairs.py")
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


def test_mypy_finds_nothing():
    # Checks the c3prof/ source tree (the files listed in pyproject's [tool.mypy]).
    proc = _run_tool("mypy", "--cache-dir", str(ROOT / ".mypy_cache"))
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
