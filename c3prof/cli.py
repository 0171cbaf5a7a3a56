"""The ``c3prof`` command: thin argument parsing that hands off to one module per subcommand.

    c3prof capture   scenarios -> trace file          (c3prof.capture.cli; needs a GPU and torch)
    c3prof report    trace files -> tables, JSON, figures, Perfetto   (c3prof.report.cli; no GPU)
    c3prof ingest    PyTorch profiler traces -> C3 regions and replayable scenarios (c3prof.ingest.cli)
    c3prof suites    list the built-in scenario suites

Every subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``. User errors
(C3profError) print as one line on stderr with exit status 2; nothing here prints a traceback for
them. Subcommand modules are imported only when chosen, so ``c3prof report`` never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from c3prof import __version__
from c3prof.errors import C3profError
from c3prof.extras import missing_extra_message

SUBCOMMANDS = {
    "capture": ("c3prof.capture.cli", "run C3 scenarios on the GPU and write a trace"),
    "report": ("c3prof.report.cli", "analyze traces: speedups with intervals, taxonomy, falsification, figures"),
    "ingest": ("c3prof.ingest.cli", "find C3 regions in PyTorch profiler traces and turn them into scenarios"),
    "suites": ("c3prof.suites_cli", "list the built-in scenario suites"),
}


class _Parser(argparse.ArgumentParser):
    # argparse exits with status 2 on bad arguments already; keep its one-line style.
    pass


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(prog="c3prof", description="Profile concurrent computation and communication (C3) on GPUs.")
    parser.add_argument("--version", action="version", version=f"c3prof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or only == name:
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Import only the chosen subcommand's module (keeps `report` free of torch and CUDA imports).
    chosen = next((a for a in argv if a in SUBCOMMANDS), None)
    parser = build_parser(only=chosen)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    try:
        return int(module.run(args) or 0)
    except C3profError as exc:
        print(f"c3prof {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        # An optional dependency (e.g. cuda-bindings for capture) is not installed: one line naming
        # the extra to install, exit status 2. Any other missing module is a bug: re-raise.
        message = missing_extra_message(exc)
        if message is None:
            raise
        print(f"c3prof {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"c3prof {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
