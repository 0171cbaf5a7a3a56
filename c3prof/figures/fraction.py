"""(a) Fraction of ideal per scenario, grouped by taxonomy class, one bar per strategy, with intervals."""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import default_rows, grouped_bars, new_figure, save, scenario_layout


def plot(report: dict, platform: str, outdir: Path, suffix: str = "") -> list[Path]:
    rows = default_rows(report, platform)
    if not rows:
        return []
    scen, strategies, classes = scenario_layout(rows)
    fig = new_figure(max(6.0, 0.6 * len(scen) + 2), 4.0)
    ax = fig.add_subplot()
    # Fractions far below 0 (much slower than serial) are cut at -1 and labelled, so the range that
    # matters (0 = no gain, 1 = all of it) stays readable.
    vals = [r["fraction_of_ideal"] for r in rows if r["fraction_of_ideal"] is not None] or [0.0]
    clip = (max(-1.0, min(vals + [0.0]) - 0.1), max(1.1, min(max(vals) + 0.1, 2.0)))
    grouped_bars(ax, rows, "fraction_of_ideal", "fraction_ci", scen, strategies, classes, clip=clip, fmt="{:.0%}")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axhline(1, color="black", linewidth=0.8, linestyle="--")
    ax.set_ylabel("fraction of ideal speedup")
    conf = f"{report['settings']['confidence']:.0%}"
    ax.set_title(f"{platform}\nfraction of ideal, default variant per strategy ({conf} bootstrap CI; x = no interval; cut bars labelled)",
                 fontsize=9, pad=14)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="strategy", title_fontsize=7)
    return save(fig, outdir, f"fraction_of_ideal{suffix}")
