"""(g) Dose-response: GEMM slowdown against the copy engines' byte rate, one line per link and GEMM.

Drawn only when the report has copy-engine arms (``c3prof capture --suite interference --strategies
base,dma``). The dashed line is 1 + the falsification tolerance: above it the no-interference premise
fails for that arm.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import new_figure, save

LINK_STYLE = {"pcie_h2d": "o-", "pcie_d2h": "s--", "pcie_bidir": "^:"}


def plot(report: dict, platform: str, outdir: Path, suffix: str = "") -> list[Path]:
    doses = [d for d in report.get("interference", []) if d["platform"] == platform]
    if not doses:
        return []
    d = doses[0]
    fig = new_figure(7.5, 4.5)
    ax = fig.add_subplot()
    gemms = list(dict.fromkeys(a["gemm"] for a in d["arms"]))
    colors = {g: f"C{i}" for i, g in enumerate(gemms)}
    for (link, gemm) in dict.fromkeys((a["link"], a["gemm"]) for a in d["arms"]):
        pts = sorted((a for a in d["arms"] if a["link"] == link and a["gemm"] == gemm and a["slowdown"] is not None),
                     key=lambda a: a["rate_gbps"])
        if not pts:
            continue
        x = [a["rate_gbps"] for a in pts]
        y = [a["slowdown"] for a in pts]
        cis = [a["slowdown_ci"] or [a["slowdown"]] * 2 for a in pts]   # no interval: no error bar
        err = [[max(0.0, v - ci[0]) for v, ci in zip(y, cis)], [max(0.0, ci[1] - v) for v, ci in zip(y, cis)]]
        ax.errorbar(x, y, yerr=err, fmt=LINK_STYLE.get(link, "o-"), color=colors[gemm], capsize=2, markersize=4,
                    label=f"{link}, {gemm.replace(' bf16', '')}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(d["limit"], color="black", linewidth=0.8, linestyle="--", label=f"{d['limit']:g}x (tolerance)")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("copy-engine rate alone (GB/s, all directions)")
    ax.set_ylabel("GEMM slowdown beside it (x)")
    conf = f"{report['settings']['confidence']:.0%}"
    ax.set_title(f"{platform}\nGEMM slowdown vs copy-engine dose ({conf} CI)", fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, outdir, f"interference{suffix}")
