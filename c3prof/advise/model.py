"""The advice model: a few lookup tables fitted on measured runs, read by nearest neighbours.

For a candidate (strategy/variant) of a scenario the model predicts the concurrent time from three
explainable parts, each a table of measured values read by a similarity-weighted nearest-neighbour
average (``K`` neighbours, weight 1 / (distance + ``SOFTEN``)):

1. **GEMM partition factor** ``T_g(variant) / T_g(whole GPU)``: how much slower the GEMM runs on the
   SMs a partition leaves it (``gemm_sms``); neighbours: same SM count, similar GEMM (arithmetic
   intensity, grid). 1 for unpartitioned variants.
2. **Communication factor** ``T_c(variant) / T_c(base)``: the same bytes on another carrier (copy
   engines: ``dma``), on a partition's SMs, or with fewer CTAs; neighbours: same variant over the
   same kind of link (PCIe or HBM), similar copy size and count.
3. **Overlap efficiency** ``e = (T_g' + T_c' - T_cc) / min(T_g', T_c')``: the share of the shorter
   side hidden under the longer one (1: perfect overlap, 0: serial, < 0: worse than serial). It
   carries what launch order, stream priority and carrier do to the pair; neighbours: same variant,
   similar link, time ratio T_c'/T_g', copy count and device-memory demand of the pair (``hbm_demand``:
   what two kernels on one HBM do to each other depends on the bandwidth they need together).

Then ``T_cc = T_g' + T_c' - e * min(T_g', T_c')``. Inputs (all known before running the scenario):
the GEMM shape and dtype (FLOPs, bytes, arithmetic intensity, grid), the link, bytes and copy count, and
the isolated times T_g (GEMM on the whole GPU) and T_c (SM carrier), taken from a capture's base
run or from the rate model below when only a scenario file is given.

**Rate model** (for T_g and T_c without a capture): T_g = max(FLOPs / P, bytes / B) with P and B the
highest FLOP and byte rates reached by a training GEMM; T_c = copies * latency + bytes / rate, per
link and carrier, by least squares over the training runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from c3prof.advise.data import MeasuredScenario
from c3prof.scenarios import CommSpec, GemmSpec

# K = 4: chosen when leave-one-scenario-out on the captures of the time picked the same scenarios
# for K = 3, 4 and 5 (and fewer for K = 2). With the current model (hbm_demand), LOSO over all 83
# committed scenarios gives 80/83 for K = 3 or 4, 79/83 for 5 and 81/83 for 2, and over the two
# default captures 13/15 for 2-4 and 14/15 for 5 (docs/advise.md): no value is better on both.
K = 4
SOFTEN = 0.25
GEMM_TILE = 128
# Distance between links: the same link, another PCIe direction, or another kind of link.
LINK_DISTANCE = {"same": 0.0, "pcie": 1.0, "other": 3.0}


def link_distance(a: str, b: str) -> float:
    if a == b:
        return LINK_DISTANCE["same"]
    return LINK_DISTANCE["pcie"] if a.startswith("pcie") and b.startswith("pcie") else LINK_DISTANCE["other"]


@dataclass(frozen=True)
class Shape:
    """The features of a scenario the tables are read with (log2 scales)."""

    link: str
    log_ai: float        # GEMM arithmetic intensity, FLOP per byte of operands and result
    log_flops: float
    log_tiles: float     # GEMM output tiles of GEMM_TILE x GEMM_TILE: how much of the GPU its grid fills
    log_chunk: float     # bytes per copy (each way for pcie_bidir)
    log_copies: float    # number of copies the bytes are split into

    @classmethod
    def of(cls, gemm: GemmSpec, comm: CommSpec) -> Shape:
        copies = max(comm.chunks, 1)
        return cls(link=comm.link or "pcie_h2d", log_ai=math.log2(gemm.arithmetic_intensity),
                   log_flops=math.log2(gemm.flops), log_tiles=math.log2(gemm_tiles(gemm)),
                   log_chunk=math.log2(comm.bytes / copies), log_copies=math.log2(copies))


def gemm_tiles(gemm: GemmSpec) -> int:
    """An estimate of the GEMM's grid (cuBLAS picks the real tile; 128 x 128 is a typical Hopper one)."""
    return math.ceil(gemm.m / GEMM_TILE) * math.ceil(gemm.n / GEMM_TILE)


def gemm_distance(a: Shape, b: Shape) -> float:
    return abs(a.log_ai - b.log_ai) / 2 + abs(a.log_tiles - b.log_tiles) / 2


