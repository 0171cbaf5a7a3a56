# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""HIP IPC for memory: export an allocation's handle, map a peer process's allocation.

(Events are not shared across processes: the DMA collective orders ranks with 32-bit flags in IPC-mapped
device memory, stream_write_value32 / stream_wait_value32 in streams.pyx.)
"""

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize

from hip cimport chip as hip

from c3prof.backends.hip.runtime.errors cimport check as _check


def ipc_mem_handle(uintptr_t ptr):
    """64-byte HIP IPC handle of the allocation that starts at ``ptr`` (hipMalloc'd memory)."""
    cdef hip.hipIpcMemHandle_t h
    _check(hip.hipIpcGetMemHandle(&h, <void*>ptr), "hipIpcGetMemHandle")
    return PyBytes_FromStringAndSize(h.reserved, sizeof(h.reserved))


def ipc_open_mem_handle(bytes handle):
    """Map a peer process's allocation (hipIpcMemLazyEnablePeerAccess); its pointer in this process."""
    cdef hip.hipIpcMemHandle_t h
    cdef void* p = NULL
    cdef hip.hipError_t err
    if len(handle) != sizeof(h.reserved):
        raise ValueError(f"IPC memory handle must be {sizeof(h.reserved)} bytes, got {len(handle)}")
    memcpy(h.reserved, <const char*>handle, sizeof(h.reserved))
    with nogil:
        err = hip.hipIpcOpenMemHandle(&p, h, hip.hipIpcMemLazyEnablePeerAccess)
    _check(err, "hipIpcOpenMemHandle")
    return <uintptr_t>p


def ipc_close_mem_handle(uintptr_t ptr):
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipIpcCloseMemHandle(<void*>ptr)
    _check(err, "hipIpcCloseMemHandle")
