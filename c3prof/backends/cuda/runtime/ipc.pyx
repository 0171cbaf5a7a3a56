# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""CUDA IPC for memory: export an allocation's handle, map a peer process's allocation.

(Event handles are in streams.pyx: Event.ipc_handle and Event(ipc_handle=...).)
"""

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize

from cuda.bindings cimport cyruntime as rt

from c3prof.backends.cuda.runtime.errors cimport check as _check


def ipc_mem_handle(uintptr_t ptr):
    """64-byte CUDA IPC handle of the allocation that starts at ``ptr`` (cudaMalloc'd memory)."""
    cdef rt.cudaIpcMemHandle_t h
    _check(rt.cudaIpcGetMemHandle(&h, <void*>ptr), "cudaIpcGetMemHandle")
    return PyBytes_FromStringAndSize(h.reserved, sizeof(h.reserved))


def ipc_open_mem_handle(bytes handle):
    """Map a peer process's allocation; returns its device pointer in this process (with
    cudaIpcMemLazyEnablePeerAccess)."""
    return ipc_open_mem_handle_flags(handle, True)


def ipc_close_mem_handle(uintptr_t ptr):
    cdef rt.cudaError_t err
    with nogil:
        err = rt.cudaIpcCloseMemHandle(<void*>ptr)
    _check(err, "cudaIpcCloseMemHandle")


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
