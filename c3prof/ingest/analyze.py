"""The ingest pipeline: trace files -> classified activities -> C3 regions -> per-scenario results.

Per-rank files are merged: each file's rank comes from its ``distributedInfo`` (Kineto writes it
for distributed jobs); files without one get ranks in the order given, after the known ones. Files
of different jobs are refused (``inputs.check_same_job``); two files claiming the same rank are an
error (the same trace given twice).

Besides the C3 regions, each trace gets its time breakdown by kernel class and HTA's
communication/computation overlap (c3prof.ingest.timeline).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from c3prof.ingest.classify import Classified, classify
from c3prof.ingest.errors import KinetoTraceError, NoGpuEventsError
from c3prof.ingest.events import COLLECTIVE, GEMM, KIND_CODES, TRANSFER, KinetoTrace, OpTable
from c3prof.ingest.inputs import check_same_job, expand_inputs
from c3prof.ingest.kernel_table import CLASSES
from c3prof.ingest.names import json_name, short_name
from c3prof.ingest.reader import read_kineto
from c3prof.ingest.regions import RegionSet, find_regions
from c3prof.ingest.summary import ScenarioResult, summarize
from c3prof.ingest.timeline import class_breakdown, hta_overlap

FORMAT = "c3prof-ingest"
VERSION = 2
MAX_KERNEL_ROWS = 200  # kernels listed in the JSON (by total time); the counts cover all of them
MAX_RANK = 2**31 - 1


@dataclass
class TraceSummary:
    path: str
    rank: int
    rank_from: str  # "distributedInfo" or "order"
    bytes_read: int
    events_seen: int
    truncated: bool
    n_kernels: int
    n_memcpys: int
    n_gemm: int
    n_collective: int
    n_transfer: int
    n_other: int
    hta: dict = field(default_factory=dict)
    breakdown: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    duration_issues: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class IngestResult:
    traces: list[TraceSummary]
    region_set: RegionSet
    results: list[ScenarioResult]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        rs = self.region_set
        return {
            "format": FORMAT,
            "version": VERSION,
            "inputs": [t.to_json() for t in self.traces],
            "hta_comm_comp_overlap": [{"rank": t.rank, **t.hta} for t in self.traces],
            "devices": [
                {"rank": t.rank, "device": t.device, "span_ms": t.span_ns / 1e6, "gemm_ms": t.gemm_ns / 1e6,
                 "comm_ms": t.comm_ns / 1e6, "c3_ms": t.c3_ns / 1e6,
                 "comm_covered_by_gemm": t.comm_covered_by_gemm}
                for t in rs.timelines
            ],
            "breakdown": [b for t in self.traces for b in t.breakdown],
            "n_regions": rs.n_regions,
            "results": [r.to_json() for r in self.results],
            "warnings": self.warnings,
            "notes": self.notes,
        }


def _assign_ranks(traces: list[KinetoTrace]) -> list[tuple[int, str]]:
    known: dict[int, str] = {}
    for t in traces:
        if t.rank is not None:
            if not 0 <= t.rank <= MAX_RANK:
                raise KinetoTraceError(f"{t.path}: distributedInfo.rank {t.rank} is out of range (0..{MAX_RANK})")
            if t.rank in known:
                raise KinetoTraceError(f"{t.path} and {known[t.rank]} both say they are rank {t.rank} "
                                       "(distributedInfo): the same trace twice, or traces of different jobs?")
            known[t.rank] = t.path
    out, next_free = [], 0
    for t in traces:
        if t.rank is not None:
            out.append((t.rank, "distributedInfo"))
            continue
        while next_free in known:
            next_free += 1
        known[next_free] = t.path
        out.append((next_free, "order"))
    return out


def _kernel_rows(t: KinetoTrace, c: Classified) -> list[dict]:
    """Per distinct kernel name and class: count, total time, family; the longest first."""
    gpu = t.gpu
    key = gpu["name"].astype(np.int64) * len(CLASSES) + c.row_class
    uniq, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv.reshape(-1), weights=np.maximum(gpu["dur_ns"], 0), minlength=len(uniq))
    count = np.bincount(inv.reshape(-1), minlength=len(uniq))
    rows = []
    for u in np.argsort(-total)[:MAX_KERNEL_ROWS].tolist():
        name = t.names[int(uniq[u]) // len(CLASSES)]
        rows.append({"name": short_name(name), "full_name": json_name(name), "class": CLASSES[int(uniq[u]) % len(CLASSES)],
                     "count": int(count[u]), "total_ms": float(total[u]) / 1e6})
    return rows


def _summarize_trace(t: KinetoTrace, c: Classified, rank: int, rank_from: str, include_last_step: bool) -> TraceSummary:
    kinds = c.table.kind
    return TraceSummary(
        path=t.path, rank=rank, rank_from=rank_from, bytes_read=t.bytes_read, events_seen=t.events_seen,
        truncated=t.truncated, n_kernels=c.n_kernels, n_memcpys=c.n_memcpys,
        n_gemm=int(np.count_nonzero(kinds == KIND_CODES[GEMM])),
        n_collective=int(np.count_nonzero(kinds == KIND_CODES[COLLECTIVE])),
        n_transfer=int(np.count_nonzero(kinds == KIND_CODES[TRANSFER])),
        n_other=c.n_other,
        hta=hta_overlap(t, include_last_step=include_last_step), breakdown=class_breakdown(t, c),
        kernels=_kernel_rows(t, c), duration_issues=dict(t.duration_issues))


def _trace_notes(t: KinetoTrace, c: Classified) -> list[str]:
    notes = []
    for kname, count in c.gemm_without_shape.most_common(3):
        notes.append(f"{t.path}: {count} distinct GEMM launch(es) of {short_name(kname)!r} without a shape "
                     "(no aten op with Input Dims linked: record_shapes=False, or launched outside an aten op)")
    unmatched = c.n_helpers_unmerged
    if unmatched:
        notes.append(f"{t.path}: {unmatched} GEMM epilogue/split-K kernel(s) without a GEMM of their op: counted "
                     "as GEMM time in the breakdown, not as GEMM instances")
    if c.other_names:
        top = ", ".join(f"{short_name(n)!r} x{k}" for n, k in c.other_names.most_common(3))
        notes.append(f"{t.path}: {sum(c.other_names.values())} kernels of {len(c.other_names)} names are other "
                     f"compute (not GEMM, convolution, attention or communication), e.g. {top}")
    return notes


def _duration_warnings(t: KinetoTrace) -> list[str]:
    d = t.duration_issues
    parts = [f"{d[k]} {k}" for k in ("zero", "negative", "missing") if d.get(k)]
    if not parts:
        return []
    return [f"{t.path}: GPU activities with a zero, negative or missing duration: {', '.join(parts)} "
            "(kept in the counts; a negative or missing duration is taken as 0, so they overlap nothing)"]


def ingest(paths: list[str | os.PathLike], **options: Any) -> IngestResult:
    """Trace files and tensorboard_trace_handler directories -> results (options: ``ingest_files``)."""
    files, input_notes = expand_inputs(paths)
    return ingest_files(files, input_notes, **options)


def ingest_files(files: list[Path], input_notes: list[str], *, map_nearest: bool = True, progress=None,
                 include_last_step: bool = False) -> IngestResult:
    """The trace files ``expand_inputs`` chose (its notes carried into the result's notes)."""
    traces = [read_kineto(p, on_progress=progress(p) if progress else None) for p in files]
    check_same_job(traces)
    warnings = [w for t in traces for w in t.warnings]
    notes: list[str] = list(input_notes)
    tables, summaries = [], []
    for t, (rank, rank_from) in zip(traces, _assign_ranks(traces)):
        c = classify(t, rank)
        tables.append(c.table)
        summaries.append(_summarize_trace(t, c, rank, rank_from, include_last_step))
        warnings += _duration_warnings(t)
        if t.n_gpu == 0:
            warnings.append(f"{t.path}: no GPU kernels or memcpys in this trace (profiled without "
                            "ProfilerActivity.CUDA?)")
        notes += _trace_notes(t, c)
    if all(t.n_gpu == 0 for t in traces):
        raise NoGpuEventsError(
            "no GPU kernels or memcpys in " + ", ".join(str(p) for p in files) +
            ": record with torch.profiler activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    region_set = find_regions(OpTable.concat(tables))
    results = summarize(region_set, map_nearest=map_nearest, sources={s.rank: s.path for s in summaries},
                        step_ns=_step_time_ns(summaries))
    if region_set.n_regions == 0:
        notes.append("no GEMM ran concurrently with a communication operation in these traces")
    for r in results:
        for n in r.notes:
            if n.startswith("mapped"):
                notes.append(f"{r.scenario}: {n}")
    return IngestResult(traces=summaries, region_set=region_set, results=results, warnings=warnings,
                        notes=list(dict.fromkeys(notes)))


def _step_time_ns(summaries: list[TraceSummary]) -> int:
    """The time the scenario weights' step share is taken of: the device spans, summed over every
    device of every rank (the scenarios' overlap times are summed over them too)."""
    return int(sum(b["span_ms"] for s in summaries for b in s.breakdown) * 1e6)
