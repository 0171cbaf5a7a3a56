# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Streams and events: Stream, Event (with IPC handles), EventPool, device-side stream memory
operations (write/wait a 32-bit flag) and non-blocking event queries.

The GIL is released around every call that can block or take more than a few hundred
nanoseconds; every status becomes a CudaError naming the call (errors.pyx).
"""

from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize

from cuda.bindings cimport cyruntime as rt

from c3prof.backends.cuda.runtime.errors cimport check as _check

from c3prof.backends.cuda.runtime.errors import CudaError


cdef class Stream:
    """A CUDA stream. ``priority``: lower is higher (see stream_priority_range()).

    ``Stream(handle=h)`` wraps a stream created elsewhere (a green-context stream, torch's) without
    owning it.
    """

    def __cinit__(self, int priority=0, bint non_blocking=True, handle=None):
        cdef rt.cudaError_t err
        cdef unsigned int flags = rt.cudaStreamNonBlocking if non_blocking else rt.cudaStreamDefault
        self._s = NULL
        self._owned = False
        if handle is not None:
            self._s = <rt.cudaStream_t><uintptr_t>int(handle)
            _check(rt.cudaStreamGetPriority(self._s, &self.priority), "cudaStreamGetPriority")
            return
        with nogil:
            err = rt.cudaStreamCreateWithPriority(&self._s, flags, priority)
        _check(err, f"cudaStreamCreateWithPriority(priority={priority})")
        self._owned = True
        self.priority = priority

    @property
    def handle(self):
        """The cudaStream_t as an integer (for torch.cuda.ExternalStream)."""
        return <uintptr_t>self._s

    def synchronize(self):
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaStreamSynchronize(self._s)
        _check(err, "cudaStreamSynchronize")

    def wait(self, Event event):
        """Make this stream wait for ``event`` (device-side; returns at once)."""
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaStreamWaitEvent(self._s, event._e, 0)
        _check(err, "cudaStreamWaitEvent")

    def close(self):
        cdef rt.cudaError_t err
        if self._owned and self._s != NULL:
            with nogil:
                err = rt.cudaStreamDestroy(self._s)
            self._s = NULL
            _check(err, "cudaStreamDestroy")

    def __dealloc__(self):
        if self._owned and self._s != NULL:
            rt.cudaStreamDestroy(self._s)


cdef class Event:
    """A CUDA event; timing events by default. ``Event(ipc_handle=b)`` opens a peer's event."""

    def __cinit__(self, bint timing=True, bint interprocess=False, ipc_handle=None):
        cdef rt.cudaError_t err
        cdef unsigned int flags = rt.cudaEventDefault
        cdef rt.cudaIpcEventHandle_t h
        self._e = NULL
        if ipc_handle is not None:
            if len(ipc_handle) != sizeof(h.reserved):
                raise ValueError(f"IPC event handle must be {sizeof(h.reserved)} bytes, got {len(ipc_handle)}")
            memcpy(h.reserved, <const char*>ipc_handle, sizeof(h.reserved))
            with nogil:
                err = rt.cudaIpcOpenEventHandle(&self._e, h)
            _check(err, "cudaIpcOpenEventHandle")
            return
        if interprocess:
            # CUDA requires interprocess events to have timing disabled.
            flags = rt.cudaEventInterprocess | rt.cudaEventDisableTiming
        elif not timing:
            flags = rt.cudaEventDisableTiming
        with nogil:
            err = rt.cudaEventCreateWithFlags(&self._e, flags)
        _check(err, "cudaEventCreateWithFlags")

    @property
    def handle(self):
        return <uintptr_t>self._e

    def record(self, Stream stream):
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaEventRecord(self._e, stream._s)
        _check(err, "cudaEventRecord")

    def synchronize(self):
        cdef rt.cudaError_t err
        with nogil:
            err = rt.cudaEventSynchronize(self._e)
        _check(err, "cudaEventSynchronize")

    def query(self):
        """True when all work before the event has completed."""
        cdef rt.cudaError_t err = rt.cudaEventQuery(self._e)
        if err == rt.cudaErrorNotReady:
            return False
        _check(err, "cudaEventQuery")
        return True

    def elapsed_ms(self, Event end):
        """Milliseconds from this event to ``end`` (both recorded and complete)."""
        cdef float ms = 0
        _check(rt.cudaEventElapsedTime(&ms, self._e, end._e), "cudaEventElapsedTime")
        return ms

    def ipc_handle(self):
        """64-byte handle another process opens with Event(ipc_handle=...)."""
        cdef rt.cudaIpcEventHandle_t h
        _check(rt.cudaIpcGetEventHandle(&h, self._e), "cudaIpcGetEventHandle")
        return PyBytes_FromStringAndSize(h.reserved, sizeof(h.reserved))

    def __dealloc__(self):
        if self._e != NULL:
            rt.cudaEventDestroy(self._e)


cdef class EventPool:
    """A fixed array of timing events addressed by index: the runner's per-repetition timestamps.

    Recording by index avoids creating Python event objects per repetition; ``elapsed_from``
    reads many intervals in one call after a single synchronize.
    """

    def __cinit__(self, int size):
        cdef int i
        cdef rt.cudaError_t err
        if size <= 0:
            raise ValueError("EventPool size must be positive")
        self._ev = <rt.cudaEvent_t*>malloc(size * sizeof(rt.cudaEvent_t))
        if self._ev == NULL:
            raise MemoryError()
        self.size = 0
        for i in range(size):
            err = rt.cudaEventCreateWithFlags(&self._ev[i], rt.cudaEventDefault)
            _check(err, "cudaEventCreateWithFlags")
            self.size = i + 1

    cdef int _index(self, int i) except -1:
        if i < 0 or i >= self.size:
            raise IndexError(f"event index {i} outside pool of {self.size}")
        return i

    def record(self, int i, Stream stream):
        cdef rt.cudaError_t err
        cdef rt.cudaEvent_t e = self._ev[self._index(i)]
        with nogil:
            err = rt.cudaEventRecord(e, stream._s)
        _check(err, "cudaEventRecord")

    def wait(self, int i, Stream stream):
        """Make ``stream`` wait for event ``i``."""
        cdef rt.cudaError_t err
        cdef rt.cudaEvent_t e = self._ev[self._index(i)]
        with nogil:
            err = rt.cudaStreamWaitEvent(stream._s, e, 0)
        _check(err, "cudaStreamWaitEvent")

    def synchronize(self, int i):
        cdef rt.cudaError_t err
        cdef rt.cudaEvent_t e = self._ev[self._index(i)]
        with nogil:
            err = rt.cudaEventSynchronize(e)
        _check(err, "cudaEventSynchronize")

    def elapsed_ms(self, int start, int end):
        cdef float ms = 0
        _check(rt.cudaEventElapsedTime(&ms, self._ev[self._index(start)], self._ev[self._index(end)]),
               "cudaEventElapsedTime")
        return ms

    def elapsed_from(self, int base, indices):
        """[elapsed_ms(base, i) for i in indices], in one call."""
        cdef float ms = 0
        cdef int i
        cdef rt.cudaEvent_t b = self._ev[self._index(base)]
        out = []
        for i in indices:
            _check(rt.cudaEventElapsedTime(&ms, b, self._ev[self._index(i)]), "cudaEventElapsedTime")
            out.append(ms)
        return out

    def __dealloc__(self):
        cdef int i
        if self._ev != NULL:
            for i in range(self.size):
                rt.cudaEventDestroy(self._ev[i])
            free(self._ev)


# Driver entry points fetched through the runtime (cudaGetDriverEntryPointByVersion), so the module
# still links against nothing and imports on machines without a driver (cimporting cydriver would
# need headers the CUDA wheels lack). CUstream is cudaStream_t; CUdeviceptr is a 64-bit integer.
ctypedef int (*_stream_value32_fn)(rt.cudaStream_t, unsigned long long, unsigned int, unsigned int) noexcept nogil
cdef _stream_value32_fn _cu_wait_value32 = NULL
cdef _stream_value32_fn _cu_write_value32 = NULL
cdef unsigned int _CU_STREAM_WAIT_VALUE_GEQ = 0        # CUstreamWaitValue_flags
cdef unsigned int _CU_STREAM_WRITE_VALUE_DEFAULT = 0   # CUstreamWriteValue_flags (with memory barrier)


cdef void* _driver_entry(const char* name) except NULL:
    cdef void* fn = NULL
    cdef rt.cudaDriverEntryPointQueryResult status
    _check(rt.cudaGetDriverEntryPointByVersion(name, &fn, 12000, rt.cudaEnableDefault, &status),
           f"cudaGetDriverEntryPointByVersion({name.decode()})")
    if fn == NULL or status != rt.cudaDriverEntryPointSuccess:
        raise CudaError(f"cudaGetDriverEntryPointByVersion({name.decode()})", int(status),
                        "cudaDriverEntryPointSymbolNotFound", "driver entry point not found")
    return fn


cdef int _check_drv(int res, str call) except -1:
    if res != 0:
        raise CudaError(call, res, f"CUresult {res}", "driver call failed (see CUresult in cuda.h)")
    return 0


cdef int _stream_value32(_stream_value32_fn* fn, const char* name, uintptr_t addr, unsigned int value,
                         unsigned int flags, Stream stream) except -1:
    # Fetch the driver entry point on first use, then enqueue the memory operation on ``stream``.
    cdef int res
    if fn[0] == NULL:
        fn[0] = <_stream_value32_fn>_driver_entry(name)
    with nogil:
        res = fn[0](stream._s, <unsigned long long>addr, value, flags)
    return _check_drv(res, name.decode())


def stream_write_value32(uintptr_t addr, unsigned int value, Stream stream not None):
    """cuStreamWriteValue32: when the stream reaches it, write ``value`` to ``addr`` (after a memory
    fence: everything the stream did before is visible first). ``addr`` is device memory of this
    process (for a peer's memory, c3prof copies a local flag with memcpy_async, as NCCL does)."""
    _stream_value32(&_cu_write_value32, b"cuStreamWriteValue32", addr, value, _CU_STREAM_WRITE_VALUE_DEFAULT, stream)


def stream_wait_value32(uintptr_t addr, unsigned int value, Stream stream not None):
    """cuStreamWaitValue32 (GEQ): the stream waits until the 32-bit word at ``addr`` is >= ``value``.
    Used with monotonically increasing sequence numbers, so a peer that runs ahead never deadlocks."""
    _stream_value32(&_cu_wait_value32, b"cuStreamWaitValue32", addr, value, _CU_STREAM_WAIT_VALUE_GEQ, stream)


def event_pool_query(EventPool pool not None, int i):
    """True when event ``i`` of ``pool`` has completed (cudaEventQuery): lets a host wait poll with a
    deadline instead of blocking forever when a peer rank died."""
    cdef rt.cudaError_t err = rt.cudaEventQuery(pool._ev[pool._index(i)])
    if err == rt.cudaErrorNotReady:
        return False
    _check(err, "cudaEventQuery")
    return True


# CUstreamBatchMemOpParams (cuda.h; a 48-byte union) as its waitValue / writeValue member, spelled
# out because the headers that declare it are not in the CUDA wheels (see _driver_entry).
ctypedef struct _MemOpParams:
    unsigned int operation       # CUstreamBatchMemOpType
    unsigned int _pad0
    unsigned long long address   # CUdeviceptr
    unsigned long long value     # union { cuuint32_t value; cuuint64_t value64 }
    unsigned int flags
    unsigned int _pad1
    unsigned long long alias
    unsigned long long _pad2

ctypedef int (*_batch_mem_op_fn)(rt.cudaStream_t, unsigned int, _MemOpParams*, unsigned int) noexcept nogil
cdef _batch_mem_op_fn _cu_batch_mem_op = NULL
cdef unsigned int _CU_STREAM_MEM_OP_WAIT_VALUE_32 = 1
cdef unsigned int _CU_STREAM_MEM_OP_WRITE_VALUE_32 = 2
cdef unsigned int _FLAG_BATCH_MAX = 256   # cuStreamBatchMemOp's limit on operations per call


cdef class FlagBatch:
    """Several 32-bit flag operations of one kind enqueued with one cuStreamBatchMemOp call: writes
    of a value to many addresses (``kind="write"``) or waits until every address holds >= a value
    (``kind="wait"``). The value changes per launch (a sequence number); the addresses are fixed.
    One driver call instead of one per flag: the ready/done exchange of a DMA collective among n
    ranks costs two host calls instead of 2(n-1)+1."""

    cdef _MemOpParams* _ops
    cdef readonly unsigned int count
    cdef readonly str kind

    def __cinit__(self, addrs, str kind):
        cdef unsigned int i
        if kind not in ("write", "wait"):
            raise ValueError(f"FlagBatch kind must be 'write' or 'wait', got {kind!r}")
        if not 0 < len(addrs) <= _FLAG_BATCH_MAX:
            raise ValueError(f"FlagBatch needs 1 to {_FLAG_BATCH_MAX} addresses, got {len(addrs)}")
        self.count = len(addrs)
        self.kind = kind
        self._ops = <_MemOpParams*>malloc(self.count * sizeof(_MemOpParams))
        if self._ops == NULL:
            raise MemoryError()
        memset(self._ops, 0, self.count * sizeof(_MemOpParams))
        for i in range(self.count):
            self._ops[i].operation = _CU_STREAM_MEM_OP_WAIT_VALUE_32 if kind == "wait" else _CU_STREAM_MEM_OP_WRITE_VALUE_32
            self._ops[i].address = <unsigned long long><uintptr_t>int(addrs[i])
            self._ops[i].flags = _CU_STREAM_WAIT_VALUE_GEQ if kind == "wait" else _CU_STREAM_WRITE_VALUE_DEFAULT

    def enqueue(self, unsigned int value, Stream stream not None):
        """Enqueue every operation with ``value`` on ``stream`` (one driver call; returns at once)."""
        global _cu_batch_mem_op
        cdef unsigned int i
        cdef int res
        if _cu_batch_mem_op == NULL:
            _cu_batch_mem_op = <_batch_mem_op_fn>_driver_entry(b"cuStreamBatchMemOp")
        for i in range(self.count):
            self._ops[i].value = value
        with nogil:
            res = _cu_batch_mem_op(stream._s, self.count, self._ops, 0)
        _check_drv(res, f"cuStreamBatchMemOp({self.count} {self.kind} ops)")

    @staticmethod
    def params_bytes():
        """sizeof of one operation's parameters here: must be 48, cuda.h's CUstreamBatchMemOpParams."""
        return sizeof(_MemOpParams)

    def __dealloc__(self):
        free(self._ops)
