# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Streams and events: Stream (with priority, or restricted to a CU mask), Event, EventPool, and
device-side stream memory operations (write/wait a 32-bit flag).

The HIP sibling of c3prof/backends/cuda/runtime/streams.pyx. The GIL is released around every call
that can block or take more than a few hundred nanoseconds; every status becomes a HipError naming
the call (errors.pyx).
"""

from libc.stdint cimport uintptr_t, uint32_t
from libc.stdlib cimport malloc, free

from hip cimport chip as hip

from c3prof.backends.hip.runtime.errors cimport check as _check


cdef uint32_t* _words(object mask, uint32_t* n) except NULL:
    # A Python sequence of 32-bit words -> a malloc'd uint32 array (the caller frees it).
    cdef uint32_t i
    n[0] = <uint32_t>len(mask)
    if n[0] == 0:
        raise ValueError("a CU mask needs at least one 32-bit word")
    cdef uint32_t* words = <uint32_t*>malloc(n[0] * sizeof(uint32_t))
    if words == NULL:
        raise MemoryError()
    for i in range(n[0]):
        words[i] = <uint32_t>int(mask[i])
    return words


cdef class Stream:
    """A HIP stream. ``priority``: lower is higher (see stream_priority_range()).

    ``Stream(cu_mask=[w0, w1, ...])`` creates a stream whose kernels run only on the compute units
    whose bits are set (hipExtStreamCreateWithCUMask; bit i of word k is CU 32*k+i in the
    runtime's CU numbering, see c3prof/backends/hip/cu_masks.py). Such a stream has the default
    priority: HIP has no call that sets both.
    """

    def __cinit__(self, int priority=0, bint non_blocking=True, cu_mask=None):
        cdef hip.hipError_t err
        cdef unsigned int flags = hip.hipStreamNonBlocking if non_blocking else hip.hipStreamDefault
        cdef uint32_t n = 0
        cdef uint32_t* words = NULL
        self._s = NULL
        self._owned = False
        self.cu_mask = None
        if cu_mask is not None:
            words = _words(cu_mask, &n)
            with nogil:
                err = hip.hipExtStreamCreateWithCUMask(&self._s, n, words)
            free(words)
            _check(err, f"hipExtStreamCreateWithCUMask({n} words)")
            self._owned = True
            self.cu_mask = tuple(int(w) for w in cu_mask)
            self.priority = 0
            return
        with nogil:
            err = hip.hipStreamCreateWithPriority(&self._s, flags, priority)
        _check(err, f"hipStreamCreateWithPriority(priority={priority})")
        self._owned = True
        self.priority = priority

    @property
    def handle(self):
        """The hipStream_t as an integer (for torch.cuda.ExternalStream on ROCm)."""
        return <uintptr_t>self._s

    def granted_cu_mask(self, int words):
        """The CU mask the runtime actually applied (hipExtStreamGetCUMask), as ``words`` 32-bit words."""
        cdef uint32_t* out = <uint32_t*>malloc(words * sizeof(uint32_t))
        cdef hip.hipError_t err
        if out == NULL:
            raise MemoryError()
        with nogil:
            err = hip.hipExtStreamGetCUMask(self._s, <uint32_t>words, out)
        try:
            _check(err, "hipExtStreamGetCUMask")
            return tuple(int(out[i]) for i in range(words))
        finally:
            free(out)

    def synchronize(self):
        cdef hip.hipError_t err
        with nogil:
            err = hip.hipStreamSynchronize(self._s)
        _check(err, "hipStreamSynchronize")

    def wait(self, Event event):
        """Make this stream wait for ``event`` (device-side; returns at once)."""
        cdef hip.hipError_t err
        with nogil:
            err = hip.hipStreamWaitEvent(self._s, event._e, 0)
        _check(err, "hipStreamWaitEvent")

    def close(self):
        cdef hip.hipError_t err
        if self._owned and self._s != NULL:
            with nogil:
                err = hip.hipStreamDestroy(self._s)
            self._s = NULL
            _check(err, "hipStreamDestroy")

    def __dealloc__(self):
        if self._owned and self._s != NULL:
            hip.hipStreamDestroy(self._s)


cdef class Event:
    """A HIP event (the fork/join of a two-direction copy); timing events by default."""

    def __cinit__(self, bint timing=True):
        cdef hip.hipError_t err
        cdef unsigned int flags = hip.hipEventDefault if timing else hip.hipEventDisableTiming
        self._e = NULL
        with nogil:
            err = hip.hipEventCreateWithFlags(&self._e, flags)
        _check(err, "hipEventCreateWithFlags")

    @property
    def handle(self):
        return <uintptr_t>self._e

    def record(self, Stream stream):
        cdef hip.hipError_t err
        with nogil:
            err = hip.hipEventRecord(self._e, stream._s)
        _check(err, "hipEventRecord")

    def __dealloc__(self):
        if self._e != NULL:
            hip.hipEventDestroy(self._e)


cdef class EventPool:
    """A fixed array of timing events addressed by index: the phase timer's per-repetition timestamps."""

    def __cinit__(self, int size):
        cdef int i
        if size <= 0:
            raise ValueError("EventPool size must be positive")
        self._ev = <hip.hipEvent_t*>malloc(size * sizeof(hip.hipEvent_t))
        if self._ev == NULL:
            raise MemoryError()
        self.size = 0
        for i in range(size):
            _check(hip.hipEventCreateWithFlags(&self._ev[i], hip.hipEventDefault), "hipEventCreateWithFlags")
            self.size = i + 1

    cdef int _index(self, int i) except -1:
        if i < 0 or i >= self.size:
            raise IndexError(f"event index {i} outside pool of {self.size}")
        return i

    def record(self, int i, Stream stream):
        cdef hip.hipError_t err
        cdef hip.hipEvent_t e = self._ev[self._index(i)]
        with nogil:
            err = hip.hipEventRecord(e, stream._s)
        _check(err, "hipEventRecord")

    def wait(self, int i, Stream stream):
        """Make ``stream`` wait for event ``i``."""
        cdef hip.hipError_t err
        cdef hip.hipEvent_t e = self._ev[self._index(i)]
        with nogil:
            err = hip.hipStreamWaitEvent(stream._s, e, 0)
        _check(err, "hipStreamWaitEvent")

    def synchronize(self, int i):
        cdef hip.hipError_t err
        cdef hip.hipEvent_t e = self._ev[self._index(i)]
        with nogil:
            err = hip.hipEventSynchronize(e)
        _check(err, "hipEventSynchronize")

    def elapsed_from(self, int base, indices):
        """[milliseconds from event ``base`` to event i for i in indices], in one call."""
        cdef float ms = 0
        cdef int i
        cdef hip.hipEvent_t b = self._ev[self._index(base)]
        out = []
        for i in indices:
            _check(hip.hipEventElapsedTime(&ms, b, self._ev[self._index(i)]), "hipEventElapsedTime")
            out.append(ms)
        return out

    def __dealloc__(self):
        cdef int i
        if self._ev != NULL:
            for i in range(self.size):
                hip.hipEventDestroy(self._ev[i])
            free(self._ev)


def stream_write_value32(uintptr_t addr, uint32_t value, Stream stream not None):
    """hipStreamWriteValue32: when the stream reaches it, write ``value`` to ``addr`` (device memory
    of this process; a peer's flag is set by copying a local one, as on CUDA)."""
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipStreamWriteValue32(stream._s, <void*>addr, value, 0)
    _check(err, "hipStreamWriteValue32")


def stream_wait_value32(uintptr_t addr, uint32_t value, Stream stream not None):
    """hipStreamWaitValue32 (GTE, full mask): the stream waits until the word at ``addr`` is >= ``value``.
    Used with increasing sequence numbers, so a peer that runs ahead never deadlocks."""
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipStreamWaitValue32(stream._s, <void*>addr, value, hip.hipStreamWaitValueGte, 0xFFFFFFFF)
    _check(err, "hipStreamWaitValue32")
