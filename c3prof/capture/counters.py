"""Hardware counters captured *during* each phase, concurrent region included: the orchestration.

Sources, chosen with ``c3prof capture --counters``:

``ncu``       per-phase totals from the vendor profiler's range replay (on CUDA: Nsight Compute;
              L2 sectors by source, DRAM bytes, SM activity, tensor pipe, PCIe/NVLink bytes).
              Runs after the timed capture, in a separate worker process run under the
              profiler (c3prof/capture/counter_worker.py), so the timed phases are never measured
              under it. Each range's own event times are recorded too: their ratio to the
              unprofiled medians is the profiler's perturbation.
``pmsampling`` time series every few microseconds through each phase (on CUDA: PM sampling
              through ncu's PmSampling section); same worker process and ranges as ``ncu``.
``rocprofv3`` per-phase totals from rocprofv3 counter collection on AMD GPUs (L2 hits/misses, memory
              requests, busy cycles; c3prof/backends/hip/rocprof.py), in the same worker process.
``gpm``       averages over a >= 100 ms window while the phase repeats back to back, in the
              capture process (on CUDA: NVML GPM); needs no profiler privileges.

Every source records a matched perturbation figure: the phase's median inside the counted window
over its median just before, timed the same way in the same process.

This module prepares the worker run (:class:`ProfiledJob`) and writes what the backend's counters
hook (c3prof.backends.base.Counters) returns. A source that cannot run here (no profiler, no
permission to read counters, GPM unsupported) is reported in one line, recorded in a
``counter_source`` record with the reason, and the capture goes on without it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from c3prof.errors import C3profError
from c3prof.plan.model import RunPlan
from c3prof.trace import TraceWriter

SOURCES = ("ncu", "gpm", "pmsampling", "rocprofv3")


def parse_sources(text: str | None) -> tuple[str, ...]:
    if not text or text == "none":
        return ()
    items = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    bad = [t for t in items if t not in SOURCES]
    if bad:
        raise C3profError(f"unknown counter source {bad[0]!r} (known: {', '.join(SOURCES)}, none)")
    return items


def timing_fields(t: dict) -> dict:
    """A profiled range's event times, its unprofiled twin's, and their ratio (the perturbation)."""
    out = {"timed_samples_ms": t.get("profiled_ms", []), "unprofiled_samples_ms": t.get("unprofiled_ms", []),
           "rep_start_ms": t.get("rep_start_ms", [])}
    if out["timed_samples_ms"] and out["unprofiled_samples_ms"]:
        # Matched comparison, same process, back to back: the profiler's timing perturbation.
        out["perturbation"] = statistics.median(out["timed_samples_ms"]) / statistics.median(out["unprofiled_samples_ms"])
    return out


class ProfiledJob:
    """One run of the counter worker over a plan, under a profiler command the backend supplies:
    the profiler's log text and the worker's own timings (c3prof.backends.base.ProfileJob)."""

    def __init__(self, plans: list[RunPlan], phases: list[str], backend: str, device: int, seed: int, reps: int,
                 replay: str):
        self.replay, self.reps = replay, reps
        self.items = [{"scenario": p.scenario.to_dict(), "variant": p.variant.params(), "phases": phases}
                      for p in plans]
        self.order = [(p.id, ph) for p in plans for ph in phases]
        self.backend, self.device, self.seed = backend, device, seed

    def run(self, wrap) -> tuple[int, str, str, list[dict]]:
        """Run the worker as ``wrap(worker_command, log_file)``; returns (exit code, the log the
        profiler wrote, its stdout and stderr, the worker's timing lines)."""
        with tempfile.TemporaryDirectory(prefix="c3prof-counters-") as tmp:
            plan_file, results_file, log_file = (str(Path(tmp) / n) for n in ("plan.json", "results.jsonl", "log.csv"))
            with open(plan_file, "w") as f:
                json.dump({"backend": self.backend, "device": self.device, "seed": self.seed, "reps": self.reps,
                           "items": self.items}, f)
            worker = [sys.executable, "-m", "c3prof.capture.counter_worker", plan_file, results_file]
            proc = subprocess.run(wrap(worker, log_file), capture_output=True, text=True,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=3600)
            log = Path(log_file).read_text() if os.path.exists(log_file) else ""
            if os.environ.get("C3PROF_KEEP_NCU_CSV"):  # keep the profiler's raw output (parser fixtures, debugging)
                Path(os.environ["C3PROF_KEEP_NCU_CSV"]).write_text(log)
            timed = ([json.loads(ln) for ln in Path(results_file).read_text().splitlines() if ln.strip()]
                     if os.path.exists(results_file) else [])
        return proc.returncode, log, proc.stderr + proc.stdout, timed

    def timing_fields(self, k: int, timed: list[dict]) -> dict:
        """Range ``k``'s timing fields. With app-range replay the worker runs once per counter pass,
        so it writes one line per range per pass: the last pass's times count."""
        per_range = {i % len(self.order): rec for i, rec in enumerate(timed)}
        return timing_fields(per_range.get(k, {}))


def collect_profiled(source: str, plans: list[RunPlan], writer: TraceWriter, bench, reps: int, phases: list[str],
                     replay: str, note) -> bool:
    """Profile ``phases`` of ``plans`` through the bench's counters hook and append its records.
    Returns whether the source was available."""
    job = ProfiledJob(plans, phases, bench.backend_name, bench.device, bench.seed, reps, replay)
    available = False
    for rec in bench.profile(source, job, note):
        writer.write(rec)
        if rec["record"] == "counter_source":
            available = rec["available"]
            if not available:
                note(f"counters: {source} unavailable ({rec['reason']}); continuing without it")
    return available
