"""Ending the ``c3prof`` process without taking apart, object by object, what a report built.

When a 10^6-sample report has written its outputs it still holds some 1.2 million Python objects
(runs, series, estimates, result rows). Freeing them one at a time, then the interpreter's own
teardown, took 0.2 s on one core of the 2-core development VM, while the other core had nothing to
do; ending the process with ``os._exit`` instead leaves the memory to the kernel, which reclaims it
in one go (0.05 s). So the ``c3prof`` command (``program()``: the console script and ``python -m
c3prof``) arms this for ``report``, which then hands its dataset and report here (``hold``) instead
of freeing them, and ``leave`` ends the process once the command has returned.

Nothing written is lost: every output file is written, closed and renamed (c3prof.outputs) before the
command returns; ``leave`` runs the atexit handlers (multiprocessing's, which end any forked child
still alive) and flushes stdout and stderr first. The cyclic garbage collector stays off until the
end (``arm``): re-enabled while the objects are held, its next pass would walk all of them, the same
0.2 s. Callers of ``c3prof.cli.main`` in-process (tests, scripts) never arm it: for them the objects
are freed when the command returns, as before.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import NoReturn

_held: list[object] = []
_armed = False


def arm() -> None:
    """From now until ``leave``: keep what ``hold`` is given, and no cyclic garbage collection."""
    global _armed
    _armed = True
    gc.disable()


def armed() -> bool:
    return _armed


def hold(*objects: object) -> None:
    """Keep ``objects`` alive until the process ends, when armed (otherwise they are freed as usual)."""
    if _armed:
        _held.extend(objects)


def leave(status: int) -> NoReturn:
    """End the process with ``status``: armed, after the atexit handlers and flushing stdout and
    stderr, without freeing anything; otherwise through the interpreter's normal exit."""
    if not _armed:
        raise SystemExit(status)
    atexit._run_exitfuncs()   # what the interpreter's exit would run first (multiprocessing's cleanup)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            status = status or 141   # the reader went away: as c3prof.cli reports it
        except (OSError, ValueError):
            status = status or 120   # what the interpreter's exit reports when it cannot flush stdout
    os._exit(status)
