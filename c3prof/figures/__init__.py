"""Figures of a report (matplotlib, Agg; PNG, and PDF or SVG on request). No pyplot, no GPU imports.

``write_figures(report, dataset, outdir)`` writes, per platform group:

(a) ``speedup``            the main figure: realized speedup per scenario and strategy (default variant)
                           with its interval, the ideal speedup marked, grouped by taxonomy class;
(b) ``strategy_summary``   each strategy's mean fraction of ideal with its interval;
(c) ``fraction_of_ideal``  fraction of ideal per scenario (not drawn where ideal < --min-gain);
(d) ``slowdowns``          per-kernel slowdowns inside the concurrent run (GEMM and communication);
(e) ``falsification``      GEMM slowdown beside a DMA transfer vs beside the SM carrier of the same bytes;
(g) ``interference``       GEMM slowdown against copy-engine bytes/s (only with copy-engine arms), and
    ``interference_mechanism`` the DRAM traffic each arm adds (only with Nsight Compute counts);
(a)-(e), (g) get a ``_<platform>`` suffix when the report holds several platforms;
(f) ``timeline``           the repetitions of one concurrent run (GEMM and communication intervals),
                           with hardware-counter time series under it when the trace has them; by
                           default a GC-equal run with the largest ideal speedup (the most informative).

Figures use the Figure API directly (not pyplot), so no global backend is switched and nothing
opens a window. PNG by default; ``formats`` (``--figure-formats``) adds pdf and svg. The CLI draws
them in a worker process started before the report is computed and in helpers it forks then
(c3prof.figures.worker), so matplotlib's import overlaps the statistics and several figures are
drawn at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from c3prof.errors import C3profError
from c3prof.figures.formats import DEFAULT

if TYPE_CHECKING:
    from c3prof.figures.worker import FigurePool


def write_figures(report: dict, dataset, outdir: str, timeline_run: str | None = None,
                  formats: tuple[str, ...] = DEFAULT, pool: FigurePool | None = None) -> list[Path]:
    """Every figure of the report in ``outdir``, in ``formats``; drawn by ``pool`` (a started
    c3prof.figures.worker.FigurePool) when given, else in this process."""
    from c3prof.figures.jobs import report_jobs
    from c3prof.figures.worker import FigurePool

    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise C3profError(f"{out}: cannot create figures directory: {exc.strerror or exc}") from None
    jobs = report_jobs(report, dataset, out, timeline_run, formats)
    return (pool or FigurePool(0)).draw(jobs)