def comm_distance(a: Shape, b: Shape) -> float:
    return abs(a.log_chunk - b.log_chunk) / 2 + abs(a.log_copies - b.log_copies) / 2


@dataclass(frozen=True)
class Row:
    """One measured value of a table, where it was measured, and the scenario it came from."""

    scenario: str
    shape: Shape
    value: float
    log_ratio: float = 0.0   # log2(T_c' / T_g') of the run (overlap table only)
    log_demand: float = 0.0  # log2 of its device-memory demand (hbm_demand; overlap table only)


@dataclass(frozen=True)
class Lookup:
    value: float
    neighbours: list[tuple[str, float, float]]   # (scenario, value, weight)


def nearest(rows: list[Row], distance) -> Lookup | None:
    """Similarity-weighted mean of the ``K`` nearest rows (None without rows)."""
    if not rows:
        return None
    ranked = sorted(rows, key=distance)[:K]
    w = np.array([1.0 / (distance(r) + SOFTEN) for r in ranked])
    v = np.array([r.value for r in ranked])
    return Lookup(float(np.dot(w, v) / w.sum()), [(r.scenario, r.value, float(x / w.sum())) for r, x in zip(ranked, w)])


@dataclass
class RateModel:
    """Isolated times from the shape alone (when no capture gives them)."""

    peak_flops_per_ms: float
    peak_bytes_per_ms: float
    transfer: dict[tuple[str, str], tuple[float, float]]   # (link, carrier) -> (ms per copy, bytes per ms)

    def t_g(self, gemm: GemmSpec) -> float:
        return max(gemm.flops / self.peak_flops_per_ms, gemm.min_bytes / self.peak_bytes_per_ms)

    def t_c(self, comm: CommSpec, carrier: str = "sm") -> float | None:
        fit = self.transfer.get((comm.link or "pcie_h2d", carrier))
        if fit is None:
            return None
        latency, rate = fit
        return max(comm.chunks, 1) * latency + comm.bytes / rate


def fit_rates(scenarios: list[MeasuredScenario]) -> RateModel:
    flops = max(s.gemm.flops / s.base_t_g for s in scenarios)
    nbytes = max(s.gemm.min_bytes / s.base_t_g for s in scenarios)
    points: dict[tuple[str, str], list[tuple[int, int, float]]] = {}
    for s in scenarios:
        link, copies = s.comm.link or "pcie_h2d", max(s.comm.chunks, 1)
        points.setdefault((link, "sm"), []).append((copies, s.comm.bytes, s.base_t_c))
        dma = s.runs.get("dma/default")
        if dma is not None and dma.carrier == "copy_engine":
            points.setdefault((link, "copy_engine"), []).append((copies, s.comm.bytes, dma.t_c))
    return RateModel(flops, nbytes, {k: _fit_transfer(v) for k, v in points.items()})


def _fit_transfer(points: list[tuple[int, int, float]]) -> tuple[float, float]:
    """(ms per copy, bytes per ms) by least squares on t = copies * latency + bytes / rate."""
    a = np.array([[c, b] for c, b, _ in points], dtype=float)
    t = np.array([p[2] for p in points])
    coef, *_ = np.linalg.lstsq(a, t, rcond=None)
    latency, inv_rate = float(coef[0]), float(coef[1])
    if latency < 0 or inv_rate <= 0:   # too few distinct copy counts to separate latency: rate only
        latency, inv_rate = 0.0, float(np.sum(a[:, 1] * t) / np.sum(a[:, 1] ** 2))
    return latency, 1.0 / inv_rate


@dataclass
class AdviceModel:
    """The fitted tables (see the module docstring) and the empirical prediction interval."""

    rates: RateModel
    gemm_partition: dict[int, list[Row]] = field(default_factory=dict)   # gemm_sms -> rows
    comm_factor: dict[str, list[Row]] = field(default_factory=dict)      # key -> rows
    overlap: dict[str, list[Row]] = field(default_factory=dict)          # key -> rows
    params: dict[str, dict] = field(default_factory=dict)                # key -> the variant's params
    # log(measured / predicted) T_cc under leave-one-scenario-out: 2.5% and 97.5% quantiles,
    # over all candidates, per candidate, and per candidate over a link class (fit.py, predict.residual_key)
    residual_q: tuple[float, float] | None = None
    residual_q_by_key: dict[str, tuple[float, float]] = field(default_factory=dict)
    n_residuals: int = 0
    # The median |log(measured / predicted)| T_cc under leave-one-scenario-out: the model's typical
    # error. Two candidates predicted closer than this are a near tie (predict.Advice.near_tie).
    typical_error: float | None = None
    training: list[str] = field(default_factory=list)                    # scenario names
    definitions: set = field(default_factory=set)
    sm_count: int | None = None     # the training GPU's SMs (gemm_sms + comm_sms of a partitioned run)

    @property
    def keys(self) -> list[str]:
        return list(self.overlap)


