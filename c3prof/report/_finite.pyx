# cython: language_level=3, boundscheck=False, wraparound=False
"""Find a number that JSON cannot hold (NaN, +-inf) anywhere in a report, in C.

The report JSON of a large trace is written by orjson (json_out.py), about six times faster than the
json module, but orjson writes NaN and infinity as ``null`` without a word, where the json module
refuses them. A NaN in a report is a bug (every undefined number is ``None`` with a reason), and it
must not turn into a plausible ``null``. This walk finds one in about 2% of the time orjson takes to
write the report, so the writer can refuse it as the json module does.
"""

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_Check
from libc.math cimport isfinite

# Deeper than this, the walk stops looking (a report nests about 6 levels). orjson refuses nesting
# past 255 levels and a reference cycle; the writer then falls back to the json module, which
# names those problems itself.
cdef enum:
    MAX_DEPTH = 256


def non_finite_path(obj):
    """The keys and indices leading to the first float (or float key) that is NaN or infinite, in
    the order json would meet it; None when every float is finite."""
    path = []
    return path[::-1] if _find(obj, path, 0) else None


cdef bint _find(object obj, list path, int depth) except -1:
    """True when ``obj`` holds a non-finite float; ``path`` then gets its keys, innermost first."""
    cdef Py_ssize_t i
    if PyFloat_Check(obj):
        return not isfinite(PyFloat_AS_DOUBLE(obj))
    if depth >= MAX_DEPTH:
        return False
    if isinstance(obj, dict):
        for key, value in (<dict>obj).items():
            if PyFloat_Check(key) and not isfinite(PyFloat_AS_DOUBLE(key)):
                path.append(key)
                return True
            if _find(value, path, depth + 1):
                path.append(key)
                return True
        return False
    if isinstance(obj, (list, tuple)):
        for i in range(len(obj)):
            if _find(obj[i], path, depth + 1):
                path.append(i)
                return True
    return False
