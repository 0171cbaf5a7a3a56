"""Figures drawn in a worker process that is started before the work whose results it draws.

matplotlib's import takes about 0.2-0.6 s of CPU and each figure's draw 0.1-0.5 s; neither needs
the caller's process. ``FigurePool(drawers).start()`` forks one worker (a concurrent.futures process
pool with the fork start method: it starts in milliseconds and inherits the caller's imports) that
imports matplotlib, loads the font and imports the ``preload`` modules while the caller still reads
traces and computes statistics (and ends if the caller is killed). ``draw(jobs)`` then runs each job
(module name, function name, arguments: the function writes files and returns their paths) and
returns every path, in job order. Jobs name their function instead of holding it, so the caller
never imports the figure modules, nor matplotlib with them.

Several figures at once: with ``drawers`` of 2 or more, ``draw`` hands the whole list to the warm
worker, which forks that many helpers from itself (they inherit its matplotlib, so none imports it
again) and has them draw the jobs, costliest first, each taking the next job when it is free. One
matplotlib import serves every drawer, and it overlaps the caller's work on one CPU only: on 2 CPUs,
two workers that each imported matplotlib during the statistics competed with the caller for both
(on 2 CPUs at a load average of 2, a second such worker added 0.7 s to the default suite's report).
While the jobs are drawn the caller only waits, so its CPU is free for a second drawer.

Errors: an exception a job raises is raised again here (a C3profError stays a one-line error with
exit status 2; anything else is a bug, which c3prof.cli reports as one line with exit status 1); a
worker or helper that dies (killed, out of memory) becomes a C3profError. Workers ignore Ctrl-C: the
caller handles it and shuts the pool down. Where fork is not available or refused, or with
``drawers=0``, the jobs run in the caller's process: the same files, without the overlap; where the
worker cannot fork its helpers, it draws them all itself.

A worker's matplotlib import leaves out the docstrings matplotlib generates for its artist classes
(``skip_generated_docstrings``): 45% of the import, and nothing a figure shows.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from c3prof.errors import C3profError
from c3prof.forked import available_cpus

Job = tuple[str, str, tuple[Any, ...]]  # (module, function, arguments)
MAX_DRAWERS = 4  # about 7 figures per platform; each drawer costs ~60 MB (shared with its worker until it draws)


def default_drawers() -> int:
    """Figures drawn at once: one per CPU this process may use, at most MAX_DRAWERS. The machine's
    load does not lower it: a drawer is forked from the warm worker and imports nothing, so on busy
    CPUs a second drawer only shares them (the same CPU time in all), and on idle ones it halves
    the wait."""
    return max(1, min(MAX_DRAWERS, available_cpus()))


class FigurePool:
    """``start()`` early, ``draw(jobs)`` when the results are known, ``close()`` (or ``cancel()``) at the end."""

    def __init__(self, drawers: int, preload: Sequence[str] = ()):
        self.drawers = drawers
        self.preload = tuple(preload)
        self._executor: ProcessPoolExecutor | None = None

    def start(self) -> FigurePool:
        if self.drawers <= 0 or "fork" not in multiprocessing.get_all_start_methods():
            return self  # draw() runs the jobs here
        try:
            self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                                                 initializer=_warm_up, initargs=(self.preload,))
            self._executor.submit(_ready)  # the first submit forks the worker
        except OSError:
            # fork refused (a process or memory limit): draw() draws here, the same files.
            self._executor = None
        return self

    def draw(self, jobs: Sequence[Job]) -> list[Path]:
        if self._executor is None:
            return draw_here(jobs)
        helpers = min(self.drawers, len(jobs))
        futures = ([self._executor.submit(draw_in_helpers, list(jobs), helpers)] if helpers > 1
                   else [self._executor.submit(run_job, *job) for job in jobs])
        try:
            return [p for f in futures for p in _result(f)]
        except BaseException:
            # Wait for the jobs still running: none may write into a directory the caller is about
            # to remove.
            self._shutdown(wait=True)
            raise

    def close(self) -> None:
        self._shutdown(wait=True)

    def cancel(self) -> None:
        """Drop queued jobs and let the workers exit (at the latest when the interpreter does)."""
        self._shutdown(wait=False)

    def _shutdown(self, wait: bool) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=wait, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> FigurePool:
        return self.start()

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.cancel()


def draw_here(jobs: Sequence[Job]) -> list[Path]:
    return [p for job in jobs for p in run_job(*job)]


def draw_in_helpers(jobs: list[Job], helpers: int) -> list[Path]:
    """In the warm worker: ``jobs`` drawn by ``helpers`` processes forked from it, each taking the next
    job when it is free; every path, in job order. A job's error is raised here (and so in the
    caller); a helper that dies breaks the pool (BrokenProcessPool, which the caller names). Where
    the fork is refused, the worker draws them itself."""
    pool = ProcessPoolExecutor(helpers, mp_context=multiprocessing.get_context("fork"), initializer=_watch_parent)
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns on forking a process with threads, as this worker is (_watch_parent's
            # thread, which holds no lock: it waits in a poll): nothing a user can act on.
            warnings.filterwarnings("ignore", message=".*multi-threaded.*fork", category=DeprecationWarning)
            futures = [pool.submit(run_job, *job) for job in jobs]   # the first submit forks the helpers
    except OSError:   # a helper forked before the refusal ends with this worker (_exit_with)
        pool.shutdown(wait=True)
        return draw_here(jobs)
    try:
        return [p for f in futures for p in f.result()]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_job(module: str, function: str, args: tuple[Any, ...]) -> list[Path]:
    return getattr(importlib.import_module(module), function)(*args)


def _result(future: Future) -> list[Path]:
    try:
        return future.result()
    except BrokenProcessPool:
        raise C3profError("a figure process ended unexpectedly (killed, or out of memory?); no figures "
                          "written") from None


def _exit_with(parent_sentinel: int) -> None:
    """End this worker (or helper) when its parent ends. A parent that exits normally has shut the
    pool down first; one that was killed (kill -9, out of memory) would otherwise leave its idle
    workers waiting for jobs forever."""
    multiprocessing.connection.wait([parent_sentinel])
    os._exit(1)


def _watch_parent() -> None:
    """At a worker's or helper's start: ignore Ctrl-C (the caller handles it) and end with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()


