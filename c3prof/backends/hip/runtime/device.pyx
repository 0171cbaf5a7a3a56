# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Device queries: count, selection, properties, versions, peer access, PCI identity."""

from hip cimport chip as hip

from c3prof.backends.hip.runtime.errors cimport check as _check


def device_count():
    """Number of HIP devices; raises HipError (e.g. hipErrorNoDevice) when none can be used."""
    cdef int n = 0
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipGetDeviceCount(&n)
    _check(err, "hipGetDeviceCount")
    return n


def set_device(int device):
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipSetDevice(device)
    _check(err, f"hipSetDevice({device})")


def device_synchronize():
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipDeviceSynchronize()
    _check(err, "hipDeviceSynchronize")


def mem_get_info():
    """(free_bytes, total_bytes) of the current device."""
    # hip-python declares hipMemGetInfo with unsigned long (size_t on Linux x86_64).
    cdef unsigned long free_b = 0, total_b = 0
    cdef hip.hipError_t err
    with nogil:
        err = hip.hipMemGetInfo(&free_b, &total_b)
    _check(err, "hipMemGetInfo")
    return free_b, total_b


cdef int _attribute(hip.hipDeviceAttribute_t attr, int device, str what) except? -1:
    cdef int value = 0
    _check(hip.hipDeviceGetAttribute(&value, attr, device), f"hipDeviceGetAttribute({what})")
    return value


def device_properties(int device=0):
    """The device properties c3prof's method depends on (``cu_count`` is what CU masks divide)."""
    cdef char name[256]
    _check(hip.hipDeviceGetName(name, 256, device), f"hipDeviceGetName({device})")
    return {
        "name": name.decode(errors="replace"),
        "cu_count": _attribute(hip.hipDeviceAttributeMultiprocessorCount, device, "MultiprocessorCount"),
        "l2_bytes": _attribute(hip.hipDeviceAttributeL2CacheSize, device, "L2CacheSize"),
        "async_engine_count": _attribute(hip.hipDeviceAttributeAsyncEngineCount, device, "AsyncEngineCount"),
    }


def runtime_version():
    cdef int v = 0
    _check(hip.hipRuntimeGetVersion(&v), "hipRuntimeGetVersion")
    return v


def driver_version():
    cdef int v = 0
    _check(hip.hipDriverGetVersion(&v), "hipDriverGetVersion")
    return v


def stream_priority_range():
    """(least, greatest) stream priority; numerically lower is higher priority."""
    cdef int least = 0, greatest = 0
    _check(hip.hipDeviceGetStreamPriorityRange(&least, &greatest), "hipDeviceGetStreamPriorityRange")
    return least, greatest


def can_access_peer(int device, int peer):
    cdef int ok = 0
    _check(hip.hipDeviceCanAccessPeer(&ok, device, peer), f"hipDeviceCanAccessPeer({device},{peer})")
    return bool(ok)


def enable_peer_access(int peer):
    """Enable access from the current device to ``peer``; already-enabled is not an error."""
    cdef hip.hipError_t err = hip.hipDeviceEnablePeerAccess(peer, 0)
    if err == hip.hipErrorPeerAccessAlreadyEnabled:
        hip.hipGetLastError()  # clear it so later checks do not see it
        return
    _check(err, f"hipDeviceEnablePeerAccess({peer})")


def pci_bus_id(int device):
    """PCI bus id of ``device`` (e.g. '0000:0c:00.0'): names a GPU the same way in every process."""
    cdef char buf[64]
    _check(hip.hipDeviceGetPCIBusId(buf, 64, device), f"hipDeviceGetPCIBusId({device})")
    return buf.decode()

