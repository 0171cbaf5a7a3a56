# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Copies: single stream-ordered copies and copy batches enqueued with one call.

CopyBatch and PeerCopyBatch build their pointer arrays once (:c:type:`CopyArrays`), so enqueueing
a batch costs no Python work per copy: the hot path of c3prof's DMA transports and collectives.
"""

from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free

from cuda.bindings cimport cyruntime as rt

from c3prof.backends.cuda.runtime.errors cimport check as _check
from c3prof.backends.cuda.runtime.streams cimport Stream


def memcpy_async(uintptr_t dst, uintptr_t src, size_t nbytes, Stream stream):
    """cudaMemcpyAsync with cudaMemcpyDefault (direction inferred from the unified address space).

    Which engine carries it is the driver's choice: pinned host<->device and peer copies use copy
    engines; same-device device-to-device copies were measured to run on SMs on the H200 (the
    memcpy_d2d engine evidence in tests/data/h200_taxonomy.jsonl reads ``sm``).
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


# The pointer arrays every copy batch holds, built once from Python lists of ints.
cdef struct CopyArrays:
    void** dst
    void** src
    size_t* sizes
    size_t count
    size_t total_bytes


cdef void* _alloc(size_t n, size_t item) except NULL:
    cdef void* p = malloc(n * item)
    if p == NULL:
        raise MemoryError()
    return p


cdef int fill_copy_arrays(CopyArrays* a, dsts, srcs, sizes, str who) except -1:
    """Validate (equally long, non-empty lists, positive sizes) and fill ``a``. On an error the
    arrays allocated so far stay in ``a`` for free_copy_arrays."""
    cdef size_t i, n = len(dsts)
    if n == 0 or len(srcs) != n or len(sizes) != n:
        raise ValueError(f"{who} needs equally long, non-empty dst, src and size lists")
    a.dst = <void**>_alloc(n, sizeof(void*))
    a.src = <void**>_alloc(n, sizeof(void*))
    a.sizes = <size_t*>_alloc(n, sizeof(size_t))
    a.total_bytes = 0
    for i in range(n):
        if int(sizes[i]) <= 0:
            raise ValueError(f"copy {i} has non-positive size {sizes[i]}")
        a.dst[i] = <void*><uintptr_t>int(dsts[i])
        a.src[i] = <void*><uintptr_t>int(srcs[i])
        a.sizes[i] = <size_t>int(sizes[i])
        a.total_bytes += a.sizes[i]
    a.count = n
    return 0


cdef void free_copy_arrays(CopyArrays* a) noexcept:
    free(a.dst)
    free(a.src)
    free(a.sizes)


