"""c3prof's HIP hot path: thin Cython modules over ``hip.chip`` (AMD's hip-python), one per concept.

    errors.pyx    HipError, NO_GPU_ERRORS; errors.pxd's ``check`` turns every status into a HipError
    device.pyx    device count, selection, properties, versions, peer access, PCI identity
    streams.pyx   Stream (priority or CU mask), Event, EventPool, stream write/wait of a 32-bit value
    memory.pyx    HostBuffer (pinned), DeviceBuffer, memset_async
    copies.pyx    memcpy_async, memcpy_peer_async, CopyBatch, PeerCopyBatch (no GIL while enqueueing)
    ipc.pyx       IPC handles of allocations (the DMA collective maps peers' buffers and flags)

The sibling of c3prof/backends/cuda/runtime, with the same classes and functions where both vendors
have the call. hip-python loads libamdhip64 when first used, so these modules import on a
machine without ROCm once built; they are built only where the bindings and HIP headers are
present (setup.py). Where they are not built, importing this package raises ImportError and the
HIP backend reports itself unavailable (c3prof/backends/hip/backend.py).

HIP_CALLS (c3prof/backends/hip/runtime_calls.py, pure Python) lists every HIP call the modules above
make: the contract with the tests' fake HIP layer (tests/fake_hip.py).

This package re-exports every public name: ``from c3prof.backends.hip import runtime as rt``.
"""

from c3prof.backends.hip.runtime_calls import HIP_CALLS
from c3prof.backends.hip.runtime.copies import CopyBatch, PeerCopyBatch, memcpy_async, memcpy_peer_async
from c3prof.backends.hip.runtime.device import (can_access_peer, device_count,
                                                device_properties, device_synchronize, driver_version,
                                                enable_peer_access, mem_get_info, pci_bus_id, runtime_version,
                                                set_device, stream_priority_range)
from c3prof.backends.hip.runtime.errors import NO_GPU_ERRORS, HipError
from c3prof.backends.hip.runtime.ipc import ipc_close_mem_handle, ipc_mem_handle, ipc_open_mem_handle
from c3prof.backends.hip.runtime.memory import DeviceBuffer, HostBuffer, memset_async
from c3prof.backends.hip.runtime.streams import (Event, EventPool, Stream, stream_wait_value32,
                                                 stream_write_value32)

__all__ = [
    "CopyBatch", "DeviceBuffer", "Event", "EventPool", "HIP_CALLS", "HipError", "HostBuffer", "NO_GPU_ERRORS",
    "PeerCopyBatch", "Stream", "can_access_peer", "device_count", "device_properties",
    "device_synchronize", "driver_version", "enable_peer_access", "ipc_close_mem_handle", "ipc_mem_handle",
    "ipc_open_mem_handle", "mem_get_info", "memcpy_async", "memcpy_peer_async", "memset_async", "pci_bus_id",
    "runtime_version", "set_device", "stream_priority_range", "stream_wait_value32", "stream_write_value32",
]
