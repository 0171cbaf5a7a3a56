"""Predicted vs measured T_cc of every run of every evaluated scenario (``c3prof advise --figures``).

Two figures per validation (``advise_evaluate*`` for ``--evaluate``, ``advise_loso*``):

- ``advise_<kind>``: every run of every scenario; x is the measured median T_cc with its 95%
  round-paired bootstrap interval, y the model's prediction with its empirical interval, both on log
  axes, one colour per strategy; the recommended run is ringed and the measured best is a star.
  Points on the diagonal are predicted exactly.
- ``advise_<kind>_scenarios``: one row per scenario, T_cc relative to the measured best: the
  recommended run measured (dot, interval) and predicted (open diamond, interval), the best (star).
  A dot at 1 is a perfect pick; its distance from 1 is the loss.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import color, new_figure, save
from c3prof.figures.formats import DEFAULT as DEFAULT_FORMATS

NAMES = {"evaluate": "advise_evaluate", "loso": "advise_loso"}


def _errors(value: float, interval: list[float] | None) -> list[list[float]]:
    if not interval:
        return [[0.0], [0.0]]
    return [[max(value - interval[0], 0.0)], [max(interval[1] - value, 0.0)]]


def _draw_scenario(ax, sc: dict, order: list[str]) -> None:
    advised = sc["choices"]["advice"]["choice"]
    for r in sc["runs"]:
        best = r["candidate"] == sc["measured_best"]
        x, y = r["measured_t_cc_ms"], r["predicted_t_cc_ms"]
        ax.errorbar([x], [y], xerr=_errors(x, r["measured_t_cc_ci_ms"]), yerr=_errors(y, r["predicted_t_cc_interval_ms"]),
                    fmt="*" if best else "o", ms=8 if best else 4, color=color(r["candidate"].split("/", 1)[0], order),
                    elinewidth=0.6, alpha=0.8)
        if r["candidate"] == advised:
            ax.plot([x], [y], "o", ms=11, mfc="none", mec="black", mew=0.8)


def _legend(ax, order: list[str]) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="", marker="o", color=color(s, order), label=s) for s in order]
    handles += [Line2D([], [], ls="", marker="*", ms=8, color="grey", label="measured best"),
                Line2D([], [], ls="", marker="o", ms=11, mfc="none", mec="black", label="recommended")]
    ax.legend(handles=handles, fontsize=7, loc="upper left")


def plot(validation: dict, outdir: Path, formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[Path]:
    runs = [r for sc in validation["scenarios"] for r in sc["runs"]]
    if not runs:
        return []
    order = sorted({r["candidate"].split("/", 1)[0] for r in runs})
    fig = new_figure(6.5, 6.0)
    ax = fig.add_subplot()
    for sc in validation["scenarios"]:
        _draw_scenario(ax, sc, order)
    lo = min(min(r["measured_t_cc_ms"], r["predicted_t_cc_ms"]) for r in runs) * 0.8
    hi = max(max(r["measured_t_cc_ms"], r["predicted_t_cc_ms"]) for r in runs) * 1.25
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured T_cc (ms, median, 95% CI)")
    ax.set_ylabel("predicted T_cc (ms, empirical 95% interval)")
    adv = next(r for r in validation["summary"] if r["method"] == "advice")
    held = "all held out" if validation["all_held_out"] else "NOT all held out"
    ax.set_title(f"{validation['kind']} ({held}): {len(validation['scenarios'])} scenarios, "
                 f"advice hits {adv['hits']}/{adv['n']}", fontsize=9)
    _legend(ax, order)
    return save(fig, outdir, NAMES.get(validation["kind"], f"advise_{validation['kind']}"), formats)


def _relative(value: float, interval: list[float] | None, ref: float) -> tuple[float, list[list[float]]]:
    return value / ref, _errors(value / ref, [x / ref for x in interval] if interval else None)


def _scenario_row(ax, y: int, sc: dict) -> None:
    runs = {r["candidate"]: r for r in sc["runs"]}
    best, advised = runs.get(sc["measured_best"]), runs.get(sc["choices"]["advice"]["choice"])
    if best is None or advised is None:
        return
    ref = best["measured_t_cc_ms"]
    x, err = _relative(best["measured_t_cc_ms"], best["measured_t_cc_ci_ms"], ref)
    ax.errorbar([x], [y], xerr=err, fmt="*", ms=9, color="black", elinewidth=0.6)
    strategy = advised["candidate"].split("/", 1)[0]
    x, err = _relative(advised["measured_t_cc_ms"], advised["measured_t_cc_ci_ms"], ref)
    ax.errorbar([x], [y + 0.15], xerr=err, fmt="o", ms=5, color=color(strategy, []), elinewidth=0.8)
    x, err = _relative(advised["predicted_t_cc_ms"], advised["predicted_t_cc_interval_ms"], ref)
    ax.errorbar([x], [y - 0.15], xerr=err, fmt="D", ms=5, mfc="none", color=color(strategy, []), elinewidth=0.8)


def plot_scenarios(validation: dict, outdir: Path, formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[Path]:
    scenarios = [sc for sc in validation["scenarios"] if sc["runs"]]
    if not scenarios:
        return []
    fig = new_figure(7.5, 1.2 + 0.3 * len(scenarios))
    ax = fig.add_subplot()
    for y, sc in enumerate(scenarios):
        _scenario_row(ax, y, sc)
    ax.set_yticks(range(len(scenarios)), [f"{sc['scenario']} -> {sc['choices']['advice']['choice']}" for sc in scenarios],
                  fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("T_cc / measured best T_cc (intervals: measured 95% CI, predicted empirical 95%)", fontsize=8)
    ax.set_title(f"{validation['kind']}: the recommendation per scenario\nstar: best; dot: advice, measured; "
                 "diamond: advice, predicted", fontsize=9)
    return save(fig, outdir, NAMES.get(validation["kind"], f"advise_{validation['kind']}") + "_scenarios", formats)


def write(doc: dict, outdir: str, formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[Path]:
    """Both figures of every validation, in ``formats`` (advise --figure-formats)."""
    out = Path(outdir)
    written: list[Path] = []
    for v in doc["validation"]:
        written += plot(v, out, formats) + plot_scenarios(v, out, formats)
    return written
