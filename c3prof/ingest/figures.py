"""Figures of ``c3prof ingest --figures DIR``: matplotlib Agg, each saved as PNG and PDF.

* ``ingest_time_share``: share of the overlapped GEMM+communication time per scenario.
* ``ingest_slowdowns``: GEMM and communication slowdowns per scenario, with bootstrap intervals.
* ``ingest_fraction``: fraction of ideal per scenario, with bootstrap intervals.
No GPU or torch import: figures are drawn from the results only.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.ingest.summary import ScenarioResult

MAX_BARS = 20  # the rest are summed into "other" (time share) or left out (slowdowns)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(r: ScenarioResult) -> str:
    g = r.gemm.label if r.gemm is not None else (r.gemm_kernels[0][:24] if r.gemm_kernels else "GEMM")
    return f"{g} | {r.comm.label}"


def _save(fig, out: Path, stem: str) -> list[Path]:
    paths = []
    for ext in ("png", "pdf"):
        p = out / f"{stem}.{ext}"
        fig.savefig(p, dpi=150, bbox_inches="tight")
        paths.append(p)
    return paths


def _errors(values, cis):
    lo, hi = [], []
    for v, ci in zip(values, cis):
        if v is None or ci is None:
            lo.append(0.0)
            hi.append(0.0)
        else:
            lo.append(max(0.0, v - ci[0]))
            hi.append(max(0.0, ci[1] - v))
    return [lo, hi]


def write_figures(results: list[ScenarioResult], out: Path) -> list[Path]:
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    if not results:
        return paths
    shown = results[:MAX_BARS]
    labels = [_label(r) for r in shown]
    height = 0.9 + 0.35 * len(shown)

    shares = [100 * r.time_share for r in shown]
    if len(results) > MAX_BARS:
        labels_share = labels + [f"{len(results) - MAX_BARS} others"]
        shares.append(100 * sum(r.time_share for r in results[MAX_BARS:]))
    else:
        labels_share = labels
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.35 * len(labels_share)))
    ax.barh(range(len(shares)), shares, color="#4c72b0")
    ax.set_yticks(range(len(shares)), labels_share, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("share of overlapped GEMM+communication time (%)")
    ax.set_title("C3 regions in the trace: where overlap time goes")
    paths += _save(fig, out, "ingest_time_share")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, height))
    y = list(range(len(shown)))
    gs = [r.gemm_slowdown for r in shown]
    cs = [r.comm_slowdown for r in shown]
    ax.barh([v - 0.2 for v in y], [v or 0 for v in gs], height=0.4, label="GEMM slowdown", color="#dd8452",
            xerr=_errors(gs, [r.gemm_slowdown_ci for r in shown]), capsize=2)
    ax.barh([v + 0.2 for v in y], [v or 0 for v in cs], height=0.4, label="communication slowdown",
            color="#55a868", xerr=_errors(cs, [r.comm_slowdown_ci for r in shown]), capsize=2)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("overlapped / alone duration (median, 95% bootstrap CI); missing bar: no alone instance")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Slowdown of each side while overlapped")
    paths += _save(fig, out, "ingest_slowdowns")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, height))
    fr = [r.fraction_of_ideal for r in shown]
    ax.barh(y, [v if v is not None else 0 for v in fr], color="#8172b3",
            xerr=_errors(fr, [r.fraction_ci for r in shown]), capsize=2)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.axvline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("fraction of ideal overlap speedup obtained (realized-1)/(ideal-1)")
    ax.set_title("How much of the possible overlap gain the job got")
    paths += _save(fig, out, "ingest_fraction")
    plt.close(fig)
    return paths
