"""Every HIP runtime call the HIP backend makes, by name (pure Python: importable without ROCm).

The runtime modules (runtime/*.pyx) are the only code that calls HIP; this list is the
contract between them and the fake HIP layer the tests use (tests/fake_hip.py).
tests/test_hip_fake.py checks both directions: every ``hip.hipXxx(`` call in the .pyx sources is
listed here, and every call listed here is recorded by the fake-layer tests.
"""

HIP_CALLS = (
    # errors.pyx (on a failed call)
    "hipGetErrorName", "hipGetErrorString",
    # device.pyx
    "hipGetDeviceCount", "hipSetDevice", "hipDeviceSynchronize", "hipMemGetInfo", "hipDeviceGetName",
    "hipDeviceGetAttribute", "hipRuntimeGetVersion", "hipDriverGetVersion", "hipDeviceGetStreamPriorityRange",
    "hipDeviceCanAccessPeer", "hipDeviceEnablePeerAccess", "hipGetLastError", "hipDeviceGetPCIBusId",
    # streams.pyx
    "hipStreamCreateWithPriority", "hipExtStreamCreateWithCUMask", "hipExtStreamGetCUMask",
    "hipStreamSynchronize", "hipStreamWaitEvent", "hipStreamDestroy", "hipEventCreateWithFlags", "hipEventRecord",
    "hipEventSynchronize", "hipEventElapsedTime", "hipEventDestroy", "hipStreamWriteValue32",
    "hipStreamWaitValue32",
    # memory.pyx
    "hipHostMalloc", "hipHostFree", "hipMalloc", "hipFree", "hipMemsetAsync",
    # copies.pyx
    "hipMemcpyAsync", "hipMemcpyPeerAsync",
    # ipc.pyx
    "hipIpcGetMemHandle", "hipIpcOpenMemHandle", "hipIpcCloseMemHandle",
)
