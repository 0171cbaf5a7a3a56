# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Memory: pinned host buffers, device buffers and stream-ordered memset.

Pointers cross this boundary as plain integers (``uintptr_t``), so buffers can come from torch
(``tensor.data_ptr()``), from :class:`DeviceBuffer`, or from a peer process (ipc.pyx).
"""

from libc.stdint cimport uintptr_t

from hip cimport chip as hip

from c3prof.backends.hip.runtime.errors cimport check as _check
from c3prof.backends.hip.runtime.streams cimport Stream


cdef class HostBuffer:
    """Page-locked host memory (hipHostMalloc, portable): the source or target of SDMA transfers.

    Supports the buffer protocol: ``numpy.frombuffer(buf, dtype=numpy.uint8)`` is a zero-copy view.
    """

    cdef void* _p
    cdef readonly size_t nbytes
    cdef Py_ssize_t _shape[1]
    cdef Py_ssize_t _strides[1]

    def __cinit__(self, size_t nbytes):
        cdef hip.hipError_t err
        if nbytes == 0:
            raise ValueError("HostBuffer size must be positive")
        self._p = NULL
        with nogil:
            err = hip.hipHostMalloc(&self._p, nbytes, hip.hipHostMallocPortable)
        _check(err, f"hipHostMalloc({nbytes} bytes)")
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
            hip.hipHostFree(self._p)


cdef class DeviceBuffer:
    """Device memory from hipMalloc on the current device (torch-independent, IPC-exportable)."""

    cdef void* _p
    cdef readonly size_t nbytes

    def __cinit__(self, size_t nbytes):
        cdef hip.hipError_t err
        if nbytes == 0:
            raise ValueError("DeviceBuffer size must be positive")
        self._p = NULL
        with nogil:
            err = hip.hipMalloc(&self._p, nbytes)
        _check(err, f"hipMalloc({nbytes} bytes)")
        self.nbytes = nbytes

    @property
    def ptr(self):
        return <uintptr_t>self._p

    def __dealloc__(self):
        if self._p != NULL:
            hip.hipFree(self._p)


def memset_async(uintptr_t ptr, int value, size_t nbytes, Stream stream):
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipMemsetAsync(<void*>ptr, value, nbytes, stream._s)
    _check(err, f"hipMemsetAsync({nbytes} bytes)")
