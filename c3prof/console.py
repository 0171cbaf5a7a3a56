"""What every command's terminal output shares: the console (its width off a terminal, and a reader
that goes away) and the number formats, so that report, ingest and advise print a fraction of
ideal, a ratio or a missing value the same way."""

from __future__ import annotations

import os
import re
import sys
from typing import IO

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

# Off a terminal (a pipe, a file, a CI log) tables are laid out for this many columns unless
# $COLUMNS says otherwise: rich would fold them to 80.
DEFAULT_WIDTH = 100


# Scenario classes (analysis.taxonomy) as the compact tables print them.
CLASS_SHORT = {"GC-equal": "GC=", "G-long": "G-long", "C-long": "C-long"}


class PipeConsole(Console):
    """rich's Console, except that a reader that went away (``| head``) raises BrokenPipeError, which
    the command line ends quietly with status 141 (cli.py), as it does for plain prints. rich's own
    handler exits with status 1, which a shell script would take for a failure."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError("the reader of the output went away")


def make_console(file: IO[str] | None = None, wide: int | None = None) -> PipeConsole:
    """A console on ``file`` (stdout by default): a terminal's own width; off a terminal ``wide``
    columns when a --wide table was asked for, else $COLUMNS, else DEFAULT_WIDTH."""
    file = file or sys.stdout
    columns = os.environ.get("COLUMNS", "")
    if file.isatty():
        width = None
    elif wide is not None:
        width = wide
    else:
        width = int(columns) if columns.isdigit() and int(columns) > 0 else DEFAULT_WIDTH
    return PipeConsole(file=file, width=width, highlight=False, soft_wrap=False)


def text_width(minimum: int = 60) -> int:
    """The columns prose is wrapped to: those a table gets (make_console: a terminal's own width, else
    $COLUMNS, else DEFAULT_WIDTH), at least ``minimum`` so that a sentence keeps a few words a line."""
    return max(minimum, make_console().width)


class Status:
    """What a long command is doing, on one line of stderr that rich rewrites (a spinner), for a
    person at a terminal; nothing when stderr is not a terminal (a log, a pipe, a test) or with
    ``quiet``. ``update(text)`` changes the line; leaving the ``with`` block clears it."""

    def __init__(self, text: str, quiet: bool = False) -> None:
        self._status = None if quiet or not sys.stderr.isatty() else PipeConsole(stderr=True).status(text)

    def __enter__(self) -> Status:
        if self._status is not None:
            self._status.start()
        return self

    def update(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()


def print_flags(console: Console, flagged: list[tuple[str, str]]) -> None:
    """The warnings a compact table marks with "!", below it: one line per (row name, flag), taken
    as plain text (a flag may hold brackets that rich would read as markup)."""
    if flagged:
        console.print("[yellow]Flags:[/]")
        for name, flag in flagged:
            console.print(f"  [yellow]![/] {escape(name)}: {escape(flag)}")


def print_left_out(console: Console, left_out: int, what: str) -> None:
    """The line below a table cut at --max-rows: how many ``what`` it left out and where they are."""
    if left_out:
        console.print(f"[dim]... {left_out:,} more {what} not shown (--max-rows N shows more; --json has them all)[/]")


def compact_table(title: str) -> Table:
    """The compact tables' style: no vertical rules, one space of padding (they fit 100 columns)."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)


# Where a long name may break: after a hyphen, underscore, slash or dot (ingested names such as
# layer3_reduce_scatter have no hyphen).
_NAME_BREAKS = re.compile(r"(?<=[-_/.])")


def wrap_name(name: str, width: int) -> str:
    """A name longer than its column, broken after its hyphens, underscores, slashes or dots (rich
    would cut it mid-word: llama8b-kv-offlo / ad); a part longer than the column is broken where it
    must be."""
    if len(name) <= width:
        return name
    lines = [""]
    for part in _NAME_BREAKS.split(name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
        while len(lines[-1]) > width:
            lines[-1:] = [lines[-1][:width], lines[-1][width:]]
    return "\n".join(lines)


def ratio(v: float | None, ci: list[float] | None = None, digits: int = 3) -> str:
    """A ratio (speedup, slowdown) with its interval: 1.163 [1.159, 1.172]; ``[-]`` without one; n/a for null."""
    if v is None:
        return "n/a"
    s = f"{v:.{digits}f}"
    return s + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else " [-]")


def number(v: float | None, digits: int = 2) -> str:
    """A ratio without an interval (compact columns): 1.16; n/a for null."""
    return "n/a" if v is None else f"{v:.{digits}f}"


def percent(v: float | None, ci: list[float] | None = None, sign: str = "%") -> str:
    """A fraction (of ideal, of time) and its interval as whole percentages: 49% [45%, 53%]; ``[-]``
    without one; n/a for null. ``sign=""`` for a column whose header says (%)."""
    if v is None:
        return "n/a"
    return f"{v * 100:.0f}{sign}" + (f" [{ci[0] * 100:.0f}{sign}, {ci[1] * 100:.0f}{sign}]" if ci else " [-]")
