# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Streaming scanner for PyTorch profiler (Kineto) Chrome-trace JSON.

Why a hand-written scanner: traces are hundreds of MB to GBs, and ``json.load`` builds a Python
object for every event (several times the file size in memory) although C3 analysis needs only GPU
activities, the CUDA launches that link them to CPU ops, and the few CPU ops that launched GEMMs and
collectives. This scanner walks the bytes once, in chunks, and keeps those events as integer columns
(C++ vectors); everything else is skipped with a bracket-matching pass that allocates nothing. Memory
is therefore bounded by the events kept plus one chunk (and the largest single event), not by the
file size.

What it extracts (the Kineto fields c3prof relies on; docs/ingest.md lists them):

* every event: ``ph``, ``cat``, ``name``, ``pid``, ``tid``, ``ts`` and ``dur`` (microseconds with
  up to three decimals, stored exactly as integer nanoseconds);
* ``args`` integers: ``External id``, ``correlation``, ``device``, ``stream``, ``bytes``,
  ``fromDevice``/``inDevice``/``toDevice`` (peer memcpy records);
* for collective kernels (those carrying ``Collective name``) and for the CPU ops that the caller's
  ``keep_cpu_op(name)`` accepts: the text of the ``args`` members c3prof reads (``Input Dims``,
  ``Input type``, ``Collective name``, ``dtype``, ``In msg nelems``, ``Out msg nelems``, ``Group size``,
  ``Process Group Name``), stored once per distinct text (repeated ops share it) and parsed later
  in Python;
* the raw JSON text of every top-level key other than ``traceEvents`` (``distributedInfo``,
  ``deviceProperties``, ``baseTimeNanoseconds``...).

