"""Checking a whole trace's phase samples at once, and handing them on as numpy arrays.

``trace.read_trace`` reads a trace twice only when it is bad. Its first pass checks each phase
record's samples for their structure (known series, lists of one length) and leaves the numbers to a
``SampleBatch``: every duration of the trace in one list, every start offset in another, each
converted into a numpy array a chunk (CHUNK values) at a time, so the record's lists and their Python
floats are dropped as the reading goes. The batch checks each chunk in two calls (types, then the
array against its range) instead of 10^5 small checks, and at the end puts one read-only view per
series back into the record's samples dict (Phase.samples), which the analysis uses as it is
(dataset._phase_data). When anything in the
first pass fails, the trace is read again record by record with every check in place, so the error
is the one the reader has always reported (the first bad line, named): the batch is a fast path to
the same result, never a second set of rules.

The rule the batch checks is _plain_samples' (c3prof.trace): every number an int or a float (not a
bool), finite, durations in [MIN_DURATION_MS, MAX_MS], start offsets in [0, MAX_MS].
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

_NUMBER_TYPES = {float, int}


class Samples(Protocol):
    """What the reader leaves phase samples to: SampleBatch below, or its compiled twin
    _trace_read.SampleColumns (trace.new_sample_batch picks)."""

    def add(self, samples: dict, n: int, known: tuple[str, ...]) -> bool: ...

    def check(self) -> bool: ...


# Values converted to an array at a time: the Python floats are dropped as the reading goes, instead
# of all being kept until the end (10^6 samples were 70 MiB of float objects and lists).
CHUNK = 1 << 16


class _Numbers:
    """Numbers of one range, collected in a list and turned into checked float64 arrays a chunk at a time."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = lo, hi
        self.pending: list = []
        self.chunks: list[np.ndarray] = []
        self.size = 0          # values taken so far (pending and converted)
        self.bad = False       # a value broke the rule (its chunk is not kept)

    def flush_full(self) -> None:
        """Convert the pending values once there are a chunk of them (SampleBatch.add extends them)."""
        if len(self.pending) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self.bad:
            array = _checked_array(self.pending, self.lo, self.hi)
            self.bad = array is None
            if array is not None:
                self.chunks.append(array)
        self.pending = []

    def array(self) -> np.ndarray | None:
        """Every value taken, as one read-only array; None when any broke the rule."""
        self._flush()
        if self.bad:
            return None
        array = np.concatenate(self.chunks) if len(self.chunks) != 1 else self.chunks[0]
        self.chunks = []
        array.flags.writeable = False   # views of it are every series' values: none may change another
        return array


class SampleBatch:
    """The samples of the phase records read so far, checked and converted together (check())."""

    def __init__(self, positive: frozenset[str], lo: float, hi: float) -> None:
        self._positive = positive        # series that are durations: in [lo, hi]; the others in [0, hi]
        self._durations = _Numbers(lo, hi)
        self._starts = _Numbers(0.0, hi)
        # Per record: its samples dict, and per series (name, is a duration, offset in its list, length).
        self._records: list[tuple[dict, list[tuple[str, bool, int, int]]]] = []

    def add(self, samples: dict, n: int, known: tuple[str, ...]) -> bool:
        """Take a record's samples if every series is a known one and a list of ``n`` values; False
        (nothing taken) otherwise, for the caller's exact checks. Taken, the lists leave ``samples``
        (its values are None until check() puts the arrays in their place)."""
        for name, values in samples.items():
            if type(values) is not list or len(values) != n or name not in known:
                return False
        layout = []
        durations, starts = self._durations, self._starts
        for name, values in samples.items():
            duration = name in self._positive
            numbers = durations if duration else starts
            layout.append((name, duration, numbers.size, n))
            numbers.pending += values
            numbers.size += n
            samples[name] = None
        self._records.append((samples, layout))
        durations.flush_full()
        starts.flush_full()
        return True

    def check(self) -> bool:
        """Put each record's series back into its samples dict as read-only float64 views (in the
        order the series came); False when any number breaks the rule (the caller then reads the
        trace again with the exact checks)."""
        durations, starts = self._durations.array(), self._starts.array()
        if durations is None or starts is None:
            return False
        for samples, layout in self._records:
            for name, duration, at, n in layout:
                samples[name] = (durations if duration else starts)[at:at + n]
        self._records = []
        return True


def read_only_arrays(samples: dict) -> None:
    """A phase's series (lists of numbers, already checked) as read-only float64 arrays, in place:
    what check() gives for the records it took."""
    for name, values in samples.items():
        array = np.array(values, dtype=float)
        array.flags.writeable = False
        samples[name] = array


def _checked_array(values: list, lo: float, hi: float) -> np.ndarray | None:
    """``values`` as a float64 array when each is an int or float (not a bool) in [lo, hi]."""
    if not values:
        return np.empty(0)
    if not set(map(type, values)) <= _NUMBER_TYPES:
        return None
    try:
        array = np.array(values, dtype=float)
    except (OverflowError, ValueError):   # an integer beyond float range
        return None
    if not (array.min() >= lo and array.max() <= hi):   # NaN fails both comparisons
        return None
    return array
