"""Split a list of independent work items over processes: all but the first share in forked children.

The report's bootstrap is numpy work driven by a Python loop over scenarios, so one process keeps
one core busy. Every scenario's numbers come from generators keyed by its names (stats.rng_for), so
computing some of them in other processes gives the same numbers, in the same order, in less wall
time when the machine has idle cores.

The child is forked (it inherits the parent's data, nothing is pickled on the way in); what it
computed comes back pickled, through ``pack`` (child side) and ``unpack`` (parent side), which turn
the results into something that does not drag the parent's objects along (ids instead of runs).
Where fork is not available (Windows; macOS discourages it), the caller runs everything in one
process (``can_fork``).
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

# The children's job, set just before they are forked: (work, pack, shares of the items).
_JOB: tuple[Callable, Callable, list[Sequence]] | None = None
# in_background's work, likewise.
_BACKGROUND: Callable[[], Any] | None = None


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def split(items: Sequence, jobs: int) -> list[Sequence]:
    """``items`` cut into at most ``jobs`` consecutive shares (in_processes' split)."""
    size = -(-len(items) // jobs) if items else 1  # ceil: every share but the last has this many items
    return [items[i:i + size] for i in range(0, len(items), size)]


def in_processes(items: Sequence, jobs: int, work: Callable[[Sequence], list], pack: Callable[[list], Any],
                 unpack: Callable[[Any], list]) -> list:
    """``work(items)`` in ``jobs`` processes: the first share computed here while forked children
    compute the others (``unpack(pack(work(share)))``); the results in the order of ``items``. A
    child's error is raised here. Where the system refuses the fork (a limit on processes or
    memory), everything is computed here, the same results, and a line on stderr says so."""
    global _JOB
    shares = split(items, jobs)
    if len(shares) < 2:
        return work(items)
    _JOB = (work, pack, shares)
    try:
        with ProcessPoolExecutor(max_workers=len(shares) - 1, mp_context=multiprocessing.get_context("fork")) as pool:
            try:
                children = [pool.submit(_run_share, i) for i in range(1, len(shares))]  # forks: children see _JOB
            except OSError as exc:
                print(f"c3prof: could not start {len(shares) - 1} more process(es) ({exc.strerror or exc}); "
                      "computing in this one", file=sys.stderr)
                return work(items)
            out = work(shares[0])
            for child in children:
                out += unpack(child.result())
    finally:
        _JOB = None
    return out


class Later:
    """What ``in_background`` started: ``result()`` waits for it (raising its error, if any)."""

    def __init__(self, pool: ProcessPoolExecutor | None, future: Future | None, value: Any = None) -> None:
        self._pool, self._future, self._value = pool, future, value
        self._error: BaseException | None = None

    @classmethod
    def done(cls, value: Any) -> Later:
        """A result computed already (the work ran in this process)."""
        return cls(None, None, value)

    def result(self) -> Any:
        if self._future is not None:   # the first call: wait for the child, then let its process go
            future, pool, self._future, self._pool = self._future, self._pool, None, None
            try:
                self._value = future.result()
            except BaseException as exc:   # kept: a second call raises it again
                self._error = exc
            finally:
                assert pool is not None
                pool.shutdown()
        if self._error is not None:
            raise self._error
        return self._value


def in_background(work: Callable[[], Any]) -> Later:
    """``work()`` in a forked child while this process goes on; ``result()`` is its (pickled) value.
    Where the system refuses the fork, ``work()`` runs here at once, and a line on stderr says so."""
    global _BACKGROUND
    _BACKGROUND = work
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    try:
        future = pool.submit(_run_background)   # forks now: the child sees _BACKGROUND
    except OSError as exc:
        pool.shutdown()
        print(f"c3prof: could not start another process ({exc.strerror or exc}); computing in this one",
              file=sys.stderr)
        return Later.done(work())
    finally:
        _BACKGROUND = None
    return Later(pool, future)


def _run_background() -> Any:
    assert _BACKGROUND is not None  # set by in_background before the fork
    return _BACKGROUND()


def _run_share(index: int) -> Any:
    assert _JOB is not None  # set by in_processes before the fork
    work, pack, shares = _JOB
    return pack(work(shares[index]))


class Claims:
    """The indices 0..n-1, claimed from both ends by two processes (one forked from the other after
    the Claims was made): one takes ``first()`` (the lowest unclaimed), the other ``last()`` (the
    highest); None when none is left. Items of similar cost are then shared as they finish, whatever
    else each process had to do first.

    Without a lock: each end is written by its one taker only, in a shared anonymous mapping, and
    only moves inwards. A taker that reads the other end just before it moves may take an index the
    other took too (where they meet), but none is ever left out: the caller computes such an item
    twice and keeps either (an item's result must not depend on who computes it)."""

    def __init__(self, n: int) -> None:
        self._map = mmap.mmap(-1, 16)   # MAP_SHARED | MAP_ANONYMOUS: inherited by a forked child
        self._ends = np.frombuffer(self._map, dtype=np.int64, count=2)   # next first, one past next last
        self._ends[:] = (0, n)

    def first(self) -> int | None:
        at = int(self._ends[0])
        if at >= int(self._ends[1]):
            return None
        self._ends[0] = at + 1
        return at

    def last(self) -> int | None:
        at = int(self._ends[1]) - 1
        if at < int(self._ends[0]):
            return None
        self._ends[1] = at
        return at
