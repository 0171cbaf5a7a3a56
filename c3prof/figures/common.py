"""Shared figure plumbing: Agg figures, saving (PNG, PDF, SVG), the grouped-bar layout, strategy colours."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import matplotlib

matplotlib.rcParams["pdf.fonttype"] = 42  # embed TrueType: PDFs stay editable and searchable
# Titles at a fixed height (1.0, plus each title's pad): left to itself matplotlib measures every
# tick label of an axes at each draw to lift its title above any on top; no c3prof figure has tick
# labels on top, so the title lands at 1.0 anyway (this saves about 7% of a save).
matplotlib.rcParams["axes.titley"] = 1.0
from matplotlib.figure import Figure  # noqa: E402  (Figure API: no pyplot, no global backend)

from c3prof.errors import C3profError  # noqa: E402

CLASS_ORDER = ("G-long", "GC-equal", "C-long", "unknown")
STRATEGY_COLORS = {"base": "#7f7f7f", "sp": "#1f77b4", "rp": "#ff7f0e", "dma": "#2ca02c", "dma+rp": "#9467bd"}
_EXTRA_COLORS = ("#8c564b", "#e377c2", "#bcbd22", "#17becf", "#d62728")


def new_figure(width: float, height: float, **kw) -> Figure:
    kw.setdefault("layout", "constrained")  # layout=None: the caller sets fixed margins (faster)
    return Figure(figsize=(width, height), **kw)


def color(strategy: str, order: list[str]) -> str:
    if strategy in STRATEGY_COLORS:
        return STRATEGY_COLORS[strategy]
    extras = [s for s in order if s not in STRATEGY_COLORS]
    return _EXTRA_COLORS[extras.index(strategy) % len(_EXTRA_COLORS)] if strategy in extras else "black"


# zlib level 1 instead of 6: the PNG encoding (about an eighth of a save at 150 dpi) takes a third
# less time, for files 5-30% larger; the pixels are the same.
PNG_OPTIONS = {"pil_kwargs": {"compress_level": 1}}


def save(fig: Figure, outdir: Path, name: str, formats: tuple[str, ...] = ("png", "pdf"),
         dpi: int = 150) -> list[Path]:
    """``name.FORMAT`` for each format (png at ``dpi``; pdf and svg are vector). Each format is a
    full draw of the figure."""
    paths = [outdir / f"{name}.{fmt}" for fmt in formats]
    try:
        for i, (path, fmt) in enumerate(zip(paths, formats)):
            if i == 1:
                # The first save laid the figure out (constrained layout works in figure-relative
                # units, the same at every dpi); keep those positions instead of solving the layout
                # again for each further format (it measures every text: a third of a save).
                fig.set_layout_engine("none")
            fig.savefig(path, **(PNG_OPTIONS | {"dpi": dpi} if fmt == "png" else {}))
    except OSError as exc:
        raise C3profError(f"{outdir}: cannot write figure {name}: {exc.strerror or exc}") from None
    return paths


def readable_log_axis(ax) -> None:
    """A log y axis with plain-number labels at 1-2-5 steps (not only at powers of ten)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def fraction_marks(ax, axis: str = "y") -> None:
    """A fraction-of-ideal axis: a line at 0 (no gain), a dashed line at 1 (all of the ideal gain),
    percentage labels."""
    line = ax.axhline if axis == "y" else ax.axvline
    line(0, color="black", linewidth=0.8)
    line(1, color="black", linewidth=0.8, linestyle="--")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(lambda v, _: f"{v:.0%}")


def default_rows(report: dict, platform: str) -> list[dict]:
    """The results of one platform's default variants: what the bar figures draw."""
    return [r for r in report["results"] if r["platform"] == platform and r["default_variant"]]


def scenario_figure(report: dict, platform: str, height: float):
    """The default-variant rows of a platform, their layout, and a figure as wide as the scenarios
    need: (rows, scenarios, strategies, classes, figure), or None when there is nothing to draw."""
    rows = default_rows(report, platform)
    if not rows:
        return None
    scen, strategies, classes = scenario_layout(rows)
    return rows, scen, strategies, classes, new_figure(max(6.0, 0.6 * len(scen) + 2), height)


