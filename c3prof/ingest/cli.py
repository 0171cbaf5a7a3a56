"""``c3prof ingest TRACE... --out DIR``: C3 regions of PyTorch profiler traces, and replayable scenarios.

    c3prof ingest rank0.json.gz rank1.json.gz -o ingest/ [--json PATH|-] [--figures DIR]
    c3prof ingest ./log/run1 --out ingest/          # a tensorboard_trace_handler directory

Writes DIR/scenarios.toml (for ``c3prof capture --scenarios``) and DIR/ingest.json (the same as
--json), prints a table. Exit status 0 with results, 2 for unusable input or an output that cannot
be written (one line, no traceback). Outputs are checked before the traces are read, written
atomically, and never onto an input.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from c3prof.errors import C3profError


EXAMPLES = """examples:
  c3prof ingest tests/data/h200_kineto_c3overlap.json.gz -o ingest/
  c3prof ingest rank0.json.gz rank1.json.gz -o ingest/ --json - -q | jq .results
  c3prof ingest profiler_logs/ -o ingest/ --figures ingest/figures    every *.json and *.json.gz in the directory
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="Kineto/PyTorch profiler Chrome-trace JSON files (.json or .json.gz), one per rank, "
                             "or tensorboard_trace_handler directories")
    parser.add_argument("-o", "--out", required=True, metavar="DIR",
                        help="output directory: scenarios.toml (replayable) and ingest.json")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH ('-': stdout, and "
                                                       "the table goes to stderr)")
    parser.add_argument("--figures", metavar="DIR", help="write the summary figure to DIR (ingest_summary.png)")
    parser.add_argument("--figure-formats", default="png", metavar="LIST",
                        help="comma-separated formats of the figure: png, pdf, svg (default png; each one is a "
                             "full draw)")
    parser.add_argument("--no-map-nearest", dest="map_nearest", action="store_false",
                        help="do not replay collectives c3prof cannot run (reduce_scatter) as the nearest "
                             "supported one (all_gather); without this flag every such mapping is stated")
    parser.add_argument("--include-last-step", action="store_true",
                        help="HTA overlap: keep the last ProfilerStep (HTA drops it by default, as does c3prof)")
    parser.add_argument("--max-rows", type=int, default=30, metavar="N", help="scenarios shown in the table")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only warnings and where files went")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


FIGURE_FORMATS = ("png", "pdf", "svg")


