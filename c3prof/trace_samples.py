"""Checking a whole trace's phase samples at once, and handing them on as numpy arrays.

``trace.read_trace`` reads a trace twice only when it is bad. Its first pass checks each phase
record's samples for their structure (known series, lists of one length) and leaves the numbers to a
``SampleBatch``: every duration of the trace in one list, every start offset in another. At the end
the batch checks them in two calls (types, then one numpy array per list against its range) instead
of 10^5 small checks, and cuts the arrays into one read-only view per series, which the analysis
uses as it is (dataset._phase_data) instead of converting each list again. When anything in the
first pass fails, the trace is read again record by record with every check in place, so the error
is the one the reader has always reported (the first bad line, named): the batch is a fast path to
the same result, never a second set of rules.

The rule the batch checks is _plain_samples' (c3prof.trace): every number an int or a float (not a
bool), finite, durations in [MIN_DURATION_MS, MAX_MS], start offsets in [0, MAX_MS].
"""

from __future__ import annotations

import numpy as np

_NUMBER_TYPES = {float, int}


class SampleBatch:
    """The samples of the phase records read so far, checked and converted together (check())."""

    def __init__(self, positive: frozenset[str], lo: float, hi: float) -> None:
        self._positive = positive        # series that are durations: in [lo, hi]; the others in [0, hi]
        self._lo, self._hi = lo, hi
        self._durations: list = []
        self._starts: list = []
        # Per record: (series name, is a duration, offset in its list, length).
        self._layout: list[list[tuple[str, bool, int, int]]] = []
        self._last: dict | None = None   # the samples added last

    def index_of(self, samples: dict) -> int | None:
        """The place of ``samples`` in the batch if it is the record added last, else None."""
        return len(self._layout) - 1 if samples is self._last else None

    def add(self, samples: dict, n: int, known: tuple[str, ...]) -> bool:
        """Take a record's samples if every series is a known one and a list of ``n`` values; False
        (nothing taken) otherwise, for the caller's exact checks."""
        layout = []
        for name, values in samples.items():
            if type(values) is not list or len(values) != n or name not in known:
                return False
        for name, values in samples.items():
            duration = name in self._positive
            target = self._durations if duration else self._starts
            layout.append((name, duration, len(target), n))
            target.extend(values)
        self._layout.append(layout)
        self._last = samples
        return True

    def check(self) -> list[dict[str, np.ndarray]] | None:
        """Per record added (in order), its series as read-only float64 views; None when any number
        breaks the rule (the caller then reads the trace again with the exact checks)."""
        durations = _checked_array(self._durations, self._lo, self._hi)
        starts = _checked_array(self._starts, 0.0, self._hi)
        if durations is None or starts is None:
            return None
        return [{name: (durations if duration else starts)[at:at + n] for name, duration, at, n in layout}
                for layout in self._layout]


def _checked_array(values: list, lo: float, hi: float) -> np.ndarray | None:
    """``values`` as a read-only float64 array when each is an int or float (not a bool) in [lo, hi]."""
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
    array.flags.writeable = False   # views of it are every series' values: none may change another
    return array
