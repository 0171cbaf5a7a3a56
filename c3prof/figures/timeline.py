"""(d) Timeline of one concurrent run: each repetition's GEMM and communication intervals, with
hardware-counter time series under it when the trace has them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from c3prof.analysis.counters import counter_series
from c3prof.analysis.dataset import Dataset, MergedRun
from c3prof.figures.common import new_figure, save
from c3prof.figures.formats import DEFAULT
from c3prof.figures.jobs import pick_run

MAX_REPS = 40
MAX_SERIES = 4


def plot(dataset: Dataset, outdir: Path, wanted: str | None = None, report: dict | None = None,
         formats: tuple[str, ...] = DEFAULT) -> list[Path]:
    run = pick_run(dataset, wanted, report)
    return [] if run is None else draw_run(run, outdir, formats)


def draw_run(run: MergedRun, outdir: Path, formats: tuple[str, ...] = DEFAULT) -> list[Path]:
    """The timeline of ``run`` (one that has a concurrent phase)."""
    cc = run.phases["concurrent"]
    n = min(int(cc["total_ms"].size), MAX_REPS)
    series = counter_series(run, "concurrent")[:MAX_SERIES]
    fig = new_figure(8.0, 2.0 + 0.12 * n + 1.6 * len(series))
    axes = fig.subplots(1 + len(series), 1, squeeze=False,
                        gridspec_kw={"height_ratios": [max(2.0, 0.12 * n)] + [1.4] * len(series)})[:, 0]
    ax = axes[0]
    zeros = np.zeros(n)
    g0 = cc.get("gemm_start_ms", zeros)[:n]
    c0 = cc.get("comm_start_ms", zeros)[:n]
    y = np.arange(n)
    if "gemm_ms" in cc:
        ax.barh(y - 0.2, cc["gemm_ms"][:n], left=g0, height=0.38, color="#1f77b4", label="GEMM")
    if "comm_ms" in cc:
        ax.barh(y + 0.2, cc["comm_ms"][:n], left=c0, height=0.38, color="#2ca02c", label="communication")
    ax.plot(cc["total_ms"][:n], y, "k|", markersize=8, label="T_cc (span)")
    ax.set_ylabel("repetition")
    ax.set_xlabel("ms from the repetition's start")
    ax.invert_yaxis()
    shown = f"first {n} of {cc['total_ms'].size}" if n < cc["total_ms"].size else f"{n}"
    ax.set_title(f"{run.group}\n{run.id}: concurrent phase, {shown} repetitions", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for a, (source, metric, t, values) in zip(axes[1:], series):
        a.plot(t, values, linewidth=0.9)
        a.set_ylabel(metric, fontsize=6)
        a.set_title(f"{source}: {metric}", fontsize=7, loc="left")
        a.set_xlabel("ms from the phase's start")
    return save(fig, outdir, "timeline", formats)
