"""The CUDA counters hook: Nsight Compute range replay (``ncu``) and PM sampling (``pm_sampling``).

capture/counters.py prepares the worker run (a c3prof.backends.base.ProfileJob); this module runs
it under ncu and turns ncu's output into trace records. Nothing here raises for a profiler that
is missing or refuses: the result is then one ``counter_source`` record with the reason.
"""

from __future__ import annotations

import time

from c3prof.backends.cuda import ncu

SOURCES = ("ncu", "pm_sampling")


def _first_error_line(*texts: str) -> str:
    for text in texts:
        for line in text.splitlines():
            if "ERR_" in line or "error" in line.lower() or "==ERROR==" in line:
                return line.strip()[:300]
    return (texts[-1].strip().splitlines() or ["no output"])[-1][:300]


def _unavailable(source: str, reason: str, **extra) -> list[dict]:
    return [{"record": "counter_source", "source": source, "available": False, "reason": reason, **extra}]


def _under_ncu(path: str, job, ncu_args: list[str]):
    return job.run(lambda worker, log_file: ncu.ncu_command(path, ncu_args, log_file, job.replay, worker))


def profile(source: str, job, device_cc: tuple[int, int], note) -> list[dict]:
    """Trace records for ``source`` over ``job`` (see c3prof.backends.base.Counters.profile)."""
    if source == "ncu":
        return profile_metrics(job, device_cc, note)
    if source == "pm_sampling":
        return profile_pm_sampling(job, note)
    return _unavailable(source, f"not a CUDA profiler source (known: {', '.join(SOURCES)})")


def _metric_attempts(path: str, job, metrics: list[str], note):
    """Run ncu with ``metrics``; on failure drop the metrics ncu refuses here (e.g. NVLink counters
    on a GPU without NVLink peers) and retry, with the essential set as the last resort.
    Returns (rows, timed, metrics that worked, failed attempts)."""
    attempts, tried = [], []
    while metrics and metrics not in tried:
        tried.append(metrics)
        note(f"counters: profiling {len(job.order)} phase ranges under ncu ({job.replay}, {len(metrics)} metrics)")
        rc, log, output, timed = _under_ncu(path, job, ["--metrics", ",".join(metrics)])
        rows = ncu.parse_csv(log)
        if rc == 0 and len(rows) == len(job.order):
            return rows, timed, metrics, attempts
        attempts.append(f"{len(metrics)} metrics: ncu exit {rc}, {len(rows)} of {len(job.order)} ranges: "
                        f"{_first_error_line(log, output)}")
        refused = ncu.inaccessible_metrics(log + "\n" + output)
        remaining = [m for m in metrics if m.split(".")[0] not in refused]
        metrics = remaining if refused and remaining != metrics else list(ncu.ESSENTIAL)
    return [], [], metrics, attempts


def profile_metrics(job, device_cc: tuple[int, int], note) -> list[dict]:
    """Per-phase totals under ncu range replay. Metrics the chip does not offer are left out up
    front (ncu --query-metrics)."""
    path = ncu.ncu_path()
    if path is None:
        return _unavailable("ncu", "ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")
    version = ncu.ncu_version(path)
    chip = ncu.chip_name(*device_cc)
    metrics, unsupported = ncu.choose_metrics(ncu.available_metrics(path, chip) if chip else None)
    t0 = time.time()
    rows, timed, metrics, attempts = _metric_attempts(path, job, metrics, note)
    if not rows:
        return _unavailable("ncu", " | ".join(attempts), version=version)
    records = [{"record": "counters", "run": rid, "phase": phase, "source": "ncu", "replay": job.replay,
                "reps": job.reps, "metrics": row, "derived": ncu.derived(row), **job.timing_fields(k, timed)}
               for k, ((rid, phase), row) in enumerate(zip(job.order, rows))]
    records.append({"record": "counter_source", "source": "ncu", "available": True, "version": version,
                    "replay": job.replay, "metrics": metrics, "not_offered": unsupported, "failed_attempts": attempts,
                    "ranges": len(job.order), "passes": len(timed) // max(1, len(job.order)),
                    "wall_s": round(time.time() - t0, 2)})
    return records


def profile_pm_sampling(job, note) -> list[dict]:
    """Time series of L2, DRAM, tensor-pipe and SM activity every few microseconds through each phase.

    CUPTI's PM sampling, reached through Nsight Compute's PmSampling section (the ncu installed
    with the driver's CUDA, so no CUPTI/driver version mismatch). Sample k lies at k * interval
    from the start of the range; ``rep_start_ms`` gives each repetition's start on the same clock
    (to within the range-start latency, a few microseconds).
    """
    path = ncu.ncu_path()
    if path is None:
        return _unavailable("pm_sampling", "ncu (Nsight Compute) not found")
    t0 = time.time()
    note(f"counters: PM sampling {len(job.order)} phase ranges under ncu ({job.replay})")
    rc, log, output, timed = _under_ncu(path, job, ["--section", "PmSampling", "--print-metric-instances", "values"])
    ranges = ncu.parse_pm_series(log)
    if rc != 0 or len(ranges) != len(job.order) or not any(r["series"] for r in ranges):
        return _unavailable("pm_sampling", f"ncu exit {rc}, {len(ranges)} of {len(job.order)} ranges: "
                                           f"{_first_error_line(log, output)}")
    records = []
    for k, ((rid, phase), rng) in enumerate(zip(job.order, ranges)):
        names = [n for n in rng["series"] if n != "t_ms"]
        records.append({"record": "counters", "run": rid, "phase": phase, "source": "pm_sampling",
                        "replay": job.replay, "reps": job.reps, "interval_us": rng["interval_us"],
                        "metrics": {n: {"value": max(rng["series"][n], default=0.0), "unit": "% (peak sample)"}
                                    for n in names},
                        "series": rng["series"], **job.timing_fields(k, timed)})
    records.append({"record": "counter_source", "source": "pm_sampling", "available": True,
                    "version": ncu.ncu_version(path), "method": "ncu --section PmSampling", "replay": job.replay,
                    "series": sorted(ncu.PM_SERIES.values()), "ranges": len(job.order),
                    "wall_s": round(time.time() - t0, 2)})
    return records
