# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Memory: pinned host buffers, device buffers, stream-ordered memset, pointer queries.

Pointers cross this boundary as plain integers (``uintptr_t``), so buffers can come from torch
(``tensor.data_ptr()``), from :class:`DeviceBuffer`, or from a peer process (ipc.pyx).
"""

from libc.stdint cimport uintptr_t

from cuda.bindings cimport cyruntime as rt

from c3prof.backends.cuda.runtime.errors cimport check as _check
from c3prof.backends.cuda.runtime.streams cimport Stream


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
        """64-byte CUDA IPC handle of this allocation (ipc.ipc_mem_handle)."""
        from c3prof.backends.cuda.runtime.ipc import ipc_mem_handle

        return ipc_mem_handle(<uintptr_t>self._p)

    def __dealloc__(self):
        if self._p != NULL:
            rt.cudaFree(self._p)


def memset_async(uintptr_t ptr, int value, size_t nbytes, Stream stream):
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaMemsetAsync(<void*>ptr, value, nbytes, stream._s)
    _check(err, f"cudaMemsetAsync({nbytes} bytes)")


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
