"""``--perfetto FILE``: a Chrome trace-event JSON that opens in ui.perfetto.dev (and chrome://tracing).

One process per run; its tracks (threads) are the GEMM stream, the communication stream (named
after its carrier: copy engine or SMs), and a "phases" track whose slices span each phase and each
repetition. Hardware-counter time series become "C" counter events.

The trace stores durations and start offsets within a repetition, not absolute clock times. So the
layout is reconstructed: phases one after another (gemm, comm, serial, concurrent), repetitions laid
end to end with a gap of 10% of the repetition; inside a repetition, start offsets and durations
are the measured ones. Counter series start at the beginning of their phase. At most ``max_reps``
repetitions per phase are drawn (the first ones), to keep the file small.
"""

from __future__ import annotations

import json

from c3prof import __version__
from c3prof.analysis.counters import counter_series
from c3prof.analysis.dataset import Dataset, MergedRun
from c3prof.report.json_out import write_atomic
from c3prof.trace import PHASES

GEMM_TID, COMM_TID, PHASE_TID = 1, 2, 3
US = 1000.0  # trace-event timestamps are microseconds; c3prof times are milliseconds


def _comm_track_name(carrier: str) -> str:
    return {"copy_engine": "communication: copy engine (DMA)", "sm": "communication stream (SM kernels)"}.get(
        carrier, "communication stream (carrier unknown)")


def _x(name: str, pid: int, tid: int, ts_ms: float, dur_ms: float, args: dict | None = None) -> dict:
    ev = {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": round(ts_ms * US, 3), "dur": round(dur_ms * US, 3)}
    if args:
        ev["args"] = args
    return ev


def _run_events(run: MergedRun, pid: int, carrier: str, max_reps: int) -> list[dict]:
    ev = [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"{run.group} | {run.id}"}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": GEMM_TID, "args": {"name": "GEMM stream"}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": COMM_TID, "args": {"name": _comm_track_name(carrier)}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": PHASE_TID, "args": {"name": "phases / repetitions"}},
    ]
    cursor = 0.0
    for phase in PHASES:
        s = run.phases.get(phase)
        if s is None:
            continue
        n = min(int(s["total_ms"].size), max_reps)
        start = cursor
        for i in range(n):
            total = float(s["total_ms"][i])
            args = {k: float(v[i]) for k, v in s.items()}
            ev.append(_x(f"{phase} rep {i}", pid, PHASE_TID, cursor, total, args))
            if phase == "gemm":
                ev.append(_x("GEMM", pid, GEMM_TID, cursor, total))
            elif phase == "comm":
                ev.append(_x("communication", pid, COMM_TID, cursor, total))
            else:
                if "gemm_ms" in s:
                    g0 = float(s["gemm_start_ms"][i]) if "gemm_start_ms" in s else 0.0
                    ev.append(_x("GEMM", pid, GEMM_TID, cursor + g0, float(s["gemm_ms"][i])))
                if "comm_ms" in s:
                    c0 = float(s["comm_start_ms"][i]) if "comm_start_ms" in s else 0.0
                    ev.append(_x("communication", pid, COMM_TID, cursor + c0, float(s["comm_ms"][i])))
            cursor += total * 1.1
        totals = {f"{c.get('source')}:{k}": v.get("value") for c in run.counters if c.get("phase") == phase
                  for k, v in c.get("metrics", {}).items() if isinstance(v, dict)}
        note = {"repetitions": int(s["total_ms"].size), "drawn": n, **totals}
        # The phase slice encloses its repetitions (same track, properly nested; viewers sort by ts).
        ev.append(_x(phase, pid, PHASE_TID, start, max(cursor - start, 1e-6), note))
        for source, metric, t, values in counter_series(run, phase):
            for tt, v in zip(t, values):
                ev.append({"name": f"{source} {metric}", "ph": "C", "pid": pid, "ts": round((start + tt) * US, 3),
                           "args": {metric: float(v)}})
        cursor += 0.05 * max(cursor - start, 1e-3)
    return ev


def chrome_trace(dataset: Dataset, max_reps: int = 50) -> dict:
    events: list[dict] = []
    pid = 0
    for group in dataset.groups:
        for run in group.runs.values():
            pid += 1
            events.extend(_run_events(run, pid, group.carrier(run.transport)[0], max_reps))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": f"c3prof {__version__} report",
                          "layout": "repetitions laid end to end (10% gaps); offsets within a repetition measured",
                          "max_reps_per_phase": max_reps}}


def write_perfetto(dataset: Dataset, path: str, max_reps: int = 50) -> None:
    write_atomic(path, json.dumps(chrome_trace(dataset, max_reps), separators=(",", ":")), "Perfetto trace")
