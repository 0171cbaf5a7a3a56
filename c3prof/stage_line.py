"""What a long command is doing, one line of stderr rewritten at each stage, for a person at a terminal.

``report`` on a large trace works for seconds (reading, the bootstrap, writing) and prints its table
only at the end. This line says which stage it is in. Unlike console.Status (rich's spinner) it
starts no thread: ``report`` forks its analysis processes, and a process should not fork while
another of its threads may hold a lock (the child would inherit the lock held, and Python 3.12
warns). It imports nothing heavy, so ``report -q`` does not load rich for it.

Nothing is written when stderr is not a terminal (a log, a pipe, a test) or with ``quiet``; the line
is erased when the ``with`` block ends, before the command prints its results.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from typing import TextIO

# Carriage return, then erase the line (ANSI "erase in line", whole line): the next text replaces it.
_ERASE = "\r\x1b[2K"


class StageLine:
    def __init__(self, command: str, quiet: bool = False, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._prefix = f"c3prof {command}: "
        self._on = not quiet and self._stream.isatty()
        self._shown = False

    def __enter__(self) -> StageLine:
        return self

    def show(self, text: str | Callable[[], str]) -> None:
        """Replace the line with ``text`` (cut to the terminal's width: a line that wrapped could not be
        rewritten in place). A callable is called only when the line is shown: what it counts costs
        nothing off a terminal."""
        if not self._on:
            return
        width = shutil.get_terminal_size().columns
        line = self._prefix + (text() if callable(text) else text)
        if len(line) >= width:
            line = line[:max(width - 2, 1)] + "…"
        self._stream.write(_ERASE + line)
        self._stream.flush()
        self._shown = True

    def __exit__(self, *exc: object) -> None:
        if self._shown:
            self._stream.write(_ERASE)
            self._stream.flush()
            self._shown = False