The scanner validates the structure it walks (strings, brackets, separators) and reports the first
syntax error with its byte offset. Running out of input inside the document is not an error here:
``truncated`` says so and the events completed before the cut are kept (the caller warns).
"""

from libc.stdint cimport int64_t, int32_t, int8_t, INT64_MIN
from libc.stdlib cimport malloc, realloc, free, strtod
from libc.string cimport memchr, memcmp, memcpy, memmove
from libcpp.vector cimport vector

import re

import numpy as np

# A name with an escape or a raw control character goes through json.loads (which refuses the latter).
_NEEDS_JSON_DECODE = re.compile(rb"[\x00-\x1f\\]")

# Event categories the scanner keeps (Kineto's ``cat``; old PyTorch (1.8/1.9) wrote capitalized
# names such as "Kernel", "Memcpy", "Runtime", "Operator": matched case-insensitively).
cdef enum:
    CAT_SKIP = 0
    CAT_KERNEL = 1
    CAT_MEMCPY = 2
    CAT_MEMSET = 3
    CAT_RUNTIME = 4
    CAT_CPU_OP = 5

# GPU activity kinds in the ``gpu_kind`` column (mirrored in events.py).
GPU_KERNEL = 0
GPU_MEMCPY = 1
GPU_MEMSET = 2

# Return codes of the byte-level parsers (valid positions are >= 0).
cdef enum:
    NEED_MORE = -1
    BAD = -2
    OUT_OF_RANGE = -4  # (-3 is the exception value of _event)

# Times are kept as int64 nanoseconds; a value beyond +-2^62 ns (146 years) is refused, so that a
# start plus a duration can never overflow.
cdef int64_t TIME_LIMIT_NS = 4611686018427387904
# A duration the event does not give (g_dur / c_dur): counted and reported by the reader.
MISSING_DURATION = INT64_MIN

# Bytes that may appear outside strings in JSON: whitespace, structure, numbers, true/false/null.
cdef bint JSON_BARE[256]
for _c in range(256):
    JSON_BARE[_c] = chr(_c) in ' \t\r\n{}[]:,-+.0123456789eEtrufalsn'

# Parser states of the document walk (each step restarts from its beginning after a refill).
cdef enum:
    ST_TOP_OPEN = 0
    ST_TOP_KEY = 1
    ST_TOP_SEP = 2
    ST_EVENTS_FIRST = 3
    ST_EVENT = 4
    ST_EVENTS_SEP = 5
    ST_DONE = 6

class KinetoSyntaxError(ValueError):
    """The bytes are not JSON (or not a Kineto trace); ``offset`` is the byte where it went wrong."""

    def __init__(self, message, offset):
        super().__init__(message)
        self.offset = offset


# ``args`` members whose text c3prof keeps for GEMM and collective ops (at most MAX_WANTED per event).
cdef enum:
    MAX_WANTED = 12


cdef struct EventFields:
    int cat
    char ph
    Py_ssize_t name_s
    Py_ssize_t name_e
    bint name_escaped
    int64_t pid
    int64_t tid
    int64_t ts_ns
    int64_t dur_ns
    bint has_ts
    bint has_dur
    Py_ssize_t args_s
    Py_ssize_t args_e
    int64_t external_id
    int64_t correlation
    int64_t device
    int64_t stream
    int64_t nbytes
    int64_t from_device
    int64_t to_device
    int64_t in_device
    bint has_collective
    int n_wanted
    Py_ssize_t wanted_s[MAX_WANTED]
    Py_ssize_t wanted_e[MAX_WANTED]


cdef inline bint is_ws(unsigned char c) nogil:
    return c == 32 or c == 10 or c == 13 or c == 9


cdef inline Py_ssize_t skip_ws(const unsigned char* b, Py_ssize_t i, Py_ssize_t n) nogil:
    while i < n and is_ws(b[i]):
        i += 1
    return i


cdef inline bint key_is(const unsigned char* b, Py_ssize_t s, Py_ssize_t e, const char* lit, Py_ssize_t litlen) nogil:
    return (e - s) == litlen and memcmp(b + s, lit, litlen) == 0


cdef inline unsigned char lower(unsigned char c) nogil:
    if 65 <= c <= 90:
        return c + 32
    return c


cdef inline bint key_is_ci(const unsigned char* b, Py_ssize_t s, Py_ssize_t e, const char* lit, Py_ssize_t litlen) nogil:
    cdef Py_ssize_t k
    if (e - s) != litlen:
        return False
    for k in range(litlen):
        if lower(b[s + k]) != <unsigned char> lit[k]:
            return False
    return True


cdef inline Py_ssize_t skip_string(const unsigned char* b, Py_ssize_t i, Py_ssize_t n) nogil:
    """b[i] is the opening quote; return the index after the closing quote."""
    cdef const unsigned char* p
    cdef Py_ssize_t j, k
    i += 1
    while True:
        if i >= n:
            return NEED_MORE
        p = <const unsigned char*> memchr(b + i, 34, n - i)
        if p == NULL:
            return NEED_MORE
        j = p - b
        # A quote preceded by an odd number of backslashes is escaped.
        k = j - 1
        while k >= i and b[k] == 92:
            k -= 1
        if ((j - 1 - k) & 1) == 0:
            return j + 1
        i = j + 1


cdef inline bint is_scalar_end(unsigned char c) nogil:
    return c == 44 or c == 125 or c == 93 or is_ws(c)  # , } ] whitespace


cdef Py_ssize_t skip_scalar(const unsigned char* b, Py_ssize_t i, Py_ssize_t n) nogil:
    """A number, true, false or null: checked loosely (its first character), then skipped."""
    cdef unsigned char c = b[i]
    if not (c == 45 or (48 <= c <= 57) or c == 116 or c == 102 or c == 110):  # - digit t f n
        return BAD
    while i < n and not is_scalar_end(b[i]):
        if b[i] == 34 or b[i] == 123 or b[i] == 91 or b[i] == 58:  # " { [ : inside a scalar
            return BAD
        i += 1
    if i >= n:
        return NEED_MORE
    return i


cdef Py_ssize_t skip_container(const unsigned char* b, Py_ssize_t i, Py_ssize_t n, int depth0, unsigned char first) nogil:
    """Skip to the end of an object or array whose opening bracket ``first`` is already passed at
    depth ``depth0`` (1 when called from just after the bracket). Brackets must match in kind."""
    cdef unsigned char stack[512]
    cdef int depth = depth0
    cdef unsigned char c
    stack[0] = first
    while i < n:
        c = b[i]
        if c == 34:
            i = skip_string(b, i, n)
            if i < 0:
                return i
            continue
        if not JSON_BARE[c]:
            return BAD
        if c == 123 or c == 91:
            if depth >= 512:
                return BAD
            stack[depth] = c
            depth += 1
        elif c == 125 or c == 93:
            if depth <= 0:
                return BAD
            depth -= 1
            if (c == 125 and stack[depth] != 123) or (c == 93 and stack[depth] != 91):
                return BAD
            if depth == 0:
                return i + 1
        i += 1
    return NEED_MORE


cdef inline Py_ssize_t skip_value(const unsigned char* b, Py_ssize_t i, Py_ssize_t n) nogil:
    cdef unsigned char c
    if i >= n:
        return NEED_MORE
    c = b[i]
    if c == 34:
        return skip_string(b, i, n)
    if c == 123 or c == 91:
        return skip_container(b, i + 1, n, 1, c)
    return skip_scalar(b, i, n)


cdef Py_ssize_t parse_time_ns(const unsigned char* b, Py_ssize_t i, Py_ssize_t n, int64_t* out) nogil:
    """A JSON number of microseconds -> integer nanoseconds, exact for up to 3 decimals (Kineto's
    format). Other forms (exponents, more decimals) go through strtod."""
    cdef Py_ssize_t s = i
    cdef int64_t whole = 0
    cdef int64_t frac = 0
    cdef int nfrac = 0
    cdef bint neg = False
    cdef char tmp[64]
    cdef Py_ssize_t e
    cdef double value
    if i < n and b[i] == 45:
        neg = True
        i += 1
    if i >= n:
        return NEED_MORE
    if not (48 <= b[i] <= 57):
        return BAD
    while i < n and 48 <= b[i] <= 57:
        if whole > TIME_LIMIT_NS // 10000:
            return OUT_OF_RANGE
        whole = whole * 10 + (b[i] - 48)
        i += 1
    if i < n and b[i] == 46:
        i += 1
        while i < n and 48 <= b[i] <= 57:
            if nfrac < 3:
                frac = frac * 10 + (b[i] - 48)
            nfrac += 1
            i += 1
    if i >= n:
        return NEED_MORE
    if b[i] == 101 or b[i] == 69 or nfrac > 3:  # exponent or sub-nanosecond digits: use strtod
        e = skip_scalar(b, s, n)
        if e < 0:
            return e
        if e - s >= 63:
            return BAD
        memcpy(tmp, b + s, e - s)
        tmp[e - s] = 0
        value = strtod(tmp, NULL) * 1000.0
        if not (-<double> TIME_LIMIT_NS < value < <double> TIME_LIMIT_NS):  # also NaN and inf (1e400)
            return OUT_OF_RANGE
        out[0] = <int64_t> (value + (0.5 if not neg else -0.5))
        return e
    if not is_scalar_end(b[i]):
        return BAD
    while nfrac < 3:
        frac *= 10
        nfrac += 1
    out[0] = -(whole * 1000 + frac) if neg else whole * 1000 + frac
    return i


cdef Py_ssize_t parse_int_value(const unsigned char* b, Py_ssize_t i, Py_ssize_t n, int64_t* out) nogil:
    """An integer field; a fraction is dropped; a non-number (a string such as "N/A") gives -1."""
    cdef int64_t v = 0
    cdef bint neg = False
    cdef Py_ssize_t e
    if i >= n:
        return NEED_MORE
    if b[i] == 45:
        neg = True
        i += 1
        if i >= n:
            return NEED_MORE
    if not (48 <= b[i] <= 57):
        out[0] = -1
        return skip_value(b, i - 1 if neg else i, n)
    while i < n and 48 <= b[i] <= 57:
        v = v * 10 + (b[i] - 48)
        i += 1
    if i >= n:
        return NEED_MORE
    # A fraction or exponent: the integer part is what c3prof uses.
    while i < n and not is_scalar_end(b[i]):
        i += 1
    if i >= n:
        return NEED_MORE
    out[0] = -v if neg else v
    return i


cdef int category(const unsigned char* b, Py_ssize_t s, Py_ssize_t e) nogil:
    if key_is_ci(b, s, e, b"kernel", 6):
        return CAT_KERNEL
    if key_is_ci(b, s, e, b"gpu_memcpy", 10) or key_is_ci(b, s, e, b"memcpy", 6):
        return CAT_MEMCPY
    if key_is_ci(b, s, e, b"gpu_memset", 10) or key_is_ci(b, s, e, b"memset", 6):
        return CAT_MEMSET
    if (key_is_ci(b, s, e, b"cuda_runtime", 12) or key_is_ci(b, s, e, b"cuda_driver", 11)
            or key_is_ci(b, s, e, b"runtime", 7)):
        return CAT_RUNTIME
    if (key_is_ci(b, s, e, b"cpu_op", 6) or key_is_ci(b, s, e, b"user_annotation", 15)
            or key_is_ci(b, s, e, b"operator", 8)):
        return CAT_CPU_OP
    return CAT_SKIP


cdef inline bint is_wanted_arg(const unsigned char* b, Py_ssize_t s, Py_ssize_t e) nogil:
    """The args c3prof reads later: shapes and dtypes of GEMM ops, collective metadata. Leaving out
    ids (External id, Ev Idx, Sequence number...) makes the kept text of repeated ops identical, so
    it is stored once (interned) however many times the op ran."""
    return (key_is(b, s, e, b"Input Dims", 10) or key_is(b, s, e, b"Input type", 10)
            or key_is(b, s, e, b"Collective name", 15) or key_is(b, s, e, b"dtype", 5)
            or key_is(b, s, e, b"In msg nelems", 13) or key_is(b, s, e, b"Out msg nelems", 14)
            or key_is(b, s, e, b"Group size", 10) or key_is(b, s, e, b"Process Group Name", 18))


cdef Py_ssize_t parse_args(const unsigned char* b, Py_ssize_t i, Py_ssize_t n, EventFields* f) nogil:
    """b[i] == '{' of an event's args: pick the integer fields c3prof links and sizes with."""
    cdef Py_ssize_t ks, ke, j
    i = skip_ws(b, i + 1, n)
    if i >= n:
        return NEED_MORE
    if b[i] == 125:
        return i + 1
    while True:
        if b[i] != 34:
            return BAD
        ks = i + 1
        j = skip_string(b, i, n)
        if j < 0:
            return j
        ke = j - 1
        i = skip_ws(b, j, n)
        if i >= n:
            return NEED_MORE
        if b[i] != 58:
            return BAD
        i = skip_ws(b, i + 1, n)
        if i >= n:
            return NEED_MORE
        if key_is(b, ks, ke, b"External id", 11):
            j = parse_int_value(b, i, n, &f.external_id)
        elif key_is(b, ks, ke, b"correlation", 11):
            j = parse_int_value(b, i, n, &f.correlation)
        elif key_is(b, ks, ke, b"device", 6):
            j = parse_int_value(b, i, n, &f.device)
        elif key_is(b, ks, ke, b"stream", 6):
            j = parse_int_value(b, i, n, &f.stream)
        elif key_is(b, ks, ke, b"bytes", 5):
            j = parse_int_value(b, i, n, &f.nbytes)
        elif key_is(b, ks, ke, b"fromDevice", 10):
            j = parse_int_value(b, i, n, &f.from_device)
        elif key_is(b, ks, ke, b"toDevice", 8):
            j = parse_int_value(b, i, n, &f.to_device)
        elif key_is(b, ks, ke, b"inDevice", 8):
            j = parse_int_value(b, i, n, &f.in_device)
        else:
            if key_is(b, ks, ke, b"Collective name", 15):
                f.has_collective = True
            j = skip_value(b, i, n)
            if j >= 0 and f.n_wanted < MAX_WANTED and is_wanted_arg(b, ks, ke):
                f.wanted_s[f.n_wanted] = ks - 1  # from the key's opening quote ...
                f.wanted_e[f.n_wanted] = j       # ... to the end of its value
                f.n_wanted += 1
        if j < 0:
            return j
        i = skip_ws(b, j, n)
        if i >= n:
            return NEED_MORE
        if b[i] == 44:
            i = skip_ws(b, i + 1, n)
            if i >= n:
                return NEED_MORE
            continue
        if b[i] == 125:
            return i + 1
        return BAD


