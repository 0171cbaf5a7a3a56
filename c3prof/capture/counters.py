"""Hardware counters captured *during* each phase, concurrent region included.

Two sources, chosen with ``c3prof capture --counters``:

``ncu``       per-phase totals from Nsight Compute range replay (L2 sectors by source, DRAM bytes,
              SM activity, tensor pipe, PCIe/NVLink bytes). Runs after the timed capture, in a
              separate process profiled by ncu (c3prof/capture/counter_worker.py), so the timed
              phases are never measured under the profiler. Each range's own event times are
              recorded too: their ratio to the unprofiled medians is the profiler's perturbation.
``nvml_gpm``  NVML GPM averages over a >= 100 ms window while the phase repeats back to back
              (SM utilization and occupancy, DRAM bandwidth, tensor activity, PCIe and NVLink
              rates); needs no profiler privileges.

Both record a matched perturbation figure: the phase's median inside the counted window over its
median just before, timed the same way in the same process.

A source that cannot run here (no ncu, no permission to read counters, GPM unsupported) is
reported in one line, recorded in a ``counter_source`` record with the reason, and the capture
goes on without it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from c3prof.capture.strategies import RunPlan
from c3prof.trace import TraceWriter

SOURCES = ("ncu", "gpm")


def parse_sources(text: str | None) -> tuple[str, ...]:
    from c3prof.errors import C3profError

    if not text or text == "none":
        return ()
    items = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    bad = [t for t in items if t not in SOURCES]
    if bad:
        raise C3profError(f"unknown counter source {bad[0]!r} (known: {', '.join(SOURCES)}, none)")
    return items


def _first_error_line(*texts: str) -> str:
    for text in texts:
        for line in text.splitlines():
            if "ERR_" in line or "error" in line.lower() or "==ERROR==" in line:
                return line.strip()[:300]
    return (texts[-1].strip().splitlines() or ["no output"])[-1][:300]


def collect_ncu(plans: list[RunPlan], writer: TraceWriter, device: int, device_cc: tuple[int, int], seed: int,
                reps: int, phases: list[str], replay: str, note) -> bool:
    """Profile ``phases`` of ``plans`` under ncu and append counters records. Returns success."""
    from c3prof.backends.cuda import ncu

    path = ncu.ncu_path()
    if path is None:
        writer.write({"record": "counter_source", "source": "ncu", "available": False,
                      "reason": "ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin"})
        note("counters: ncu not found; continuing without ncu counters")
        return False
    version = ncu.ncu_version(path)
    chip = ncu.chip_name(*device_cc)
    full, unsupported = ncu.choose_metrics(ncu.available_metrics(path, chip) if chip else None)
    items = [{"scenario": p.scenario.to_dict(), "variant": p.variant.params(), "phases": phases} for p in plans]
    order = [(p.id, ph) for p in plans for ph in phases]
    attempts = []
    with tempfile.TemporaryDirectory(prefix="c3prof-ncu-") as tmp:
        plan_file, results_file, log_file = (str(Path(tmp) / n) for n in ("plan.json", "results.jsonl", "ncu.csv"))
        with open(plan_file, "w") as f:
            json.dump({"device": device, "seed": seed, "reps": reps, "items": items}, f)
        worker = [sys.executable, "-m", "c3prof.capture.counter_worker", plan_file, results_file]
        rows, metrics = [], None
        t0 = time.time()
        for metrics in (full, ncu.ESSENTIAL):  # fall back to the essential set once
            for stale in (results_file, log_file):
                if os.path.exists(stale):
                    os.remove(stale)
            note(f"counters: profiling {len(order)} phase ranges under ncu ({replay}, {len(metrics)} metrics)")
            proc = subprocess.run(ncu.ncu_command(path, metrics, log_file, replay, worker), capture_output=True,
                                  text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=3600)
            log = Path(log_file).read_text() if os.path.exists(log_file) else ""
            rows = ncu.parse_csv(log)
            if proc.returncode == 0 and len(rows) == len(order):
                break
            attempts.append(f"{len(metrics)} metrics: ncu exit {proc.returncode}, {len(rows)} of {len(order)} "
                            f"ranges: {_first_error_line(log, proc.stderr, proc.stdout)}")
            rows = []
        if not rows:
            writer.write({"record": "counter_source", "source": "ncu", "available": False, "version": version,
                          "reason": " | ".join(attempts)})
            note(f"counters: ncu failed ({attempts[-1]}); continuing without ncu counters")
            return False
        timed = [json.loads(ln) for ln in Path(results_file).read_text().splitlines() if ln.strip()]
    # One results line per range per replay pass: keep the last pass's event times per range.
    per_range = {}
    for k, rec in enumerate(timed):
        per_range[k % len(order)] = rec
    for k, ((rid, phase), metrics_row) in enumerate(zip(order, rows)):
        t = per_range.get(k, {})
        rec = {"record": "counters", "run": rid, "phase": phase, "source": "ncu", "replay": replay,
               "reps": reps, "metrics": metrics_row, "derived": ncu.derived(metrics_row),
               "timed_samples_ms": t.get("profiled_ms", []), "unprofiled_samples_ms": t.get("unprofiled_ms", [])}
        if t.get("profiled_ms") and t.get("unprofiled_ms"):
            # Matched comparison, same process, back to back: the profiler's timing perturbation.
            rec["perturbation"] = statistics.median(t["profiled_ms"]) / statistics.median(t["unprofiled_ms"])
        writer.write(rec)
    writer.write({"record": "counter_source", "source": "ncu", "available": True, "version": version,
                  "replay": replay, "metrics": metrics, "not_offered": unsupported, "failed_attempts": attempts,
                  "ranges": len(order), "passes": len(timed) // max(1, len(order)),
                  "wall_s": round(time.time() - t0, 2)})
    return True
