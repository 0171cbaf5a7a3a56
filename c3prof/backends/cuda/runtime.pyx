# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""c3prof's hot path: streams, events, pinned memory, engine copies and CUDA IPC.

Thin by design (like cuda_core's modules): each class owns one CUDA object, every call's status
is checked and turned into :class:`CudaError` naming the call and the CUDA error, and the GIL is
released around every driver call that can block or take more than a few hundred nanoseconds.

Everything goes through ``cuda.bindings.cyruntime``, which loads the CUDA runtime when first
used: the module imports on a machine without a GPU, and calls there fail with a CudaError
(cudaErrorInsufficientDriver / cudaErrorNoDevice) instead of crashing.

Pointers cross this boundary as plain integers (``uintptr_t``), so buffers can come from torch
(``tensor.data_ptr()``), from :class:`DeviceBuffer`, or from a peer process (:func:`ipc_open_mem_handle`).
"""

from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize

from cuda.bindings cimport cyruntime as rt


class CudaError(RuntimeError):
    """A CUDA runtime call failed. ``call`` names it, ``code``/``name`` give the CUDA error."""

    def __init__(self, call, code, name, description):
        self.call = call
        self.code = code
        self.name = name
        self.description = description
        super().__init__(f"{call} failed: {name} ({code}): {description}")


# Error codes the CLI turns into "no usable GPU" messages rather than failures of c3prof.
NO_GPU_ERRORS = (int(rt.cudaErrorInsufficientDriver), int(rt.cudaErrorNoDevice))


cdef int _raise(rt.cudaError_t err, str call) except -1:
    cdef const char* name = rt.cudaGetErrorName(err)
    cdef const char* desc = rt.cudaGetErrorString(err)
    raise CudaError(
        call,
        int(err),
        name.decode() if name != NULL else "cudaErrorUnknown",
        desc.decode() if desc != NULL else "no description",
    )


cdef inline int _check(rt.cudaError_t err, str call) except -1:
    if err != rt.cudaSuccess:
        _raise(err, call)
    return 0


# --------------------------------------------------------------------------------------------
# Device queries
# --------------------------------------------------------------------------------------------

def device_count():
    """Number of CUDA devices; raises CudaError (e.g. cudaErrorInsufficientDriver) when none can be used."""
    cdef int n = 0
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaGetDeviceCount(&n)
    _check(err, "cudaGetDeviceCount")
    return n


def set_device(int device):
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaSetDevice(device)
    _check(err, f"cudaSetDevice({device})")


def get_device():
    cdef int device = -1
    _check(rt.cudaGetDevice(&device), "cudaGetDevice")
    return device


def device_synchronize():
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaDeviceSynchronize()
    _check(err, "cudaDeviceSynchronize")


def mem_get_info():
    """(free_bytes, total_bytes) of the current device."""
    cdef size_t free_b = 0, total_b = 0
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemGetInfo(&free_b, &total_b)
    _check(err, "cudaMemGetInfo")
    return free_b, total_b


cdef int _attribute(rt.cudaDeviceAttr attr, int device, str what) except? -1:
    cdef int value = 0
    _check(rt.cudaDeviceGetAttribute(&value, attr, device), f"cudaDeviceGetAttribute({what})")
    return value


def device_properties(int device=0):
    """The few device properties c3prof's method depends on, read from the runtime."""
    return {
        "sm_count": _attribute(rt.cudaDevAttrMultiProcessorCount, device, "MultiProcessorCount"),
        "l2_bytes": _attribute(rt.cudaDevAttrL2CacheSize, device, "L2CacheSize"),
        "async_engine_count": _attribute(rt.cudaDevAttrAsyncEngineCount, device, "AsyncEngineCount"),
        "cc_major": _attribute(rt.cudaDevAttrComputeCapabilityMajor, device, "ComputeCapabilityMajor"),
        "cc_minor": _attribute(rt.cudaDevAttrComputeCapabilityMinor, device, "ComputeCapabilityMinor"),
    }


def runtime_version():
    cdef int v = 0
    _check(rt.cudaRuntimeGetVersion(&v), "cudaRuntimeGetVersion")
    return v


def driver_version():
    cdef int v = 0
    _check(rt.cudaDriverGetVersion(&v), "cudaDriverGetVersion")
    return v


def stream_priority_range():
    """(least, greatest) stream priority; numerically lower is higher priority (0..-5 on H200)."""
    cdef int least = 0, greatest = 0
    _check(rt.cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange")
    return least, greatest


def can_access_peer(int device, int peer):
    cdef int ok = 0
    _check(rt.cudaDeviceCanAccessPeer(&ok, device, peer), f"cudaDeviceCanAccessPeer({device},{peer})")
    return bool(ok)


def enable_peer_access(int peer):
    """Enable access from the current device to ``peer``; already-enabled is not an error."""
    cdef rt.cudaError_t err = rt.cudaDeviceEnablePeerAccess(peer, 0)
    if err == rt.cudaErrorPeerAccessAlreadyEnabled:
        rt.cudaGetLastError()  # clear the sticky-free error so later checks do not see it
        return
    _check(err, f"cudaDeviceEnablePeerAccess({peer})")


def profiler_start():
    """cudaProfilerStart: opens a range that Nsight Compute's range replay profiles."""
    _check(rt.cudaProfilerStart(), "cudaProfilerStart")


def profiler_stop():
    _check(rt.cudaProfilerStop(), "cudaProfilerStop")


def check_last_error(str after="kernel launch"):
    """Raise if a previous asynchronous launch failed (cudaGetLastError)."""
    _check(rt.cudaGetLastError(), f"cudaGetLastError after {after}")


# --------------------------------------------------------------------------------------------
# Streams and events
# --------------------------------------------------------------------------------------------

cdef class Stream:
    """A CUDA stream. ``priority``: lower is higher (see stream_priority_range()).

    ``Stream(handle=h)`` wraps a stream created elsewhere (a green-context stream, torch's) without
    owning it.
    """

    cdef rt.cudaStream_t _s
    cdef bint _owned
    cdef readonly int priority

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

    cdef rt.cudaEvent_t _e

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

    cdef rt.cudaEvent_t* _ev
    cdef readonly int size

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

    cdef inline int _index(self, int i) except -1:
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


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------

cdef class HostBuffer:
    """Page-locked host memory (cudaHostAlloc): the source or target of copy-engine transfers.

    Supports the buffer protocol: ``numpy.frombuffer(buf, dtype=numpy.uint8)`` is a zero-copy view.
    """

    cdef void* _p
    cdef readonly size_t nbytes
    cdef Py_ssize_t _shape[1]
    cdef Py_ssize_t _strides[1]

    def __cinit__(self, size_t nbytes):
        cdef rt.cudaError_t err
        if nbytes == 0:
            raise ValueError("HostBuffer size must be positive")
        self._p = NULL
        with nogil:
            err = rt.cudaHostAlloc(&self._p, nbytes, rt.cudaHostAllocPortable)
        _check(err, f"cudaHostAlloc({nbytes} bytes)")
        self.nbytes = nbytes
        self._shape[0] = <Py_ssize_t>nbytes
        self._strides[0] = 1

    @property
    def ptr(self):
        return <uintptr_t>self._p

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        buffer.buf = self._p
        buffer.format = "B"
        buffer.internal = NULL
        buffer.itemsize = 1
        buffer.len = <Py_ssize_t>self.nbytes
        buffer.ndim = 1
        buffer.obj = self
        buffer.readonly = 0
        buffer.shape = self._shape
        buffer.strides = self._strides
        buffer.suboffsets = NULL

    def __releasebuffer__(self, Py_buffer* buffer):
        pass

    def __dealloc__(self):
        if self._p != NULL:
            rt.cudaFreeHost(self._p)


cdef class DeviceBuffer:
    """Device memory from cudaMalloc on the current device (torch-independent, IPC-exportable)."""

    cdef void* _p
    cdef readonly size_t nbytes

    def __cinit__(self, size_t nbytes):
        cdef rt.cudaError_t err
        if nbytes == 0:
            raise ValueError("DeviceBuffer size must be positive")
        self._p = NULL
        with nogil:
            err = rt.cudaMalloc(&self._p, nbytes)
        _check(err, f"cudaMalloc({nbytes} bytes)")
        self.nbytes = nbytes

    @property
    def ptr(self):
        return <uintptr_t>self._p

    def ipc_handle(self):
        return ipc_mem_handle(<uintptr_t>self._p)

    def __dealloc__(self):
        if self._p != NULL:
            rt.cudaFree(self._p)


def ipc_mem_handle(uintptr_t ptr):
    """64-byte CUDA IPC handle of the allocation that starts at ``ptr`` (cudaMalloc'd memory)."""
    cdef rt.cudaIpcMemHandle_t h
    _check(rt.cudaIpcGetMemHandle(&h, <void*>ptr), "cudaIpcGetMemHandle")
    return PyBytes_FromStringAndSize(h.reserved, sizeof(h.reserved))


def ipc_open_mem_handle(bytes handle):
    """Map a peer process's allocation; returns its device pointer in this process."""
    cdef rt.cudaIpcMemHandle_t h
    cdef void* p = NULL
    cdef rt.cudaError_t err
    if len(handle) != sizeof(h.reserved):
        raise ValueError(f"IPC memory handle must be {sizeof(h.reserved)} bytes, got {len(handle)}")
    memcpy(h.reserved, <const char*>handle, sizeof(h.reserved))
    with nogil:
        err = rt.cudaIpcOpenMemHandle(&p, h, rt.cudaIpcMemLazyEnablePeerAccess)
    _check(err, "cudaIpcOpenMemHandle")
    return <uintptr_t>p


def ipc_close_mem_handle(uintptr_t ptr):
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaIpcCloseMemHandle(<void*>ptr)
    _check(err, "cudaIpcCloseMemHandle")


# --------------------------------------------------------------------------------------------
# Copies
# --------------------------------------------------------------------------------------------

def memcpy_async(uintptr_t dst, uintptr_t src, size_t nbytes, Stream stream):
    """cudaMemcpyAsync with cudaMemcpyDefault (direction inferred from the unified address space).

    Which engine carries it is the driver's choice: pinned host<->device and peer copies use copy
    engines; same-device device-to-device copies were measured to run on SMs (FACTS-H200.md).
    """
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemcpyAsync(<void*>dst, <const void*>src, nbytes, rt.cudaMemcpyDefault, stream._s)
    _check(err, f"cudaMemcpyAsync({nbytes} bytes)")


def memcpy_peer_async(uintptr_t dst, int dst_device, uintptr_t src, int src_device, size_t nbytes,
                      Stream stream):
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemcpyPeerAsync(<void*>dst, dst_device, <const void*>src, src_device, nbytes, stream._s)
    _check(err, f"cudaMemcpyPeerAsync({nbytes} bytes, {src_device}->{dst_device})")


def memset_async(uintptr_t ptr, int value, size_t nbytes, Stream stream):
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemsetAsync(<void*>ptr, value, nbytes, stream._s)
    _check(err, f"cudaMemsetAsync({nbytes} bytes)")


cdef void _location_hint(rt.cudaMemLocation* loc, const void* ptr) noexcept nogil:
    # Hints matter only for managed memory; for cudaMalloc'd or pinned memory the runtime ignores
    # them, but they must still be well-formed, so describe where the pointer actually lives.
    cdef rt.cudaPointerAttributes attrs
    if rt.cudaPointerGetAttributes(&attrs, ptr) == rt.cudaSuccess and attrs.type == rt.cudaMemoryTypeDevice:
        loc.type = rt.cudaMemLocationTypeDevice
        loc.id = attrs.device
    else:
        rt.cudaGetLastError()
        loc.type = rt.cudaMemLocationTypeHost
        loc.id = 0


cdef class CopyBatch:
    """A fixed list of (dst, src, nbytes) copies, enqueued many times with one call.

    ``mode="memcpy"`` issues one cudaMemcpyAsync per entry inside a single nogil loop;
    ``mode="batch"`` issues one cudaMemcpyBatchAsync for all entries (stream-ordered sources,
    optional cudaMemcpyFlagPreferOverlapWithCompute). This is the hot path of DMA collectives:
    the pointer arrays are built once, so enqueueing costs no Python work per copy.
    """

    cdef void** _dst
    cdef void** _src
    cdef size_t* _sizes
    cdef size_t* _attr_idx
    cdef rt.cudaMemcpyAttributes* _attrs
    cdef readonly size_t count
    cdef readonly size_t total_bytes
    cdef readonly str mode
    cdef readonly bint prefer_overlap

    def __cinit__(self, dsts, srcs, sizes, str mode="memcpy", bint prefer_overlap=False):
        cdef size_t i, n = len(dsts)
        self._dst = NULL
        self._src = NULL
        self._sizes = NULL
        self._attrs = NULL
        self._attr_idx = NULL
        if mode not in ("memcpy", "batch"):
            raise ValueError(f"CopyBatch mode must be 'memcpy' or 'batch', got {mode!r}")
        if n == 0 or len(srcs) != n or len(sizes) != n:
            raise ValueError("CopyBatch needs equally long, non-empty dst, src and size lists")
        self._dst = <void**>malloc(n * sizeof(void*))
        self._src = <void**>malloc(n * sizeof(void*))
        self._sizes = <size_t*>malloc(n * sizeof(size_t))
        self._attrs = <rt.cudaMemcpyAttributes*>malloc(n * sizeof(rt.cudaMemcpyAttributes))
        self._attr_idx = <size_t*>malloc(n * sizeof(size_t))
        if (self._dst == NULL or self._src == NULL or self._sizes == NULL or self._attrs == NULL
                or self._attr_idx == NULL):
            raise MemoryError()
        self.total_bytes = 0
        for i in range(n):
            if int(sizes[i]) <= 0:
                raise ValueError(f"copy {i} has non-positive size {sizes[i]}")
            self._dst[i] = <void*><uintptr_t>int(dsts[i])
            self._src[i] = <void*><uintptr_t>int(srcs[i])
            self._sizes[i] = <size_t>int(sizes[i])
            self.total_bytes += self._sizes[i]
            # One attribute entry per copy: the location hints differ per pointer.
            self._attrs[i].srcAccessOrder = rt.cudaMemcpySrcAccessOrderStream
            self._attrs[i].flags = rt.cudaMemcpyFlagPreferOverlapWithCompute if prefer_overlap else rt.cudaMemcpyFlagDefault
            _location_hint(&self._attrs[i].srcLocHint, self._src[i])
            _location_hint(&self._attrs[i].dstLocHint, self._dst[i])
            self._attr_idx[i] = i
        self.count = n
        self.mode = mode
        self.prefer_overlap = prefer_overlap

    def enqueue(self, Stream stream):
        """Enqueue every copy on ``stream``; returns at once."""
        cdef size_t i
        cdef size_t failed = 0
        cdef rt.cudaError_t err = rt.cudaSuccess
        cdef rt.cudaStream_t s = stream._s
        if self.mode == "batch":
            with nogil:
                err = rt.cudaMemcpyBatchAsync(<const void**>self._dst, <const void**>self._src, self._sizes,
                                              self.count, self._attrs, self._attr_idx, self.count, s)
            _check(err, f"cudaMemcpyBatchAsync({self.count} copies, {self.total_bytes} bytes)")
            return
        with nogil:
            for i in range(self.count):
                err = rt.cudaMemcpyAsync(self._dst[i], self._src[i], self._sizes[i], rt.cudaMemcpyDefault, s)
                if err != rt.cudaSuccess:
                    failed = i
                    break
        _check(err, f"cudaMemcpyAsync (copy {failed} of {self.count})")

    def __dealloc__(self):
        free(self._dst)
        free(self._src)
        free(self._sizes)
        free(self._attrs)
        free(self._attr_idx)


# --------------------------------------------------------------------------------------------
# Multi-GPU additions (issue 5): device identity, pointer queries, peer copies, stream memory
# operations (device-side flags for ordering copies across processes), non-blocking event queries.
# --------------------------------------------------------------------------------------------

def pci_bus_id(int device):
    """PCI bus id of ``device`` (e.g. '0000:19:00.0'): names a GPU the same way in every process."""
    cdef char buf[64]
    _check(rt.cudaDeviceGetPCIBusId(buf, 64, device), f"cudaDeviceGetPCIBusId({device})")
    return buf.decode()


def device_by_pci_bus_id(str bus_id):
    """This process's index of the GPU at ``bus_id``; raises CudaError if it is not visible here."""
    cdef int device = -1
    cdef bytes b = bus_id.encode()
    _check(rt.cudaDeviceGetByPCIBusId(&device, b), f"cudaDeviceGetByPCIBusId({bus_id})")
    return device


def pointer_info(uintptr_t ptr):
    """{'type': 'device'|'host'|'managed'|'unregistered', 'device': int} of a pointer (cudaPointerGetAttributes)."""
    cdef rt.cudaPointerAttributes attrs
    cdef rt.cudaError_t err = rt.cudaPointerGetAttributes(&attrs, <const void*>ptr)
    if err != rt.cudaSuccess:
        rt.cudaGetLastError()
        _check(err, "cudaPointerGetAttributes")
    kind = {int(rt.cudaMemoryTypeDevice): "device", int(rt.cudaMemoryTypeHost): "host",
            int(rt.cudaMemoryTypeManaged): "managed"}.get(int(attrs.type), "unregistered")
    return {"type": kind, "device": attrs.device}


def ipc_open_mem_handle_flags(bytes handle, bint lazy_peer_access=True):
    """cudaIpcOpenMemHandle with or without cudaIpcMemLazyEnablePeerAccess (ipc_open_mem_handle always sets it)."""
    cdef rt.cudaIpcMemHandle_t h
    cdef void* p = NULL
    cdef rt.cudaError_t err
    cdef unsigned int flags = rt.cudaIpcMemLazyEnablePeerAccess if lazy_peer_access else 0
    if len(handle) != sizeof(h.reserved):
        raise ValueError(f"IPC memory handle must be {sizeof(h.reserved)} bytes, got {len(handle)}")
    memcpy(h.reserved, <const char*>handle, sizeof(h.reserved))
    with nogil:
        err = rt.cudaIpcOpenMemHandle(&p, h, flags)
    _check(err, f"cudaIpcOpenMemHandle(lazy_peer_access={bool(lazy_peer_access)})")
    return <uintptr_t>p


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


def stream_write_value32(uintptr_t addr, unsigned int value, Stream stream not None):
    """cuStreamWriteValue32: when the stream reaches it, write ``value`` to ``addr`` (after a memory
    fence: everything the stream did before is visible first). ``addr`` is device memory of this
    process (for a peer's memory, c3prof copies a local flag with memcpy_async, as NCCL does)."""
    global _cu_write_value32
    cdef int res
    if _cu_write_value32 == NULL:
        _cu_write_value32 = <_stream_value32_fn>_driver_entry(b"cuStreamWriteValue32")
    with nogil:
        res = _cu_write_value32(stream._s, <unsigned long long>addr, value, _CU_STREAM_WRITE_VALUE_DEFAULT)
    _check_drv(res, "cuStreamWriteValue32")


def stream_wait_value32(uintptr_t addr, unsigned int value, Stream stream not None):
    """cuStreamWaitValue32 (GEQ): the stream waits until the 32-bit word at ``addr`` is >= ``value``.
    Used with monotonically increasing sequence numbers, so a peer that runs ahead never deadlocks."""
    global _cu_wait_value32
    cdef int res
    if _cu_wait_value32 == NULL:
        _cu_wait_value32 = <_stream_value32_fn>_driver_entry(b"cuStreamWaitValue32")
    with nogil:
        res = _cu_wait_value32(stream._s, <unsigned long long>addr, value, _CU_STREAM_WAIT_VALUE_GEQ)
    _check_drv(res, "cuStreamWaitValue32")


def event_pool_query(EventPool pool not None, int i):
    """True when event ``i`` of ``pool`` has completed (cudaEventQuery): lets a host wait poll with a
    deadline instead of blocking forever when a peer rank died."""
    cdef rt.cudaError_t err = rt.cudaEventQuery(pool._ev[pool._index(i)])
    if err == rt.cudaErrorNotReady:
        return False
    _check(err, "cudaEventQuery")
    return True


cdef class PeerCopyBatch:
    """Like CopyBatch, but every copy is a cudaMemcpyPeerAsync with explicit source and destination
    devices (the device-aware peer path, as opposed to cudaMemcpyDefault's unified-address lookup)."""

    cdef void** _dst
    cdef void** _src
    cdef int* _dst_dev
    cdef int* _src_dev
    cdef size_t* _sizes
    cdef readonly size_t count
    cdef readonly size_t total_bytes

    def __cinit__(self, dsts, dst_devices, srcs, src_devices, sizes):
        cdef size_t i, n = len(dsts)
        self._dst = NULL
        self._src = NULL
        self._dst_dev = NULL
        self._src_dev = NULL
        self._sizes = NULL
        if n == 0 or len(srcs) != n or len(sizes) != n or len(dst_devices) != n or len(src_devices) != n:
            raise ValueError("PeerCopyBatch needs equally long, non-empty lists")
        self._dst = <void**>malloc(n * sizeof(void*))
        self._src = <void**>malloc(n * sizeof(void*))
        self._dst_dev = <int*>malloc(n * sizeof(int))
        self._src_dev = <int*>malloc(n * sizeof(int))
        self._sizes = <size_t*>malloc(n * sizeof(size_t))
        if (self._dst == NULL or self._src == NULL or self._dst_dev == NULL or self._src_dev == NULL
                or self._sizes == NULL):
            raise MemoryError()
        self.total_bytes = 0
        for i in range(n):
            if int(sizes[i]) <= 0:
                raise ValueError(f"copy {i} has non-positive size {sizes[i]}")
            self._dst[i] = <void*><uintptr_t>int(dsts[i])
            self._src[i] = <void*><uintptr_t>int(srcs[i])
            self._dst_dev[i] = int(dst_devices[i])
            self._src_dev[i] = int(src_devices[i])
            self._sizes[i] = <size_t>int(sizes[i])
            self.total_bytes += self._sizes[i]
        self.count = n

    def enqueue(self, Stream stream):
        cdef size_t i
        cdef size_t failed = 0
        cdef rt.cudaError_t err = rt.cudaSuccess
        cdef rt.cudaStream_t s = stream._s
        with nogil:
            for i in range(self.count):
                err = rt.cudaMemcpyPeerAsync(self._dst[i], self._dst_dev[i], self._src[i], self._src_dev[i],
                                             self._sizes[i], s)
                if err != rt.cudaSuccess:
                    failed = i
                    break
        _check(err, f"cudaMemcpyPeerAsync (copy {failed} of {self.count})")

    def __dealloc__(self):
        free(self._dst)
        free(self._src)
        free(self._dst_dev)
        free(self._src_dev)
        free(self._sizes)
