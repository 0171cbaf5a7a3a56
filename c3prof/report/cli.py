"""``c3prof report``: analyze trace files; print tables, write JSON, CSV, figures and a Perfetto trace.

    c3prof report TRACE|DIR [...] [-o/--json PATH|-] [--csv DIR] [--figures DIR] [--perfetto PATH] [-q]

Outputs never overwrite an input (c3prof.outputs); files are written atomically and the --csv and
--figures directories as a whole set.

Runs on any machine: nothing on this path imports torch, CUDA, cuda.bindings or c3prof._dma.
Bad input (missing, truncated, corrupt or wrong-version trace; bad option values) raises
C3profError, which c3prof.cli prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from c3prof import quick_exit
from c3prof.analysis.dataset import SPLIT_MODES, expand_paths, load
from c3prof.analysis.falsification import DEFAULT_MIN_OVERLAP, DEFAULT_TOLERANCE, FalsificationSettings
from c3prof.analysis.speedup import AUTO, AUTO_MIN_RUNS, BootstrapSettings
from c3prof.analysis.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from c3prof.analysis.taxonomy import DEFAULT_PLATEAU_FRACTION, DEFAULT_THRESHOLD
from c3prof.errors import C3profError
from c3prof.figures.formats import PATTERNS as FIGURE_PATTERNS  # a re-run of --figures replaces these
from c3prof.figures.formats import add_argument as add_figure_formats
from c3prof.forked import can_fork
from c3prof.outputs import Output, atomic_directory, check_outputs, in_write_order, print_written
from c3prof.report.heap import keep_freed_memory
from c3prof.row_limit import max_rows
from c3prof.stage_line import StageLine
from c3prof.trace import gc_paused


EXAMPLES = """examples:
  c3prof report tests/data/h200_smoke.jsonl
  c3prof report run.jsonl -o report.json --csv tables/ --figures figures/ -q
  c3prof report rank0.jsonl rank1.jsonl --split-by trace --json - | jq .results
  c3prof report captures/                       every *.jsonl in the directory
