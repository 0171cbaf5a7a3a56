"""What ``report --figures`` draws, as a list of jobs for c3prof.figures.worker (no matplotlib here).

Each job names a figure function and its arguments; the caller (which never imports matplotlib)
hands the list to a FigurePool, whose worker's helpers draw several figures at once, or runs it in
its own process (``c3prof.figures.write_figures``). Jobs are listed costliest first, so that two
drawers finish at about the same time; the timeline's run is chosen here (a bad ``--timeline-run`` is
refused before anything is drawn) and only that run is sent to a worker.
"""

from __future__ import annotations

import re
from pathlib import Path

from c3prof.analysis.dataset import Dataset, MergedRun
from c3prof.errors import C3profError
from c3prof.figures.formats import DEFAULT
from c3prof.figures.worker import Job

# Per platform, costliest first (measured on the default suite: the two-panel slowdowns figure
# takes about three times the strategy summary).
PLATFORM_FIGURES = (
    ("c3prof.figures.slowdown", "plot"),
    ("c3prof.figures.speedup", "plot"),
    ("c3prof.figures.falsification", "plot"),
    ("c3prof.figures.interference", "plot"),
    ("c3prof.figures.fraction", "plot"),
    ("c3prof.figures.summary", "plot"),
    ("c3prof.figures.interference", "plot_mechanism"),
)
MODULES = tuple(dict.fromkeys(m for m, _ in PLATFORM_FIGURES)) + ("c3prof.figures.timeline",)  # a worker's preload


def report_jobs(report: dict, dataset: Dataset, outdir: Path, timeline_run: str | None = None,
                formats: tuple[str, ...] = DEFAULT) -> list[Job]:
    jobs: list[Job] = [(module, function, (report, platform, outdir, suffix, formats))
                       for platform, suffix in platform_suffixes(report).items()
                       for module, function in PLATFORM_FIGURES]
    run = pick_run(dataset, timeline_run, report)
    if run is not None:
        jobs.insert(1, ("c3prof.figures.timeline", "draw_run", (run, outdir, formats)))
    return jobs


def pick_run(dataset: Dataset, wanted: str | None, report: dict | None = None) -> MergedRun | None:
    """The named run; else the base run of the GC-equal scenario with the largest ideal speedup (the
    pair where overlap matters most); else the first run with a concurrent phase."""
    runs = {r.id: r for g in dataset.groups for r in g.runs.values() if "concurrent" in r.phases}
    if wanted:
        if wanted in runs:
            return runs[wanted]
        raise C3profError(f"--timeline-run: no run {wanted!r} with a concurrent phase in the traces")
    rows = [r for r in (report or {}).get("results", []) if r["run"] in runs and r["ideal_speedup"] is not None
            and r["strategy"] == "base"]
    rows.sort(key=lambda r: (r["taxonomy"] != "GC-equal", -r["ideal_speedup"]))
    if rows:
        return runs[rows[0]["run"]]
    return next(iter(runs.values()), None)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "platform"


def platform_suffixes(report: dict) -> dict[str, str]:
    """File-name suffix per platform: none when there is one platform, its slug otherwise."""
    names = [m["platform"] for m in report["machine"]]
    if len(names) <= 1:
        return {n: "" for n in names}
    return {n: "_" + slug(n) for n in names}
