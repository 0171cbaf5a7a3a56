"""``c3prof ingest TRACE... -o DIR``: C3 regions of PyTorch profiler traces, and replayable scenarios.

    c3prof ingest rank0.json.gz rank1.json.gz -o ingest/ [--json PATH|-] [--figures DIR] [-q]
    c3prof ingest ./log/run1 -o ingest/          # a tensorboard_trace_handler directory

Writes DIR/scenarios.toml (for ``c3prof capture --scenarios``) and DIR/ingest.json (the same as
--json), prints a table. Exit status 0 with results, 2 for unusable input or an output that cannot
be written (one line, no traceback).

Output safety is c3prof.outputs, shared with report and capture: every output is checked before a
trace is read (never an input, never another output, creatable), nothing is created before the
checks pass, files are written atomically, and the -o and --figures directories are replaced as a
whole set (a directory holding files this run would not write again is refused).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from c3prof.figures.formats import PATTERNS as FIGURE_PATTERNS  # as report's --figures: a re-run replaces these
from c3prof.figures.formats import add_argument as add_figure_formats
from c3prof.outputs import Output, print_written
from c3prof.row_limit import max_rows


EXAMPLES = """examples:
  c3prof ingest tests/data/h200_kineto_c3overlap.json.gz -o ingest/
  c3prof ingest rank0.json.gz rank1.json.gz -o ingest/ --json - -q | jq .results
  c3prof ingest profiler_logs/ -o ingest/ --figures ingest/figures    a tensorboard_trace_handler directory
