"""The HIP counters hook: rocprofv3 counter collection in a worker process (the way ncu serves the
CUDA backend). capture/counters.py prepares the worker run; this module runs it under rocprofv3,
assigns the recorded kernel dispatches to the worker's phase ranges and writes trace records.

Ranges: rocprofv3 counts per kernel dispatch and has no range replay, so the worker's HIP bench
writes each range's time window (CLOCK_BOOTTIME ns, the clock ROCprofiler-SDK timestamps are
assumed to use: not checked on hardware) to the file named by C3PROF_HIP_RANGES, and a dispatch
belongs to the range its start time falls in. Nothing here raises for a profiler that is missing
or refuses: the result is then one ``counter_source`` record with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from c3prof.backends.hip import rocprof
from c3prof.trace import counter_source_record, counters_record

SOURCES = ("rocprofv3",)
RANGES_ENV = "C3PROF_HIP_RANGES"


def rocprofv3_path() -> str | None:
    return shutil.which("rocprofv3") or next((p for p in ("/opt/rocm/bin/rocprofv3",) if os.path.exists(p)), None)


def record_window(start_ns: int, end_ns: int, environ=os.environ) -> None:
    """Append one range's window to the file the parent named (in the worker; no-op elsewhere)."""
    path = environ.get(RANGES_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"start_ns": start_ns, "end_ns": end_ns}) + "\n")


def clock_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def _unavailable(reason: str, **extra) -> list[dict]:
    return [counter_source_record("rocprofv3", False, reason=reason, **extra)]


def _attempt(path: str, job, counters: list[str], tmp: Path):
    """One worker run under rocprofv3: (exit code, dispatches per range, output text, timed lines)."""
    out_dir, ranges = tmp / f"out{len(counters)}", tmp / f"ranges{len(counters)}.jsonl"

    def wrap(worker, log_file):
        return ["env", f"{RANGES_ENV}={ranges}", *rocprof.rocprofv3_command(path, counters, str(out_dir), worker)]

    rc, _, output, timed = job.run(wrap)
    dispatches = [d for f in rocprof.find_outputs(out_dir) for d in rocprof.parse_counter_collection(f.read_text(), str(f))]
    windows = [(w["start_ns"], w["end_ns"]) for w in map(json.loads, ranges.read_text().splitlines())] \
        if ranges.exists() else []
    # With several passes the worker runs once per pass; the last pass's windows cover the last run.
    windows = windows[-len(job.order):] if windows else []
    return rc, rocprof.assign_to_windows(dispatches, windows), output, timed


def profile(source: str, job, note) -> list[dict]:
    """Trace records for ``source`` over ``job`` (see c3prof.backends.base.Counters.profile)."""
    if source != "rocprofv3":
        return [counter_source_record(source, False, reason=f"not a HIP profiler source (known: {', '.join(SOURCES)})")]
    path = rocprofv3_path()
    if path is None:
        return _unavailable("rocprofv3 (ROCprofiler-SDK) not found on PATH or in /opt/rocm/bin")
    t0, attempts = time.time(), []
    with tempfile.TemporaryDirectory(prefix="c3prof-rocprof-") as tmp:
        for counters in (rocprof.COUNTERS, rocprof.ESSENTIAL):
            note(f"counters: profiling {len(job.order)} phase ranges under rocprofv3 ({len(counters)} counters)")
            rc, per_range, output, timed = _attempt(path, job, counters, Path(tmp))
            if rc == 0 and len(per_range) == len(job.order) and all(per_range):
                break
            attempts.append(f"{len(counters)} counters: rocprofv3 exit {rc}, {sum(map(bool, per_range))} of "
                            f"{len(job.order)} ranges with dispatches: {(output.strip().splitlines() or ['no output'])[-1][:300]}")
        else:
            return _unavailable(" | ".join(attempts))
    records = [counters_record(rid, phase, "rocprofv3", rocprof.metrics(rocprof.totals(ds), len(ds)), reps=job.reps,
                               **job.timing_fields(k, timed))
               for k, ((rid, phase), ds) in enumerate(zip(job.order, per_range))]
    records.append(counter_source_record("rocprofv3", True, counters=counters, failed_attempts=attempts,
                                         ranges=len(job.order), wall_s=round(time.time() - t0, 2)))
    return records