def _ready() -> None:
    """The first job: makes the pool fork its worker now."""


def _warm_up(preload: tuple[str, ...]) -> None:
    """In the worker, at its start: the slow imports and the font lookup, done while the caller works.
    A failure here is not reported here: the job that needs the module imports it again and raises
    (an initializer that raises would break the pool with a logged traceback instead).

    The garbage collector is off during the imports, whose objects all live as long as the worker
    (collecting them was a tenth of the import time), and then ``gc.freeze``: what the worker
    inherited and imported is left out of the collections during the draws (6% of a draw)."""
    _watch_parent()
    gc.disable()
    try:
        _import(preload)
    finally:
        gc.freeze()
        gc.enable()


def _import(preload: tuple[str, ...]) -> None:
    try:
        skip_generated_docstrings()
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        from matplotlib import font_manager

        font_manager.findfont("DejaVu Sans")
        import c3prof.figures.common  # noqa: F401

        for name in preload:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 (reported by the job, see above)
        pass


def skip_generated_docstrings() -> bool:
    """Before matplotlib's figure modules are imported in a worker: leave out the docstrings matplotlib
    generates while they are imported, 45% of their import (0.13 of 0.30 CPU-s on the 2-core
    development machine, matplotlib 3.11): for every Artist subclass, the signature and docstring of
    its ``set()``, built from the docstrings of all its setters, and the property tables
    (``matplotlib.artist.kwdoc``) that fill placeholders in other docstrings. Only ``help()`` and
    ``inspect`` read them; ``set()`` works the same without its own (it is the base class's). A
    worker only draws and writes files, and draws the same pixels (tests/test_figure_worker_import.py).
    Only in worker processes, never in the caller's; nothing is changed where matplotlib's figure
    modules are already imported (a worker forked from a caller that imported them inherits them)
    or where matplotlib lacks either hook. True when skipped."""
    import sys

    if "matplotlib.figure" in sys.modules:
        return False
    import matplotlib.artist  # defines Artist and builds its own set() first

    if not (hasattr(matplotlib.artist.Artist, "_update_set_signature_and_docstring")
            and callable(getattr(matplotlib.artist, "kwdoc", None))):
        return False
    matplotlib.artist.Artist._update_set_signature_and_docstring = classmethod(lambda cls: None)
    matplotlib.artist.kwdoc = lambda artist: ""
    return True
