"""c3prof/report/heap.py: the report keeps freed memory for reuse (glibc), unless the user tuned malloc."""

import os
import subprocess
import sys

import pytest

from c3prof.report import heap

# Allocates 24 MB in blocks of 96 KB (below glibc's mmap threshold, so from the top of the heap),
# frees them, ten times over, as every batch of a large report does with its replicates; prints the
# page faults that took. glibc's own rule trims the freed top each time, and the next batch faults
# it back in; with the settings, the pages of the first batch are reused by the others.
PROBE = """
import resource, sys
import numpy as np
from c3prof.report import heap
if sys.argv[1] == "keep":
    print(heap.keep_freed_memory(), file=sys.stderr)
def batch():
    return [np.ones(12000) for _ in range(250)]
b = batch(); del b
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    b = batch(); del b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
PAGES = 250 * 12000 * 8 // 4096   # one batch's pages: 5859

GLIBC = heap._glibc() is not None


def _faults(mode: str, **env_changes) -> int:
    env = {k: v for k, v in os.environ.items() if k not in heap.USER_SETTINGS and k != "GLIBC_TUNABLES"}
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not GLIBC, reason="the settings apply to glibc only")
def test_freed_blocks_are_reused_without_new_page_faults():
    assert _faults("keep") < PAGES // 2          # the ten batches reused the first one's pages
    assert _faults("default") > 5 * PAGES        # glibc's own rule: fresh pages again and again


@pytest.mark.skipif(not GLIBC, reason="the settings apply to glibc only")
def test_a_malloc_setting_of_the_user_wins():
    # glibc's default trim threshold, set by the user: keep_freed_memory must leave it alone.
    assert _faults("keep", MALLOC_TRIM_THRESHOLD_="131072") > 5 * PAGES


@pytest.mark.skipif(not GLIBC, reason="the settings apply to glibc only")
def test_keep_freed_memory_says_what_it_set(monkeypatch):
    for name in heap.USER_SETTINGS + ("GLIBC_TUNABLES",):
        monkeypatch.delenv(name, raising=False)
    assert heap.keep_freed_memory() == "mmap threshold 32 MiB, trim threshold 64 MiB"


@pytest.mark.parametrize("env, found", [
    ({}, None),
    ({"MALLOC_TRIM_THRESHOLD_": "0"}, "MALLOC_TRIM_THRESHOLD_"),
    ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "MALLOC_MMAP_THRESHOLD_"),
    ({"MALLOC_TOP_PAD_": "0"}, "MALLOC_TOP_PAD_"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, "GLIBC_TUNABLES"),
    ({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"}, None),   # tunables of something else
])
def test_user_tuned(env, found):
    assert heap.user_tuned(env) == found


def test_user_setting_is_left_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")
    assert heap.keep_freed_memory() == "left as set by MALLOC_TRIM_THRESHOLD_"


def test_not_glibc_is_left_alone(monkeypatch):
    for name in heap.USER_SETTINGS + ("GLIBC_TUNABLES",):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(heap, "_glibc", lambda: None)
    assert heap.keep_freed_memory() == "not glibc: left as it is"


def test_a_refused_setting_is_reported(monkeypatch):
    class Refusing:
        def mallopt(self, param, value):
            return 0 if param == heap.M_MMAP_THRESHOLD else 1

    for name in heap.USER_SETTINGS + ("GLIBC_TUNABLES",):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(heap, "_glibc", lambda: Refusing())
    assert heap.keep_freed_memory() == "glibc refused mallopt (returned [0, 1]): left as it is"


def test_report_applies_it(monkeypatch, tmp_path):
    """`c3prof report` calls it first (before any reading)."""
    from c3prof.report import cli as report_cli

    called = []
    monkeypatch.setattr(report_cli, "keep_freed_memory", lambda: called.append(1) or "")
    from c3prof import cli

    assert cli.main(["report", str(tmp_path / "missing.jsonl"), "-q"]) == 2
    assert called == [1]