cdef class KinetoScanner:
    """Feed it chunks of a Kineto JSON document (``feed``), then call ``finish`` and ``columns``.

    ``keep_cpu_op(name: str) -> bool`` decides, once per distinct name, whether a CPU op is kept.
    """

    cdef unsigned char* data
    cdef Py_ssize_t cap
    cdef Py_ssize_t start
    cdef Py_ssize_t end
    cdef int64_t base_offset
    cdef int state
    cdef bint eof
    cdef public bint truncated
    cdef public bint saw_trace_events
    cdef public bint legacy_array
    cdef public int64_t events_seen
    cdef object keep_cpu_op
    cdef dict name_ids
    cdef list names
    cdef list keep_name
    cdef public dict top_level
    cdef dict args_ids
    cdef list args_texts

    # GPU activities (kernels, memcpys, memsets)
    cdef vector[int8_t] g_kind
    cdef vector[int32_t] g_name
    cdef vector[int64_t] g_device
    cdef vector[int64_t] g_stream
    cdef vector[int64_t] g_start
    cdef vector[int64_t] g_dur
    cdef vector[int64_t] g_corr
    cdef vector[int64_t] g_ext
    cdef vector[int64_t] g_bytes
    cdef vector[int64_t] g_src
    cdef vector[int64_t] g_dst
    cdef vector[int32_t] g_args
    # CUDA runtime/driver calls: the link from a CPU thread to a GPU activity
    cdef vector[int64_t] l_corr
    cdef vector[int64_t] l_ext
    cdef vector[int64_t] l_pid
    cdef vector[int64_t] l_tid
    cdef vector[int64_t] l_start
    cdef vector[int32_t] l_name
    # CPU ops that keep_cpu_op accepted
    cdef vector[int32_t] c_name
    cdef vector[int64_t] c_pid
    cdef vector[int64_t] c_tid
    cdef vector[int64_t] c_start
    cdef vector[int64_t] c_dur
    cdef vector[int64_t] c_ext
    cdef vector[int32_t] c_args

    def __cinit__(self, keep_cpu_op, Py_ssize_t initial_capacity=1 << 22):
        self.cap = initial_capacity if initial_capacity > 64 else 64
        self.data = <unsigned char*> malloc(self.cap)
        if self.data == NULL:
            raise MemoryError()
        self.start = 0
        self.end = 0
        self.base_offset = 0
        self.state = ST_TOP_OPEN
        self.eof = False
        self.truncated = False
        self.saw_trace_events = False
        self.legacy_array = False
        self.events_seen = 0
        self.keep_cpu_op = keep_cpu_op
        self.name_ids = {}
        self.names = []
        self.keep_name = []
        self.top_level = {}
        self.args_ids = {}
        self.args_texts = []

    def __dealloc__(self):
        if self.data != NULL:
            free(self.data)

    @property
    def done(self):
        return self.state == ST_DONE

    @property
    def bytes_consumed(self):
        return self.base_offset + self.start

    @property
    def pending(self):
        """Bytes held for an event not yet complete (it is re-parsed from its start on each feed)."""
        return self.end - self.start

    def feed(self, bytes chunk):
        """Append ``chunk`` and parse every complete step in the buffer."""
        cdef Py_ssize_t k = len(chunk)
        cdef Py_ssize_t keep = self.end - self.start
        cdef Py_ssize_t newcap
        cdef unsigned char* grown
        if k == 0:
            return
        if self.state == ST_DONE:
            # Trailing bytes after the document: only whitespace is allowed.
            self._check_trailing(chunk)
            return
        # Drop what is parsed, then make room (grow for an event larger than the buffer).
        if self.start > 0:
            memmove(self.data, self.data + self.start, keep)
            self.base_offset += self.start
            self.start = 0
            self.end = keep
        if keep + k > self.cap:
            newcap = self.cap
            while newcap < keep + k:
                newcap *= 2
            grown = <unsigned char*> realloc(self.data, newcap)
            if grown == NULL:
                raise MemoryError()
            self.data = grown
            self.cap = newcap
        memcpy(self.data + self.end, <const char*> chunk, k)
        self.end += k
        self._run()

    def finish(self):
        """No more input: a document cut short is marked ``truncated`` (its complete events stay)."""
        self.eof = True
        if self.state != ST_DONE:
            self._run()
        if self.state != ST_DONE:
            if self.state == ST_TOP_OPEN and skip_ws(self.data, self.start, self.end) >= self.end:
                raise KinetoSyntaxError("the file is empty", self.base_offset + self.end)
            self.truncated = True

    def _check_trailing(self, bytes chunk):
        cdef const unsigned char* b = <const unsigned char*> (<const char*> chunk)
        cdef Py_ssize_t n = len(chunk)
        cdef Py_ssize_t i = skip_ws(b, 0, n)
        if i < n:
            raise KinetoSyntaxError("unexpected data after the end of the JSON document", self.base_offset + self.end + i)

    cdef _fail(self, str what, Py_ssize_t at):
        raise KinetoSyntaxError(what, self.base_offset + at)

    cdef int _run(self) except -1:
        cdef const unsigned char* b = self.data
        cdef Py_ssize_t n = self.end
        cdef Py_ssize_t i, j, ks, ke
        while self.state != ST_DONE:
            i = skip_ws(b, self.start, n)
            if i >= n:
                self.start = i
                return 0
            if self.state == ST_TOP_OPEN:
                if b[i] == 91:
                    # The legacy Chrome-trace format: the document is the array of events.
                    self.legacy_array = True
                    self.saw_trace_events = True
                    self.start = i + 1
                    self.state = ST_EVENTS_FIRST
                    continue
                if b[i] != 123:
                    self._fail("not a JSON object or array (a Kineto trace starts with '{')", i)
                self.start = i + 1
                self.state = ST_TOP_KEY
            elif self.state == ST_TOP_KEY:
                if b[i] == 125:
                    self.start = i + 1
                    self.state = ST_DONE
                    continue
                if b[i] != 34:
                    self._fail("expected a key string in the top-level object", i)
                ks = i + 1
                j = skip_string(b, i, n)
                if j == NEED_MORE:
                    return 0
                ke = j - 1
                j = skip_ws(b, j, n)
                if j >= n:
                    return 0
                if b[j] != 58:
                    self._fail("expected ':' after a top-level key", j)
                j = skip_ws(b, j + 1, n)
                if j >= n:
                    return 0
                if key_is(b, ks, ke, b"traceEvents", 11):
                    if b[j] != 91:
                        self._fail("'traceEvents' is not an array", j)
                    self.start = j + 1
                    self.state = ST_EVENTS_FIRST
                    self.saw_trace_events = True
                else:
                    i = j
                    j = skip_value(b, i, n)
                    if j == NEED_MORE:
                        return 0
                    if j == BAD:
                        self._fail("invalid JSON value in the top-level object", i)
                    self.top_level[(<const char*> b)[ks:ke].decode("utf-8", "replace")] = (<const char*> b)[i:j]
                    self.start = j
                    self.state = ST_TOP_SEP
            elif self.state == ST_TOP_SEP:
                if b[i] == 44:
                    self.state = ST_TOP_KEY
                elif b[i] == 125:
                    self.state = ST_DONE
                else:
                    self._fail("expected ',' or '}' in the top-level object", i)
                self.start = i + 1
            elif self.state == ST_EVENTS_FIRST:
                if b[i] == 93:
                    self.start = i + 1
                    self.state = ST_DONE if self.legacy_array else ST_TOP_SEP
                else:
                    self.start = i
                    self.state = ST_EVENT
            elif self.state == ST_EVENT:
                if b[i] != 123:
                    self._fail("expected an event object in 'traceEvents'", i)
                j = self._event(b, i, n)
                if j == NEED_MORE:
                    self.start = i
                    return 0
                self.events_seen += 1
                self.start = j
                self.state = ST_EVENTS_SEP
            elif self.state == ST_EVENTS_SEP:
                if b[i] == 44:
                    self.state = ST_EVENT
                elif b[i] == 93:
                    self.state = ST_DONE if self.legacy_array else ST_TOP_SEP
                else:
                    self._fail("expected ',' or ']' between events", i)
                self.start = i + 1
        # Only whitespace may follow the document.
        i = skip_ws(b, self.start, n)
        if i < n:
            self._fail("unexpected data after the end of the JSON document", i)
        self.start = i
        return 0

    cdef Py_ssize_t _event(self, const unsigned char* b, Py_ssize_t i, Py_ssize_t n) except -3:
        """Parse the event at b[i] == '{'; keep it if wanted. Returns the index after it."""
        cdef EventFields f
        cdef Py_ssize_t ks, ke, j, at
        cdef bint seen_cat = False
        f.cat = CAT_SKIP
        f.ph = 0
        f.name_s = -1
        f.name_e = -1
        f.name_escaped = False
        f.pid = -1
        f.tid = -1
        f.ts_ns = 0
        f.dur_ns = 0
        f.has_ts = False
        f.has_dur = False
        f.args_s = -1
        f.args_e = -1
        f.external_id = -1
        f.correlation = -1
        f.device = -1
        f.stream = -1
        f.nbytes = -1
        f.from_device = -1
        f.to_device = -1
        f.in_device = -1
        f.has_collective = False
        f.n_wanted = 0
        i = skip_ws(b, i + 1, n)
        if i >= n:
            return NEED_MORE
        if b[i] == 125:
            return i + 1
        while True:
            if b[i] != 34:
                self._fail("expected a key string in an event", i)
            ks = i + 1
            j = skip_string(b, i, n)
            if j < 0:
                return NEED_MORE
            ke = j - 1
            i = skip_ws(b, j, n)
            if i >= n:
                return NEED_MORE
            if b[i] != 58:
                self._fail("expected ':' after a key in an event", i)
            i = skip_ws(b, i + 1, n)
            if i >= n:
                return NEED_MORE
            at = i
            if key_is(b, ks, ke, b"cat", 3):
                if b[i] != 34:
                    self._fail("an event's 'cat' is not a string", i)
                j = skip_string(b, i, n)
                if j >= 0:
                    f.cat = category(b, i + 1, j - 1)
                    seen_cat = True
                    if f.cat == CAT_SKIP:
                        # Not needed: skip the rest of the event without looking at it.
                        j = skip_container(b, j, n, 1, 123)
                        if j == BAD:
                            self._fail("malformed event (brackets do not match)", at)
                        return j
            elif key_is(b, ks, ke, b"ph", 2):
                if b[i] != 34:
                    self._fail("an event's 'ph' is not a string", i)
                j = skip_string(b, i, n)
                if j >= 0 and j - i > 2:
                    f.ph = <char> b[i + 1]
            elif key_is(b, ks, ke, b"name", 4):
                if b[i] == 34:
                    j = skip_string(b, i, n)
                    if j >= 0:
                        f.name_s = i + 1
                        f.name_e = j - 1
                        f.name_escaped = memchr(b + i + 1, 92, j - 1 - (i + 1)) != NULL
                else:
                    j = skip_value(b, i, n)
            elif key_is(b, ks, ke, b"ts", 2):
                j = parse_time_ns(b, i, n, &f.ts_ns)
                f.has_ts = j >= 0
            elif key_is(b, ks, ke, b"dur", 3):
                j = parse_time_ns(b, i, n, &f.dur_ns)
                f.has_dur = j >= 0
            elif key_is(b, ks, ke, b"pid", 3):
                j = parse_int_value(b, i, n, &f.pid)
            elif key_is(b, ks, ke, b"tid", 3):
                j = parse_int_value(b, i, n, &f.tid)
            elif key_is(b, ks, ke, b"args", 4) and b[i] == 123:
                f.args_s = i
                j = parse_args(b, i, n, &f)
                f.args_e = j
            else:
                j = skip_value(b, i, n)
            if j == NEED_MORE:
                return NEED_MORE
            if j == BAD:
                self._fail("invalid JSON value in an event", at)
            if j == OUT_OF_RANGE:
                self._fail("an event's 'ts' or 'dur' is out of range (beyond 2^62 ns)", at)
            i = skip_ws(b, j, n)
            if i >= n:
                return NEED_MORE
            if b[i] == 44:
                i = skip_ws(b, i + 1, n)
                if i >= n:
                    return NEED_MORE
                continue
            if b[i] == 125:
                i += 1
                break
            self._fail("expected ',' or '}' in an event", i)
        if seen_cat and f.ph == 88 and f.has_ts:  # 'X': a complete event with a duration
            self._keep(b, &f)
        return i

    cdef int32_t _intern(self, const unsigned char* b, EventFields* f) except -2:
        cdef bytes raw
        cdef object ident
        cdef str text
        if f.name_s < 0:
            raw = b""
        else:
            raw = (<const char*> b)[f.name_s:f.name_e]
        ident = self.name_ids.get(raw)
        if ident is not None:
            return ident
        text = self._decode_name(raw, f.name_s)
        ident = len(self.names)
        self.name_ids[raw] = ident
        self.names.append(text)
        self.keep_name.append(None)
        return ident

    cdef str _decode_name(self, bytes raw, Py_ssize_t at):
        """A name's JSON string contents as text; any decoding problem is a KinetoSyntaxError."""
        import json
        try:
            text = raw.decode("utf-8")  # invalid UTF-8 anywhere in the name: its byte
        except UnicodeDecodeError as exc:
            raise KinetoSyntaxError(f"invalid UTF-8 in an event name ({exc.reason})",
                                    self.base_offset + at + exc.start) from None
        if _NEEDS_JSON_DECODE.search(raw) is None:
            return text
        try:
            return json.loads('"' + text + '"')
        except ValueError as exc:  # invalid escape or raw control character: its byte
            pos = len(text[:max(exc.pos - 1, 0)].encode("utf-8"))
            raise KinetoSyntaxError(f"invalid string in an event name ({exc.msg})", self.base_offset + at + pos) from None

    cdef int32_t _intern_args(self, const unsigned char* b, EventFields* f) except -2:
        """The wanted args as a JSON object text, stored once per distinct text; -1 if none."""
        cdef int k
        cdef bytes text
        cdef object ident
        if f.n_wanted == 0:
            return -1
        text = b"{" + b", ".join([(<const char*> b)[f.wanted_s[k]:f.wanted_e[k]] for k in range(f.n_wanted)]) + b"}"
        ident = self.args_ids.get(text)
        if ident is None:
            ident = len(self.args_texts)
            self.args_ids[text] = ident
            self.args_texts.append(text)
        return ident

    cdef int _keep(self, const unsigned char* b, EventFields* f) except -1:
        cdef int32_t name
        cdef object keep
        if f.cat == CAT_KERNEL or f.cat == CAT_MEMCPY or f.cat == CAT_MEMSET:
            name = self._intern(b, f)
            if f.cat == CAT_KERNEL:
                self.g_kind.push_back(GPU_KERNEL)
            elif f.cat == CAT_MEMCPY:
                self.g_kind.push_back(GPU_MEMCPY)
            else:
                self.g_kind.push_back(GPU_MEMSET)
            self.g_name.push_back(name)
            # Kineto puts the device in pid and the stream in tid of GPU events, and repeats them
            # in args; args win (peer memcpys name the executing device "inDevice").
            if f.device >= 0:
                self.g_device.push_back(f.device)
            elif f.in_device >= 0:
                self.g_device.push_back(f.in_device)
            else:
                self.g_device.push_back(f.pid)
            self.g_stream.push_back(f.stream if f.stream >= 0 else f.tid)
            self.g_start.push_back(f.ts_ns)
            self.g_dur.push_back(f.dur_ns if f.has_dur else MISSING_DURATION)
            self.g_corr.push_back(f.correlation)
            self.g_ext.push_back(f.external_id)
            self.g_bytes.push_back(f.nbytes)
            self.g_src.push_back(f.from_device)
            self.g_dst.push_back(f.to_device)
            self.g_args.push_back(self._intern_args(b, f) if f.has_collective else -1)
        elif f.cat == CAT_RUNTIME:
            if f.correlation < 0:
                return 0
            name = self._intern(b, f)
            self.l_corr.push_back(f.correlation)
            self.l_ext.push_back(f.external_id)
            self.l_pid.push_back(f.pid)
            self.l_tid.push_back(f.tid)
            self.l_start.push_back(f.ts_ns)
            self.l_name.push_back(name)
        elif f.cat == CAT_CPU_OP:
            name = self._intern(b, f)
            keep = self.keep_name[name]
            if keep is None:
                keep = bool(self.keep_cpu_op(self.names[name]))
                self.keep_name[name] = keep
            if not keep:
                return 0
            self.c_name.push_back(name)
            self.c_pid.push_back(f.pid)
            self.c_tid.push_back(f.tid)
            self.c_start.push_back(f.ts_ns)
            self.c_dur.push_back(f.dur_ns if f.has_dur else 0)
            self.c_ext.push_back(f.external_id)
            self.c_args.push_back(self._intern_args(b, f))
        return 0

    def columns(self):
        """The kept events as numpy columns, grouped by table, plus the interned names.

        One-shot: the C++ vectors are released as they are copied out, so the columns do not
        coexist with a second copy of themselves (that would double the peak memory)."""
        out = self._columns()
        self._release()
        return out

    cdef _release(self):
        self.g_kind.clear(); self.g_kind.shrink_to_fit()
        self.g_name.clear(); self.g_name.shrink_to_fit()
        self.g_args.clear(); self.g_args.shrink_to_fit()
        self.l_name.clear(); self.l_name.shrink_to_fit()
        self.c_name.clear(); self.c_name.shrink_to_fit()
        self.c_args.clear(); self.c_args.shrink_to_fit()
        self.g_device.clear(); self.g_device.shrink_to_fit()
        self.g_stream.clear(); self.g_stream.shrink_to_fit()
        self.g_start.clear(); self.g_start.shrink_to_fit()
        self.g_dur.clear(); self.g_dur.shrink_to_fit()
        self.g_corr.clear(); self.g_corr.shrink_to_fit()
        self.g_ext.clear(); self.g_ext.shrink_to_fit()
        self.g_bytes.clear(); self.g_bytes.shrink_to_fit()
        self.g_src.clear(); self.g_src.shrink_to_fit()
        self.g_dst.clear(); self.g_dst.shrink_to_fit()
        self.l_corr.clear(); self.l_corr.shrink_to_fit()
        self.l_ext.clear(); self.l_ext.shrink_to_fit()
        self.l_pid.clear(); self.l_pid.shrink_to_fit()
        self.l_tid.clear(); self.l_tid.shrink_to_fit()
        self.l_start.clear(); self.l_start.shrink_to_fit()
        self.c_pid.clear(); self.c_pid.shrink_to_fit()
        self.c_tid.clear(); self.c_tid.shrink_to_fit()
        self.c_start.clear(); self.c_start.shrink_to_fit()
        self.c_dur.clear(); self.c_dur.shrink_to_fit()
        self.c_ext.clear(); self.c_ext.shrink_to_fit()

    def _columns(self):
        return {
            "names": list(self.names),
            "gpu": {
                "kind": _to_numpy(self.g_kind.data(), self.g_kind.size(), np.int8), "name": _to_numpy(self.g_name.data(), self.g_name.size(), np.int32),
                "device": _to_numpy(self.g_device.data(), self.g_device.size(), np.int64), "stream": _to_numpy(self.g_stream.data(), self.g_stream.size(), np.int64),
                "start_ns": _to_numpy(self.g_start.data(), self.g_start.size(), np.int64), "dur_ns": _to_numpy(self.g_dur.data(), self.g_dur.size(), np.int64),
                "correlation": _to_numpy(self.g_corr.data(), self.g_corr.size(), np.int64), "external_id": _to_numpy(self.g_ext.data(), self.g_ext.size(), np.int64),
                "bytes": _to_numpy(self.g_bytes.data(), self.g_bytes.size(), np.int64), "src_device": _to_numpy(self.g_src.data(), self.g_src.size(), np.int64),
                "dst_device": _to_numpy(self.g_dst.data(), self.g_dst.size(), np.int64), "args": _to_numpy(self.g_args.data(), self.g_args.size(), np.int32),
            },
            "launch": {
                "correlation": _to_numpy(self.l_corr.data(), self.l_corr.size(), np.int64), "external_id": _to_numpy(self.l_ext.data(), self.l_ext.size(), np.int64),
                "pid": _to_numpy(self.l_pid.data(), self.l_pid.size(), np.int64), "tid": _to_numpy(self.l_tid.data(), self.l_tid.size(), np.int64),
                "start_ns": _to_numpy(self.l_start.data(), self.l_start.size(), np.int64), "name": _to_numpy(self.l_name.data(), self.l_name.size(), np.int32),
            },
            "cpu": {
                "name": _to_numpy(self.c_name.data(), self.c_name.size(), np.int32), "pid": _to_numpy(self.c_pid.data(), self.c_pid.size(), np.int64),
                "tid": _to_numpy(self.c_tid.data(), self.c_tid.size(), np.int64), "start_ns": _to_numpy(self.c_start.data(), self.c_start.size(), np.int64),
                "dur_ns": _to_numpy(self.c_dur.data(), self.c_dur.size(), np.int64), "external_id": _to_numpy(self.c_ext.data(), self.c_ext.size(), np.int64),
                "args": _to_numpy(self.c_args.data(), self.c_args.size(), np.int32),
            },
            "args": list(self.args_texts),
            "top_level": dict(self.top_level),
        }


ctypedef fused column_t:
    int64_t
    int32_t
    int8_t


cdef object _to_numpy(const column_t* data, size_t n, object dtype):
    """One typed column of the scanner (``data``, ``n`` values) as a numpy array of ``dtype`` (one memcpy)."""
    out = np.empty(n, dtype=dtype)
    cdef column_t[::1] view = out
    if n:
        memcpy(&view[0], data, n * sizeof(column_t))
    return out


cdef extern from "<cxxabi.h>" namespace "abi" nogil:
    char* __cxa_demangle(const char* mangled_name, char* output_buffer, size_t* length, int* status)


def demangle(bytes mangled):
    """The Itanium C++ ABI demangling of ``mangled`` (what c++filt prints), or None if it is not a
    valid mangled name. Uses the C++ runtime's own demangler (no extra dependency)."""
    cdef int status = 0
    cdef char* out = __cxa_demangle(mangled, NULL, NULL, &status)
    if out == NULL or status != 0:
        if out != NULL:
            free(out)
        return None
    try:
        return (<bytes> out).decode("utf-8", "replace")
    finally:
        free(out)
