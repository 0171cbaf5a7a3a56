"""The c3prof command turns off numpy's huge-page advice before numpy is imported (c3prof/cli.py
says why: on kernels that defragment on the fault, it cost a large report over a second)."""

import os
import subprocess
import sys

PROBE = """
import sys
import c3prof.cli
assert "numpy" not in sys.modules, "c3prof.cli imported numpy before setting NUMPY_MADVISE_HUGEPAGE"
import numpy
try:
    from numpy._core.multiarray import _get_madvise_hugepage
except ImportError:  # numpy < 2
    from numpy.core.multiarray import _get_madvise_hugepage
print(_get_madvise_hugepage())
"""


def _probe(**env_changes) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_cli_turns_numpy_huge_pages_off_before_numpy_is_imported():
    assert _probe() == "False"


def test_a_value_the_user_set_wins():
    assert _probe(NUMPY_MADVISE_HUGEPAGE="1") == "True"


REPORT_PROBE = """
import os, sys
from c3prof import cli
try:
    cli.main(["report", "--help"])   # imports the report's modules (numpy among them), prints its help
except SystemExit:
    pass
assert "numpy" in sys.modules
status = "/proc/self/status"   # Linux; elsewhere the thread count is not checked
threads = open(status).read().split("Threads:")[1].split()[0] if os.path.exists(status) else "1"
print(os.environ.get("OPENBLAS_NUM_THREADS"), threads, file=sys.stderr)
"""


def _report_probe(**env_changes) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", REPORT_PROBE], env=env, capture_output=True, text=True, check=True)
    return done.stderr.split()


def test_report_keeps_numpy_to_one_thread_so_its_forks_are_clean():
    """c3prof report forks (report -j); numpy's BLAS threads, started at its import, would make that a
    fork of a threaded process. report asks for one before numpy loads: the process has one thread."""
    assert _report_probe() == ["1", "1"]
    assert _report_probe(OPENBLAS_NUM_THREADS="2")[0] == "2"   # a value the user set wins
