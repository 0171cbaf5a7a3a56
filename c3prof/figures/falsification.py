"""(e) The falsification plot: GEMM slowdown beside a DMA transfer vs beside the SM carrier of the same
bytes over the same link, with the paired difference's verdict above each pair."""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import new_figure, save
from c3prof.figures.formats import DEFAULT

VERDICT_COLORS = {"holds": "#2ca02c", "refuted": "#d62728", "inconclusive": "#ff7f0e", "not enough data": "0.5"}


def _err(v, ci):
    return [[v - ci[0]], [ci[1] - v]] if ci else None


def plot(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
         ) -> list[Path]:
    entries = [f for f in report["falsification"] if f["platform"] == platform]
    if not entries:
        return []
    fig = new_figure(max(6.0, 1.1 * len(entries) + 2), 4.5)
    ax = fig.add_subplot()
    tol = report["settings"]["falsification_tolerance"]
    for i, f in enumerate(entries):
        if f["slowdown"] is not None:
            ax.errorbar([i - 0.12], [f["slowdown"]], yerr=_err(f["slowdown"], f["slowdown_ci"]), fmt="o",
                        color="#2ca02c", capsize=3, label="beside DMA transfer" if i == 0 else None)
        if f["sm_slowdown"] is not None:
            ax.errorbar([i + 0.12], [f["sm_slowdown"]], yerr=_err(f["sm_slowdown"], f["sm_slowdown_ci"]), fmt="s",
                        color="#7f7f7f", capsize=3, label="beside the SM carrier, same bytes and link (control)")
        ax.text(i, 1.0, f["verdict"], transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
                color=VERDICT_COLORS.get(f["verdict"], "black"), fontweight="bold")
    ax.axhline(1.0, color="black", linewidth=0.8, label="GEMM alone")
    ax.axhline(1.0 + tol, color="black", linewidth=0.8, linestyle="--", label=f"1 + tolerance ({1 + tol:g})")
    labels = [f"{f['gemm']['label']}\n{f['transfer']['label'] + ' ' + (f.get('link') or '') if f['transfer'] else 'no DMA run'}"
              for f in entries]
    ax.set_xticks(range(len(entries)), labels, fontsize=7, rotation=20, ha="right")
    ax.set_xlim(-0.5, len(entries) - 0.5)
    ax.set_ylabel("GEMM slowdown (x)")
    ax.set_title(f"Premise: {entries[0]['premise']}\n{platform}", fontsize=9, pad=14)
    handles, names = ax.get_legend_handles_labels()
    uniq = dict(zip(names, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, outdir, f"falsification{suffix}", formats)
