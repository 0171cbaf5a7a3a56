"""Reading one large trace in two processes: read_trace's parts (report -j, on a trace of 4 MB or more).

Reading is one core's work: a 10^6-sample trace (33 MB, 40,000 phase records) took 0.56-0.75 s of
a 3.6-5 s report on two cores of the device hosts, while the other core waited. Its lines are
independent until they are assembled into runs, so two processes can each read a part: a forked
child (forked.in_background) reads the lines from FIRST_SHARE of the file on, while this process
reads the first part and assembles the trace from it as it goes. The ``c3prof`` command starts that
child earlier still, before its imports (read_ahead.py); its part is then used here the same way.

What comes back from the child is its records as read, except their samples: the numbers stay in
the two columns its SampleColumns filled, and travel as two arrays (``SampleColumns.export``),
which this process's SampleColumns takes over (``adopt``) as if it had read them. Pickled as
arrays per record instead, they took 0.33 s to cross (dev VM); as records without their numbers
plus two columns, about 0.1 s (less since the reader shares the records' repeated names and round
lists: trace_fast.PlainPhases).

The trace is then assembled from the parts' records in file order, by the same code as a trace
read in one process, with the same line numbers, so it is the same Trace. Anything a part cannot
read (a bad record, a number out of range) sends read_trace to read the file again in one process,
record by record, which reports the error as it always has. Needs the compiled ``_trace_read``
(the columns); without it, or where fork is not available, a trace is read in one process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from array import array

# c3prof.forked (numpy, multiprocessing) is imported where it is used: a process reading ahead
# (read_ahead.py) imports this module, and must not import numpy.

# A trace smaller than this is read in one process: two saved nothing on a 2 MB trace (0.045 s
# either way) and under 10 ms on 3.4 MB (0.067 against 0.074 s); 5 MB took 0.102 against 0.115 s,
# 20 MB 0.47 against 0.61 s, the 33 MB of 10^6 samples 0.59 against 0.73 s (dev VM, 5 fresh
# processes each; benchmarks/bench_report.py --write-trace with fewer samples).
MIN_BYTES = 4 << 20
# The share of the bytes this process reads: more than half, because the child's part must still
# cross back and be assembled after it. On the dev VM the 10^6-sample trace read in 0.57 s with
# 0.50, 0.55 s with 0.55 and 0.57-0.59 s with 0.60 (one process: 0.72 s): within the noise of each
# other. 0.60 is what every device measurement ran with (benchmarks/results/device_logs/session19);
# on a device host's 2 pinned cores the three shares read it in 0.711-0.732 s (median of 12 fresh
# processes each, alternating; device_logs/session24/call_3/share.txt), again within the noise.
FIRST_SHARE = 0.6

# (line number, record) of each record read; the lines read when done (trace.iter_records).
Reading = Generator[tuple[int, dict], None, int]


@dataclass
class Part:
    """What one process read of a trace: its records (line numbers from the part's first line), the
    lines it spanned, and its SampleColumns' export (the records' numbers, outside them)."""

    records: list[tuple[int, dict]]
    lines: int
    samples: tuple[bool, list[dict], array[int], array[float], array[float]]


def processes_for(path: str | os.PathLike, jobs: int) -> int:
    """The processes to read ``path`` with, for report's ``jobs`` (-1: auto): two for a large trace
    where this process may use two CPUs and fork, else one."""
    from c3prof import forked

    if jobs == 1 or not forked.can_fork() or forked.available_cpus() < 2:
        return 1
    try:
        return 2 if os.path.getsize(path) >= MIN_BYTES else 1
    except OSError:   # the reader names the problem
        return 1


def split_at(path: str | os.PathLike, share: float = FIRST_SHARE) -> int | None:
    """Where the second part starts: the first line that begins past ``share`` of the file; None
    when no line does (one long line)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(int(size * share))
        f.readline()
        at = f.tell()
    return at if 0 < at < size else None


def records_in_parts(path: str | os.PathLike, first_part: Callable[[int | None], Reading],
                     read_part: Callable[[int], Part], adopt: Callable[[tuple], None]) -> Iterator[tuple[int, dict]]:
    """Every record of ``path`` with its line number, in file order: the first half as this process
    reads it (``first_part(stop)``, yielding as it goes, so the trace is assembled meanwhile), the
    second read by a forked child at the same time (``read_part(start)``), its samples handed to
    ``adopt`` (the reader's SampleColumns) after the first half's. An error of either is raised here.

    Where the command started reading ``path``'s second part already (read_ahead.py, listed in
    ``ahead``), that part is the second: the first then ends where it starts."""
    ahead = _take_ahead(path)
    middle = ahead.start if ahead is not None else split_at(path)
    if middle is None:
        yield from first_part(None)
        return
    second: _Pending = ahead if ahead is not None else _in_background(read_part, middle)
    try:
        lines = yield from first_part(middle)
    except BaseException:
        _wait_quietly(second)   # no child outlives the read; the first half's error is the one raised
        raise
    part = second.result()
    if part is None:   # the child reading ahead ended without its part (read_ahead.py): read it here
        part = read_part(middle)
    adopt(part.samples)
    for lineno, rec in part.records:
        yield lines + lineno, rec


class _Pending(Protocol):
    """The second part being read: forked.Later, or a PartAhead."""

    def result(self) -> Any: ...


class PartAhead(Protocol):
    """A second part whose reading began before read_trace asked for it (read_ahead.ReadAhead)."""

    start: int   # the offset of its first line

    def result(self) -> Part | None: ...   # None: the reader ended without it (this process reads it)

    def unchanged(self) -> bool: ...   # the file is as it was when the reading began

    def stop(self) -> None: ...


# The parts read ahead (read_ahead.start lists them), by the file's absolute path; each is taken
# (_take_ahead) or stopped (read_ahead, at exit) once.
ahead: dict[str, PartAhead] = {}


def _take_ahead(path: str | os.PathLike) -> PartAhead | None:
    """The part of ``path`` read ahead, if one was begun on this very file and the file has not
    changed since; a part of a file that changed is stopped (the trace is then read as usual)."""
    part = ahead.pop(os.path.abspath(path), None) if ahead else None
    if part is not None and not part.unchanged():
        part.stop()
        return None
    return part


def _in_background(read_part: Callable[[int], Part], start: int) -> _Pending:
    """``read_part(start)`` in a child forked now (forked.in_background)."""
    from c3prof import forked

    return forked.in_background(lambda: read_part(start))


def _wait_quietly(later: _Pending) -> None:
    try:
        later.result()
    except Exception:   # noqa: BLE001 - its error is not the one to report
        pass