def _figure_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    bad = [f for f in formats if f not in FIGURE_FORMATS]
    if bad or not formats:
        raise C3profError(f"--figure-formats: {', '.join(bad) or 'nothing'} is not one of {', '.join(FIGURE_FORMATS)}")
    return formats


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse unusable outputs before any work: directories where files go, files where directories
    go, an output that is one of the input traces."""
    args.figure_formats = _figure_formats(args.figure_formats)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise C3profError(f"{out}: --out must be a directory, and this is a file")
    if args.figures and Path(args.figures).exists() and not Path(args.figures).is_dir():
        raise C3profError(f"{args.figures}: --figures must be a directory, and this is a file")
    files = [out / "ingest.json", out / "scenarios.toml"]
    if args.json and args.json != "-":
        if Path(args.json).is_dir():
            raise C3profError(f"{args.json}: --json names a directory; give a file name (or '-' for stdout)")
        files.append(Path(args.json))
    for f in files:
        for t in args.traces:
            if _same_file(f, Path(t)):
                raise C3profError(f"{f}: this output is the input trace {t}; choose another output")


def _make_dir(path: Path, what: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise C3profError(f"{path}: cannot create {what} directory: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise C3profError(f"{path}: {what} directory is not writable")


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    figures = None
    if args.figures:
        from c3prof.ingest.figures import FigureWorker

        # Started before the heavy imports: matplotlib loads while they and the traces do.
        figures = FigureWorker().start()
    try:
        return _run(args, figures)
    except BaseException:
        if figures is not None:
            figures.cancel()
        raise


def _run(args: argparse.Namespace, figures) -> int:
    from rich.console import Console

    from c3prof.ingest.analyze import ingest
    from c3prof.ingest.scenarios_out import build_scenarios, write_scenarios
    from c3prof.report.json_out import write_atomic, write_json

    to_stdout = args.json == "-"
    # A pipe or file gets a wide table (rich would fold it to 80 columns); with --json - the JSON
    # owns stdout and everything else goes to stderr.
    stream = sys.stderr if to_stdout else sys.stdout
    console = Console(file=stream, highlight=False, width=None if stream.isatty() else 200)
    result = ingest(args.traces, map_nearest=args.map_nearest, include_last_step=args.include_last_step)

    out = Path(args.out)
    _make_dir(out, "output")
    scenarios, refused = build_scenarios(result.results)
    result.notes.extend(refused)
    written = []
    if scenarios:
        write_scenarios(scenarios, out / "scenarios.toml", [Path(t).name for t in args.traces], write_atomic)
        written.append(out / "scenarios.toml")
    else:
        result.notes.append("no replayable (GEMM, communication) pair found: scenarios.toml not written")
    doc = result.to_json()
    doc["scenario_file"] = str(out / "scenarios.toml") if scenarios else None
    doc["notes"] = result.notes
    doc = _finite(doc)
    write_json(doc, str(out / "ingest.json"))
    written.append(out / "ingest.json")
    if args.json:
        write_json(doc, args.json)
        if not to_stdout:
            written.append(Path(args.json))
    if figures is not None:
        _make_dir(Path(args.figures), "figures")
        written += figures.finish(result.traces, result.results, Path(args.figures), args.figure_formats)

    if args.quiet:
        for w in result.warnings:
            print(f"c3prof ingest: warning: {w}", file=sys.stderr)
    else:
        from c3prof.ingest.render import render

        render(result, console, max_rows=args.max_rows)
    for p in written:
        console.print(f"wrote {p}", markup=False)
    return 0


# ---- output safety (c3prof.outputs): inputs are never outputs; every output appears whole ----

OUT_FILES = ("scenarios.toml", "ingest.json")
FIGURE_PATTERNS = ("*.png", "*.pdf")


def expand_traces(paths: list[str]) -> list[str]:
    """Files as given; a directory stands for the *.json and *.json.gz files in it (sorted)."""
    out: list[str] = []
    for p in paths:
        if Path(p).is_dir():
            found = sorted(str(f) for f in Path(p).iterdir() if f.name.endswith((".json", ".json.gz")))
            if not found:
                raise C3profError(f"{p}: directory holds no *.json or *.json.gz profiler traces")
            out += found
        else:
            out.append(p)
    return out


def _check_paths(args) -> tuple[list[str], dict]:
    from c3prof.inputs import TRACE_MAX_BYTES, check_input_file
    from c3prof.outputs import Output, check_outputs

    if not 1 <= args.max_rows <= 100_000:
        raise C3profError(f"--max-rows must be between 1 and 100000, got {args.max_rows}")
    traces = expand_traces(args.traces)
    for t in traces:
        check_input_file(t, "trace file", TRACE_MAX_BYTES)
    outputs = {"--out": Output.directory("--out", args.out, OUT_FILES)}
    if args.json and args.json != "-":
        outputs["--json"] = Output.file("--json", args.json)
    if args.figures:
        outputs["--figures"] = Output.directory("--figures", args.figures, FIGURE_PATTERNS)
    return traces, {o.flag: o for o in check_outputs(traces, outputs.values())}


def _write_outputs(args, outputs: dict, result, scenarios, text: str) -> list[Path]:
    """Write every output, outer directories before what is nested in them (``-o out --figures out/fig``)."""
    from c3prof.outputs import in_write_order

    if args.json == "-":
        sys.stdout.write(text + "\n")
    written: list[Path] = []
    for out in in_write_order(outputs.values()):
        written += _WRITERS[out.flag](args, out, result, scenarios, text)
    return written


def _write_out_dir(args, out, result, scenarios, text: str) -> list[Path]:
    from c3prof.ingest.scenarios_out import write_scenarios
    from c3prof.outputs import atomic_directory

    with atomic_directory(out, "ingest output") as tmp:
        if scenarios:
            write_scenarios(scenarios, tmp / "scenarios.toml", [Path(t).name for t in args.traces])
        (tmp / "ingest.json").write_text(text, encoding="utf-8")
    return ([out.path / "scenarios.toml"] if scenarios else []) + [out.path / "ingest.json"]


def _write_json(args, out, result, scenarios, text: str) -> list[Path]:
    from c3prof.outputs import write_text_atomic

    write_text_atomic(out.path, text, "ingest JSON")
    return [out.path]


def _write_figures(args, out, result, scenarios, text: str) -> list[Path]:
    from c3prof.ingest.figures import write_figures
    from c3prof.outputs import atomic_directory

    with atomic_directory(out, "ingest figures") as tmp:
        names = [p.name for p in write_figures(result.results, tmp)]
    return [out.path / n for n in names]


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