# Device-memory bytes a copy moves per byte copied: an SM copy inside HBM reads and writes it; a PCIe
# copy touches device memory once (writes it for h2d, reads it for d2h; both halves for bidir).
DRAM_BYTES_PER_COPY_BYTE = {"hbm": 2.0}


def hbm_demand(gemm: GemmSpec, comm: CommSpec, t_g: float, t_c: float, peak_bytes_per_ms: float) -> float:
    """The device-memory bandwidth the two sides would need together, run concurrently at their own
    isolated speeds, as a share of the highest rate a training GEMM reached alone (above 1: they cannot
    both keep their speed). The GEMM's share is its fewest bytes (operands once, result once) over its
    time; the copy's is its device-memory bytes over its time."""
    per_byte = DRAM_BYTES_PER_COPY_BYTE.get(comm.link or "", 1.0)
    return (gemm.min_bytes / t_g + per_byte * comm.bytes / t_c) / peak_bytes_per_ms


def overlap_efficiency(t_g: float, t_c: float, t_cc: float) -> float:
    return (t_g + t_c - t_cc) / min(t_g, t_c)


def concurrent_time(t_g: float, t_c: float, e: float) -> float:
    return t_g + t_c - e * min(t_g, t_c)


def _rows_of(s: MeasuredScenario, peak: float) -> list[tuple[str, Any, Any]]:
    """What scenario ``s`` adds to a model whose rate model's peak is ``peak``, in order: (table,
    key, row) for the three tables, ("params", key, the variant's params) for each run."""
    shape = Shape.of(s.gemm, s.comm)
    out: list[tuple[str, Any, Any]] = []
    for key, r in s.runs.items():
        out.append(("params", key, r.params))
        sms = r.params.get("gemm_sms")
        if sms is not None:
            out.append(("gemm_partition", int(sms), Row(s.name, shape, r.t_g / s.base_t_g)))
        out.append(("comm_factor", key, Row(s.name, shape, r.t_c / s.base_t_c)))
        demand = hbm_demand(s.gemm, s.comm, r.t_g, r.t_c, peak)
        out.append(("overlap", key, Row(s.name, shape, overlap_efficiency(r.t_g, r.t_c, r.t_cc),
                                        math.log2(r.t_c / r.t_g), math.log2(demand))))
    return out


class TableRows:
    """Each training scenario's rows (_rows_of), made once per scenario and rate-model peak.

    Leave-one-scenario-out fits the tables once per held-out scenario (fit.loso_residuals), and
    `advise`'s own LOSO validation does so inside every fold (evaluate.loso): some 10^5 fits of
    the same scenarios' rows for 80 scenarios, most of a validation's time. A scenario's rows
    depend on the fold only through the peak rate (hbm_demand), which changes only in the folds
    that leave out the scenario that set it. Rows are frozen, so models may share them."""

    def __init__(self) -> None:
        self._rows: dict[tuple[int, float], tuple[MeasuredScenario, list]] = {}

    def of(self, s: MeasuredScenario, peak: float) -> list[tuple[str, Any, Any]]:
        kept = self._rows.get((id(s), peak))
        if kept is None or kept[0] is not s:   # the scenario is kept too: its id is never another's
            kept = self._rows[(id(s), peak)] = (s, _rows_of(s, peak))
        return kept[1]


def fit_tables(scenarios: list[MeasuredScenario], rows: TableRows | None = None) -> AdviceModel:
    """The tables and rate model, without the interval (fit() adds it). ``rows``: where scenarios'
    rows are kept between fits of overlapping training sets (leave-one-scenario-out)."""
    model = AdviceModel(rates=fit_rates(scenarios), training=[s.name for s in scenarios],
                        definitions={s.definition for s in scenarios},
                        sm_count=next((n for s in scenarios if (n := s.sm_count) is not None), None))
    peak = model.rates.peak_bytes_per_ms
    tables: dict[str, dict[Any, list[Row]]] = {"gemm_partition": model.gemm_partition,
                                              "comm_factor": model.comm_factor, "overlap": model.overlap}
    for s in scenarios:
        for table, key, value in (rows.of(s, peak) if rows is not None else _rows_of(s, peak)):
            if table == "params":
                model.params.setdefault(key, value)
            else:
                tables[table].setdefault(key, []).append(value)
    return model
