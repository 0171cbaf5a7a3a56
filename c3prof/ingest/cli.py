"""``c3prof ingest TRACE... --out DIR``: C3 regions of PyTorch profiler traces, and replayable scenarios.

    c3prof ingest rank0.json.gz rank1.json.gz --out ingest/ [--json FILE] [--figures DIR]

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="Kineto/PyTorch profiler Chrome-trace JSON files (.json or .json.gz), one per rank")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory: scenarios.toml (replayable) and ingest.json")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument("--figures", metavar="DIR", help="write figures (PNG and PDF) to DIR")
    parser.add_argument("--no-map-nearest", dest="map_nearest", action="store_false",
                        help="do not replay collectives c3prof cannot run (reduce_scatter) as the nearest "
                             "supported one (all_gather); without this flag every such mapping is stated")
    parser.add_argument("--max-rows", type=int, default=30, help="scenarios shown in the table (default 30)")
    parser.add_argument("--quiet", action="store_true", help="print only warnings and where files went")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from c3prof.ingest.analyze import ingest
    from c3prof.ingest.scenarios_out import build_scenarios, write_scenarios

    for t in args.traces:
        if not Path(t).is_file():
            raise C3profError(f"{t}: no such trace file")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise C3profError(f"{out}: cannot create output directory: {exc.strerror or exc}") from None
    # A pipe or file gets a wide table (rich would fold it to 80 columns).
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    result = ingest(args.traces, map_nearest=args.map_nearest)

    doc = result.to_json()
    scenarios = build_scenarios(result.results, [str(t) for t in args.traces])
    written = []
    if scenarios:
        path = out / "scenarios.toml"
        write_scenarios(scenarios, path, [Path(t).name for t in args.traces])
        written.append(path)
    else:
        result.notes.append("no replayable (GEMM, communication) pair found: scenarios.toml not written")
    doc["scenario_file"] = str(out / "scenarios.toml") if scenarios else None
    doc["notes"] = result.notes
    text = json.dumps(_finite(doc), indent=1, allow_nan=False, default=_json_default)
    (out / "ingest.json").write_text(text)
    written.append(out / "ingest.json")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text)
        written.append(Path(args.json))
    if args.figures:
        from c3prof.ingest.figures import write_figures

        written += write_figures(result.results, Path(args.figures))

    if args.quiet:
        for w in result.warnings:
            print(f"c3prof ingest: warning: {w}", file=sys.stderr)
    else:
        from c3prof.ingest.render import render

        render(result, console, max_rows=args.max_rows)
    for p in written:
        console.print(f"wrote {p}", markup=False)
    return 0


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