"""

OUT_FILES = ("scenarios.toml", "ingest.json")  # everything -o DIR holds (a re-run replaces these)
# --wide: the scenario table with every column takes about this many columns.
WIDE_WIDTH = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="Kineto/PyTorch profiler Chrome-trace JSON files (.json or .json.gz), one per rank, "
                             "or tensorboard_trace_handler directories (newest capture of each worker)")
    parser.add_argument("-o", "--out", required=True, metavar="DIR",
                        help="output directory: scenarios.toml (replayable) and ingest.json")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH ('-': stdout, and "
                                                       "the table goes to stderr)")
    parser.add_argument("--figures", metavar="DIR", help="write the summary figure to DIR (ingest_summary.png)")
    add_figure_formats(parser)
    parser.add_argument("--no-map-nearest", dest="map_nearest", action="store_false",
                        help="do not replay collectives c3prof cannot run (reduce_scatter) as the nearest "
                             "supported one (all_gather); without this flag every such mapping is stated")
    parser.add_argument("--include-last-step", action="store_true",
                        help="HTA overlap: keep the last ProfilerStep (HTA drops it by default, as does c3prof)")
    parser.add_argument("--max-rows", type=max_rows, default=30, metavar="N",
                        help="scenarios shown in the table; the rest is counted below it (--json has them all)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only warnings and where files went")
    parser.add_argument("--wide", action="store_true",
                        help="the scenario table with every column (instances, overlap time, the slowdowns' "
                             "intervals, flags inline); about 200 columns instead of 100")


def _outputs(args: argparse.Namespace) -> list[Output]:
    outs = [Output.directory("--out", args.out, OUT_FILES)]
    if args.json and args.json != "-":
        outs.append(Output.file("--json", args.json))
    if args.figures:
        outs.append(Output.directory("--figures", args.figures, FIGURE_PATTERNS))
    return outs


def _check(args: argparse.Namespace) -> tuple[list[Path], list[str], dict[str, Output]]:
    """Everything that can be refused without reading a trace, refused before any work: option
    values, the inputs (FIFOs, devices, huge files; directories expanded) and every output."""
    from c3prof.ingest.inputs import expand_inputs
    from c3prof.outputs import check_outputs

    files, notes = expand_inputs(args.traces)
    outputs = check_outputs(files, _outputs(args))  # creates nothing
    return files, notes, {o.flag: o for o in outputs}


def run(args: argparse.Namespace) -> int:
    files, input_notes, outputs = _check(args)
    if "--figures" not in outputs:
        return _run(args, files, input_notes, outputs, None)
    import numpy.ma  # noqa: F401

    import c3prof.ingest.analyze  # noqa: F401
    from c3prof.figures.worker import FigurePool
    from c3prof.ingest.figures import WORKER_PRELOAD

    # The modules both processes need are imported before the fork, once (the worker inherits
    # them; numpy.ma: np.unique imports it on its first call, matplotlib at import). Then the
    # worker imports matplotlib while this process reads the traces.
    with FigurePool(1, preload=WORKER_PRELOAD) as figures:
        return _run(args, files, input_notes, outputs, figures)


def _run(args: argparse.Namespace, files: list[Path], input_notes: list[str], outputs: dict[str, Output],
         figures: Any) -> int:
    from c3prof.console import make_console
    from c3prof.ingest.analyze import ingest_files
    from c3prof.ingest.scenarios_out import build_scenarios
    from c3prof.report.json_out import dumps

    to_stdout = args.json == "-"
    # Off a terminal the tables take $COLUMNS or 100 (--wide: its own width; rich would fold them
    # to 80); with --json - the JSON owns stdout and everything else goes to stderr.
    stream = sys.stderr if to_stdout else sys.stdout
    console = make_console(stream, wide=WIDE_WIDTH if args.wide else None)
    result = ingest_files(files, input_notes, map_nearest=args.map_nearest,
                          include_last_step=args.include_last_step)

    scenarios, refused = build_scenarios(result.results)
    result.notes.extend(refused)
    if not scenarios:
        result.notes.append("no replayable (GEMM, communication) pair found: scenarios.toml not written")
    doc = result.to_json()
    doc["scenario_file"] = str(Path(args.out) / "scenarios.toml") if scenarios else None
    doc["notes"] = result.notes
    text = dumps(_finite(doc))
    written = _write_outputs(args, outputs, _Payload(result, scenarios, text, figures))
    if to_stdout:
        sys.stdout.write(text)
        sys.stdout.flush()

    if args.quiet:
        for w in result.warnings:
            print(f"c3prof ingest: warning: {w}", file=sys.stderr)
    else:
        from c3prof.ingest.render import render

        render(result, console, max_rows=args.max_rows, wide=args.wide)
    print_written("ingest", written, to_stderr=to_stdout)
    return 0


# ---- writers: one per output flag; outer directories first (``-o out --figures out/figures``) ----

@dataclass
class _Payload:
    """What the writers write: the results, the scenarios, the JSON text and the figure worker."""

    result: Any  # c3prof.ingest.analyze.IngestResult (imported late: analysis pulls numpy)
    scenarios: list
    text: str
    figures: Any  # a started c3prof.figures.worker.FigurePool, or None without --figures


def _write_outputs(args: argparse.Namespace, outputs: dict[str, Output], payload: _Payload) -> list[Path]:
    from c3prof.outputs import in_write_order

    written: list[Path] = []
    for out in in_write_order(outputs.values()):
        written += _WRITERS[out.flag](args, out, payload)
    return written


def _write_out_dir(args: argparse.Namespace, out: Output, payload: _Payload) -> list[Path]:
    from c3prof.ingest.scenarios_out import write_scenarios
    from c3prof.outputs import atomic_directory, write_text_atomic

    with atomic_directory(out, "ingest output") as tmp:
        if payload.scenarios:
            sources = [Path(t.path).name for t in payload.result.traces]  # the files read
            write_scenarios(payload.scenarios, tmp / "scenarios.toml", sources, write_text_atomic)
        write_text_atomic(tmp / "ingest.json", payload.text, "ingest JSON")
    return ([out.path / "scenarios.toml"] if payload.scenarios else []) + [out.path / "ingest.json"]


def _write_json(args: argparse.Namespace, out: Output, payload: _Payload) -> list[Path]:
    from c3prof.outputs import write_text_atomic

    write_text_atomic(out.path, payload.text, "ingest JSON")
    return [out.path]


def _write_figures(args: argparse.Namespace, out: Output, payload: _Payload) -> list[Path]:
    from c3prof.outputs import atomic_directory

    with atomic_directory(out, "ingest figures") as tmp:
        result = payload.result
        drawn = payload.figures.draw([("c3prof.ingest.figures", "draw",
                                       (result.traces, result.results, tmp, args.figure_formats))])
    return [out.path / p.name for p in drawn]


_WRITERS = {"--out": _write_out_dir, "--json": _write_json, "--figures": _write_figures}


def _finite(obj):
    """JSON has no NaN or infinity: a statistic that is undefined is written as null. numpy scalars
    become Python numbers."""
    if hasattr(obj, "item") and not isinstance(obj, (list, dict, str)):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
