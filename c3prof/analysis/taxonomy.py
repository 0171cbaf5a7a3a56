"""Taxonomy of a scenario: which kernel is longer, what bounds the GEMM, what bounds the communication.

Every rule is stated in ``rules()`` and printed with the report, so a reader can re-derive a class
from the numbers. Classes come from *measured* quantities of the trace: isolated medians, the
machine balance from the trace's own ceilings record, and the size sweep found in the loaded traces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from c3prof.analysis.dataset import Group, MergedRun
from c3prof.analysis.stats import fast_median
from c3prof.scenarios import DTYPE_BYTES

DEFAULT_THRESHOLD = 1.15
DEFAULT_PLATEAU_FRACTION = 0.80
MIN_SWEEP_SIZES = 3
BALANCE_COPY = "d2d"  # the copy ceiling that stands for device-memory bandwidth


def rules(threshold: float = DEFAULT_THRESHOLD, plateau_fraction: float = DEFAULT_PLATEAU_FRACTION) -> list[dict]:
    t, pf = threshold, plateau_fraction
    return [
        {"name": "length", "rule":
            f"G-long if T_g > {t:g} * T_c, C-long if T_c > {t:g} * T_g, else GC-equal; T_g and T_c are the "
            "run's own isolated medians; a scenario's class is that of its base run (its own run's when "
            "the scenario has no complete base run)."},
        {"name": "gemm_bound", "rule":
            "arithmetic intensity AI = 2mnk / ((mk + kn + mn) * bytes_per_element) (bf16/fp16 2, fp32 4); "
            "machine balance = ceilings.gemm_flops_per_s[dtype] / ceilings.copy_bytes_per_s['d2d'] "
            "(FLOP per byte read+written, both measured in the trace); compute-bound if AI >= balance, "
            "else memory-bound; unknown if a ceiling is missing."},
        {"name": "comm_bound", "rule":
            "per communication op and transport (params.transport), over the sizes found in the loaded "
            "traces: bandwidth(size) = bytes / T_c, T_c the fastest median isolated time at that size; "
            f"plateau = max bandwidth; a size is latency-bound if it is below the smallest size whose "
            f"bandwidth reaches {pf:.0%} of the plateau, else bandwidth-bound; unknown with fewer than "
            f"{MIN_SWEEP_SIZES} sizes."},
    ]


def length_class(tg: float | None, tc: float | None, threshold: float = DEFAULT_THRESHOLD) -> str:
    if tg is None or tc is None:
        return "unknown"
    if tg > threshold * tc:
        return "G-long"
    if tc > threshold * tg:
        return "C-long"
    return "GC-equal"


@dataclass
class GemmBound:
    cls: str
    intensity: float | None
    balance: float | None
    reason: str | None = None

    def to_json(self) -> dict:
        return {"class": self.cls, "arithmetic_intensity": self.intensity, "machine_balance": self.balance,
                "reason": self.reason}


def arithmetic_intensity(gemm: dict) -> float | None:
    try:
        m, n, k = int(gemm["m"]), int(gemm["n"]), int(gemm["k"])
        size = DTYPE_BYTES[gemm.get("dtype", "bf16")]
    except (KeyError, TypeError, ValueError):
        return None
    return 2.0 * m * n * k / ((m * k + k * n + m * n) * size)


def _ceiling(ceilings: dict, group: str, name: str) -> float | None:
    entry = ceilings.get(group, {}).get(name)
    return float(entry["value"]) if isinstance(entry, dict) and "value" in entry else None


def gemm_bound(gemm: dict, ceilings: dict) -> GemmBound:
    ai = arithmetic_intensity(gemm or {})
    if ai is None:
        return GemmBound("unknown", None, None, "scenario has no usable GEMM shape/dtype")
    dtype = gemm.get("dtype", "bf16")
    flops = _ceiling(ceilings, "gemm_flops_per_s", dtype)
    copy = _ceiling(ceilings, "copy_bytes_per_s", BALANCE_COPY)
    if flops is None or copy is None:
        lacking = [n for n, v in ((f"gemm_flops_per_s[{dtype}]", flops), (f"copy_bytes_per_s[{BALANCE_COPY}]", copy))
                   if v is None]
        return GemmBound("unknown", ai, None, f"no measured ceiling {', '.join(lacking)} in the trace")
    balance = flops / copy
    return GemmBound("compute-bound" if ai >= balance else "memory-bound", ai, balance)


@dataclass
class Sweep:
    """Measured bandwidth against size for one communication op over one transport."""

    op: str
    transport: str | None
    sizes: list[int]
    t_ms: list[float]
    bandwidth: list[float]  # bytes per second
    knee_bytes: int | None  # smallest size reaching plateau_fraction of the plateau
    plateau: float | None
    reason: str | None = None

    def classify(self, nbytes: int) -> tuple[str, str | None]:
        if self.knee_bytes is None:
            return "unknown", self.reason
        return ("latency-bound" if nbytes < self.knee_bytes else "bandwidth-bound"), None

    def to_json(self) -> dict:
        return {"op": self.op, "transport": self.transport, "sizes_bytes": self.sizes, "t_c_ms": self.t_ms,
                "bandwidth_bytes_per_s": self.bandwidth, "plateau_bytes_per_s": self.plateau,
                "knee_bytes": self.knee_bytes, "reason": self.reason}


def comm_sweeps(group: Group, plateau_fraction: float = DEFAULT_PLATEAU_FRACTION) -> dict[tuple, Sweep]:
    """One sweep per (op, transport) from every run of the group that has an isolated comm phase."""
    fastest: dict[tuple, dict[int, float]] = {}
    for run in group.runs.values():
        comm = run.scenario.get("comm", {})
        t = run.series("comm", "total_ms")
        if t is None or not isinstance(comm.get("bytes"), int) or "op" not in comm:
            continue
        by_size = fastest.setdefault((comm["op"], run.transport), {})
        med = fast_median(t)
        by_size[comm["bytes"]] = min(med, by_size.get(comm["bytes"], np.inf))
    sweeps = {}
    for (op, transport), by_size in fastest.items():
        sizes = sorted(by_size)
        t_ms = [by_size[s] for s in sizes]
        bw = [s / (t * 1e-3) for s, t in zip(sizes, t_ms)]
        if len(sizes) < MIN_SWEEP_SIZES:
            sweeps[(op, transport)] = Sweep(op, transport, sizes, t_ms, bw, None, None,
                                            f"only {len(sizes)} size(s) of {op} over {transport!r} in the "
                                            f"traces; need {MIN_SWEEP_SIZES} for a sweep")
            continue
        plateau = max(bw)
        knee = next(s for s, b in zip(sizes, bw) if b >= plateau_fraction * plateau)
        sweeps[(op, transport)] = Sweep(op, transport, sizes, t_ms, bw, knee, plateau)
    return sweeps


@dataclass
class RunTaxonomy:
    scenario_class: str
    class_source: str  # "base" or "own"
    own_class: str
    gemm: GemmBound
    comm: str
    comm_reason: str | None

    def to_json(self) -> dict:
        return {"class": self.scenario_class, "class_source": self.class_source, "own_class": self.own_class,
                "gemm": self.gemm.to_json(), "comm": self.comm, "comm_reason": self.comm_reason}


def classify_run(run: MergedRun, own: tuple[float | None, float | None], base: tuple[float | None, float | None] | None,
                 group: Group, sweeps: dict[tuple, Sweep], threshold: float = DEFAULT_THRESHOLD) -> RunTaxonomy:
    """Classes of one run; ``own`` and ``base`` are (T_g, T_c) medians, ``base`` None without a base run."""
    own_cls = length_class(*own, threshold)
    scen, source = (length_class(*base, threshold), "base") if base is not None else (own_cls, "own")
    comm = run.scenario.get("comm", {})
    sweep = sweeps.get((comm.get("op"), run.transport))
    if sweep is None:
        ccls, creason = "unknown", "no isolated comm phase for this op and transport"
    else:
        ccls, creason = sweep.classify(comm.get("bytes", 0))
    return RunTaxonomy(scen, source, own_cls, gemm_bound(run.scenario.get("gemm", {}), group.ceilings), ccls, creason)
