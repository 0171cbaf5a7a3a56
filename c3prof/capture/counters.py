"""Hardware counters captured *during* each phase, concurrent region included.

Two sources, chosen with ``c3prof capture --counters``:

``ncu``       per-phase totals from Nsight Compute range replay (L2 sectors by source, DRAM bytes,
              SM activity, tensor pipe, PCIe/NVLink bytes). Runs after the timed capture, in a
              separate process profiled by ncu (c3prof/capture/counter_worker.py), so the timed
              phases are never measured under the profiler. Each range's own event times are
              recorded too: their ratio to the unprofiled medians is the profiler's perturbation.
``pmsampling`` time series every 3 us through each phase (L2, DRAM, tensor pipe, SM instruction
              throughput) from CUPTI PM sampling, through ncu's PmSampling section; same
              worker process and ranges as ``ncu``.
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

SOURCES = ("ncu", "gpm", "pmsampling")


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


class _Profiled:
    """One ncu run of the counter worker over a plan: ncu's log text and the worker's timings."""

    def __init__(self, path, plans, phases, device, seed, reps, replay):
        self.path, self.replay, self.reps = path, replay, reps
        self.items = [{"scenario": p.scenario.to_dict(), "variant": p.variant.params(), "phases": phases}
                      for p in plans]
        self.order = [(p.id, ph) for p in plans for ph in phases]
        self.device, self.seed = device, seed

    def run(self, ncu_args: list[str]) -> tuple[int, str, str, list[dict]]:
        from c3prof.backends.cuda import ncu

        with tempfile.TemporaryDirectory(prefix="c3prof-ncu-") as tmp:
            plan_file, results_file, log_file = (str(Path(tmp) / n) for n in ("plan.json", "results.jsonl", "ncu.csv"))
            with open(plan_file, "w") as f:
                json.dump({"device": self.device, "seed": self.seed, "reps": self.reps, "items": self.items}, f)
            worker = [sys.executable, "-m", "c3prof.capture.counter_worker", plan_file, results_file]
            cmd = ncu.ncu_command(self.path, ncu_args, log_file, self.replay, worker)
            proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                  timeout=3600)
            log = Path(log_file).read_text() if os.path.exists(log_file) else ""
            if os.environ.get("C3PROF_KEEP_NCU_CSV"):  # keep ncu's raw output (parser fixtures, debugging)
                Path(os.environ["C3PROF_KEEP_NCU_CSV"]).write_text(log)
            timed = ([json.loads(ln) for ln in Path(results_file).read_text().splitlines() if ln.strip()]
                     if os.path.exists(results_file) else [])
        return proc.returncode, log, proc.stderr + proc.stdout, timed

    def per_range_timing(self, timed: list[dict]) -> dict[int, dict]:
        # One results line per range per replay pass: keep the last pass's event times per range.
        return {k % len(self.order): rec for k, rec in enumerate(timed)}


def _unavailable(writer, source, reason, note, **extra) -> bool:
    writer.write({"record": "counter_source", "source": source, "available": False, "reason": reason, **extra})
    note(f"counters: {source} unavailable ({reason}); continuing without it")
    return False


def _timing_fields(t: dict) -> dict:
    out = {"timed_samples_ms": t.get("profiled_ms", []), "unprofiled_samples_ms": t.get("unprofiled_ms", []),
           "rep_start_ms": t.get("rep_start_ms", [])}
    if out["timed_samples_ms"] and out["unprofiled_samples_ms"]:
        # Matched comparison, same process, back to back: the profiler's timing perturbation.
        out["perturbation"] = statistics.median(out["timed_samples_ms"]) / statistics.median(out["unprofiled_samples_ms"])
    return out


def collect_ncu(plans: list[RunPlan], writer: TraceWriter, device: int, device_cc: tuple[int, int], seed: int,
                reps: int, phases: list[str], replay: str, note) -> bool:
    """Profile ``phases`` of ``plans`` under ncu and append counters records. Returns success.

    Metrics the chip does not offer are left out up front (ncu --query-metrics); metrics ncu
    then refuses to read here (e.g. NVLink counters on a GPU without NVLink peers) are dropped
    and the run repeated; the essential set is the last resort.
    """
    from c3prof.backends.cuda import ncu

    path = ncu.ncu_path()
    if path is None:
        return _unavailable(writer, "ncu", "ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin", note)
    version = ncu.ncu_version(path)
    chip = ncu.chip_name(*device_cc)
    metrics, unsupported = ncu.choose_metrics(ncu.available_metrics(path, chip) if chip else None)
    job = _Profiled(path, plans, phases, device, seed, reps, replay)
    attempts, rows, timed, tried = [], [], [], []
    t0 = time.time()
    while metrics and metrics not in tried:
        tried.append(metrics)
        note(f"counters: profiling {len(job.order)} phase ranges under ncu ({replay}, {len(metrics)} metrics)")
        rc, log, output, timed = job.run(["--metrics", ",".join(metrics)])
        rows = ncu.parse_csv(log)
        if rc == 0 and len(rows) == len(job.order):
            break
        attempts.append(f"{len(metrics)} metrics: ncu exit {rc}, {len(rows)} of {len(job.order)} ranges: "
                        f"{_first_error_line(log, output)}")
        rows = []
        refused = ncu.inaccessible_metrics(log + "\n" + output)
        remaining = [m for m in metrics if m.split(".")[0] not in refused]
        metrics = remaining if refused and remaining != metrics else list(ncu.ESSENTIAL)
    if not rows:
        return _unavailable(writer, "ncu", " | ".join(attempts), note, version=version)
    timing = job.per_range_timing(timed)
    for k, ((rid, phase), metrics_row) in enumerate(zip(job.order, rows)):
        writer.write({"record": "counters", "run": rid, "phase": phase, "source": "ncu", "replay": replay,
                      "reps": reps, "metrics": metrics_row, "derived": ncu.derived(metrics_row),
                      **_timing_fields(timing.get(k, {}))})
    writer.write({"record": "counter_source", "source": "ncu", "available": True, "version": version,
                  "replay": replay, "metrics": metrics, "not_offered": unsupported, "failed_attempts": attempts,
                  "ranges": len(job.order), "passes": len(timed) // max(1, len(job.order)),
                  "wall_s": round(time.time() - t0, 2)})
    return True


def collect_pm_sampling(plans: list[RunPlan], writer: TraceWriter, device: int, seed: int, reps: int,
                        phases: list[str], replay: str, note) -> bool:
    """Time series of L2, DRAM, tensor-pipe and SM activity every few microseconds through each phase.

    CUPTI's PM sampling, reached through Nsight Compute's PmSampling section (the ncu installed
    with the driver's CUDA, so no CUPTI/driver version mismatch). Sample k lies at k * interval
    from the start of the range; ``rep_start_ms`` gives each repetition's start on the same clock
    (to within the range-start latency, a few microseconds).
    """
    from c3prof.backends.cuda import ncu

    path = ncu.ncu_path()
    if path is None:
        return _unavailable(writer, "pm_sampling", "ncu (Nsight Compute) not found", note)
    job = _Profiled(path, plans, phases, device, seed, reps, replay)
    t0 = time.time()
    note(f"counters: PM sampling {len(job.order)} phase ranges under ncu ({replay})")
    rc, log, output, timed = job.run(["--section", "PmSampling", "--print-metric-instances", "values"])
    ranges = ncu.parse_pm_series(log)
    if rc != 0 or len(ranges) != len(job.order) or not any(r["series"] for r in ranges):
        return _unavailable(writer, "pm_sampling", f"ncu exit {rc}, {len(ranges)} of {len(job.order)} ranges: "
                                                  f"{_first_error_line(log, output)}", note)
    timing = job.per_range_timing(timed)
    for k, ((rid, phase), rng) in enumerate(zip(job.order, ranges)):
        names = [n for n in rng["series"] if n != "t_ms"]
        writer.write({"record": "counters", "run": rid, "phase": phase, "source": "pm_sampling", "replay": replay,
                      "reps": reps, "interval_us": rng["interval_us"],
                      "metrics": {n: {"value": max(rng["series"][n], default=0.0), "unit": "% (peak sample)"}
                                  for n in names},
                      "series": rng["series"], **_timing_fields(timing.get(k, {}))})
    writer.write({"record": "counter_source", "source": "pm_sampling", "available": True,
                  "version": ncu.ncu_version(path), "method": "ncu --section PmSampling", "replay": replay,
                  "series": sorted(ncu.PM_SERIES.values()), "ranges": len(job.order),
                  "wall_s": round(time.time() - t0, 2)})
    return True
