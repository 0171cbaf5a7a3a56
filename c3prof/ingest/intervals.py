"""Sets of time intervals as sorted, disjoint (starts, ends) arrays: union and length.

Used for busy times (per class, per device), the C3 time and HTA's overlap; vectorized, O(n log n).
"""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint (starts, ends)."""
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    heads = np.nonzero(new)[0]
    return s[heads], np.maximum.reduceat(e, heads)


def length(u: tuple[np.ndarray, np.ndarray]) -> int:
    return int((u[1] - u[0]).sum())