"""

# Bounds of the numeric options: past them an option means nothing useful, or exhausts memory
# (the bootstrap holds resamples x repetitions numbers per statistic).
MAX_RESAMPLES = 100_000
MAX_PERFETTO_REPS = 100_000
MAX_THRESHOLD = 1000.0
MAX_JOBS = 64
# --max-rows: every suite c3prof ships (49 scenarios at most) prints whole.
DEFAULT_MAX_ROWS = 50


def _jobs(text: str) -> int:
    """--jobs: a count, or ``auto`` (speedup.AUTO: speedup.auto_jobs decides)."""
    if text == "auto":
        return AUTO
    try:
        value = int(text)
    except ValueError:
        value = AUTO   # refused below, as a negative count is
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected auto or a number of at least 1, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace files (.jsonl) written by `c3prof capture`; a directory means its *.jsonl")
    out = parser.add_argument_group("outputs (the terminal report is always printed unless --quiet or --json -)")
    out.add_argument("-o", "--json", "--out", dest="json", metavar="PATH",
                     help="write the report as JSON (docs/report.md), the main output; '-' for stdout")
    out.add_argument("--csv", metavar="DIR", help="write results/strategies/falsification/... tables as CSV")
    out.add_argument("--figures", metavar="DIR", help="write the figures to DIR (PNG; --figure-formats for more)")
    add_figure_formats(out)
    out.add_argument("--perfetto", metavar="PATH", help="write a Chrome trace JSON for ui.perfetto.dev")
    out.add_argument("-q", "--quiet", action="store_true", help="do not print the terminal report")
    out.add_argument("--wide", action="store_true",
                     help="terminal report with every column (link, intervals of every ratio, drift, pairing); "
                          "about 230 columns instead of 100")
    out.add_argument("--max-rows", type=max_rows, default=DEFAULT_MAX_ROWS, metavar="N",
                     help="scenarios shown in the results table, and entries in each other table of the terminal "
                          "report; the rest is counted below the table (--json has every row)")
    out.add_argument("--strict", action="store_true",
                     help="exit with status 1 when the report has alerts (failed validation, DMA not on copy engines)")
    ana = parser.add_argument_group("analysis")
    ana.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="RATIO",
                     help="taxonomy: G-long if T_g > RATIO*T_c, C-long if T_c > RATIO*T_g")
    ana.add_argument("--plateau-fraction", type=float, default=DEFAULT_PLATEAU_FRACTION, metavar="SHARE",
                     help="comm taxonomy: bandwidth-bound from the first size reaching this share of the plateau "
                          "bandwidth")
    ana.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, metavar="LEVEL",
                     help="confidence level of the intervals")
    ana.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, metavar="N",
                     help=f"bootstrap resamples (100 to {MAX_RESAMPLES})")
    ana.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N", help="bootstrap seed")
    ana.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="SHARE",
                     help="falsification: a GEMM slowdown below 1+SHARE counts as none")
    ana.add_argument("--min-overlap", type=float, default=DEFAULT_MIN_OVERLAP, metavar="SHARE",
                     help="falsification: 'holds' needs the transfer to overlap this share of the GEMM (0 disables)")
    ana.add_argument("--min-gain", type=float, default=0.05, metavar="SHARE",
                     help="strategy means leave out scenarios whose ideal speedup is below 1+SHARE")
    ana.add_argument("--split-by", choices=SPLIT_MODES, default=None,
                     help="how traces are grouped and pooled: by GPU name, by host, or per trace file "
                          "(default: by GPU name; per trace file for runs whose definitions differ between traces)")
    ana.add_argument("-j", "--jobs", type=_jobs, default="auto", metavar="N|auto",
                     help="processes sharing the analysis (the bootstrap, and the strategy summary beside the "
                          "rest; the report is the same for any N); faster on a large "
                          f"trace when cores are idle. auto: one per usable CPU (at most 4) for a "
                          f"group of {AUTO_MIN_RUNS}+ runs, else 1. A trace of 4 MB or more is read in two "
                          "processes unless N is 1")
    fig = parser.add_argument_group("figures and Perfetto")
    fig.add_argument("--timeline-run", metavar="RUN",
                     help="run id (scenario/strategy/variant) for the timeline figure (default: the base run of the "
                          "GC-equal scenario with the largest ideal speedup)")
    fig.add_argument("--perfetto-max-reps", type=int, default=50, metavar="N",
                     help="repetitions per phase drawn in the Perfetto trace")


def _settings(args):
    from c3prof.report.build import ReportSettings

    checks = [
        (1.0 <= args.threshold <= MAX_THRESHOLD, f"--threshold must be in [1, {MAX_THRESHOLD:g}], got {args.threshold}"),
        (0 < args.plateau_fraction <= 1, f"--plateau-fraction must be in (0, 1], got {args.plateau_fraction}"),
        (0 < args.confidence < 1, f"--confidence must be between 0 and 1, got {args.confidence}"),
        (100 <= args.resamples <= MAX_RESAMPLES,
         f"--resamples must be between 100 and {MAX_RESAMPLES}, got {args.resamples}"),
        (0 <= args.seed < 2**63, f"--seed must be in [0, 2^63), got {args.seed}"),
        (0 <= args.tolerance <= 10, f"--tolerance must be in [0, 10], got {args.tolerance}"),
        (0 <= args.min_overlap <= 1, f"--min-overlap must be in [0, 1], got {args.min_overlap}"),
        (0 <= args.min_gain <= 100, f"--min-gain must be in [0, 100], got {args.min_gain}"),
        (1 <= args.perfetto_max_reps <= MAX_PERFETTO_REPS,
         f"--perfetto-max-reps must be between 1 and {MAX_PERFETTO_REPS}, got {args.perfetto_max_reps}"),
        (args.jobs == AUTO or args.jobs <= MAX_JOBS,
         f"--jobs must be auto or between 1 and {MAX_JOBS}, got {args.jobs}"),
        (args.jobs in (1, AUTO) or can_fork(),
         "--jobs above 1 needs the fork start method, which this platform lacks"),
    ]
    for ok, msg in checks:
        if not ok:  # NaN fails every comparison, so it lands here too
            raise C3profError(msg)
    return ReportSettings(threshold=args.threshold, plateau_fraction=args.plateau_fraction,
                          boot=BootstrapSettings(n_resamples=args.resamples, confidence=args.confidence,
                                                 seed=args.seed),
                          falsification=FalsificationSettings(tolerance=args.tolerance, min_overlap=args.min_overlap),
                          min_ideal=1.0 + args.min_gain, jobs=args.jobs)


def _outputs(args) -> list[Output]:
    from c3prof.report.csv_out import FIELDS

    outs = []
    if args.json and args.json != "-":
        outs.append(Output.file("--json", args.json))
    if args.csv:
        outs.append(Output.directory("--csv", args.csv, FIELDS))
    if args.figures:
        outs.append(Output.directory("--figures", args.figures, FIGURE_PATTERNS))
    if args.perfetto:
        outs.append(Output.file("--perfetto", args.perfetto))
    return outs


def _load(files, split_by: str | None, jobs: int):
    """Group by platform unless asked otherwise; traces whose runs share an id but differ in
    definition (several captures in one directory) cannot be pooled, so they are kept per trace."""
    if split_by is not None:
        return load(files, split_by=split_by, jobs=jobs)
    try:
        return load(files, split_by="platform", jobs=jobs)
    except C3profError as exc:
        if "cannot pool them" not in str(exc):
            raise
        dataset = load(files, split_by="trace", jobs=jobs)
        dataset.notes.insert(0, f"runs differ between traces ({exc}); every trace is reported on its own "
                                f"(as with --split-by trace)")
        return dataset


def _megabytes(files) -> float:
    """The traces' size in MB, of those that can be stat'ed (the reader names any that cannot)."""
    total = 0
    for f in files:
        try:
            total += os.path.getsize(f)
        except OSError:
            pass
    return total / 1e6


def _analysing(dataset, n_resamples: int) -> str:
    runs = sum(r.complete for g in dataset.groups for r in g.runs.values())
    scenarios = sum(len({r.name for r in g.runs.values() if r.complete}) for g in dataset.groups)
    return f"analysing {runs:,} runs of {scenarios:,} scenarios ({n_resamples:,} resamples)"


def _rows_json(args, outputs: list[Output]):
    """Where the JSON report is asked for (--json): a json_out.ReportListsJSON to encode its longest
    lists while the strategy summary's child computes (build_report's on_rows_final); else None."""
    if args.json != "-" and not any(o.flag == "--json" for o in outputs):
        return None
    from c3prof.report.json_out import ReportListsJSON

    return ReportListsJSON()


def _write_outputs(args, outputs: list[Output], report, dataset, figures, rows_json=None) -> list[str]:
    """Write every output (outer directories before what is nested in them); returns what was written.
    ``figures`` is the FigurePool started for --figures (None without); ``rows_json`` the lists
    encoded already (_rows_json)."""
    written: list[str] = []
    if args.json == "-":
        from c3prof.report.json_out import write_json

        write_json(report, "-", rows_json)
    for out in in_write_order(outputs):
        if out.flag == "--figures":
            written += _write_figures(args, out, report, dataset, figures)
        elif out.flag == "--json":
            written += _write_json(out, report, rows_json)
        else:
            written += _WRITERS[out.flag](args, out, report, dataset)
    return written


def _write_json(out, report, rows_json) -> list[str]:
    from c3prof.report.json_out import write_json

    write_json(report, str(out.path), rows_json)
    return [str(out.path)]


def _write_csv(args, out, report, dataset) -> list[str]:
    from c3prof.report.csv_out import write_csv

    with atomic_directory(out, "CSV tables") as tmp:
        names = [p.name for p in write_csv(report, str(tmp))]
    return [str(out.path / n) for n in names]


def _write_figures(args, out, report, dataset, figures) -> list[str]:
    from c3prof.figures import write_figures  # matplotlib is imported where they are drawn: in the workers

    with atomic_directory(out, "figures") as tmp:
        names = [p.name for p in write_figures(report, dataset, str(tmp), args.timeline_run,
                                               args.figure_formats, figures)]
    return [str(out.path / n) for n in names]


def _write_perfetto(args, out, report, dataset) -> list[str]:
    from c3prof.report.perfetto import write_perfetto

    write_perfetto(dataset, str(out.path), args.perfetto_max_reps)
    return [str(out.path)]


_WRITERS = {"--csv": _write_csv, "--perfetto": _write_perfetto}   # --json and --figures: _write_outputs
# Each output as the stage line names it.
_WHAT = {"--json": "JSON", "--csv": "CSV tables", "--figures": "figures", "--perfetto": "Perfetto trace"}


def run(args) -> int:
    keep_freed_memory()   # fewer page faults in a large report (heap.py says why)
    settings = _settings(args)
    files = expand_paths(args.traces)
    outputs = check_outputs(files, _outputs(args))  # before any work: no output may overwrite an input
    if not args.figures:
        return _run(args, settings, files, outputs, None)
    from c3prof.figures.jobs import MODULES
    from c3prof.figures.worker import FigurePool, default_drawers

    # Started before the traces are read: the worker imports matplotlib meanwhile, then draws the
    # figures itself (one CPU) or through helpers it forks, several at once.
    with FigurePool(default_drawers(), preload=MODULES) as figures:
        return _run(args, settings, files, outputs, figures)


def _run(args, settings, files, outputs: list[Output], figures) -> int:
    # The cyclic garbage collector paused: reading and analysing a large trace allocate millions of
    # objects (every run's estimates and result row) and no reference cycle, so its repeated passes
    # free nothing and cost about a fifth of a 10^6-sample report. Paused until _report's dataset and
    # report are freed, when it returns: enabled while they lived, its first pass would walk them all.
    # (The c3prof command keeps them until it exits, with the collector off: quick_exit.py.)
    with gc_paused():
        return _report(args, settings, files, outputs, figures)


def _report(args, settings, files, outputs: list[Output], figures) -> int:
    from c3prof.report.build import build_report

    # A large report works for seconds before its table: at a terminal, one line says at what.
    with StageLine("report", quiet=args.quiet) as stage:
        stage.show(lambda: f"reading {len(files)} trace(s), {_megabytes(files):.1f} MB")
        dataset = _load(files, args.split_by, settings.jobs)
        stage.show(lambda: _analysing(dataset, settings.boot.n_resamples))
        rows_json = _rows_json(args, outputs)
        report = build_report(dataset, settings, None if rows_json is None else rows_json.prepare)
        writing = ["JSON"] * (args.json == "-") + [_WHAT[o.flag] for o in in_write_order(outputs)]
        if writing:
            stage.show(f"writing {', '.join(writing)}")
        written = _write_outputs(args, outputs, report, dataset, figures, rows_json)
    to_stdout = args.json == "-"
    if not args.quiet and not to_stdout:
        from c3prof.report.table import render

        render(report, wide=args.wide, max_rows=args.max_rows)
    print_written("report", written, to_stderr=to_stdout)
    quick_exit.hold(dataset, report)   # the c3prof command exits without freeing them (quick_exit.py)
    if args.strict and report["alerts"]:
        print(f"c3prof report: {len(report['alerts'])} alert(s) (--strict)", file=sys.stderr)
        return 1
    return 0
