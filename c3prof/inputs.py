"""Input files are checked before they are opened: a FIFO, a device or a huge file is refused.

Opening a FIFO blocks until something writes to it, and reading a device or a file of many
gigabytes never ends in useful time, so ``check_input_file`` looks at ``os.stat`` first.
"""

from __future__ import annotations

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
