"""``c3prof ingest TRACE... --out DIR``: C3 regions of PyTorch profiler traces, and replayable scenarios.

    c3prof ingest rank0.json.gz rank1.json.gz -o ingest/ [--json PATH|-] [--figures DIR]

Writes DIR/scenarios.toml (for ``c3prof capture --scenarios``) and DIR/ingest.json (the same as
--json), prints a table. Exit status 0 with results, 2 for unusable input (one line, no traceback).
"""

from __future__ import annotations

import argparse
import json
import math
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
                        help="Kineto/PyTorch profiler Chrome-trace JSON files (.json or .json.gz), one per rank; "
                             "a directory means its *.json and *.json.gz")
    parser.add_argument("-o", "--out", required=True, metavar="DIR",
                        help="output directory: scenarios.toml (replayable) and ingest.json")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH; '-' for stdout")
    parser.add_argument("--figures", metavar="DIR", help="write figures (PNG and PDF) to DIR")
    parser.add_argument("--no-map-nearest", dest="map_nearest", action="store_false",
                        help="do not replay collectives c3prof cannot run (reduce_scatter) as the nearest "
                             "supported one (all_gather); without this flag every such mapping is stated")
    parser.add_argument("--max-rows", type=int, default=30, metavar="N", help="scenarios shown in the table")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only warnings and where files went")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from c3prof.ingest.analyze import ingest
    from c3prof.ingest.scenarios_out import build_scenarios

    args.traces, outputs = _check_paths(args)  # before any work; creates nothing
    out = Path(args.out)
    # A pipe or file gets a wide table (rich would fold it to 80 columns); with --json - the JSON
    # owns stdout and the table goes to stderr.
    to_stdout = args.json == "-"
    stream = sys.stderr if to_stdout else sys.stdout
    console = Console(highlight=False, stderr=to_stdout, width=None if stream.isatty() else 200)
    result = ingest(args.traces, map_nearest=args.map_nearest)

    doc = result.to_json()
    scenarios = build_scenarios(result.results, [str(t) for t in args.traces])
    if not scenarios:
        result.notes.append("no replayable (GEMM, communication) pair found: scenarios.toml not written")
    doc["scenario_file"] = str(out / "scenarios.toml") if scenarios else None
    doc["notes"] = result.notes
    text = json.dumps(_finite(doc), indent=1, allow_nan=False, default=_json_default)
    written = _write_outputs(args, outputs, result, scenarios, text)

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
    """JSON has no NaN or infinity: a statistic that is undefined is written as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _json_default(obj):
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")
