"""Dose-response of copy-engine interference: GEMM slowdown against the copy engines' byte rate.

The falsification section asks, per transfer, whether a copy-engine (DMA) transfer slows a GEMM.
This analysis asks at what dose it starts to: for every ``dma`` run carried by copy engines (engine
evidence) it takes

- the dose: the copy engines' byte rate, bytes moved (all directions) / median T_c of the dma run
  alone, in GB/s;
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

from c3prof.analysis.dataset import Group
from c3prof.analysis.falsification import FalsificationSettings, gemm_json, gemm_key, paired_difference
from c3prof.analysis.speedup import RunMetrics


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

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _bytes_moved(run) -> int:
    comm = run.scenario.get("comm", {})
    return int(comm.get("bytes", 0)) * (2 if run.link == "pcie_bidir" else 1)


def arms(group: Group, metrics: list[RunMetrics], confidence: float) -> list[Arm]:
    by_scenario = {(m.run.name, m.run.strategy): m for m in metrics}
    out = []
    for m in metrics:
        run = m.run
        if run.strategy != "dma" or group.carrier(run.transport)[0] != "copy_engine" or not m.medians.get("T_c"):
            continue
        comm = run.scenario.get("comm", {})
        base = by_scenario.get((run.name, "base"))
        diff = paired_difference(m, base, confidence) if base else None
        nbytes = int(comm.get("bytes", 0))
        chunk = int(comm.get("chunk") or nbytes)
        out.append(Arm(scenario=run.name, link=run.link, gemm=gemm_json(run)["label"], chunk=chunk,
                       copies=max(1, nbytes // max(chunk, 1)), gap_us=comm.get("gap_us"), rate_gbps=_bytes_moved(run) / m.medians["T_c"] / 1e6,
                       slowdown=m.gemm_slowdown.value, slowdown_ci=m.gemm_slowdown.ci_list,
                       dma_minus_sm=diff.value if diff else None, dma_minus_sm_ci=diff.ci_list if diff else None,
                       overlap=m.overlap.value))
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
        out.append({"scenario": run.name, "kind": kind, "gemm": gemm_json(run)["label"],
                    "ctas": run.params.get("comm_ctas"), "duration_us": comm.get("duration_us"),
                    # A device copy reads and writes each byte: its HBM write rate is bytes / T_c.
                    "hbm_write_gbps": nbytes / m.medians["T_c"] / 1e6 if nbytes else 0.0,
                    "t_c_ms": m.medians["T_c"], "slowdown": m.gemm_slowdown.value,
                    "slowdown_ci": m.gemm_slowdown.ci_list, "overlap": m.overlap.value})
    return out


def _bracket(group_arms: list[Arm], limit: float) -> dict:
    """The measured doses around the point where the GEMM slowdown crosses ``limit``."""
    quiet = [a for a in group_arms if a.slowdown_ci and a.slowdown_ci[1] < limit]
    loud = [a for a in group_arms if a.slowdown_ci and a.slowdown_ci[0] > limit]
    below = max((a.rate_gbps for a in quiet), default=None)
    above = min((a.rate_gbps for a in loud), default=None)
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


def dose_response(group: Group, metrics: list[RunMetrics], s: FalsificationSettings, confidence: float) -> dict:
    """Arms and per-(link, GEMM) thresholds of one platform group; empty when it has no DMA arm."""
    all_arms = arms(group, metrics, confidence)
    limit = 1 + s.tolerance
    groups: dict[tuple[str, str], list[Arm]] = {}
    for a in all_arms:
        groups.setdefault((a.link, a.gemm), []).append(a)
    order = {gemm_json(m.run)["label"]: gemm_key(m.run) for m in metrics}
    thresholds = []
    for (link, gemm), ga in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], ()))):
        ga.sort(key=lambda a: a.rate_gbps)
        thresholds.append({"link": link, "gemm": gemm, "arms": len(ga), **_bracket(ga, limit)})
    return {"platform": group.key, "limit": limit, "arms": [a.to_json() for a in all_arms],
            "controls": controls(metrics) if all_arms else [], "thresholds": thresholds,
            "rule": (f"dose = bytes moved / median copy-engine time alone; response = GEMM slowdown with its "
                     f"interval; threshold bracketed by the highest rate whose slowdown CI lies below {limit:g} "
                     f"and the lowest whose CI lower bound lies above it (per link and GEMM)")}
