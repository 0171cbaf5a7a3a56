"""(g) Dose-response: GEMM slowdown against the copy engines' byte rate, one line per link and GEMM.

Drawn only when the report has copy-engine arms (``c3prof capture --suite interference --strategies
base,dma``). The x axis is the dose the GEMM meets: the copy-engine rate during its interval
(modelled from the copies' schedule, see c3prof/analysis/interference.py). The SM device copies
inside HBM (controls) are drawn against their HBM write rate, in grey, and the sleep control at
the left edge. The dashed line is 1 + the falsification tolerance: above it the no-interference
premise fails for that arm. ``interference_mechanism`` draws, for arms with Nsight Compute counts,
the DRAM reads and writes each arm adds to the GEMM's traffic beside its slowdown.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.figures.common import new_figure, save
from c3prof.figures.formats import DEFAULT

LINK_STYLE = {"pcie_h2d": "o-", "pcie_d2h": "s--", "pcie_bidir": "^:"}


def plot(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
         ) -> list[Path]:
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
                     key=_dose)
        if not pts:
            continue
        x = [_dose(a) for a in pts]
        y, err = _errors(pts)
        ax.errorbar(x, y, yerr=err, fmt=LINK_STYLE.get(link, "o-"), color=colors[gemm], capsize=2, markersize=4,
                    label=f"{link}, {gemm.replace(' bf16', '')}")
    _controls(ax, d, min(_dose(a) for a in d["arms"]))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(d["limit"], color="black", linewidth=0.8, linestyle="--", label=f"{d['limit']:g}x (tolerance)")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("copy-engine rate during the GEMM (GB/s, all directions; controls: HBM write rate)")
    ax.set_ylabel("GEMM slowdown beside it (x)")
    conf = f"{report['settings']['confidence']:.0%}"
    ax.set_title(f"{platform}\nGEMM slowdown vs copy-engine dose ({conf} CI)", fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, outdir, f"interference{suffix}", formats)


def _dose(a: dict) -> float:
    return a["window_rate_gbps"] if a.get("window_rate_gbps") is not None else a["rate_gbps"]


def _errors(rows: list[dict]) -> tuple[list[float], list[list[float]]]:
    y = [r["slowdown"] for r in rows]
    cis = [r["slowdown_ci"] or [r["slowdown"]] * 2 for r in rows]   # no interval: no error bar
    return y, [[max(0.0, v - ci[0]) for v, ci in zip(y, cis)], [max(0.0, ci[1] - v) for v, ci in zip(y, cis)]]


def _controls(ax, d: dict, left: float) -> None:
    copies = sorted((c for c in d.get("controls", []) if c["kind"] == "sm_device_copy" and c["slowdown"]),
                    key=lambda c: c["hbm_write_gbps"])
    if copies:
        y, err = _errors(copies)
        ax.errorbar([c["hbm_write_gbps"] for c in copies], y, yerr=err, fmt="D-", color="0.5", capsize=2,
                    markersize=4, label="control: SM copy inside HBM (x = HBM write rate)")
    for c in d.get("controls", []):
        if c["kind"] == "sleep" and c["slowdown"]:
            y, err = _errors([c])
            ax.errorbar([left / 2], y, yerr=err, fmt="x", color="black", capsize=2,
                        label=f"control: 1-CTA sleep kernel ({c['gemm'].replace(' bf16', '')})")


def plot_mechanism(report: dict, platform: str, outdir: Path, suffix: str = "", formats: tuple[str, ...] = DEFAULT
                   ) -> list[Path]:
    """``interference_mechanism``: the DRAM traffic each arm adds to the GEMM (Nsight Compute), beside
    its slowdown, for the platform's first interference entry when it has such counts."""
    d = next((d for d in report.get("interference", []) if d["platform"] == platform), None)
    rows = [r for r in d.get("mechanism", []) if r["slowdown"] is not None] if d else []
    if not rows:
        return []
    fig = new_figure(7.5, 4.0)
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    labels = [f"{r['scenario']} ({'CE' if r['carrier'] == 'copy_engine' else 'SM'})" for r in rows]
    pos = range(len(rows))
    ax.barh([p - 0.2 for p in pos], [r["dram_write_added_mb"] for r in rows], height=0.4, color="C3",
            label="DRAM writes added")
    ax.barh([p + 0.2 for p in pos], [r["dram_read_added_mb"] for r in rows], height=0.4, color="C0",
            label="DRAM reads added")
    ax.set_yticks(list(pos), labels, fontsize=6)
    ax.set_xlabel("MB per repetition, beside vs alone (ncu)")
    ax.legend(fontsize=6)
    y, err = _errors(rows)
    bx.errorbar(y, list(pos), xerr=err, fmt="o", color="black", markersize=3, capsize=2)
    bx.axvline(d["limit"], color="black", linewidth=0.8, linestyle="--")
    bx.set_yticks(list(pos), [""] * len(rows))
    bx.set_xlabel("GEMM slowdown (x)")
    fig.suptitle(f"{platform}: what each arm adds to the GEMM's memory traffic", fontsize=9)
    return save(fig, outdir, f"interference_mechanism{suffix}", formats)
