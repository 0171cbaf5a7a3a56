"""Whole-trace time accounting: busy time per kernel class, and HTA's communication/computation overlap.

**HTA-compatible overlap** (``hta_overlap``), HolisticTraceAnalysis 0.5's
``TraceAnalysis.get_comm_comp_overlap`` reproduced, per rank:

* kernels are typed by name exactly as HTA does: communication = ``^nccl.*Kernel``; computation =
  every GPU activity not matching ``(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)``; memcpys and
  memsets count as neither;
* with two or more ``ProfilerStep`` annotations, only GPU activities launched (CUDA runtime event
  with the same ``correlation``) before the start of the last ProfilerStep are used: HTA drops the
  last, usually incomplete, step by default (``include_last_step=True`` keeps activities launched
  up to its end, as HTA's ``include_last_profiler_step``);
* overlap = |union(computation) ∩ union(communication)| / |union(communication)|, over all devices
  and streams of the rank together. Per iteration: the same over the activities launched inside
  that ProfilerStep;
* as HTA, a trace with sub-microsecond times is first rounded to whole microseconds (start up,
  end down), which changes the result by up to about half a point on traces with many short
  kernels (0.45 points on HTA's nccl_parser_config trace).

This is *not* c3prof's C3 view, which counts only GEMMs as the overlapping computation and also
counts copy-engine transfers as communication (regions.DeviceTimeline.comm_covered_by_gemm).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from c3prof.ingest.classify import Classified, is_profiler_step
from c3prof.ingest.events import GPU_MEMCPY, KinetoTrace
from c3prof.ingest.kernel_table import CLASSES, TRANSFER
from c3prof.ingest.intervals import length, union
from c3prof.ingest.names import bounded

HTA_COMM = re.compile(r"^nccl.*Kernel")
HTA_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
_STEP_NUMBER = re.compile(r"ProfilerStep\s*#\s*(\d+)")


@dataclass
class Steps:
    """The ProfilerStep annotations of one trace, sorted by start."""

    number: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    n_names: int  # distinct ProfilerStep names (HTA filters only when there are two or more)


def profiler_steps(trace: KinetoTrace) -> Steps:
    cpu, names = trace.cpu, trace.names
    ids = [i for i, nm in enumerate(names) if is_profiler_step(nm)]
    rows = np.nonzero(np.isin(cpu["name"], ids))[0] if ids else np.zeros(0, np.int64)
    rows = rows[np.argsort(cpu["start_ns"][rows], kind="stable")]
    numbers = []
    for r in rows.tolist():
        m = _STEP_NUMBER.match(names[int(cpu["name"][r])])
        numbers.append(int(m.group(1)) if m else -1)
    return Steps(np.asarray(numbers, dtype=np.int64), cpu["start_ns"][rows], cpu["start_ns"][rows] + cpu["dur_ns"][rows],
                 len({int(cpu["name"][r]) for r in rows.tolist()}))


def _launch_times(trace: KinetoTrace) -> np.ndarray:
    """Per GPU row, the start of the CUDA runtime call with its correlation (-1: none)."""
    launch, gpu = trace.launch, trace.gpu
    out = np.full(trace.n_gpu, -1, dtype=np.int64)
    if len(launch["correlation"]) == 0:
        return out
    order = np.argsort(launch["correlation"], kind="stable")
    keys, starts = launch["correlation"][order], launch["start_ns"][order]
    corr = gpu["correlation"]
    pos = np.clip(np.searchsorted(keys, corr), 0, len(keys) - 1)
    hit = (corr >= 0) & (keys[pos] == corr)
    out[hit] = starts[pos[hit]]
    return out


def _hta_types(trace: KinetoTrace) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU row: HTA's communication flag and computation flag (by name, as HTA types kernels)."""
    comm = np.zeros(len(trace.names), dtype=bool)
    comp = np.zeros(len(trace.names), dtype=bool)
    for i in np.unique(trace.gpu["name"]).tolist():
        nm = bounded(trace.names[i])
        comm[i] = HTA_COMM.match(nm) is not None
        comp[i] = HTA_NOT_COMPUTE.match(nm) is None
    ids = trace.gpu["name"]
    return comm[ids], comp[ids]


