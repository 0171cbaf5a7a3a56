"""(a) The main figure: realized speedup per scenario and strategy, with the ideal speedup marked.

One group per scenario (sorted by taxonomy class), a bar per strategy (default variant) from 1 (no
gain over serial) to its realized speedup T_s,base / T_cc, with its interval; a black line across the
group marks the ideal speedup T_s,base / max(T_g,base, T_c,base). The gap between a bar and the line
is the gain the strategy left on the table, in the same units for every scenario.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import grouped_bars, save, scenario_figure
from c3prof.figures.formats import DEFAULT


def plot(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
         ) -> list[Path]:
    drawn = scenario_figure(report, platform, 4.2)
    if drawn is None:
        return []
    rows, scen, strategies, classes, fig = drawn
    ax = fig.add_subplot()
    vals = [v for r in rows for v in (r["realized_speedup"], r["ideal_speedup"]) if v is not None] or [1.0]
    top = max(vals) * 1.05
    bottom = min(min(vals) - 0.05, 0.95)
    grouped_bars(ax, rows, "realized_speedup", "realized_speedup_ci", scen, strategies, classes,
                 clip=(bottom, top), base=1.0)
    base_ideal = {r["scenario"]: r["ideal_speedup"] for r in rows if r["strategy"] == "base"}
    for i, s in enumerate(scen):
        ideal = base_ideal.get(s) or next((r["ideal_speedup"] for r in rows if r["scenario"] == s
                                           and r["ideal_speedup"] is not None), None)
        if ideal is not None:
            ax.hlines(ideal, i - 0.45, i + 0.45, color="black", linewidth=1.6,
                      label="ideal speedup" if i == 0 else None, zorder=4)
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_ylabel("speedup over serial (T_s / T_cc)")
    conf = f"{report['settings']['confidence']:.0%}"
    ax.set_title(f"{platform}\nrealized speedup per strategy (default variant, {conf} CI); black line = ideal",
                 fontsize=9, pad=14)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="strategy", title_fontsize=7)
    return save(fig, outdir, f"speedup{suffix}", formats)
