# cython: language_level=3, boundscheck=False, wraparound=False
"""The trace reader's two per-record chores, in C: read_trace's fast path (c3prof/trace.py).

A 10^6-sample trace is 40,000 phase records. Reading one took three Python passes over its text
(``trace._text_kind``: a translate and five substring searches) and a Python conversion of its
samples (``trace_samples.SampleBatch``: each list appended to a pending list, then a type set and
an array per chunk). Here each is one loop: ``text_kind`` scans the text once, and ``SampleColumns``
checks every number as it copies it into one growing C array per kind of series.

Both give exactly what their Python versions give (those stay, as the reference and for a source
checkout that was not built; tests/test_trace_read.py compares them on random and edge cases).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsDouble
from cpython.object cimport PyObject
from libc.string cimport memcpy
from libcpp.vector cimport vector

import numpy as np

cdef extern from "Python.h":
    bint PyFloat_CheckExact(PyObject *)
    bint PyLong_CheckExact(PyObject *)

# The digit runs trace._text_kind looks for: 19 digits may not fit in an int64 (not "simple"); 300
# may overflow a float (not "plain").
cdef enum:
    INT64_DIGITS = 19
    LONG_NUMBER = 300


cdef inline bint _is_digit(unsigned char c) noexcept nogil:
    return c >= 48 and c <= 57     # '0'..'9'


def text_kind(bytes raw, Py_ssize_t max_depth):
    """trace._text_kind(raw) with MAX_DEPTH = ``max_depth``: (simple, plain) of a record's text.

    simple: at most ``max_depth`` brackets and no run of 19 digits. plain: at most ``max_depth``
    brackets, no ``\\u`` escape, no run of 300 digits and no exponent of three digits or more
    (``e000`` or ``e-000`` in the text with digits as 0, E as e and + as -)."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(raw), i, j, run = 0, longest = 0, brackets = 0
    cdef bint escape_u = False, big_exponent = False
    cdef unsigned char c
    with nogil:
        for i in range(n):
            c = s[i]
            if _is_digit(c):
                run += 1
                if run > longest:
                    longest = run
                continue
            run = 0
            if c == 91 or c == 123:                       # '[' '{'
                brackets += 1
            elif c == 92:                                 # '\\'
                if i + 1 < n and s[i + 1] == 117:         # 'u'
                    escape_u = True
            elif c == 101 or c == 69:                     # 'e' 'E'
                j = i + 1
                if j < n and (s[j] == 43 or s[j] == 45):  # '+' '-'
                    j += 1
                if j + 3 <= n and _is_digit(s[j]) and _is_digit(s[j + 1]) and _is_digit(s[j + 2]):
                    big_exponent = True
    if brackets > max_depth:
        return False, False
    return longest < INT64_DIGITS, not escape_u and not big_exponent and longest < LONG_NUMBER


cdef bint _take(list values, vector[double] *into, double lo, double hi) except -1:
    """Append ``values`` to ``into`` when every one is an int or a float (not a bool) in [lo, hi]
    (NaN is in no range); False at the first that is not (what was appended is then of no use)."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(values)
    cdef PyObject *item
    cdef double x
    for i in range(n):
        item = PyList_GET_ITEM(values, i)
        if PyFloat_CheckExact(item):
            x = PyFloat_AS_DOUBLE(<object>item)
        elif PyLong_CheckExact(item):
            try:
                x = PyLong_AsDouble(<object>item)   # correctly rounded, as numpy's float64 conversion
            except OverflowError:                   # an integer beyond float range
                return False
        else:
            return False
        if not (x >= lo and x <= hi):
            return False
        into.push_back(x)
    return True


cdef class SampleColumns:
    """trace_samples.SampleBatch in C: the same add() and check(), the same arrays and verdicts.

    Each number is checked (type and range) as it is copied into one C array for durations and one
    for start offsets; check() hands each record's series back as read-only float64 views of them."""

    cdef frozenset _positive
    cdef double _lo, _hi
    cdef vector[double] _durations, _starts
    cdef bint _bad
    cdef list _records

    def __init__(self, frozenset positive, double lo, double hi):
        self._positive = positive      # series that are durations: in [lo, hi]; the others in [0, hi]
        self._lo, self._hi = lo, hi
        self._bad = False
        # Per record: its samples dict, and per series (name, is a duration, offset, length).
        self._records = []

    def add(self, dict samples, Py_ssize_t n, tuple known):
        """Take a record's samples if every series is a known one and a list of ``n`` values; False
        (nothing taken) otherwise. Taken, the lists leave ``samples`` (None until check())."""
        cdef bint duration
        cdef vector[double] *into
        for name, values in samples.items():
            if type(values) is not list or PyList_GET_SIZE(values) != n or name not in known:
                return False
        layout = []
        for name, values in samples.items():
            duration = name in self._positive
            into = &self._durations if duration else &self._starts
            layout.append((name, duration, into.size(), n))
            if not self._bad:
                self._bad = not _take(values, into, self._lo if duration else 0.0, self._hi)
            samples[name] = None
        self._records.append((samples, layout))
        return True

    def check(self):
        """Put each record's series back into its samples dict as read-only float64 views (in the
        order the series came); False when any number broke the rule."""
        if self._bad:
            return False
        durations, starts = _read_only(&self._durations), _read_only(&self._starts)
        self._durations.clear()
        self._durations.shrink_to_fit()
        self._starts.clear()
        self._starts.shrink_to_fit()
        for samples, layout in self._records:
            for name, duration, at, n in layout:
                samples[name] = (durations if duration else starts)[at:at + n]
        self._records = []
        return True


cdef object _read_only(vector[double] *values):
    """A read-only float64 copy of ``values`` (views of it are every series' values: none may change another)."""
    cdef Py_ssize_t n = values.size()
    array = np.empty(n, dtype=np.float64)
    cdef double[::1] out = array
    if n:
        memcpy(&out[0], values.data(), n * sizeof(double))
    array.flags.writeable = False
    return array
