"""(b) The summary: each strategy's mean fraction of ideal over scenarios, with its interval.

One row per strategy: the default variant (filled marker) and, where the strategy has several
variants, the best variant per scenario (open marker: an oracle choice, biased upward). Each row is
labelled with its number of scenarios (those passing the inclusion rule, --min-gain) and with the
interval for this suite (``mean_fraction_ci_suite``, the scenarios held fixed), which is usually too
narrow to draw beside the one over scenarios like these (``mean_fraction_ci``, the bars).
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import color, fraction_marks, new_figure, save
from c3prof.figures.formats import DEFAULT


def plot(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
         ) -> list[Path]:
    rows = [s for s in report["strategies"] if s["platform"] == platform
            and s["selection"] in ("default", "best_per_scenario") and s["mean_fraction_of_ideal"] is not None]
    if not rows:
        return []
    strategies = list(dict.fromkeys(s["strategy"] for s in rows))
    fig = new_figure(7.5, 0.55 * len(strategies) + 1.6)
    ax = fig.add_subplot()
    labelled = False
    for y, strat in enumerate(strategies):
        for s in (r for r in rows if r["strategy"] == strat):
            oracle = s["selection"] == "best_per_scenario"
            m, ci = s["mean_fraction_of_ideal"], s["mean_fraction_ci"]
            yy = y + (0.18 if oracle else -0.05)
            err = [[m - ci[0]], [ci[1] - m]] if ci else None
            ax.errorbar([m], [yy], xerr=err, fmt="o", mfc="white" if oracle else color(strat, strategies),
                        color=color(strat, strategies), capsize=3, markersize=6,
                        label="best variant per scenario (oracle)" if oracle and not labelled else None)
            labelled = labelled or oracle
            suite = s.get("mean_fraction_ci_suite")
            this_suite = f"; this suite {suite[0]:.1%} to {suite[1]:.1%}" if suite else ""
            ax.annotate(f"{m:.1%} (n={s['n_scenarios']}{this_suite})", (m, yy), textcoords="offset points",
                        xytext=(6, 3), fontsize=7)
    ax.set_yticks(range(len(strategies)), strategies)
    ax.invert_yaxis()
    fraction_marks(ax, "x")
    ax.set_xlabel("mean fraction of ideal over scenarios")
    conf = f"{report['settings']['confidence']:.0%}"
    ax.set_title(f"{platform}\nmean fraction of ideal per strategy ({conf} CI over scenarios; "
                 f"ideal >= {report['settings']['min_ideal']:g})", fontsize=9)
    ends = [v for s in rows for v in ([s["mean_fraction_of_ideal"]] + (s["mean_fraction_ci"] or []))]
    ax.set_xlim(min(-0.05, min(ends) - 0.05), max(1.1, max(ends) + 0.6))  # room for the labels
    if any(s["selection"] == "best_per_scenario" for s in rows):
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, outdir, f"strategy_summary{suffix}", formats)