def scenario_layout(rows: list[dict]) -> tuple[list[str], list[str], dict[str, str]]:
    """Scenarios sorted by taxonomy class (stable within a class), their classes, and strategies present."""
    classes: dict[str, str] = {}
    for r in rows:
        classes.setdefault(r["scenario"], r["taxonomy"])
    scen = sorted(classes, key=lambda s: CLASS_ORDER.index(classes[s]) if classes[s] in CLASS_ORDER else 99)
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    return scen, strategies, classes


def grouped_bars(ax, rows: list[dict], value_key: str, ci_key: str, scen: list[str], strategies: list[str],
                 classes: dict[str, str], *, clip: tuple[float, float] | None = None, base: float = 0.0,
                 skip: dict[tuple[str, str], str] | None = None) -> None:
    """One group of bars per scenario (a bar per strategy, default variant), with asymmetric error bars.

    Bars start at ``base`` (0 for fractions, 1 for slowdowns). With ``clip`` the axis is limited to
    that range: a bar beyond it ends at the edge with a triangle pointing out of the plot (the exact
    value is in the report's tables), so one extreme scenario does not flatten all the others and no
    labels collide. Missing values are marked "n/a"; ``skip`` maps (scenario, strategy) to a short
    reason drawn instead of a bar (e.g. a fraction that is not meaningful).
    """
    width = 0.8 / max(len(strategies), 1)
    by = {(r["scenario"], r["strategy"]): r for r in rows}
    skip = skip or {}
    lo_lim, hi_lim = clip if clip else (-np.inf, np.inf)
    for j, strat in enumerate(strategies):
        xs, ys, lo, hi, no_ci, cut = [], [], [], [], [], []
        for i, s in enumerate(scen):
            r = by.get((s, strat))
            if r is None:
                continue
            x = i - 0.4 + width * (j + 0.5)
            v = r[value_key]
            if (s, strat) in skip or v is None:
                ax.text(x, base, skip.get((s, strat), "n/a"), rotation=90, ha="center", va="bottom", fontsize=6,
                        color="0.4")
                continue
            shown = float(np.clip(v, lo_lim, hi_lim))
            ci = r[ci_key]
            xs.append(x)
            ys.append(shown)
            lo.append(max(shown - max(ci[0], lo_lim), 0.0) if ci else 0.0)
            hi.append(max(min(ci[1], hi_lim) - shown, 0.0) if ci else 0.0)
            if not ci:
                no_ci.append((x, shown))
            if shown != v:
                cut.append((x, shown, "^" if v > hi_lim else "v"))
        ax.bar(xs, [y - base for y in ys], bottom=base, width=width * 0.95, color=color(strat, strategies),
               label=strat, yerr=[lo, hi], capsize=2, error_kw={"elinewidth": 0.8})
        if no_ci:
            ax.plot(*zip(*no_ci), linestyle="none", marker="x", color="black", markersize=4)
        for x, y, marker in cut:
            ax.plot([x], [y], marker=marker, color="black", markersize=5, clip_on=False, zorder=5)
    if clip:
        ax.set_ylim(*clip)
    ax.set_xticks(range(len(scen)), scen, rotation=30, ha="right", fontsize=7)
    # Shade alternate taxonomy classes and label each block.
    blocks: list[list] = []  # [first index, last index, class]
    for i, s in enumerate(scen):
        if blocks and blocks[-1][2] == classes[s]:
            blocks[-1][1] = i
        else:
            blocks.append([i, i, classes[s]])
    for k, (a, b, cls) in enumerate(blocks):
        if k % 2 == 0:
            ax.axvspan(a - 0.5, b + 0.5, color="0.93", zorder=-1)
        ax.text((a + b) / 2, 1.0, cls, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                fontsize=8, fontweight="bold")
    ax.set_xlim(-0.5, len(scen) - 0.5)
