# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Device queries: count, selection, properties, versions, peer access, profiler ranges."""

from cuda.bindings cimport cyruntime as rt

from c3prof.backends.cuda.runtime.errors cimport check as _check


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
