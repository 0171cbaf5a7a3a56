"""The report and ingest paths must run without a GPU: no torch, CUDA, cuda.bindings, NVML, triton
or backend imports (tests/test_layering.py checks the same on the source's import graph)."""

import re
import subprocess
import sys

from report_helpers import ROOT, SYNTHETIC

FORBIDDEN = ("torch", "cuda", "c3prof._dma", "c3prof.backends", "triton", "pynvml")
KINETO = ROOT / "tests" / "data" / "synthetic_kineto_rank0.json"


def test_report_imports_nothing_gpu(tmp_path):
    code = f"""
import sys
import c3prof.report.cli
from c3prof.cli import main
rc = main(["report", {str(SYNTHETIC)!r}, "--quiet", "--json", {str(tmp_path / 'r.json')!r},
           "--csv", {str(tmp_path / 'csv')!r}, "--figures", {str(tmp_path / 'fig')!r},
           "--perfetto", {str(tmp_path / 'p.json')!r}])
bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in {FORBIDDEN!r}))
print("BAD", bad)
assert rc == 0 and not bad, bad
assert "torch" not in sys.modules and "c3prof._dma" not in sys.modules
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ingest_imports_nothing_gpu(tmp_path):
    code = f"""
import sys
from c3prof.cli import main
rc = main(["ingest", {str(KINETO)!r}, "--out", {str(tmp_path / 'out')!r}, "--quiet",
           "--figures", {str(tmp_path / 'fig')!r}])
bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in {FORBIDDEN!r}))
print("BAD", bad)
assert rc == 0 and not bad, bad
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_advise_imports_nothing_gpu(tmp_path):
    train = ROOT / "tests" / "data" / "h200_default_1.jsonl"
    code = f"""
import sys
from c3prof.cli import main
rc = main(["advise", "--suite", "smoke", "--train", {str(train)!r}, "--no-loso", "-q",
           "--json", {str(tmp_path / 'a.json')!r}, "--figures", {str(tmp_path / 'fig')!r}])
bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in {FORBIDDEN!r}))
print("BAD", bad)
assert rc == 0 and not bad, bad
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sources_do_not_import_gpu_modules():
    pattern = re.compile(r"^\s*(from|import)\s+(torch|cuda|c3prof\._dma|c3prof\.capture|c3prof\.backends)\b", re.M)
    for pkg in ("analysis", "report", "figures", "ingest", "advise"):
        for path in (ROOT / "c3prof" / pkg).rglob("*.py"):
            assert not pattern.search(path.read_text()), path


def test_report_of_one_visit_without_counters_imports_no_scipy(tmp_path):
    # scipy.stats takes about 0.7 s to import: a report needs it only for counters (bootstrap_ci)
    # or several visits (the replication interval's t quantile). The trace is SYNTHETIC
    # (benchmarks/bench_report.py's generator: one visit, no counters).
    code = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from benchmarks.bench_report import build_trace
build_trace(Path({str(tmp_path / 't.jsonl')!r}), 2000, scenarios=5)
sys.modules.pop("scipy", None)
assert not any(m == "scipy" or m.startswith("scipy.") for m in sys.modules), "imported before the report"
from c3prof.cli import main
rc = main(["report", {str(tmp_path / 't.jsonl')!r}, "--quiet", "--json", {str(tmp_path / 'r.json')!r}])
assert rc == 0
assert "scipy" not in sys.modules, sorted(m for m in sys.modules if m.startswith("scipy"))[:5]
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
