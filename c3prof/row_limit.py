"""--max-rows (report and ingest): how many entries a table of the terminal output shows.

A terminal table is for reading, so a large input shows its first entries and counts the rest (every
row is in --json). It is also what a large report's time went to: rich lays out a 10,000-row table in
about 10 s, four times the analysis. No rich here: the commands parse their options before they know
whether they print anything.
"""

from __future__ import annotations

import argparse
from typing import TypeVar

MAX_ROWS = 100_000

Item = TypeVar("Item")


def max_rows(text: str) -> int:
    """--max-rows's value: a whole number from 1 to MAX_ROWS (argparse makes the error one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of rows, got {text!r}") from None
    if not 1 <= value <= MAX_ROWS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_ROWS:,}, got {value}")
    return value


def first_rows(items: list[Item], limit: int) -> tuple[list[Item], int]:
    """The entries a table shows (the first ``limit``) and how many it leaves out."""
    return items[:limit], max(0, len(items) - limit)
