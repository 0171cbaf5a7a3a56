"""Share independent work items out to processes: this one and forked children claim them in turn.

The report's bootstrap is numpy work driven by a Python loop over scenarios, so one process keeps
one core busy. Every scenario's numbers come from generators keyed by its names (stats.rng_for), so
computing some of them in other processes gives the same numbers, in the same order, in less wall
time when the machine has idle cores.

A child is forked (it inherits the parent's data, nothing is pickled on the way in); what it
computed comes back pickled, item by item, through ``pack`` (child side) and ``unpack`` (parent
side), which turn the results into something that does not drag the parent's objects along (ids
instead of runs).
Where fork is not available (Windows; macOS discourages it), the caller runs everything in one
process (``can_fork``).
"""

from __future__ import annotations

import collections
import mmap
import multiprocessing
import os
import pickle
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np

# The children's job, set just before they are forked: (work, pack, start, the shared counter).
_JOB: tuple[Callable[[int], Any], Callable[[Any], Any], Callable[[int], None] | None, _Counter] | None = None
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


def in_processes(n: int, jobs: int, work: Callable[[int], Any], pack: Callable[[Any], Any],
                 unpack: Callable[[Any], Any], start: Callable[[int], None] | None = None) -> list:
    """``[work(i) for i in range(n)]``, shared by this process and ``jobs - 1`` forked children.

    Every process claims the next item when it is done with its last (a shared counter), so the
    processes finish together whatever each item costs, and however much else one of them does. A
    child sends each result as soon as it has it (``pack`` there, ``unpack`` here); this process
    takes them in between its own items, read off the pipes by a thread meanwhile, so that neither
    a full pipe stops a child nor the unpacking waits for the last child. ``start(k)``: run once in
    child k (1, 2, ...) before it claims anything. The results come back in the order of the items.

    A child's error is raised here (the other children are stopped). Where the system refuses the
    fork (a limit on processes or memory), the items are computed here, the same results, and a
    line on stderr says so. A child that dies without reporting (killed) is an error naming it."""
    global _JOB
    jobs = min(jobs, n)
    if jobs < 2:
        return [work(at) for at in range(n)]
    try:
        counter = _Counter(n)
    except OSError as exc:
        print(f"c3prof: could not share the work out ({exc.strerror or exc}); computing in this process",
              file=sys.stderr)
        return [work(at) for at in range(n)]
    context = multiprocessing.get_context("fork")
    children: list[tuple[BaseProcess, Connection]] = []
    _JOB = (work, pack, start, counter)
    try:
        for k in range(1, jobs):
            reader, writer = context.Pipe(duplex=False)
            child: BaseProcess = context.Process(target=_claim_items, args=(k, writer), name=f"c3prof-share-{k}",
                                                 daemon=True)
            try:
                child.start()   # forks: the child sees _JOB
            except OSError as exc:
                reader.close()
                print(f"c3prof: could not start {jobs - k} more process(es) ({exc.strerror or exc}); "
                      f"computing in {'this one' if k == 1 else 'the others'}", file=sys.stderr)
                break
            finally:
                writer.close()   # this process's copy: the reader sees the end when the child closes its own
            children.append((child, reader))
    finally:
        _JOB = None
    # The threads start once every child is forked: a fork copies only the thread that calls it.
    inboxes = [_Inbox(reader) for _, reader in children]
    results: dict[int, Any] = {}
    try:
        for at in iter(counter.take, None):
            results[at] = work(at)
            for inbox in inboxes:
                inbox.take(results, unpack)
        for (child, _), inbox in zip(children, inboxes):
            inbox.take(results, unpack, until_closed=True)
            child.join()
    finally:
        for child, _ in children:
            if child.is_alive():   # this process failed, or another child did: stop the rest
                child.terminate()
                child.join()
        for inbox in inboxes:
            inbox.close()
    missing = [at for at in range(n) if at not in results]
    if missing:
        codes = ", ".join(f"{child.name} exit code {child.exitcode}" for child, _ in children)
        raise RuntimeError(f"{len(missing)} of {n} items came back from no process ({codes})")
    return [results[at] for at in range(n)]


class _Counter:
    """The next unclaimed index of 0..n-1, shared (under a lock) by this process and every child
    forked after it was made."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._next = multiprocessing.get_context("fork").Value("q", 0)   # in shared memory, with its lock

    def take(self) -> int | None:
        with self._next.get_lock():
            at = self._next.value
            if at >= self._n:
                return None
            self._next.value = at + 1
        return at


def _claim_items(index: int, conn: Connection) -> None:
    """A child's loop (in_processes): claim, compute, send; then the end of the pipe. An error is
    sent in place of a result (as a RuntimeError naming it where it cannot be pickled)."""
    assert _JOB is not None  # set by in_processes before the fork
    work, pack, start, counter = _JOB
    with conn:
        try:
            if start is not None:
                start(index)
            for at in iter(counter.take, None):
                conn.send_bytes(pickle.dumps((at, pack(work(at)), None), protocol=pickle.HIGHEST_PROTOCOL))
        except BaseException as exc:   # noqa: BLE001 - every error goes to the parent, which raises it
            try:
                message = pickle.dumps((None, None, exc), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:   # an error that cannot be pickled: its name and text
                message = pickle.dumps((None, None, RuntimeError(f"{type(exc).__name__}: {exc}")))
            conn.send_bytes(message)


class _Inbox:
    """A child's messages, read off its pipe by a thread as they come (the child never waits for
    this process to be free), unpickled and unpacked by this process when it asks (``take``)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._messages: collections.deque[bytes] = collections.deque()
        self._thread = threading.Thread(target=self._receive, name="c3prof-inbox", daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        try:
            while True:
                self._messages.append(self._conn.recv_bytes())
        except (EOFError, OSError):   # the child closed its end (done, failed or killed)
            pass

    def take(self, results: dict[int, Any], unpack: Callable[[Any], Any], until_closed: bool = False) -> None:
        """Each result received so far into ``results`` (every one the child sends, with
        ``until_closed``); a child's error raised."""
        if until_closed:
            self._thread.join()
        while self._messages:
            at, packed, error = pickle.loads(self._messages.popleft())
            if error is not None:
                raise error
            results[at] = unpack(packed)

    def close(self) -> None:
        self._thread.join()
        self._conn.close()


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
