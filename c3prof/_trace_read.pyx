# cython: language_level=3, boundscheck=False, wraparound=False
"""The trace reader's per-record chores, in C: read_trace's fast path (c3prof/trace.py).

A 10^6-sample trace is 40,000 phase records. Reading one took three Python passes over its text
(``trace._text_kind``: a translate and five substring searches) and a Python conversion of its
samples (``trace_samples.SampleBatch``: each list appended to a pending list, then a type set and
an array per chunk). Here each is one loop: ``text_kind`` scans the text once, and ``SampleColumns``
checks every number as it copies it into one growing C array per kind of series. ``PhaseAcceptor``
checks a phase record's structure (trace_fast.PlainPhases) without the interpreter's per-operation cost.

Each gives exactly what its Python version gives (those stay, as the reference and for a source
checkout that was not built; tests/test_trace_read.py compares them on random and edge cases).
"""

from cpython cimport array as c_array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsDouble, PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject
from libc.string cimport memcpy
from libcpp.vector cimport vector

import array

from c3prof.trace_fast import PHASE_FIELD_TYPES, PHASE_FIELDS, SHARED_NAMES, remember_identity

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

    def export(self):
        """What another process's SampleColumns needs to take these records over (``adopt``; a
        trace read in two processes, trace_parts.py): whether a number broke the rule, the taken
        samples dicts in order, each one's repetition count, and the two columns, as the standard
        library's arrays (int64 and float64): a process reading ahead (read_ahead.py) has not
        imported numpy. Called instead of check(): the dicts keep None in place of their series."""
        cdef Py_ssize_t i, n = len(self._records)
        cdef c_array.array counts = c_array.clone(_INT64_TEMPLATE, n, zero=False)
        dicts = []
        for i in range(n):
            samples, layout = self._records[i]
            dicts.append(samples)
            counts.data.as_longlongs[i] = layout[0][3]
        return self._bad, dicts, counts, _std_array(&self._durations), _std_array(&self._starts)

    def adopt(self, bint bad, list dicts, const long long[::1] counts, const double[::1] durations,
              const double[::1] starts):
        """Take over another SampleColumns' records (its ``export``), after those taken so far: their
        series get views of the same numbers at check(). Each dict's series lie in the columns in
        the order of its keys, durations in one and start offsets in the other, as add() put them."""
        cdef Py_ssize_t i, n, at_d = self._durations.size(), at_s = self._starts.size()
        cdef Py_ssize_t end_d = at_d + durations.shape[0], end_s = at_s + starts.shape[0]
        if bad:   # a number broke the rule there (its columns stop at it): check() will say False
            self._bad = True
            return
        if len(dicts) != counts.shape[0]:
            raise ValueError("adopt: one repetition count per samples dict")
        records = []
        for i in range(len(dicts)):
            n = counts[i]
            layout = []
            for name in <dict>dicts[i]:
                if name in self._positive:
                    layout.append((name, True, at_d, n))
                    at_d += n
                else:
                    layout.append((name, False, at_s, n))
                    at_s += n
            records.append((dicts[i], layout))
        if at_d != end_d or at_s != end_s:
            raise ValueError("adopt: the columns do not hold the dicts' series")
        if durations.shape[0]:
            self._durations.insert(self._durations.end(), &durations[0], &durations[0] + durations.shape[0])
        if starts.shape[0]:
            self._starts.insert(self._starts.end(), &starts[0], &starts[0] + starts.shape[0])
        self._records += records


# The standard library's arrays that export() clones: int64 and float64.
cdef c_array.array _INT64_TEMPLATE = array.array("q")
cdef c_array.array _FLOAT64_TEMPLATE = array.array("d")


cdef c_array.array _std_array(vector[double] *values):
    """A copy of ``values`` as a standard-library float64 array (export's columns)."""
    cdef Py_ssize_t n = values.size()
    cdef c_array.array out = c_array.clone(_FLOAT64_TEMPLATE, n, zero=False)
    if n:
        memcpy(out.data.as_doubles, values.data(), n * sizeof(double))
    return out


cdef object _read_only(vector[double] *values):
    """A read-only float64 copy of ``values`` (views of it are every series' values: none may change another)."""
    import numpy as np   # here, not at import: a process reading ahead (read_ahead.py) never checks

    cdef Py_ssize_t n = values.size()
    array = np.empty(n, dtype=np.float64)
    cdef double[::1] out = array
    if n:
        memcpy(&out[0], values.data(), n * sizeof(double))
    array.flags.writeable = False
    return array


