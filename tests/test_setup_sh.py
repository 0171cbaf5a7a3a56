"""scripts/setup.sh's choice of install, GPU-free, against a stand-in ``.venv/bin/python`` that logs
its arguments: with a package index it installs from it; without one (a GPU node on an isolated
network) it builds against the installed packages at once, instead of waiting for pip's timeouts,
and falls back to the index only if that fails."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _setup(tmp_path: Path, index_reachable: bool, offline_build_ok: bool = True) -> tuple[int, str, list[str]]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    for name in ("pyproject.toml", "setup.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "build_backend").mkdir()
    (tmp_path / "build_backend" / "b.py").write_text("")
    (tmp_path / "c3prof").mkdir()
    log = tmp_path / "calls.log"
    # The stand-in python: `-c` with urlopen is the index probe; `-m pip install` is logged.
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"""#!/usr/bin/env bash
case "$*" in
  *urlopen*) exit {0 if index_reachable else 1} ;;
  "-m pip config"*) exit 1 ;;
  "-m pip install"*) echo "$*" >> "{log}"; [[ "$*" == *--no-build-isolation* ]] && exit {0 if offline_build_ok else 1}; exit 0 ;;
  *) exit 0 ;;
esac
""")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    # CI sets C3PROF_BUILD_HIP=1, which adds the hip extra; these tests are about the index.
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_INDEX_URL", "C3PROF_BUILD_HIP")}
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    return proc.returncode, proc.stderr, log.read_text().splitlines() if log.exists() else []


def test_with_a_package_index_it_installs_from_it(tmp_path):
    rc, err, calls = _setup(tmp_path, index_reachable=True)
    assert rc == 0, err
    assert len(calls) == 1 and "--no-build-isolation" not in calls[0] and "-e .[dev]" in calls[0]


def test_without_an_index_it_builds_against_the_installed_packages_at_once(tmp_path):
    rc, err, calls = _setup(tmp_path, index_reachable=False)
    assert rc == 0, err
    assert len(calls) == 1 and "--no-build-isolation --no-deps --no-index" in calls[0]
    assert "no package index reachable" in err


def test_without_an_index_a_failed_build_still_tries_the_index(tmp_path):
    rc, err, calls = _setup(tmp_path, index_reachable=False, offline_build_ok=False)
    assert rc == 0, err
    assert len(calls) == 2 and "--no-build-isolation" in calls[0] and "--no-build-isolation" not in calls[1]
