"""Dose-response of copy-engine interference: GEMM slowdown against the copy engines' byte rate.

The falsification section asks, per transfer, whether a copy-engine (DMA) transfer slows a GEMM.
This analysis asks at what dose it starts to: for every ``dma`` run carried by copy engines (engine
evidence) it takes

- the dose: the copy engines' byte rate *while the GEMM runs* (``window_rate_gbps``): the bytes
  the copies move inside the GEMM's concurrent interval over its length. It is modelled from the
  schedule, not counted: each copy takes (T_c - gaps) / copies of the transfer's median time alone,
  copies follow each other after ``gap``, and the transfer starts at its median offset from the
  GEMM's start. A throttled transfer's average rate (``rate_gbps``, bytes / T_c) understates what
  the GEMM meets: a GEMM of 0.13 ms beside 1 MiB copies every 0.2 ms always overlaps the first one.
- the response: the GEMM slowdown beside it (median concurrent gemm_ms / median gemm alone), with
  its interval, and the paired difference to the SM carrier of the same bytes over the same link;

and groups the arms by link (direction) and GEMM shape. A ``gap`` between copies throttles the rate at a
fixed copy size, so rate and copy size can be told apart.

**Controls** are base runs that isolate one shared resource each, with the same GEMM slowdown and
interval:

- ``sleep``: a 1-CTA spin kernel on the other stream (op = "sleep"): concurrency alone;
- ``sm_device_copy``: an SM copy kernel inside HBM (link ``hbm``): SM-issued HBM reads and writes,
  at all SMs (the contention ceiling) or CTA-limited to a copy engine's byte rate (the HBM write
  path without PCIe or a copy engine).

The SM carrier of the same bytes over the same PCIe link is the paired control of every arm
(``dma_minus_sm``). Per group, the **threshold** is bracketed by
two measured doses: the highest rate at which the slowdown's interval lies below 1 + tolerance (no
interference shown) and the lowest rate at which its lower bound lies above (interference shown).
Doses are discrete (set by the copy size), so the threshold is this bracket, not a fitted number; a
group whose arms are all on one side says so. What the data cannot decide is said, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from c3prof.analysis.dataset import Group
from c3prof.analysis.falsification import (DifferenceMemo, FalsificationSettings, gemm_key, gemm_label,
                                           paired_differences)
from c3prof.analysis.speedup import RunMetrics
from c3prof.analysis.stats import fast_median
from c3prof.scenarios import GemmSpec


@dataclass(frozen=True)
class Arm:
    """One copy-engine transfer beside one GEMM."""

    scenario: str
    link: str
    gemm: str
    chunk: int
    copies: int
    rate_gbps: float
    slowdown: float | None
    slowdown_ci: list[float] | None
    dma_minus_sm: float | None
    dma_minus_sm_ci: list[float] | None
    overlap: float | None
    gap_us: float | None = None     # pause between copies (None: back to back)
    window_rate_gbps: float | None = None   # the dose: copy-engine bytes/s during the GEMM (modelled)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _bytes_moved(run) -> int:
    comm = run.scenario.get("comm", {})
    return int(comm.get("bytes", 0)) * (2 if run.link == "pcie_bidir" else 1)


def window_bytes(nbytes: int, chunk: int, gap_ms: float, t_c_ms: float, window_ms: float,
                 offset_ms: float = 0.0) -> float:
    """Bytes the copies move inside the GEMM's interval [0, window_ms] (one direction).

    The transfer's copies each last (t_c - (copies - 1) * gap) / copies and follow each other after
    ``gap``, starting ``offset_ms`` after the GEMM; each contributes in proportion to its overlap.
    """
    copies = max(1, nbytes // max(chunk, 1))
    t_copy = max((t_c_ms - (copies - 1) * gap_ms) / copies, 1e-9)
    starts = offset_ms + np.arange(copies) * (t_copy + gap_ms)
    overlap = np.clip(np.minimum(starts + t_copy, window_ms) - np.maximum(starts, 0.0), 0.0, None)
    return float(chunk * overlap.sum() / t_copy)


def _window_rate(m: RunMetrics, nbytes: int, chunk: int, gap_us: float | None) -> float | None:
    window, t_c = m.medians.get("T_g_cc"), m.medians.get("T_c")
    if not window or not t_c:
        return None
    gs, cs = m.run.series("concurrent", "gemm_start_ms"), m.run.series("concurrent", "comm_start_ms")
    offset = fast_median(cs - gs) if gs is not None and cs is not None and gs.size == cs.size else 0.0
    directions = 2 if m.run.link == "pcie_bidir" else 1
    moved = directions * window_bytes(nbytes, chunk, (gap_us or 0.0) / 1e3, t_c, window, offset)
    return moved / window / 1e6


def arms(group: Group, metrics: list[RunMetrics], confidence: float, memo: DifferenceMemo | None = None) -> list[Arm]:
    """Every copy-engine arm of the group (``memo``: falsification.paired_differences')."""
    by_scenario = {(m.run.name, m.run.strategy): m for m in metrics}
    dma = [m for m in metrics if m.run.strategy == "dma" and group.carrier(m.run.transport)[0] == "copy_engine"
           and m.medians.get("T_c")]
    bases = [by_scenario.get((m.run.name, "base")) for m in dma]
    diffs = iter(paired_differences([(m, base) for m, base in zip(dma, bases) if base], confidence, memo))
    out = []
    for m, base in zip(dma, bases):
        run = m.run
        comm = run.scenario.get("comm", {})
        diff = next(diffs) if base else None
        nbytes = int(comm.get("bytes", 0))
        chunk = int(comm.get("chunk") or nbytes)
        out.append(Arm(scenario=run.name, link=run.link, gemm=gemm_label(run), chunk=chunk,
                       copies=max(1, nbytes // max(chunk, 1)), gap_us=comm.get("gap_us"), rate_gbps=_bytes_moved(run) / m.medians["T_c"] / 1e6,
                       slowdown=m.gemm_slowdown.value, slowdown_ci=m.gemm_slowdown.ci_list,
                       dma_minus_sm=diff.value if diff else None, dma_minus_sm_ci=diff.ci_list if diff else None,
                       overlap=m.overlap.value,
                       window_rate_gbps=_window_rate(m, nbytes, chunk, comm.get("gap_us"))))
    return out


CONTROL_KINDS = {"none": "sleep", "hbm": "sm_device_copy"}


def controls(metrics: list[RunMetrics]) -> list[dict]:
    """GEMM slowdown beside each control (base runs of sleep scenarios and of SM device copies)."""
    out = []
    for m in metrics:
        run = m.run
        kind = CONTROL_KINDS.get(run.link)
        if run.strategy != "base" or kind is None or not m.medians.get("T_c"):
            continue
        comm = run.scenario.get("comm", {})
        nbytes = int(comm.get("bytes", 0))
        out.append({"scenario": run.name, "kind": kind, "gemm": gemm_label(run),
                    "ctas": run.params.get("comm_ctas"), "duration_us": comm.get("duration_us"),
                    # A device copy reads and writes each byte: its HBM write rate is bytes / T_c.
                    "hbm_write_gbps": nbytes / m.medians["T_c"] / 1e6 if nbytes else 0.0,
                    "t_c_ms": m.medians["T_c"], "slowdown": m.gemm_slowdown.value,
                    "slowdown_ci": m.gemm_slowdown.ci_list, "overlap": m.overlap.value})
    return out


def _ncu(run, phase: str) -> dict | None:
    """Per-repetition ncu counts of one phase (values over the counted range / its repetitions)."""
    for c in run.counters:
        if c.get("source") == "ncu" and c.get("phase") == phase and c.get("reps"):
            vals = {k: v.get("value") for k, v in c.get("metrics", {}).items()}
            return {k: v / c["reps"] for k, v in vals.items() if isinstance(v, (int, float))}
    return None


def _hit_rate(counts: dict) -> float | None:
    hit, miss = counts.get("l2_sm_read_hit_sectors"), counts.get("l2_sm_read_miss_sectors")
    return hit / (hit + miss) if hit is not None and miss is not None and hit + miss > 0 else None


def mechanism(metrics: list[RunMetrics]) -> list[dict]:
    """What the GEMM's memory traffic looks like beside each arm with ncu counts (per repetition):
    DRAM reads and writes added to the GEMM-alone phase, and the SM loads' L2 hit rate alone and
    beside it (the SM-issued loads are the GEMM's when the other side is a copy engine or a sleep)."""
    out = []
    for m in metrics:
        alone, both = _ncu(m.run, "gemm"), _ncu(m.run, "concurrent")
        if not alone or not both or "dram__bytes_write" not in alone:
            continue
        out.append({"scenario": m.run.name, "strategy": m.run.strategy, "link": m.run.link,
                    "carrier": "copy_engine" if m.run.strategy == "dma" else "sm",
                    "slowdown": m.gemm_slowdown.value, "slowdown_ci": m.gemm_slowdown.ci_list,
                    "dram_read_added_mb": (both.get("dram__bytes_read", 0) - alone.get("dram__bytes_read", 0)) / 1e6,
                    "dram_write_added_mb": (both["dram__bytes_write"] - alone["dram__bytes_write"]) / 1e6,
                    "l2_sm_read_hit_alone": _hit_rate(alone), "l2_sm_read_hit_beside": _hit_rate(both),
                    "l2_sm_read_hits_alone_m": alone.get("l2_sm_read_hit_sectors", 0) / 1e6,
                    "l2_sm_read_hits_beside_m": both.get("l2_sm_read_hit_sectors", 0) / 1e6})
    return out


def _intensity(key) -> float | None:
    """Arithmetic intensity (FLOP per byte of minimal device-memory traffic) of a GEMM (m, n, k, dtype)."""
    try:
        m, n, k, dtype = key
        return GemmSpec(m=int(m), n=int(n), k=int(k), dtype=dtype).arithmetic_intensity
    except (TypeError, ValueError, KeyError):
        return None


def _dose(a: Arm) -> float:
    """The rate the GEMM meets (modelled during its interval), else the transfer's average rate."""
    return a.window_rate_gbps if a.window_rate_gbps is not None else a.rate_gbps


def _bracket(group_arms: list[Arm], limit: float) -> dict:
    """The measured doses around the point where the GEMM slowdown crosses ``limit``."""
    quiet = [a for a in group_arms if a.slowdown_ci and a.slowdown_ci[1] < limit]
    loud = [a for a in group_arms if a.slowdown_ci and a.slowdown_ci[0] > limit]
    below = max((_dose(a) for a in quiet), default=None)
    above = min((_dose(a) for a in loud), default=None)
    if above is None and below is None:
        text = f"no arm is clearly below or above {limit:g}x: the threshold cannot be placed"
    elif above is None:
        text = f"no arm is slowed above {limit:g}x; clearly below it up to {below:.1f} GB/s"
    elif below is None:
        text = f"slowed above {limit:g}x at {above:.1f} GB/s; no arm is clearly below {limit:g}x"
    elif below < above:
        text = f"the premise fails between {below:.1f} and {above:.1f} GB/s"
    else:
        text = (f"not monotone in rate: no slowdown at {below:.1f} GB/s but a slowdown at {above:.1f} GB/s; "
                "the copy size, not only the rate, matters")
    return {"no_slowdown_up_to_gbps": below, "slowdown_from_gbps": above, "text": text}


def dose_response(group: Group, metrics: list[RunMetrics], s: FalsificationSettings, confidence: float,
                  memo: DifferenceMemo | None = None) -> dict:
    """Arms and per-(link, GEMM) thresholds of one platform group; empty when it has no DMA arm.
    ``memo``: falsification.paired_differences' (the report shares one with falsify)."""
    all_arms = arms(group, metrics, confidence, memo)
    limit = 1 + s.tolerance
    groups: dict[tuple[str, str], list[Arm]] = {}
    for a in all_arms:
        groups.setdefault((a.link, a.gemm), []).append(a)
    order = {gemm_label(m.run): gemm_key(m.run) for m in metrics}
    thresholds = []
    for (link, gemm), ga in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], ()))):
        ga.sort(key=_dose)
        thresholds.append({"link": link, "gemm": gemm, "gemm_intensity": _intensity(order.get(gemm)),
                           "arms": len(ga), **_bracket(ga, limit)})
    return {"platform": group.key, "limit": limit, "arms": [a.to_json() for a in all_arms],
            "controls": controls(metrics) if all_arms else [],
            "mechanism": mechanism(metrics) if all_arms else [], "thresholds": thresholds,
            "rule": (f"dose = copy-engine bytes/s during the GEMM (modelled from the copies' schedule; the "
                     f"transfer's average rate is rate_gbps); response = GEMM slowdown with its "
                     f"interval; threshold bracketed by the highest rate whose slowdown CI lies below {limit:g} "
                     f"and the lowest whose CI lower bound lies above it (per link and GEMM)")}