# The required phase fields and their exact types (trace_fast's), as tuples the loop indexes.
cdef tuple _PHASE_FIELDS = tuple(PHASE_FIELDS)
cdef tuple _PHASE_FIELD_TYPES = tuple(PHASE_FIELD_TYPES)
cdef tuple _SHARED_NAMES = tuple(SHARED_NAMES)


cdef class PhaseAcceptor:
    """trace_fast.PlainPhases in C: the same accept(), field for field and in the same order, so the
    same records taken and the same left to validate_record (tests/test_trace_fast.py runs both on
    every case). A Python accept was about 9 us of the 20 us that reading a phase record took."""

    cdef object _batch, _dumps, _check_identity, _max_visits
    cdef tuple _phases, _series
    cdef long long _max_round
    cdef set _identities
    cdef dict _shared, _names, _rounds

    def __init__(self, batch, rules):
        self._batch = batch
        self._phases, self._series = tuple(rules.phases), tuple(rules.series)
        self._max_visits, self._max_round = rules.max_visits, rules.max_round
        self._check_identity, self._dumps = rules.check_identity, rules.dumps
        self._identities = set()
        self._shared = {}     # JSON text -> the first dict read with it
        self._names = {}      # a name -> the first string read with it
        self._rounds = {}     # a list of rounds (as a tuple) -> the first list read with it

    def accept(self, rec):
        """True: ``rec`` is a valid phase record, its samples now in the batch. False: not sure
        (nothing taken); the caller runs validate_record."""
        cdef Py_ssize_t i, n
        if type(rec) is not dict:
            return False
        cdef dict r = <dict>rec
        if r.get("record") != "phase":
            return False
        for i in range(len(_PHASE_FIELDS)):
            if type(r.get(_PHASE_FIELDS[i])) is not _PHASE_FIELD_TYPES[i]:
                return False
        rounds, group, visit = r.get("rounds"), r.get("round_group"), r.get("visit")
        if not (rounds is None or type(rounds) is list) or not (group is None or type(group) is str) \
                or not (visit is None or type(visit) is int):
            return False
        if r["phase"] not in self._phases:
            return False
        if visit is not None and not 1 <= visit <= self._max_visits:
            return False
        samples = <dict>r["samples"]
        total = samples.get("total_ms")
        if type(total) is not list or PyList_GET_SIZE(total) == 0:
            return False
        n = PyList_GET_SIZE(total)
        if rounds is not None and not _rounds_ok(<list>rounds, n, self._max_round):
            return False
        scenario_json = self._dumps(r["scenario"])
        identity = (r["run"], r["strategy"], r["variant"], scenario_json)
        if identity not in self._identities and not remember_identity(self._identities, self._check_identity, r,
                                                                       identity):
            return False
        if not self._batch.add(samples, n, self._series):   # last check: it takes the samples when it says True
            return False
        # A run's phases (and a scenario's runs) repeat these dicts: keep one of each (trace_fast says why).
        r["scenario"] = self._shared.setdefault(scenario_json, r["scenario"])
        r["params"] = self._shared.setdefault(self._dumps(r["params"]), r["params"])
        r["stop"] = self._shared.setdefault(self._dumps(r["stop"]), r["stop"])
        # Names and lists of rounds likewise (trace_fast says why).
        cdef Py_ssize_t k
        for k in range(len(_SHARED_NAMES)):
            value = r.get(_SHARED_NAMES[k])
            if value is not None:
                r[_SHARED_NAMES[k]] = self._names.setdefault(value, value)
        if rounds is not None:
            r["rounds"] = self._rounds.setdefault(tuple(<list>rounds), rounds)
        return True


cdef bint _rounds_ok(list rounds, Py_ssize_t n, long long max_round) except -1:
    """``rounds`` holds ``n`` ints (exactly: no bools), each in [0, max_round]."""
    cdef Py_ssize_t i
    cdef PyObject *item
    cdef int overflow
    cdef long long value
    if PyList_GET_SIZE(rounds) != n:
        return False
    for i in range(n):
        item = PyList_GET_ITEM(rounds, i)
        if not PyLong_CheckExact(item):
            return False
        value = PyLong_AsLongLongAndOverflow(<object>item, &overflow)
        if overflow != 0 or value < 0 or value > max_round:
            return False
    return True
