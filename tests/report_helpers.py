"""Helpers for the report and analysis tests: trace files to parametrize over, a tiny trace builder,
and independent readers (plain json + statistics.median), so expected values never come from the
code under test.

Any ``tests/data/*.jsonl`` is picked up by ``trace_files()``: a measured trace dropped there
(e.g. ``h200_*.jsonl``) is exercised by tests/test_report_traces.py without code changes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from c3prof.trace import TraceWriter, run_id

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SYNTHETIC = DATA / "synthetic_small.jsonl"


def trace_files() -> list[Path]:
    return sorted(DATA.glob("*.jsonl"))


def records(path: Path) -> list[dict]:
    """Every record of a trace, read with json only (no c3prof code)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def phase_samples(path: Path) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(run id, phase) -> samples, the last record of a phase winning (as the schema says); the
    visits of a phase (capture --visits) pool, in the order they were written."""
    out: dict = {}
    visits: dict = {}
    for r in records(path):
        if r["record"] == "phase":
            key = (r["run"], r["phase"])
            visits.setdefault(key, {})[r.get("visit", 1)] = r["samples"]
    for key, by_visit in visits.items():
        parts = [by_visit[v] for v in sorted(by_visit)]
        out[key] = {name: [x for p in parts for x in p[name]] for name in parts[0]}
    return out


def med(path: Path, run: str, phase: str, series: str = "total_ms") -> float:
    return statistics.median(phase_samples(path)[(run, phase)][series])


def scenario(name: str, m=4096, n=4096, k=4096, dtype="bf16", op="transfer", nbytes=32 << 20) -> dict:
    return {"name": name, "gemm": {"m": m, "n": n, "k": k, "dtype": dtype}, "comm": {"op": op, "bytes": nbytes}}


def phase_record(scen: dict, strategy: str, variant: str, phase: str, samples: dict, transport="sm_copy") -> dict:
    return {"record": "phase", "run": run_id(scen["name"], strategy, variant), "scenario": scen,
            "strategy": strategy, "variant": variant, "params": {"transport": transport}, "phase": phase,
            "samples": {k: [float(x) for x in v] for k, v in samples.items()}, "stop": {}}


def full_run(scen: dict, strategy: str, variant: str, tg, tc, ts, tcc, gcc=None, ccc=None,
             transport="sm_copy", starts=True) -> list[dict]:
    """Four phase records from per-repetition lists (tg, tc, ts, tcc; gcc, ccc default to tg, tc)."""
    gcc = tg if gcc is None else gcc
    ccc = tc if ccc is None else ccc
    conc = {"total_ms": tcc, "gemm_ms": gcc, "comm_ms": ccc}
    if starts:
        conc.update(gemm_start_ms=[0.0] * len(tcc), comm_start_ms=[0.0] * len(tcc))
    return [phase_record(scen, strategy, variant, "gemm", {"total_ms": tg}, transport),
            phase_record(scen, strategy, variant, "comm", {"total_ms": tc}, transport),
            phase_record(scen, strategy, variant, "serial", {"total_ms": ts}, transport),
            phase_record(scen, strategy, variant, "concurrent", conc, transport)]


MACHINE = {"record": "machine", "gpu": {"name": "TEST GPU (synthetic)"}, "versions": {}, "clocks_start": {}}
CEILINGS = {"record": "ceilings", "gemm_flops_per_s": {"bf16": {"value": 6.8e14}},
            "copy_bytes_per_s": {"d2d": {"value": 4.2e12}}}
EVIDENCE = [{"record": "engine_evidence", "transport": "sm_copy", "carrier": "sm", "method": "test"},
            {"record": "engine_evidence", "transport": "ce_peer", "carrier": "copy_engine", "method": "test"}]


def write_trace(path: Path, recs: list[dict], *, machine: dict | None = MACHINE, ceilings: dict | None = CEILINGS,
                evidence: list[dict] | None = None, rank: int = 0, world_size: int = 1, end: bool = True) -> Path:
    """A valid trace through TraceWriter (so it follows the schema) with the given records."""
    with TraceWriter(path, fsync=False, rank=rank, world_size=world_size) as w:
        for rec in [machine, ceilings, *(EVIDENCE if evidence is None else evidence)]:
            if rec is not None:
                w.write(dict(rec))
        for rec in recs:
            w.write(dict(rec))
        if end:
            w.write({"record": "end", "status": "complete"})
    return path


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -m c3prof report ...`` in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "c3prof", "report", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