def _hta_ratio(comm_sel: np.ndarray, comp_sel: np.ndarray, start: np.ndarray, end: np.ndarray) -> float | None:
    """HTA's computation: merge each kind's intervals, then sweep their boundaries (communication
    +-1, computation +-2) and add up the time the running sum is 3, over the merged communication
    length. Written as HTA does it so that its corner cases (an interval that rounding made
    negative) come out the same."""
    cs, ce = union(start[comm_sel], end[comm_sel])
    total = int((ce - cs).sum())
    if total <= 0:
        return None
    ps, pe = union(start[comp_sel], end[comp_sel])
    times = np.concatenate([cs, ce, ps, pe])
    delta = np.concatenate([np.ones(len(cs)), -np.ones(len(ce)), np.full(len(ps), 2), np.full(len(pe), -2)])
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(delta[order])
    both = np.nonzero(running[:-1] == 3)[0]
    return float((times[both + 1] - times[both]).sum()) / total


def _hta_times(trace: KinetoTrace) -> tuple[np.ndarray, np.ndarray]:
    """Start and end as HTA sees them: a trace with sub-microsecond times is rounded to whole
    microseconds, the start up and the end down (HTA's round_down_time_stamps)."""
    start = trace.gpu["start_ns"]
    end = start + trace.gpu["dur_ns"]
    if np.any(start % 1000) or np.any(trace.gpu["dur_ns"] % 1000):
        return -((-start) // 1000) * 1000, (end // 1000) * 1000
    return start, end


def hta_overlap(trace: KinetoTrace, include_last_step: bool = False) -> dict:
    """HTA's comm/comp overlap of one rank, in percent, over the kept iterations and per iteration."""
    gpu = trace.gpu
    start, end = _hta_times(trace)
    is_comm, is_comp = _hta_types(trace)
    launched = _launch_times(trace)
    keep = (gpu["correlation"] >= 0) & (gpu["stream"] != -1)
    steps = profiler_steps(trace)
    filtered = steps.n_names >= 2
    if filtered:
        limit = steps.end_ns.max() if include_last_step else steps.start_ns.max()
        keep &= (launched >= 0) & ((launched <= limit) if include_last_step else (launched < limit))
    overall = _hta_ratio(keep & is_comm, keep & is_comp, start, end)
    per_iter = {}
    for num, s, e in zip(steps.number.tolist(), steps.start_ns.tolist(), steps.end_ns.tolist()):
        sel = keep & (launched >= s) & (launched < e)
        r = _hta_ratio(sel & is_comm, sel & is_comp, start, end)
        if sel.any():
            per_iter[str(num)] = None if r is None else 100 * r
    return {"comm_comp_overlap_pct": None if overall is None else 100 * overall,
            "per_iteration_pct": per_iter, "last_step_dropped": filtered and not include_last_step,
            "n_profiler_steps": int(len(steps.number)),
            "note": None if filtered else "fewer than two ProfilerStep annotations: the whole trace is used (as HTA)"}


def class_breakdown(trace: KinetoTrace, classified: Classified) -> list[dict]:
    """Per device: busy time of each kernel class (union of its activities), transfers by direction."""
    gpu = trace.gpu
    if trace.n_gpu == 0:
        return []
    start, end = gpu["start_ns"], gpu["start_ns"] + gpu["dur_ns"]
    out = []
    for device in np.unique(gpu["device"]).tolist():
        on = gpu["device"] == device
        span = int(end[on].max() - start[on].min())
        classes = {}
        for code, cls in enumerate(CLASSES):
            sel = on & (classified.row_class == code)
            classes[cls] = length(union(start[sel], end[sel])) / 1e6
        directions: dict[str, float] = {}
        copies = np.nonzero(on & (gpu["kind"] == GPU_MEMCPY))[0]
        for name_id in np.unique(gpu["name"][copies]).tolist():
            sel = copies[gpu["name"][copies] == name_id]
            d = _direction(trace.names[name_id])
            directions[d] = directions.get(d, 0.0) + float((end[sel] - start[sel]).sum()) / 1e6
        out.append({"rank": classified.rank, "device": int(device), "span_ms": span / 1e6,
                    "busy_ms": length(union(start[on], end[on])) / 1e6, "classes_ms": classes,
                    "transfer_ms_by_direction": directions})
    return out


def _direction(name: str) -> str:
    m = re.match(r"Memcpy\s+(\w+)", name)
    return m.group(1) if m else TRANSFER
