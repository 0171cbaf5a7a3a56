"""(c) Fraction of ideal per scenario, grouped by taxonomy class, one bar per strategy, with intervals.

Fractions are drawn only where the ideal speedup reaches the report's minimum gain (--min-gain);
elsewhere (realized - 1) / (ideal - 1) divides noise by noise, and the scenario is marked instead.
The axis spans -50%..150%: a bar beyond ends at the edge with a triangle (values in the tables).
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import fraction_marks, grouped_bars, save, scenario_figure
from c3prof.figures.formats import DEFAULT

CLIP = (-0.5, 1.5)


def plot(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
         ) -> list[Path]:
    drawn = scenario_figure(report, platform, 4.0)
    if drawn is None:
        return []
    rows, scen, strategies, classes, fig = drawn
    min_gain = report["settings"]["min_ideal"]
    skip = {(r["scenario"], r["strategy"]): f"ideal<{min_gain:g}" for r in rows
            if r["ideal_speedup"] is not None and r["ideal_speedup"] < min_gain}
    ax = fig.add_subplot()
    grouped_bars(ax, rows, "fraction_of_ideal", "fraction_ci", scen, strategies, classes, clip=CLIP, skip=skip)
    fraction_marks(ax, "y")
    ax.set_ylabel("fraction of ideal speedup")
    conf = f"{report['settings']['confidence']:.0%}"
    ax.set_title(f"{platform}\nfraction of ideal, default variant per strategy ({conf} CI; x = no interval; "
                 f"triangle = beyond the axis)", fontsize=9, pad=14)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="strategy", title_fontsize=7)
    return save(fig, outdir, f"fraction_of_ideal{suffix}", formats)
