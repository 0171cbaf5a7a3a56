"""Figures of ``c3prof ingest --figures DIR``, drawn with the shared figure code (c3prof.figures.common:
matplotlib's Figure API, no pyplot), each saved as PNG and PDF.

* ``ingest_time_share``: share of the overlapped GEMM+communication time per scenario.
* ``ingest_slowdowns``: GEMM and communication slowdowns per scenario, with bootstrap intervals.
* ``ingest_fraction``: fraction of ideal per scenario, with bootstrap intervals.
* ``ingest_breakdown``: busy time per kernel class on each device, with HTA's overlap in the label.
No GPU or torch import: figures are drawn from the results only.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import new_figure, save
from c3prof.ingest.analyze import IngestResult
from c3prof.ingest.kernel_table import CLASSES
from c3prof.ingest.names import short_name
from c3prof.ingest.summary import ScenarioResult

MAX_BARS = 20  # the rest are summed into "other" (time share) or left out (slowdowns)
CLASS_COLORS = {"gemm": "#4c72b0", "conv": "#8172b3", "attention": "#937860", "compute": "#8c8c8c",
                "collective": "#c44e52", "transfer": "#55a868", "memset": "#ccb974"}


def _label(r: ScenarioResult) -> str:
    g = r.gemm.label if r.gemm is not None else (short_name(r.gemm_kernels[0])[:40] if r.gemm_kernels else "GEMM")
    return f"{g} | {r.comm.label}"


def _errors(values, cis):
    lo, hi = [], []
    for v, ci in zip(values, cis):
        ok = v is not None and ci is not None
        lo.append(max(0.0, v - ci[0]) if ok else 0.0)
        hi.append(max(0.0, ci[1] - v) if ok else 0.0)
    return [lo, hi]


def _time_share(results: list[ScenarioResult], out: Path) -> list[Path]:
    shown = results[:MAX_BARS]
    labels = [_label(r) for r in shown]
    shares = [100 * r.time_share for r in shown]
    if len(results) > MAX_BARS:
        labels.append(f"{len(results) - MAX_BARS} others")
        shares.append(100 * sum(r.time_share for r in results[MAX_BARS:]))
    fig = new_figure(9, 0.9 + 0.35 * len(labels))
    ax = fig.add_subplot()
    ax.barh(range(len(shares)), shares, color=CLASS_COLORS["gemm"])
    ax.set_yticks(range(len(shares)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("share of overlapped GEMM+communication time (%)")
    ax.set_title("C3 regions in the trace: where overlap time goes")
    return save(fig, out, "ingest_time_share")


def _slowdowns(shown: list[ScenarioResult], out: Path) -> list[Path]:
    fig = new_figure(9, 0.9 + 0.35 * len(shown))
    ax = fig.add_subplot()
    y = list(range(len(shown)))
    gs = [r.gemm_slowdown for r in shown]
    cs = [r.comm_slowdown for r in shown]
    ax.barh([v - 0.2 for v in y], [v or 0 for v in gs], height=0.4, label="GEMM slowdown", color="#dd8452",
            xerr=_errors(gs, [r.gemm_slowdown_ci for r in shown]), capsize=2)
    ax.barh([v + 0.2 for v in y], [v or 0 for v in cs], height=0.4, label="communication slowdown",
            color=CLASS_COLORS["transfer"], xerr=_errors(cs, [r.comm_slowdown_ci for r in shown]), capsize=2)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(y, [_label(r) + (" (flagged)" if r.flags else "") for r in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("overlapped / alone duration (median, 95% bootstrap CI); missing bar: no reference")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Slowdown of each side while overlapped")
    return save(fig, out, "ingest_slowdowns")


def _fraction(shown: list[ScenarioResult], out: Path) -> list[Path]:
    fig = new_figure(9, 0.9 + 0.35 * len(shown))
    ax = fig.add_subplot()
    y = list(range(len(shown)))
    fr = [r.fraction_of_ideal for r in shown]
    ax.barh(y, [v if v is not None else 0 for v in fr], color=CLASS_COLORS["conv"],
            xerr=_errors(fr, [r.fraction_ci for r in shown]), capsize=2)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.axvline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_yticks(y, [_label(r) for r in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("fraction of ideal overlap speedup obtained (realized-1)/(ideal-1)")
    ax.set_title("How much of the possible overlap gain the job got")
    return save(fig, out, "ingest_fraction")


def _breakdown(result: IngestResult, out: Path) -> list[Path]:
    rows = [(t, b) for t in result.traces for b in t.breakdown][:MAX_BARS]
    fig = new_figure(9, 1.2 + 0.4 * len(rows))
    ax = fig.add_subplot()
    for i, (t, b) in enumerate(rows):
        left = 0.0
        for cls in CLASSES:
            v = b["classes_ms"][cls]
            ax.barh(i, v, left=left, color=CLASS_COLORS[cls], label=cls if i == 0 else None)
            left += v
    labels = []
    for t, b in rows:
        hta = t.hta.get("comm_comp_overlap_pct")
        labels.append(f"rank {b['rank']} dev {b['device']}" + (f" (HTA overlap {hta:.1f}%)" if hta is not None else ""))
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("busy time per kernel class (ms, union of each class's kernels; classes can overlap)")
    ax.legend(loc="lower right", fontsize=8, ncols=4)
    ax.set_title("Time breakdown by kernel class")
    return save(fig, out, "ingest_breakdown")


def write_figures(result: IngestResult, out: Path) -> list[Path]:
    paths: list[Path] = []
    if any(t.breakdown for t in result.traces):
        paths += _breakdown(result, out)
    if result.results:
        shown = result.results[:MAX_BARS]
        paths += _time_share(result.results, out) + _slowdowns(shown, out) + _fraction(shown, out)
    return paths
