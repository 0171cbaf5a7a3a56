"""The ingest pipeline: trace files -> operations -> C3 regions -> per-scenario results.

Per-rank files are merged: each file's rank comes from its ``distributedInfo`` (Kineto writes it
for distributed jobs); files without one get ranks in the order given, after the known ones. Two
files claiming the same rank are an error (the same trace given twice, or traces of two jobs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from c3prof.ingest.classify import classify
from c3prof.ingest.errors import KinetoTraceError, NoGpuEventsError
from c3prof.ingest.events import COLLECTIVE, GEMM, KIND_CODES, TRANSFER, KinetoTrace, OpTable
from c3prof.ingest.reader import read_kineto
from c3prof.ingest.regions import RegionSet, find_regions
from c3prof.ingest.summary import ScenarioResult, summarize

FORMAT = "c3prof-ingest"
VERSION = 1


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
            "devices": [
                {"rank": t.rank, "device": t.device, "span_ms": t.span_ns / 1e6, "gemm_ms": t.gemm_ns / 1e6,
                 "comm_ms": t.comm_ns / 1e6, "c3_ms": t.c3_ns / 1e6,
                 "comm_covered_by_gemm": t.comm_covered_by_gemm}
                for t in rs.timelines
            ],
            "n_regions": rs.n_regions,
            "results": [r.to_json() for r in self.results],
            "warnings": self.warnings,
            "notes": self.notes,
        }


def _assign_ranks(traces: list[KinetoTrace]) -> list[tuple[int, str]]:
    known: dict[int, str] = {}
    for t in traces:
        if t.rank is not None:
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


def ingest(paths: list[str | os.PathLike], *, map_nearest: bool = True, progress=None) -> IngestResult:
    traces = []
    for p in paths:
        traces.append(read_kineto(p, on_progress=progress(p) if progress else None))
    warnings = [w for t in traces for w in t.warnings]
    ranks = _assign_ranks(traces)
    tables = []
    summaries = []
    notes: list[str] = []
    for t, (rank, rank_from) in zip(traces, ranks):
        c = classify(t, rank)
        tables.append(c.table)
        kinds = c.table.kind
        summaries.append(TraceSummary(
            path=t.path, rank=rank, rank_from=rank_from, bytes_read=t.bytes_read, events_seen=t.events_seen,
            truncated=t.truncated, n_kernels=c.n_kernels, n_memcpys=c.n_memcpys,
            n_gemm=int(np.count_nonzero(kinds == KIND_CODES[GEMM])),
            n_collective=int(np.count_nonzero(kinds == KIND_CODES[COLLECTIVE])),
            n_transfer=int(np.count_nonzero(kinds == KIND_CODES[TRANSFER])), n_other=c.n_other))
        if t.n_gpu == 0:
            warnings.append(f"{t.path}: no GPU kernels or memcpys in this trace (profiled without "
                            "ProfilerActivity.CUDA?)")
        for kname, count in c.gemm_without_shape.most_common(3):
            notes.append(f"{t.path}: {count} GEMM kernel(s) {kname[:80]!r} without a shape (no aten op with "
                         "Input Dims linked: record_shapes=False, or launched outside an aten op)")
        if c.other_names:
            top = ", ".join(f"{n[:60]!r} x{k}" for n, k in c.other_names.most_common(3))
            notes.append(f"{t.path}: {sum(c.other_names.values())} kernels of {len(c.other_names)} names are "
                         f"neither GEMMs nor collectives (counted as other compute), e.g. {top}")
    if all(t.n_gpu == 0 for t in traces):
        raise NoGpuEventsError(
            "no GPU kernels or memcpys in " + ", ".join(str(p) for p in paths) +
            ": record with torch.profiler activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    region_set = find_regions(OpTable.concat(tables))
    results = summarize(region_set, map_nearest=map_nearest, sources={s.rank: s.path for s in summaries})
    if region_set.n_regions == 0:
        notes.append("no GEMM ran concurrently with a communication operation in these traces")
    for r in results:
        for n in r.notes:
            if n.startswith("mapped"):
                notes.append(f"{r.scenario}: {n}")
    return IngestResult(traces=summaries, region_set=region_set, results=results, warnings=warnings,
                        notes=list(dict.fromkeys(notes)))
