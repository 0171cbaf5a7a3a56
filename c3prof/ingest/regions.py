"""C3 regions: where a GEMM and a communication operation ran at the same time on one device.

A *region* here is one overlapping pair (GEMM instance, communication instance) on the same device of
the same rank: their intervals intersect for a positive time. One long collective beside several
GEMMs gives several regions (one per GEMM), each with its own overlap.

Baselines ("alone" instances): a GEMM instance is alone when no communication operation overlaps it on
its device; a communication instance is alone when no GEMM overlaps it. Instances are "the same
operation" when kernel name and shape/size agree (GpuOp.identity). Baselines come from the same trace
(the same rank), as the definitions below compare like with like.

Per region (c3prof's speedup definitions, c3prof.analysis.speedup, with the alone medians standing in
for the isolated runs):
    T_g = median(alone durations of this GEMM),  T_c = median(alone durations of this comm op)
    gemm_slowdown = T_g,cc / T_g,  comm_slowdown = T_c,cc / T_c
    T_s = T_g + T_c,  ideal = T_s / max(T_g, T_c),  realized = T_s / span(pair),
    fraction_of_ideal = (realized - 1) / (ideal - 1)
    taxonomy: G-long if T_g > 1.15 T_c, C-long if T_c > 1.15 T_g, else GC-equal.
The span is the union of the two instances (first start to last end). A pair that overlaps only in
part has a span longer than a pair launched together, so its realized speedup is lower: that is the
trace's actual schedule, which is what a user wants to see (``overlap_share`` tells the two apart).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from c3prof.analysis import speedup as formulas
from c3prof.ingest.events import GEMM, KIND_CODES, GpuOp, OpTable
from c3prof.ingest.intervals import length, union

TAXONOMY_MARGIN = 1.15


def taxonomy(t_g: float, t_c: float) -> str:
    if t_g > TAXONOMY_MARGIN * t_c:
        return "G-long"
    if t_c > TAXONOMY_MARGIN * t_g:
        return "C-long"
    return "GC-equal"


def speedups(t_g: float, t_c: float, span: float) -> tuple[float, float, float | None]:
    """(ideal, realized, fraction_of_ideal), c3prof.analysis.speedup's formulas with the pair's span as
    T_cc; fraction is None when ideal == 1 (nothing to gain)."""
    t_s = t_g + t_c
    ideal = float(formulas.ideal(t_s, t_g, t_c))
    realized = float(formulas.realized(t_s, span))
    fraction = float(formulas.fraction(t_s, t_g, t_c, span)) if ideal > 1.0 else None
    return ideal, realized, fraction


@dataclass(frozen=True)
class Region:
    """One overlapping pair, as objects (RegionSet keeps pairs as index arrays; this is a view)."""

    gemm: GpuOp
    comm: GpuOp

    @property
    def overlap_ns(self) -> int:
        return min(self.gemm.end_ns, self.comm.end_ns) - max(self.gemm.start_ns, self.comm.start_ns)

    @property
    def span_ns(self) -> int:
        return max(self.gemm.end_ns, self.comm.end_ns) - min(self.gemm.start_ns, self.comm.start_ns)

    @property
    def overlap_share(self) -> float:
        """Overlap over the shorter of the two: 1 when one ran entirely inside the other."""
        return self.overlap_ns / max(1, min(self.gemm.dur_ns, self.comm.dur_ns))


@dataclass
class DeviceTimeline:
    """Busy times of one device of one rank (ns), for the summary and the HTA-comparable figure."""

    rank: int
    device: int
    span_ns: int
    gemm_ns: int
    comm_ns: int
    c3_ns: int  # time with at least one GEMM and one communication operation running

    @property
    def comm_covered_by_gemm(self) -> float | None:
        return self.c3_ns / self.comm_ns if self.comm_ns else None


class RegionSet:
    """The overlapping pairs of an OpTable (``gemm_idx[i]`` with ``comm_idx[i]``), and who ran alone."""

    def __init__(self, ops: OpTable, gemm_idx: np.ndarray, comm_idx: np.ndarray, timelines: list[DeviceTimeline]):
        self.ops = ops
        self.gemm_idx = gemm_idx.astype(np.int64)
        self.comm_idx = comm_idx.astype(np.int64)
        self.timelines = timelines
        gs, ge = ops.start_ns[self.gemm_idx], ops.end_ns[self.gemm_idx]
        cs, ce = ops.start_ns[self.comm_idx], ops.end_ns[self.comm_idx]
        self.overlap_ns = np.minimum(ge, ce) - np.maximum(gs, cs)
        self.span_ns = np.maximum(ge, ce) - np.minimum(gs, cs)
        overlapped = np.zeros(len(ops), dtype=bool)
        overlapped[self.gemm_idx] = True
        overlapped[self.comm_idx] = True
        self.alone_mask = ~overlapped & (ops.end_ns > ops.start_ns)

    @property
    def n_regions(self) -> int:
        return int(len(self.gemm_idx))

    @property
    def regions(self) -> list[Region]:
        return [Region(self.ops.op(g), self.ops.op(c)) for g, c in zip(self.gemm_idx.tolist(), self.comm_idx.tolist())]

    @property
    def alone(self) -> dict[tuple, list[int]]:
        """(rank, OpIdentity) -> durations (ns) of the instances that ran alone."""
        out: dict[tuple, list[int]] = defaultdict(list)
        ops = self.ops
        for i in np.nonzero(self.alone_mask)[0].tolist():
            out[(int(ops.rank[i]), ops.identities[int(ops.ident[i])])].append(int(ops.end_ns[i] - ops.start_ns[i]))
        return dict(out)


def find_regions(ops: OpTable | list[GpuOp]) -> RegionSet:
    """All overlapping (GEMM, communication) pairs per device, the alone instances, the busy times."""
    if not isinstance(ops, OpTable):
        ops = OpTable.from_ops(list(ops))
    gemm_code = KIND_CODES[GEMM]
    pairs_g: list[np.ndarray] = []
    pairs_c: list[np.ndarray] = []
    timelines = []
    if len(ops) == 0:
        return RegionSet(ops, np.zeros(0, np.int64), np.zeros(0, np.int64), [])
    devices = np.unique(np.stack([ops.rank, ops.device], axis=1), axis=0)
    for rank, device in devices.tolist():
        idx = np.nonzero((ops.rank == rank) & (ops.device == device))[0]
        idx = idx[ops.end_ns[idx] > ops.start_ns[idx]]  # a zero-length activity overlaps nothing
        is_gemm = ops.kind[idx] == gemm_code
        g = idx[is_gemm]
        c = idx[~is_gemm]
        g = g[np.argsort(ops.start_ns[g], kind="stable")]
        c = c[np.argsort(ops.start_ns[c], kind="stable")]
        gi, ci = _overlapping_pairs(ops.start_ns[g], ops.end_ns[g], ops.start_ns[c], ops.end_ns[c])
        pairs_g.append(g[gi])
        pairs_c.append(c[ci])
        gs, ge = ops.start_ns[g[gi]], ops.end_ns[g[gi]]
        cs, ce = ops.start_ns[c[ci]], ops.end_ns[c[ci]]
        timelines.append(DeviceTimeline(
            rank=int(rank), device=int(device),
            span_ns=int(ops.end_ns[idx].max() - ops.start_ns[idx].min()) if len(idx) else 0,
            gemm_ns=_union_length(ops.start_ns[g], ops.end_ns[g]),
            comm_ns=_union_length(ops.start_ns[c], ops.end_ns[c]),
            c3_ns=_union_length(np.maximum(gs, cs), np.minimum(ge, ce))))
    return RegionSet(ops, np.concatenate(pairs_g), np.concatenate(pairs_c), timelines)


def _overlapping_pairs(gs, ge, cs, ce) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) with GEMM i and communication j overlapping; both sorted by start, all
    durations positive.

    Two intervals overlap when one starts inside the other, and the two cases are disjoint:
    (a) the GEMM starts inside the communication op (cs <= gs < ce): for each communication op, a
    contiguous run of the start-sorted GEMMs; (b) the communication op starts strictly inside the
    GEMM (gs < cs < ge): for each GEMM, a contiguous run of the start-sorted communication ops.
    Both runs come from binary searches, so the cost is O(n log n + pairs) however long one
    operation is (a trace-long GEMM does not make every GEMM a candidate for every collective).
    """
    if len(gs) == 0 or len(cs) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # (a) GEMMs i with cs[j] <= gs[i] < ce[j]
    a_lo = np.searchsorted(gs, cs, side="left")
    a_hi = np.searchsorted(gs, ce, side="left")
    a_c, a_g = _expand_runs(a_lo, a_hi)
    # (b) communication ops j with gs[i] < cs[j] < ge[i]
    b_lo = np.searchsorted(cs, gs, side="right")
    b_hi = np.searchsorted(cs, ge, side="left")
    b_g, b_c = _expand_runs(b_lo, b_hi)
    return np.concatenate([a_g, b_g]), np.concatenate([a_c, b_c])


def _expand_runs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each k, the pairs (k, lo[k]), (k, lo[k] + 1), ..., (k, hi[k] - 1)."""
    count = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), count)
    offset = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    return owner, np.repeat(lo, count) + offset


def _union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of intervals."""
    return length(union(starts, ends))
