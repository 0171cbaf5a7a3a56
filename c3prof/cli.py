"""The ``c3prof`` command: thin argument parsing that hands off to one module per subcommand.

    c3prof capture   scenarios -> trace file          (c3prof.capture.cli; needs a GPU and torch)
    c3prof report    trace files -> tables, JSON, figures, Perfetto   (c3prof.report.cli; no GPU)
    c3prof ingest    PyTorch profiler traces -> C3 regions and replayable scenarios (c3prof.ingest.cli)
    c3prof suites    list the built-in scenario suites

Every subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``. Exit status:

- 2: bad input or an unusable environment (C3profError, bad arguments): one line on stderr;
- 1: an unexpected error (a bug): one line on stderr; ``--debug`` prints the traceback;
- 130: interrupted; a closed output pipe (``c3prof suites | head -1``) ends quietly.

Subcommand modules are imported only when chosen, so ``c3prof report`` never imports torch.

The same flag means the same thing in every subcommand: ``-o/--out`` is the command's main output
(capture: the trace file; ingest: the output directory), ``-q/--quiet`` prints only warnings,
errors and where files went, ``--json PATH`` writes JSON to PATH or to stdout for ``-``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Mapping

from c3prof import __version__, quick_exit, read_ahead
from c3prof.errors import C3profError
from c3prof.extras import missing_extra_message

# numpy asks Linux for transparent huge pages on every array of 4 MB or more (madvise). Where the
# kernel then defragments memory on the page fault (THP defrag "madvise", a common default), each
# such fault can stall: a 10^6-sample report spent 1.4-2.0 s in the kernel on a 2-core VM, and
# 0.5-0.7 s without the advice. The report's large arrays (bootstrap replicates) live for
# milliseconds, so huge pages buy nothing here. numpy reads the variable when it is imported,
# which none of the imports above does (tests/test_cli_numpy_env.py checks); a value the user set wins.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

SUBCOMMANDS = {
    "capture": ("c3prof.capture.cli", "run C3 scenarios on the GPU and write a trace"),
    "report": ("c3prof.report.cli", "analyze traces: speedups with intervals, taxonomy, falsification, figures"),
    "ingest": ("c3prof.ingest.cli", "find C3 regions in PyTorch profiler traces and turn them into scenarios"),
    "suites": ("c3prof.suites_cli", "list the built-in scenario suites"),
    "advise": ("c3prof.advise.cli", "recommend a strategy per scenario from a model fitted on captures, and validate it"),
}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults appear in --help from the code (never typed by hand); examples keep their layout."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool) or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    # The subcommands' parsers by name (build_parser): an unknown argument is reported by its subcommand.
    commands: Mapping[str, argparse.ArgumentParser] = {}

    def error(self, message):
        """Bad arguments: one line (not the usage block), exit status 2."""
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


EXAMPLES = """examples:
  c3prof report tests/data/h200_default_proc2_t.jsonl --figures out/figures   # a recorded H200 capture, no GPU
  c3prof capture --suite smoke -o out/smoke.jsonl        # needs a GPU (the capture extra)
  c3prof ingest tests/data/h200_kineto_c3overlap.json.gz -o out/ingest
  c3prof COMMAND --help                                  # each command's options and examples
"""


def build_parser(only: str | None = None) -> _Parser:
    parser = _Parser(prog="c3prof", description="Profile concurrent computation and communication (C3) on GPUs.",
                     formatter_class=HelpFormatter, epilog=EXAMPLES)
    parser.add_argument("--version", action="version", version=f"c3prof {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=HelpFormatter)
        if only is None or only == name:
            importlib.import_module(module).add_arguments(p)
    parser.commands = sub.choices
    return parser


def program() -> None:
    """The ``c3prof`` command (console script, ``python -m c3prof``): main(), then the exit.

    ``report`` ends without freeing the objects it built, object by object (c3prof.quick_exit says
    why and what stays safe); the other commands exit as usual."""
    argv = sys.argv[1:]
    if _chosen(argv) == "report":
        quick_exit.arm()
        # Before numpy and the analyses are imported: a large trace's second part is read meanwhile.
        read_ahead.start(argv)
    quick_exit.leave(main(argv))


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named on the command line, if any."""
    return next((a for a in argv if a in SUBCOMMANDS), None)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug is accepted anywhere on the line (before or after the subcommand).
    debug = "--debug" in argv or os.environ.get("C3PROF_DEBUG") == "1"
    argv = [a for a in argv if a != "--debug"]
    # Import only the chosen subcommand's module (keeps `report` free of torch and CUDA imports).
    chosen = _chosen(argv)
    if chosen == "report":
        # report forks (report -j: the analysis and the strategy summary beside it). A process with
        # threads should not fork (Python 3.12 warns), and numpy's OpenBLAS starts one per CPU when it
        # is loaded, for matrix products the report never makes. Before numpy is imported; a value
        # the user set wins.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        parser = build_parser(only=chosen)
        args, extra = parser.parse_known_args(argv)
        if extra:   # refused by the chosen subcommand's parser: its name in the message, as for its other errors
            parser.commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(extra)}")
        if not args.command:
            parser.print_help()
            return 2
        return _run(args, debug)
    except BrokenPipeError:
        return _quiet_broken_pipe()


def _run(args, debug: bool) -> int:
    name = f"c3prof {args.command}"
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    try:
        return int(module.run(args) or 0)
    except C3profError as exc:
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
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
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:  # the catch-all: a bug must still end in one line, not a traceback
        if debug:
            traceback.print_exc()
        print(f"{name}: internal error: {type(exc).__name__}: {_one_line(exc)[:300]} (a bug in c3prof "
              f"{__version__}; rerun with --debug for the traceback)", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _quiet_broken_pipe() -> int:
    """The reader went away (`| head`): stop quietly, and keep Python from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (tests capture it)
    return 141  # 128 + SIGPIPE, what a shell reports for a process ended by a closed pipe


if __name__ == "__main__":
    program()