cdef class CopyBatch:
    """A fixed list of (dst, src, nbytes) copies, enqueued many times with one call.

    ``mode="memcpy"`` issues one cudaMemcpyAsync per entry inside a single nogil loop;
    ``mode="batch"`` issues one cudaMemcpyBatchAsync for all entries (stream-ordered sources,
    optional cudaMemcpyFlagPreferOverlapWithCompute). This is the hot path of DMA collectives:
    the pointer arrays are built once, so enqueueing costs no Python work per copy.
    """

    cdef CopyArrays _a                      # zeroed by Cython before __cinit__
    cdef size_t* _attr_idx
    cdef rt.cudaMemcpyAttributes* _attrs
    cdef readonly str mode
    cdef readonly bint prefer_overlap

    def __cinit__(self, dsts, srcs, sizes, str mode="memcpy", bint prefer_overlap=False):
        cdef size_t i
        if mode not in ("memcpy", "batch"):
            raise ValueError(f"CopyBatch mode must be 'memcpy' or 'batch', got {mode!r}")
        fill_copy_arrays(&self._a, dsts, srcs, sizes, "CopyBatch")
        self._attrs = <rt.cudaMemcpyAttributes*>_alloc(self._a.count, sizeof(rt.cudaMemcpyAttributes))
        self._attr_idx = <size_t*>_alloc(self._a.count, sizeof(size_t))
        for i in range(self._a.count):
            # One attribute entry per copy: the location hints differ per pointer.
            self._attrs[i].srcAccessOrder = rt.cudaMemcpySrcAccessOrderStream
            self._attrs[i].flags = rt.cudaMemcpyFlagPreferOverlapWithCompute if prefer_overlap else rt.cudaMemcpyFlagDefault
            _location_hint(&self._attrs[i].srcLocHint, self._a.src[i])
            _location_hint(&self._attrs[i].dstLocHint, self._a.dst[i])
            self._attr_idx[i] = i
        self.mode = mode
        self.prefer_overlap = prefer_overlap

    @property
    def count(self):
        return self._a.count

    @property
    def total_bytes(self):
        return self._a.total_bytes

    def enqueue(self, Stream stream):
        """Enqueue every copy on ``stream``; returns at once."""
        cdef size_t i
        cdef size_t failed = 0
        cdef rt.cudaError_t err = rt.cudaSuccess
        cdef rt.cudaStream_t s = stream._s
        if self.mode == "batch":
            with nogil:
                err = rt.cudaMemcpyBatchAsync(<const void**>self._a.dst, <const void**>self._a.src, self._a.sizes,
                                              self._a.count, self._attrs, self._attr_idx, self._a.count, s)
            _check(err, f"cudaMemcpyBatchAsync({self._a.count} copies, {self._a.total_bytes} bytes)")
            return
        with nogil:
            for i in range(self._a.count):
                err = rt.cudaMemcpyAsync(self._a.dst[i], self._a.src[i], self._a.sizes[i], rt.cudaMemcpyDefault, s)
                if err != rt.cudaSuccess:
                    failed = i
                    break
        _check(err, f"cudaMemcpyAsync (copy {failed} of {self._a.count})")

    def __dealloc__(self):
        free_copy_arrays(&self._a)
        free(self._attrs)
        free(self._attr_idx)


cdef class PeerCopyBatch:
    """Like CopyBatch, but every copy is a cudaMemcpyPeerAsync with explicit source and destination
    devices (the device-aware peer path, as opposed to cudaMemcpyDefault's unified-address lookup)."""

    cdef CopyArrays _a                      # zeroed by Cython before __cinit__
    cdef int* _dst_dev
    cdef int* _src_dev

    def __cinit__(self, dsts, dst_devices, srcs, src_devices, sizes):
        cdef size_t i
        fill_copy_arrays(&self._a, dsts, srcs, sizes, "PeerCopyBatch")
        if len(dst_devices) != self._a.count or len(src_devices) != self._a.count:
            raise ValueError("PeerCopyBatch needs one source and one destination device per copy")
        self._dst_dev = <int*>_alloc(self._a.count, sizeof(int))
        self._src_dev = <int*>_alloc(self._a.count, sizeof(int))
        for i in range(self._a.count):
            self._dst_dev[i] = int(dst_devices[i])
            self._src_dev[i] = int(src_devices[i])

    @property
    def count(self):
        return self._a.count

    @property
    def total_bytes(self):
        return self._a.total_bytes

    def enqueue(self, Stream stream):
        cdef size_t i
        cdef size_t failed = 0
        cdef rt.cudaError_t err = rt.cudaSuccess
        cdef rt.cudaStream_t s = stream._s
        with nogil:
            for i in range(self._a.count):
                err = rt.cudaMemcpyPeerAsync(self._a.dst[i], self._dst_dev[i], self._a.src[i], self._src_dev[i],
                                             self._a.sizes[i], s)
                if err != rt.cudaSuccess:
                    failed = i
                    break
        _check(err, f"cudaMemcpyPeerAsync (copy {failed} of {self._a.count})")

    def __dealloc__(self):
        free_copy_arrays(&self._a)
        free(self._dst_dev)
        free(self._src_dev)
