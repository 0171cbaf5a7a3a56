"""Ending the ``c3prof`` process without taking apart, object by object, what a report built.

When a 10^6-sample report has written its outputs it still holds some 1.2 million Python objects
(runs, series, estimates, result rows). Freeing them one at a time, then the interpreter's own
teardown, took 0.2 s on one core of the 2-core development VM, while the other core had nothing to
do; ending the process with ``os._exit`` instead leaves the memory to the kernel, which reclaims it
in one go (0.05 s). So the ``c3prof`` command (``program()``: the console script and ``python -m
c3prof``) arms this for ``report``, which then hands its dataset and report here (``hold``) instead
of freeing them, and ``leave`` ends the process once the command has returned.

Nothing written is lost: every output file is written, closed and renamed (c3prof.outputs) before the
command returns; ``leave`` first does what the interpreter's exit does before it frees anything, in
its order: the threads' shutdown (``threading._shutdown``: it joins the threads that are not
daemons and runs concurrent.futures' exit, which tells a process pool's workers to stop), then the
atexit handlers (multiprocessing's, which end or join the forked children still alive), then a flush
of stdout and stderr. Skipping the first let multiprocessing wait forever for a figure worker that
a failed report had cancelled (``report --figures`` with a bad ``--timeline-run``). A command that
fails exits as usual: only a report that succeeded (status 0) ends this way. The cyclic garbage
collector stays off until the end (``arm``): re-enabled while the objects are held, its next pass
would walk all of them, the same 0.2 s. Callers of ``c3prof.cli.main`` in-process (tests, scripts)
never arm it: for them the objects are freed when the command returns, as before.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
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
    """End the process with ``status``: armed and 0, after the threads' shutdown, the atexit handlers
    and a flush of stdout and stderr, without freeing anything; otherwise through the interpreter's
    normal exit."""
    if not _armed or status != 0:
        raise SystemExit(status)
    # What the interpreter's exit runs before it frees anything, in its order (Py_FinalizeEx).
    threading._shutdown()     # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            status = 141   # the reader went away: as c3prof.cli reports it
        except (OSError, ValueError):
            status = 120   # what the interpreter's exit reports when it cannot flush stdout
    os._exit(status)
