"""Figures of a bench_collectives.py JSON (no GPU): bus bandwidth against size per operation and
implementation, and the latency breakdown of c3prof's DMA rows (stacked device parts per size).

    python benchmarks/plot_collectives.py out/collectives.json --out out/figures_collectives
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.breakdown_table import DEVICE_PARTS  # noqa: E402
from benchmarks.nccl_tests_format import PRIMARY_PLACEMENT  # noqa: E402


def _primary(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["params"].get("placement", PRIMARY_PLACEMENT[r["op"]]) == PRIMARY_PLACEMENT[r["op"]]]


def plot_busbw(rows: list[dict], out: Path, world: int) -> list[Path]:
    import matplotlib.pyplot as plt

    paths = []
    for op in sorted({r["op"] for r in rows}):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for impl in sorted({r["impl"] for r in rows if r["op"] == op}):
            pts = sorted((r["size"], r["busbw"]) for r in rows if r["op"] == op and r["impl"] == impl)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
        ax.set(xscale="log", xlabel="size (bytes, nccl-tests convention)", ylabel="bus bandwidth (GB/s)",
               title=f"{op} ({PRIMARY_PLACEMENT[op]}), {world} rank(s)")
        ax.grid(alpha=0.3)
        paths.append(_save(fig, ax, out / f"busbw_{op}.png"))
    return paths


def _save(fig, ax, path: Path) -> Path:
    import matplotlib.pyplot as plt

    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_breakdown(rows: list[dict], out: Path) -> list[Path]:
    import matplotlib.pyplot as plt
    import numpy as np

    paths = []
    with_bd = [r for r in rows if r["params"].get("breakdown")]
    for op in sorted({r["op"] for r in with_bd}):
        block = sorted((r for r in with_bd if r["op"] == op), key=lambda r: (r["impl"], r["size"]))
        labels = [f"{r['impl']} {r['size']}" for r in block]
        fig, ax = plt.subplots(figsize=(max(7, 0.35 * len(block)), 4.5))
        bottom = np.zeros(len(block))
        for part in DEVICE_PARTS:
            vals = np.array([r["params"]["breakdown"]["parts_us"][part] for r in block])
            ax.bar(range(len(block)), vals, bottom=bottom, label=part.removesuffix("_us"))
            bottom += vals
        host = [r["params"]["breakdown"]["parts_us"]["host_enqueue_us"] for r in block]
        ax.plot(range(len(block)), host, "k_", markersize=12, label="host enqueue")
        ax.set_xticks(range(len(block)), labels, rotation=90, fontsize=6)
        ax.set(ylabel="us (max over ranks; stacked device parts)", title=f"{op}: latency breakdown of c3prof DMA rows")
        paths.append(_save(fig, ax, out / f"breakdown_{op}.png"))
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        doc = json.loads(args.json.read_text())
        rows = doc["rows"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"plot_collectives: {args.json}: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print(f"plot_collectives: {args.json} has no rows", file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    args.out.mkdir(parents=True, exist_ok=True)
    paths = plot_busbw(_primary(rows), args.out, doc["meta"].get("world_size", rows[0]["world_size"]))
    paths += plot_breakdown(rows, args.out)
    print("\n".join(map(str, paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
