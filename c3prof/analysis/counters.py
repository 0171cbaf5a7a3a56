"""Hardware-counter summaries: L2 traffic and the share of it that did not come from the SMs.

Counter records (c3prof.trace) hold one measurement each: ``metrics`` are totals over the phase,
and an optional ``series`` holds sampled values against ``t_ms``. Several records of one run and
phase are several measurements (repetitions, replays): their median gets an interval; one record
is reported as a single measurement.

On Hopper, copy-engine traffic is counted in L2 (FACTS-H200.md): ``lts__t_sectors`` counts all
L2 sectors and ``lts__t_sectors_srcunit_tex`` those from the SMs, so the non-SM share (copy
engines, other units) is ``1 - srcunit_tex / t_sectors``.
"""

from __future__ import annotations

import numpy as np

from c3prof.analysis.dataset import MergedRun
from c3prof.analysis.speedup import BootstrapSettings
from c3prof.analysis.stats import bootstrap_ci

L2_SECTORS = "lts__t_sectors"
L2_SECTORS_SM = "lts__t_sectors_srcunit_tex"


def _records(run: MergedRun, phase: str) -> list[dict]:
    return [c for c in run.counters if c.get("phase") == phase]


def metric_values(run: MergedRun, phase: str, metric: str) -> np.ndarray:
    """One total per counters record of ``phase`` that has ``metric``."""
    vals = [c["metrics"][metric]["value"] for c in _records(run, phase)
            if isinstance(c.get("metrics", {}).get(metric), dict) and "value" in c["metrics"][metric]]
    return np.asarray(vals, dtype=float)


def metric_unit(run: MergedRun, metric: str) -> str | None:
    for c in run.counters:
        entry = c.get("metrics", {}).get(metric)
        if isinstance(entry, dict) and entry.get("unit"):
            return str(entry["unit"])
    return None


def non_sm_share_values(run: MergedRun, phase: str) -> tuple[np.ndarray, str]:
    """Non-SM share of L2 sectors: one per counters record, or per series sample when fewer than 2 records."""
    shares = []
    for c in _records(run, phase):
        m = c.get("metrics", {})
        if isinstance(m.get(L2_SECTORS), dict) and isinstance(m.get(L2_SECTORS_SM), dict):
            total = float(m[L2_SECTORS]["value"])
            if total > 0:
                shares.append(1.0 - float(m[L2_SECTORS_SM]["value"]) / total)
    if len(shares) >= 2:
        return np.asarray(shares), "per counters record"
    for c in _records(run, phase):
        s = c.get("series") or {}
        if L2_SECTORS in s and L2_SECTORS_SM in s and len(s[L2_SECTORS]) == len(s[L2_SECTORS_SM]):
            total = np.asarray(s[L2_SECTORS], dtype=float)
            sm = np.asarray(s[L2_SECTORS_SM], dtype=float)
            keep = total > 0
            if keep.sum() >= 2:
                # Samples of one run are autocorrelated: their interval understates the uncertainty.
                return 1.0 - sm[keep] / total[keep], f"per {c.get('source')} series sample (autocorrelated: interval optimistic)"
    return np.asarray(shares, dtype=float), "per counters record"


def summarize(values: np.ndarray, settings: BootstrapSettings, key: tuple, what: str = "measurements") -> dict | None:
    """Median with an interval over measurements; a single measurement is said to be one."""
    if values.size == 0:
        return None
    out = {"value": float(np.median(values)), "n": int(values.size), "ci": None, "note": None}
    if values.size == 1:
        out["note"] = "single measurement: no interval"
        return out
    ci = bootstrap_ci([values], np.median, n_resamples=settings.n_resamples, confidence=settings.confidence,
                      seed=settings.seed, key=key)
    out["ci"] = ci.as_list()
    out["note"] = ci.reason and f"{values.size} {what}: {ci.reason}"
    return out


def _ratio(num: np.ndarray, den: np.ndarray, settings: BootstrapSettings, key: tuple) -> dict | None:
    if num.size == 0 or den.size == 0:
        return None
    out = {"value": float(np.median(num) / np.median(den)), "ci": None, "note": None}
    if num.size == 1 and den.size == 1:
        out["note"] = "single measurement per phase: no interval"
        return out
    ci = bootstrap_ci([num, den], lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis),
                      n_resamples=settings.n_resamples, confidence=settings.confidence, seed=settings.seed, key=key)
    out["ci"] = ci.as_list()
    out["note"] = ci.reason
    return out


def l2_summary(run: MergedRun, settings: BootstrapSettings) -> dict | None:
    """L2 sectors in the GEMM phase vs the concurrent phase, and the non-SM share of each."""
    if not run.counters:
        return None
    key = (run.group, run.id)
    g = metric_values(run, "gemm", L2_SECTORS)
    cc = metric_values(run, "concurrent", L2_SECTORS)
    out = {
        "sources": sorted({str(c.get("source")) for c in run.counters}),
        "unit": metric_unit(run, L2_SECTORS),
        "l2_sectors_gemm": summarize(g, settings, key + ("l2", "gemm")),
        "l2_sectors_concurrent": summarize(cc, settings, key + ("l2", "concurrent")),
        "l2_sectors_ratio": _ratio(cc, g, settings, key + ("l2", "ratio")),
    }
    for phase in ("gemm", "concurrent"):
        shares, basis = non_sm_share_values(run, phase)
        s = summarize(shares, settings, key + ("share", phase))
        if s is not None:
            s["basis"] = basis
        out[f"non_sm_share_{phase}"] = s
    if all(v is None for k, v in out.items() if k not in ("sources", "unit")):
        return None
    return out


def counter_series(run: MergedRun, phase: str = "concurrent") -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(source, metric, t_ms, values) for every time series of a phase (figures and Perfetto use them)."""
    out = []
    for c in _records(run, phase):
        s = c.get("series") or {}
        t = s.get("t_ms")
        if not isinstance(t, list):
            continue
        for name, vals in s.items():
            if name != "t_ms" and isinstance(vals, list) and len(vals) == len(t):
                out.append((str(c.get("source")), name, np.asarray(t, dtype=float), np.asarray(vals, dtype=float)))
    return out


PERTURBATION_GOAL = 0.02


def perturbation_summary(runs) -> list[dict]:
    """Per counter source, how much counting changed the timing it counted.

    Each counters record carries ``perturbation``: the median of the phase timed inside the counted
    window over the median of the same work timed just before without counting (same process,
    back to back). Summarized over all records and over the GEMM-alone phases, against the 2% goal.
    """
    by_source: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for c in run.counters:
            p = c.get("perturbation")
            if not isinstance(p, (int, float)):
                continue
            entry = by_source.setdefault(str(c.get("source")), {"all": [], "gemm": []})
            entry["all"].append(float(p))
            if c.get("phase") == "gemm":
                entry["gemm"].append(float(p))
    out = []
    for source, vals in sorted(by_source.items()):
        allv, gemm = np.asarray(vals["all"]), np.asarray(vals["gemm"])
        row = {"source": source, "n_records": int(allv.size), "median": float(np.median(allv)),
               "min": float(allv.min()), "max": float(allv.max()), "goal": 1 + PERTURBATION_GOAL}
        if gemm.size:
            row["gemm_median"] = float(np.median(gemm))
            row["gemm_within_goal"] = bool(abs(row["gemm_median"] - 1) <= PERTURBATION_GOAL)
        out.append(row)
    return out
