"""Figure of ``c3prof ingest --figures DIR``: ``ingest_summary.png`` (``--figure-formats`` adds pdf/svg), drawn
with the shared
figure code (c3prof.figures.common: matplotlib's Figure API, no pyplot), four panels:

1. busy time per kernel class on each device, with HTA's overlap in the label;
2. share of the overlapped GEMM+communication time of the top scenarios (MAX_BARS);
3. their GEMM and communication slowdowns, with bootstrap intervals;
4. their fraction of ideal, with bootstrap intervals (panels 2-4 share the scenario labels; a panel
   where no scenario has a value says why instead).

Why one figure, fixed margins, shared labels and PNG by default: each saved file is a full draw, and
matplotlib's import alone takes about as long as ingesting a 35 MB trace. ``c3prof ingest`` draws it in a
worker process (c3prof.figures.worker) started before the trace is read, which imports matplotlib
meanwhile (``WORKER_PRELOAD``). No GPU or torch import.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from c3prof.ingest.kernel_table import CLASSES
from c3prof.ingest.names import short_name
from c3prof.ingest.summary import MIN_REFERENCE

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


def _bars(ax, y, width, *, left=0.0, height: float = 0.8, color=None, xerr=None) -> None:
    """Horizontal bars as one collection (what ``barh`` draws, without an artist per bar, which was
    most of the figure's build time), starting at ``left``, which the x autoscaling keeps as an
    edge (as barh's). ``xerr`` ((low, high) arrays, NaN where there is none): black error bars with
    caps, on the bars that have one."""
    from matplotlib.collections import PolyCollection

    y, width = np.asarray(y, dtype=float), np.asarray(width, dtype=float)
    left = np.broadcast_to(np.asarray(left, dtype=float), width.shape)
    x0, x1, y0, y1 = left, left + width, y - height / 2, y + height / 2
    boxes = np.stack([np.stack([x0, y0], -1), np.stack([x0, y1], -1), np.stack([x1, y1], -1),
                      np.stack([x1, y0], -1)], axis=1)
    bars = PolyCollection(list(boxes), facecolors=color, edgecolors="none")
    bars.sticky_edges.x.extend(np.unique(left).tolist())
    ax.add_collection(bars)
    if xerr is not None:
        lo, hi = np.asarray(xerr, dtype=float)
        has = ~(np.isnan(lo) | np.isnan(hi))
        if has.any():
            ax.errorbar(x1[has], y[has], xerr=[lo[has], hi[has]], fmt="none", ecolor="black", capsize=2)
    ax.autoscale_view()


def _errors(values, cis) -> list[list[float]]:
    """(below, above) each value to its interval's ends; NaN where there is no value or interval."""
    lo, hi = [], []
    for v, ci in zip(values, cis):
        ok = v is not None and ci is not None
        lo.append(max(0.0, v - ci[0]) if ok else np.nan)
        hi.append(max(0.0, ci[1] - v) if ok else np.nan)
    return [lo, hi]


def _no_values(ax, what: str) -> None:
    """A panel where no scenario shown has a value: a note saying why, instead of an empty axis
    whose ticks said nothing (and cost 3% of the figure's draw)."""
    ax.set_xticks([])
    ax.text(0.5, 0.5, f"{what}: no scenario shown has\na reference for both its GEMM and its\n"
                      f"communication (>= {MIN_REFERENCE} non-overlapped instances)",
            transform=ax.transAxes, ha="center", va="center", fontsize=8, color="0.3")


def _row_labels(ax, labels: list[str]) -> None:
    """A label left of each bar row, where tick labels would be (7 pt off the axis, right-aligned):
    a text per row instead of a tick, which is two lines and a second text more for a mark that
    says nothing beside a bar (6% of the figure's draw with 20 rows)."""
    from matplotlib.transforms import offset_copy

    ax.set_yticks([])
    beside_axis = offset_copy(ax.get_yaxis_transform(), fig=ax.get_figure(), x=-7, units="points")
    for y, label in enumerate(labels):
        ax.text(0, y, label, transform=beside_axis, ha="right", va="center_baseline", fontsize=7)


def _breakdown(ax, traces) -> None:
    from matplotlib.patches import Patch

    rows = [(t, b) for t in traces for b in t.breakdown][:MAX_BARS]
    if rows:
        # Every (device, class) segment in one collection, coloured by class.
        ms = np.array([[b["classes_ms"][cls] for cls in CLASSES] for _, b in rows])
        lefts = np.cumsum(ms, axis=1) - ms
        ys = np.repeat(np.arange(len(rows)), len(CLASSES))
        _bars(ax, ys, ms.ravel(), left=lefts.ravel(), color=[CLASS_COLORS[c] for c in CLASSES] * len(rows))
    labels = []
    for t, b in rows:
        hta = t.hta.get("comm_comp_overlap_pct")
        labels.append(f"rank {b['rank']} dev {b['device']}" + (f" (HTA overlap {hta:.1f}%)" if hta is not None else ""))
    _row_labels(ax, labels)
    ax.invert_yaxis()
    ax.set_xlabel("busy time per kernel class, stacked (ms; union of each class's kernels)", fontsize=8)
    ax.legend(handles=[Patch(color=CLASS_COLORS[c], label=c) for c in CLASSES], loc="lower right", fontsize=7,
              ncols=7)
    ax.set_title("Time breakdown by kernel class", fontsize=9)


def _time_share(ax, shown) -> None:
    _bars(ax, range(len(shown)), [100 * r.time_share for r in shown], color=CLASS_COLORS["gemm"])
    _row_labels(ax, [_label(r) + (" (flagged)" if r.flags else "") for r in shown])
    ax.invert_yaxis()
    ax.set_xlabel("share of overlapped GEMM+comm. time (%)", fontsize=8)
    ax.set_title(f"Overlap time, top {len(shown)} scenarios", fontsize=9)


def _slowdowns(ax, shown) -> None:
    from matplotlib.patches import Patch

    ax.set_title("Slowdown while overlapped", fontsize=9)
    ax.set_xlabel("overlapped / alone (median, 95% CI); no bar: no reference", fontsize=8)
    if all(r.gemm_slowdown is None and r.comm_slowdown is None for r in shown):
        return _no_values(ax, "No slowdown")
    y = np.arange(len(shown))
    series = (("GEMM slowdown", "#dd8452", -0.2, [(r.gemm_slowdown, r.gemm_slowdown_ci) for r in shown]),
              ("communication slowdown", CLASS_COLORS["transfer"], 0.2,
               [(r.comm_slowdown, r.comm_slowdown_ci) for r in shown]))
    for _, color, dy, vals in series:
        values = [v for v, _ in vals]
        _bars(ax, y + dy, [v or 0 for v in values], height=0.4, color=color,
              xerr=_errors(values, [ci for _, ci in vals]))
    ax.axvline(1.0, color="black", lw=0.8)
    ax.legend(handles=[Patch(color=color, label=label) for label, color, _, _ in series], loc="lower right",
              fontsize=7)


def _fraction(ax, shown) -> None:
    ax.set_xlabel("(realized - 1) / (ideal - 1)", fontsize=8)
    ax.set_title("Fraction of the ideal overlap gain", fontsize=9)
    fr = [r.fraction_of_ideal for r in shown]
    if all(v is None for v in fr):
        return _no_values(ax, "No fraction of ideal")
    _bars(ax, range(len(shown)), [v if v is not None else 0 for v in fr], color=CLASS_COLORS["conv"],
          xerr=_errors(fr, [r.fraction_ci for r in shown]))
    ax.axvline(0.0, color="black", lw=0.8)
    ax.axvline(1.0, color="gray", lw=0.8, ls="--")


def draw(traces, results, out: Path, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """The summary figure, saved in ``formats`` in ``out``: the class breakdown on top, then the three
    per-scenario panels side by side, sharing one set of scenario labels (text is most of the cost)."""
    import matplotlib

    from c3prof.figures.common import new_figure, save  # (it also fixes the titles' height: faster)

    # Unhinted glyphs: as readable at these sizes, and FreeType's hinting was a quarter of the draw.
    with matplotlib.rc_context({"text.hinting": "no_hinting"}):
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
