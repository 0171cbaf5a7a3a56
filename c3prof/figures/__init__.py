"""Figures of a report (matplotlib, Agg; PNG and PDF). No pyplot, no GPU imports.

``write_figures(report, dataset, outdir)`` writes, per platform group:

(a) ``speedup``            the main figure: realized speedup per scenario and strategy (default variant)
                           with its interval, the ideal speedup marked, grouped by taxonomy class;
(b) ``strategy_summary``   each strategy's mean fraction of ideal with its interval;
(c) ``fraction_of_ideal``  fraction of ideal per scenario (not drawn where ideal < --min-gain);
(d) ``slowdowns``          per-kernel slowdowns inside the concurrent run (GEMM and communication);
(e) ``falsification``      GEMM slowdown beside a DMA transfer vs beside the SM carrier of the same bytes;
(g) ``interference``       GEMM slowdown against copy-engine bytes/s (only with copy-engine arms);
(a)-(e), (g) get a ``_<platform>`` suffix when the report holds several platforms;
(f) ``timeline``           the repetitions of one concurrent run (GEMM and communication intervals),
                           with hardware-counter time series under it when the trace has them; by
                           default a GC-equal run with the largest ideal speedup (the most informative).

Figures use the Figure API directly (not pyplot), so no global backend is switched and nothing
opens a window.
"""

from __future__ import annotations

from pathlib import Path

from c3prof.errors import C3profError


def write_figures(report: dict, dataset, outdir: str, timeline_run: str | None = None) -> list[Path]:
    from c3prof.figures import falsification, fraction, interference, slowdown, speedup, summary, timeline
    from c3prof.figures.common import platform_suffixes

    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise C3profError(f"{out}: cannot create figures directory: {exc.strerror or exc}") from None
    written: list[Path] = []
    for platform, suffix in platform_suffixes(report).items():
        written += speedup.plot(report, platform, out, suffix)
        written += summary.plot(report, platform, out, suffix)
        written += fraction.plot(report, platform, out, suffix)
        written += slowdown.plot(report, platform, out, suffix)
        written += falsification.plot(report, platform, out, suffix)
        written += interference.plot(report, platform, out, suffix)
    written += timeline.plot(dataset, out, timeline_run, report)
    return written
