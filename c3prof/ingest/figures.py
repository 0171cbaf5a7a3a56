"""Figure of ``c3prof ingest --figures DIR``: ``ingest_summary.png`` (``--figure-formats`` adds pdf/svg), drawn
with the shared
figure code (c3prof.figures.common: matplotlib's Figure API, no pyplot), four panels:

1. busy time per kernel class on each device, with HTA's overlap in the label;
2. share of the overlapped GEMM+communication time of the top scenarios (MAX_BARS);
3. their GEMM and communication slowdowns, with bootstrap intervals;
4. their fraction of ideal, with bootstrap intervals (panels 2-4 share the scenario labels).

Why one figure, fixed margins, shared labels and PNG by default: each saved file is a full draw, and
matplotlib's import alone takes longer than ingesting a 35 MB trace. ``c3prof ingest`` draws it in a
worker process (c3prof.figures.worker) started before the trace is read, which imports matplotlib
meanwhile (``WORKER_PRELOAD``). No GPU or torch import.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from c3prof.ingest.kernel_table import CLASSES
from c3prof.ingest.names import short_name

# What the figure worker imports before the results arrive: this module and the modules the
# results are unpickled into (numpy among them).
WORKER_PRELOAD = ("c3prof.ingest.figures", "c3prof.ingest.analyze")
MAX_BARS = 20  # the rest are summed into "others" (time share) or left out (slowdowns, fraction)
FIGURE_NAME = "ingest_summary"
PNG_DPI = 100
CLASS_COLORS = {"gemm": "#4c72b0", "conv": "#8172b3", "attention": "#937860", "compute": "#8c8c8c",
                "collective": "#c44e52", "transfer": "#55a868", "memset": "#ccb974"}


def _label(r) -> str:
    g = r.gemm.label if r.gemm is not None else (short_name(r.gemm_kernels[0])[:40] if r.gemm_kernels else "GEMM")
    return f"{g} | {r.comm.label}"


def _errors(values, cis):
    lo, hi = [], []
    for v, ci in zip(values, cis):
        ok = v is not None and ci is not None
        lo.append(max(0.0, v - ci[0]) if ok else 0.0)
        hi.append(max(0.0, ci[1] - v) if ok else 0.0)
    return [lo, hi]


def _breakdown(ax, traces) -> None:
    rows = [(t, b) for t in traces for b in t.breakdown][:MAX_BARS]
    if rows:
        # One barh call per class for all devices at once (not one per device and class).
        ms = np.array([[b["classes_ms"][cls] for cls in CLASSES] for _, b in rows])
        lefts = np.cumsum(ms, axis=1) - ms
        for k, cls in enumerate(CLASSES):
            ax.barh(range(len(rows)), ms[:, k], left=lefts[:, k], color=CLASS_COLORS[cls], label=cls)
    labels = []
    for t, b in rows:
        hta = t.hta.get("comm_comp_overlap_pct")
        labels.append(f"rank {b['rank']} dev {b['device']}" + (f" (HTA overlap {hta:.1f}%)" if hta is not None else ""))
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("busy time per kernel class, stacked (ms; union of each class's kernels)", fontsize=8)
    ax.legend(loc="lower right", fontsize=7, ncols=7)
    ax.set_title("Time breakdown by kernel class", fontsize=9)


def _time_share(ax, shown) -> None:
    ax.barh(range(len(shown)), [100 * r.time_share for r in shown], color=CLASS_COLORS["gemm"])
    ax.set_yticks(range(len(shown)), [_label(r) + (" (flagged)" if r.flags else "") for r in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("share of overlapped GEMM+comm. time (%)", fontsize=8)
    ax.set_title(f"Overlap time, top {len(shown)} scenarios", fontsize=9)


def _slowdowns(ax, shown) -> None:
    y = list(range(len(shown)))
    gs = [r.gemm_slowdown for r in shown]
    cs = [r.comm_slowdown for r in shown]
    ax.barh([v - 0.2 for v in y], [v or 0 for v in gs], height=0.4, label="GEMM slowdown", color="#dd8452",
            xerr=_errors(gs, [r.gemm_slowdown_ci for r in shown]), capsize=2)
    ax.barh([v + 0.2 for v in y], [v or 0 for v in cs], height=0.4, label="communication slowdown",
            color=CLASS_COLORS["transfer"], xerr=_errors(cs, [r.comm_slowdown_ci for r in shown]), capsize=2)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel("overlapped / alone (median, 95% CI); no bar: no reference", fontsize=8)
    ax.legend(loc="lower right", fontsize=7)
    ax.set_title("Slowdown while overlapped", fontsize=9)


def _fraction(ax, shown) -> None:
    y = list(range(len(shown)))
    fr = [r.fraction_of_ideal for r in shown]
    ax.barh(y, [v if v is not None else 0 for v in fr], color=CLASS_COLORS["conv"],
            xerr=_errors(fr, [r.fraction_ci for r in shown]), capsize=2)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.axvline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("(realized - 1) / (ideal - 1)", fontsize=8)
    ax.set_title("Fraction of the ideal overlap gain", fontsize=9)


def draw(traces, results, out: Path, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """The summary figure, saved in ``formats`` in ``out``: the class breakdown on top, then the three
    per-scenario panels side by side, sharing one set of scenario labels (text is most of the cost)."""
    from c3prof.figures.common import new_figure, save  # (it also fixes the titles' height: faster)

    return _draw(traces, results, out, formats, new_figure, save)


def _draw(traces, results, out: Path, formats: tuple[str, ...], new_figure, save) -> list[Path]:
    n_dev = max(1, min(MAX_BARS, sum(len(t.breakdown) for t in traces)))
    shown = results[:MAX_BARS]
    top, bottom = 0.9 + 0.22 * n_dev, (1.4 + 0.2 * len(shown)) if shown else 0.0
    fig = new_figure(15, top + bottom + 1.0, layout=None)
    grid = fig.add_gridspec(2 if shown else 1, 3, height_ratios=[top, bottom] if shown else [top])
    _breakdown(fig.add_subplot(grid[0, :]), traces)
    if shown:
        share = fig.add_subplot(grid[1, 0])
        _time_share(share, shown)
        slow = fig.add_subplot(grid[1, 1])
        _slowdowns(slow, shown)
        frac = fig.add_subplot(grid[1, 2])
        _fraction(frac, shown)
        for ax in (slow, frac):
            # The rows of the first panel, without tick objects of their own (sharey would make
            # and draw a hidden tick and label per row in each panel).
            ax.set_yticks([])
            ax.set_ylim(share.get_ylim())
    # Fixed margins instead of a layout engine: the labels are at most ~70 characters of 7 pt.
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.27, right=0.99, top=1 - 0.35 / height, bottom=0.55 / height, wspace=0.08,
                        hspace=0.9 / max((top + bottom) / 2, 0.5))
    return save(fig, out, FIGURE_NAME, formats, dpi=PNG_DPI)
