"""(b) Per-kernel slowdowns inside the concurrent run: what explains the fraction of ideal."""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import grouped_bars, readable_log_axis, save, scenario_figure
from c3prof.figures.formats import DEFAULT


def plot(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
         ) -> list[Path]:
    drawn = scenario_figure(report, platform, 6.5)
    if drawn is None:
        return []
    rows, scen, strategies, classes, fig = drawn
    axes = fig.subplots(2, 1, sharex=True)
    for ax, key, what in ((axes[0], "gemm_slowdown", "GEMM"), (axes[1], "comm_slowdown", "communication")):
        vals = [r[key] for r in rows if r[key] is not None] or [1.0]
        lo, hi = min(vals + [1.0]), max(vals + [1.0])
        if hi / lo > 3:
            # Slowdowns are ratios and can span 1x..300x (a kernel queued behind the other): log scale.
            readable_log_axis(ax)
            clip = (lo / 1.2, hi * 1.5)
        else:
            clip = (min(0.9, lo - 0.05), hi * 1.08)
        grouped_bars(ax, rows, key, f"{key}_ci", scen, strategies, classes, clip=clip, base=1.0)
        ax.axhline(1, color="black", linewidth=0.8)
        ax.set_ylabel(f"{what} slowdown (x)")
    conf = f"{report['settings']['confidence']:.0%}"
    axes[0].set_title(f"{platform}\nkernel time in the concurrent run / alone, default variant ({conf} bootstrap CI)",
                      fontsize=9, pad=14)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="strategy", title_fontsize=7)
    return save(fig, outdir, f"slowdowns{suffix}", formats)
