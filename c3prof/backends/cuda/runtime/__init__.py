"""c3prof's CUDA hot path: thin Cython modules over ``cuda.bindings.cyruntime``, one per concept.

    errors.pyx    CudaError, NO_GPU_ERRORS; errors.pxd's ``check`` turns every status into a CudaError
    device.pyx    device count, selection, properties, versions, peer access, profiler ranges
    streams.pyx   Stream, Event, EventPool, stream memory operations (32-bit flags), event queries
    memory.pyx    HostBuffer (pinned), DeviceBuffer, memset_async, pointer_info
    copies.pyx    memcpy_async, memcpy_peer_async, CopyBatch, PeerCopyBatch
    ipc.pyx       IPC handles of allocations (event handles live with Event)

Thin by design (like cuda_core's modules): each class owns one CUDA object, every call's status is
checked and turned into a CudaError naming the call and the CUDA error, and the GIL is released
around every call that can block or take more than a few hundred nanoseconds. cuda-bindings loads
the CUDA runtime when first used, so these modules import on a machine without a GPU; calls there
fail with a CudaError (cudaErrorInsufficientDriver / cudaErrorNoDevice) instead of crashing.

This package re-exports every public name: ``from c3prof.backends.cuda import runtime as rt``.
"""

from c3prof.backends.cuda.runtime.copies import CopyBatch, PeerCopyBatch, memcpy_async, memcpy_peer_async
from c3prof.backends.cuda.runtime.device import (can_access_peer, check_last_error, device_by_pci_bus_id,
                                                 device_count, device_properties, device_synchronize,
                                                 driver_version, enable_peer_access, get_device, mem_get_info,
                                                 pci_bus_id, profiler_start, profiler_stop, runtime_version,
                                                 set_device, stream_priority_range)
from c3prof.backends.cuda.runtime.errors import NO_GPU_ERRORS, CudaError
from c3prof.backends.cuda.runtime.ipc import (ipc_close_mem_handle, ipc_mem_handle, ipc_open_mem_handle,
                                              ipc_open_mem_handle_flags)
from c3prof.backends.cuda.runtime.memory import DeviceBuffer, HostBuffer, memset_async, pointer_info
from c3prof.backends.cuda.runtime.streams import (Event, EventPool, FlagBatch, Stream, event_pool_query,
                                                  stream_wait_value32, stream_write_value32)

__all__ = [
    "CopyBatch", "CudaError", "DeviceBuffer", "Event", "EventPool", "FlagBatch", "HostBuffer", "NO_GPU_ERRORS",
    "PeerCopyBatch",
    "Stream", "can_access_peer", "check_last_error", "device_by_pci_bus_id", "device_count", "device_properties",
    "device_synchronize", "driver_version", "enable_peer_access", "event_pool_query", "get_device",
    "ipc_close_mem_handle", "ipc_mem_handle", "ipc_open_mem_handle", "ipc_open_mem_handle_flags", "mem_get_info",
    "memcpy_async", "memcpy_peer_async", "memset_async", "pci_bus_id", "pointer_info", "profiler_start",
    "profiler_stop", "runtime_version", "set_device", "stream_priority_range", "stream_wait_value32",
    "stream_write_value32",
]
