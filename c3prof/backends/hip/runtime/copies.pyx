# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Copies: single stream-ordered copies and copy batches enqueued with one call, without the GIL.

On MI300X, hipMemcpyAsync between pinned host memory and the device, and hipMemcpyPeerAsync over
XGMI, run on the SDMA engines when the runtime is allowed to use them (HSA_ENABLE_SDMA=1, the
default; c3prof sets it, see c3prof/backends/hip/device.py). With HSA_ENABLE_SDMA=0 the runtime
uses blit kernels on the CUs instead: the engine evidence records which one ran.
"""

from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free

from hip cimport chip as hip

from c3prof.backends.hip.runtime.errors cimport check as _check
from c3prof.backends.hip.runtime.streams cimport Stream


def memcpy_async(uintptr_t dst, uintptr_t src, size_t nbytes, Stream stream):
    """hipMemcpyAsync with hipMemcpyDefault (direction from the unified address space)."""
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipMemcpyAsync(<void*>dst, <const void*>src, nbytes, hip.hipMemcpyDefault, stream._s)
    _check(err, f"hipMemcpyAsync({nbytes} bytes)")


def memcpy_peer_async(uintptr_t dst, int dst_device, uintptr_t src, int src_device, size_t nbytes,
                      Stream stream):
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipMemcpyPeerAsync(<void*>dst, dst_device, <const void*>src, src_device, nbytes, stream._s)
    _check(err, f"hipMemcpyPeerAsync({nbytes} bytes, {src_device}->{dst_device})")


cdef void* _alloc(size_t n, size_t size) except NULL:
    cdef void* p = malloc((n if n else 1) * size)
    if p == NULL:
        raise MemoryError()
    return p


cdef class _Copies:
    """What every copy batch shares: its pointer arrays, built once (no Python work per copy)."""

    cdef void** _dst
    cdef void** _src
    cdef size_t* _sizes
    cdef readonly size_t count
    cdef readonly size_t total_bytes

    cdef int _fill(self, dsts, srcs, sizes, str what) except -1:
        cdef size_t i, n = len(dsts)
        if n == 0 or len(srcs) != n or len(sizes) != n:
            raise ValueError(f"{what} needs equally many (>= 1) destinations, sources and sizes")
        self._dst = <void**>_alloc(n, sizeof(void*))
        self._src = <void**>_alloc(n, sizeof(void*))
        self._sizes = <size_t*>_alloc(n, sizeof(size_t))
        self.total_bytes = 0
        for i in range(n):
            self._dst[i] = <void*><uintptr_t>int(dsts[i])
            self._src[i] = <void*><uintptr_t>int(srcs[i])
            self._sizes[i] = <size_t>int(sizes[i])
            self.total_bytes += self._sizes[i]
        self.count = n
        return 0

    def __dealloc__(self):
        free(self._dst)
        free(self._src)
        free(self._sizes)


cdef class CopyBatch(_Copies):
    """A fixed list of (dst, src, nbytes) copies: one hipMemcpyAsync per entry in a single nogil loop."""

    def __cinit__(self, dsts, srcs, sizes):
        self._fill(dsts, srcs, sizes, "CopyBatch")

    def enqueue(self, Stream stream):
        """Enqueue every copy on ``stream``; returns at once."""
        cdef size_t i
        cdef size_t failed = 0
        cdef hip.hipError_t err = hip.hipSuccess
        cdef hip.hipStream_t s = stream._s
        with nogil:
            for i in range(self.count):
                err = hip.hipMemcpyAsync(self._dst[i], self._src[i], self._sizes[i], hip.hipMemcpyDefault, s)
                if err != hip.hipSuccess:
                    failed = i
                    break
        _check(err, f"hipMemcpyAsync (copy {failed} of {self.count})")


cdef class PeerCopyBatch(_Copies):
    """Like CopyBatch, but every copy is a hipMemcpyPeerAsync with explicit devices (XGMI peer path)."""

    cdef int* _dst_dev
    cdef int* _src_dev

    def __cinit__(self, dsts, dst_devices, srcs, src_devices, sizes):
        cdef size_t i
        self._fill(dsts, srcs, sizes, "PeerCopyBatch")
        if len(dst_devices) != self.count or len(src_devices) != self.count:
            raise ValueError("PeerCopyBatch needs one source and one destination device per copy")
        self._dst_dev = <int*>_alloc(self.count, sizeof(int))
        self._src_dev = <int*>_alloc(self.count, sizeof(int))
        for i in range(self.count):
            self._dst_dev[i] = int(dst_devices[i])
            self._src_dev[i] = int(src_devices[i])

    def enqueue(self, Stream stream):
        cdef size_t i
        cdef size_t failed = 0
        cdef hip.hipError_t err = hip.hipSuccess
        cdef hip.hipStream_t s = stream._s
        with nogil:
            for i in range(self.count):
                err = hip.hipMemcpyPeerAsync(self._dst[i], self._dst_dev[i], self._src[i], self._src_dev[i],
                                             self._sizes[i], s)
                if err != hip.hipSuccess:
                    failed = i
                    break
        _check(err, f"hipMemcpyPeerAsync (copy {failed} of {self.count})")

    def __dealloc__(self):
        free(self._dst_dev)
        free(self._src_dev)
