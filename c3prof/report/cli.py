"""``c3prof report``: analyze trace files; print tables, write JSON, CSV, figures and a Perfetto trace.

    c3prof report TRACE [TRACE ...] [--json FILE|-] [--csv DIR] [--figures DIR] [--perfetto FILE]

Runs on any machine: nothing on this path imports torch, CUDA, cuda.bindings or c3prof._dma.
Bad input (missing, truncated, corrupt or wrong-version trace; bad option values) raises
C3profError, which c3prof.cli prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from c3prof.analysis.dataset import SPLIT_MODES, load
from c3prof.analysis.falsification import DEFAULT_MIN_OVERLAP, DEFAULT_TOLERANCE, FalsificationSettings
from c3prof.analysis.speedup import BootstrapSettings
from c3prof.analysis.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from c3prof.analysis.taxonomy import DEFAULT_PLATEAU_FRACTION, DEFAULT_THRESHOLD
from c3prof.errors import C3profError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace files (.jsonl) written by `c3prof capture`; a directory means its *.jsonl")
    out = parser.add_argument_group("outputs (the terminal report is always printed unless --quiet or --json -)")
    out.add_argument("--json", metavar="FILE", help="write the report as JSON (docs/report.md); '-' for stdout")
    out.add_argument("--csv", metavar="DIR", help="write results/strategies/falsification/... tables as CSV")
    out.add_argument("--figures", metavar="DIR", help="write figures as PNG and PDF")
    out.add_argument("--perfetto", metavar="FILE", help="write a Chrome trace JSON for ui.perfetto.dev")
    out.add_argument("--quiet", action="store_true", help="do not print the terminal report")
    out.add_argument("--wide", action="store_true",
                     help="terminal report with every column (link, intervals of every ratio, drift, pairing); "
                          "about 230 columns instead of 100")
    out.add_argument("--strict", action="store_true",
                     help="exit with status 1 when the report has alerts (failed validation, DMA not on copy engines)")
    ana = parser.add_argument_group("analysis")
    ana.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                     help="taxonomy: G-long if T_g > THRESHOLD*T_c, C-long if T_c > THRESHOLD*T_g (default %(default)s)")
    ana.add_argument("--plateau-fraction", type=float, default=DEFAULT_PLATEAU_FRACTION,
                     help="comm taxonomy: bandwidth-bound from the first size reaching this share of the plateau "
                          "bandwidth (default %(default)s)")
    ana.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                     help="confidence level of the intervals (default %(default)s)")
    ana.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                     help="bootstrap resamples (default %(default)s)")
    ana.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default %(default)s)")
    ana.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                     help="falsification: a GEMM slowdown below 1+TOLERANCE counts as none (default %(default)s)")
    ana.add_argument("--min-overlap", type=float, default=DEFAULT_MIN_OVERLAP,
                     help="falsification: 'holds' needs the transfer to overlap this share of the GEMM "
                          "(default %(default)s; 0 disables)")
    ana.add_argument("--min-gain", type=float, default=0.05,
                     help="strategy means leave out scenarios whose ideal speedup is below 1+MIN_GAIN "
                          "(default %(default)s)")
    ana.add_argument("--split-by", choices=SPLIT_MODES, default="platform",
                     help="how traces are grouped and pooled: by GPU name (default), by host, or per trace file")
    fig = parser.add_argument_group("figures and Perfetto")
    fig.add_argument("--timeline-run", metavar="RUN",
                     help="run id (scenario/strategy/variant) for the timeline figure (default: first DMA run)")
    fig.add_argument("--perfetto-max-reps", type=int, default=50,
                     help="repetitions per phase drawn in the Perfetto trace (default %(default)s)")


def _settings(args):
    from c3prof.report.build import ReportSettings

    checks = [
        (args.threshold >= 1.0, f"--threshold must be >= 1, got {args.threshold}"),
        (0 < args.plateau_fraction <= 1, f"--plateau-fraction must be in (0, 1], got {args.plateau_fraction}"),
        (0 < args.confidence < 1, f"--confidence must be between 0 and 1, got {args.confidence}"),
        (args.resamples >= 100, f"--resamples must be at least 100, got {args.resamples}"),
        (args.tolerance >= 0, f"--tolerance must be >= 0, got {args.tolerance}"),
        (0 <= args.min_overlap <= 1, f"--min-overlap must be in [0, 1], got {args.min_overlap}"),
        (args.min_gain >= 0, f"--min-gain must be >= 0, got {args.min_gain}"),
        (args.perfetto_max_reps >= 1, f"--perfetto-max-reps must be >= 1, got {args.perfetto_max_reps}"),
    ]
    for ok, msg in checks:
        if not ok:
            raise C3profError(msg)
    return ReportSettings(threshold=args.threshold, plateau_fraction=args.plateau_fraction,
                          boot=BootstrapSettings(n_resamples=args.resamples, confidence=args.confidence,
                                                 seed=args.seed),
                          falsification=FalsificationSettings(tolerance=args.tolerance, min_overlap=args.min_overlap),
                          min_ideal=1.0 + args.min_gain)


def run(args) -> int:
    from c3prof.report.build import build_report

    settings = _settings(args)
    dataset = load(args.traces, split_by=args.split_by)
    report = build_report(dataset, settings)
    written = []
    if args.json:
        from c3prof.report.json_out import write_json

        write_json(report, args.json)
        if args.json != "-":
            written.append(args.json)
    if args.csv:
        from c3prof.report.csv_out import write_csv

        written += [str(p) for p in write_csv(report, args.csv)]
    if args.figures:
        from c3prof.figures import write_figures  # matplotlib only when figures are asked for

        written += [str(p) for p in write_figures(report, dataset, args.figures, args.timeline_run)]
    if args.perfetto:
        from c3prof.report.perfetto import write_perfetto

        write_perfetto(dataset, args.perfetto, args.perfetto_max_reps)
        written.append(args.perfetto)
    to_stdout = args.json == "-"
    if not args.quiet and not to_stdout:
        from c3prof.report.table import render

        render(report, wide=args.wide)
    if written and not args.quiet:
        print(f"c3prof report: wrote {len(written)} file(s): {', '.join(written)}",
              file=sys.stderr if to_stdout else sys.stdout)
    if args.strict and report["alerts"]:
        print(f"c3prof report: {len(report['alerts'])} alert(s) (--strict)", file=sys.stderr)
        return 1
    return 0
