"""Input files are checked before they are opened: a FIFO, a device or a huge file is refused.

Opening a FIFO blocks until something writes to it, and reading a device or a file of many
gigabytes never ends in useful time, so ``check_input_file`` looks at ``os.stat`` first. A file a
command cannot read is named, when it is one of the kinds c3prof knows, with the command that
reads it (``foreign_kind``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from c3prof.errors import C3profError
from c3prof.units import format_bytes

GiB = 1024**3
MiB = 1024**2
# Far above any real input (the largest real traces are a few hundred MB), far below what would
# exhaust memory on a laptop before failing.
TRACE_MAX_BYTES = 16 * GiB
SCENARIO_MAX_BYTES = 16 * MiB


def check_input_file(path: str | Path, what: str, max_bytes: int, error: type[C3profError] = C3profError,
                     verb: str = "open") -> int:
    """Raise ``error`` unless ``path`` is a readable regular file of at most ``max_bytes``; return its size."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or exc
        raise error(f"{path}: cannot {verb} {what}: {reason}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: is not a regular file (a FIFO, device or socket); refusing to read it as a {what}")
    if st.st_size > max_bytes:
        raise error(f"{path}: {st.st_size} bytes is more than a {what} may be ({format_bytes(max_bytes)}); "
                    f"refusing to read it")
    if not os.access(path, os.R_OK):
        raise error(f"{path}: cannot {verb} {what}: permission denied")
    return st.st_size


# foreign_kind reads a JSON file whole only up to this size (it runs on the error path only).
FOREIGN_JSON_MAX_BYTES = 256 * MiB
GZIP_MAGIC = b"\x1f\x8b"   # a gzip file's first two bytes (also ingest.reader's test)
# The kinds foreign_kind tells apart, and how it names them (with the command that reads each).
KINDS = {
    "gzip": "a gzip file (a PyTorch profiler trace .json.gz: `c3prof ingest` reads it)",
    "kineto": "a PyTorch profiler (Kineto) trace: `c3prof ingest` reads it",
    "c3prof-trace": "a c3prof trace: `c3prof report` reads it",
    "c3prof-report": "a c3prof report JSON (`c3prof report` reads the traces `c3prof capture` writes; "
                     "`c3prof advise` reads reports)",
    "c3prof-ingest": "a c3prof ingest JSON (`c3prof advise` reads it)",
}


def foreign_kind(path: str | Path, expected: tuple[str, ...] = ()) -> str | None:
    """What ``path`` is, in words that name the command reading it, when it is one of KINDS other than
    the ``expected`` ones; else None. For the error of a command given the wrong kind of file."""
    kind = _kind(path)
    return None if kind is None or kind in expected else KINDS[kind]


def _kind(path: str | Path) -> str | None:
    try:
        with open(path, "rb") as f:
            if f.read(2) == GZIP_MAGIC:
                return "gzip"
            f.seek(0)
            first = _json_or_none(f.readline(64 * 1024))
        if isinstance(first, dict) and first.get("record") == "header" and first.get("format") == "c3prof-trace":
            return "c3prof-trace"
        if os.stat(path).st_size > FOREIGN_JSON_MAX_BYTES:
            return None
        with open(path, "rb") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if "traceEvents" in data:
        return "kineto"
    kind = data.get("schema") or data.get("format")
    return kind if kind in ("c3prof-report", "c3prof-ingest") else None


def _json_or_none(text: bytes):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
