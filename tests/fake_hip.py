"""A FAKE HIP runtime: a Python double of c3prof.backends.hip.runtime for GPU-free tests. Nothing here
is measured and nothing runs on an AMD GPU.

``FakeHip()`` has the runtime package's public names (Stream, Event, EventPool, HostBuffer,
DeviceBuffer, CopyBatch, PeerCopyBatch, memcpy_async, ..., HipError, HIP_CALLS). Every operation
records the HIP API calls the real Cython module makes for it, in order, in ``fake.calls`` (names)
and ``fake.log`` ((name, detail)), so a test can check the call sequence of a run. Memory is real
host memory: a device or pinned buffer is a bytearray at a fake address, copies move its bytes, so
byte-exact validation can pass or fail for real. Streams execute their work at once (a synchronous
model); events take times from a simulated clock that copies advance. ``fail("hipMemcpyAsync", 1)``
makes that call fail the way the real runtime reports it: the error name and string are looked up
(hipGetErrorName, hipGetErrorString) and a HipError naming the call is raised.
"""

from __future__ import annotations

import struct
import weakref

from c3prof.backends.hip.runtime_calls import HIP_CALLS

ERROR_NAMES = {1: "hipErrorInvalidValue", 2: "hipErrorOutOfMemory", 100: "hipErrorNoDevice",
               704: "hipErrorPeerAccessAlreadyEnabled"}
NO_DEVICE, PEER_ALREADY_ENABLED = 100, 704
BYTES_PER_MS = 50e6          # simulated copy speed: 50 GB/s (a made-up number, not a measurement)


class HipError(RuntimeError):
    """Same fields as c3prof.backends.hip.runtime.HipError."""

    def __init__(self, call, code, name, description):
        self.call, self.code, self.name, self.description = call, code, name, description
        super().__init__(f"{call} failed: {name} ({code}): {description}")


class _Bound:
    """Base of the fake's classes: ``hip`` is the FakeHip instance they record into."""

    hip: FakeHip


class FakeStream(_Bound):
    def __init__(self, priority=0, non_blocking=True, cu_mask=None):
        self.cu_mask = None if cu_mask is None else tuple(int(w) for w in cu_mask)
        if cu_mask is not None:
            self.hip.call("hipExtStreamCreateWithCUMask", f"{len(cu_mask)} words")
            self.priority = 0
        else:
            self.hip.call("hipStreamCreateWithPriority", f"priority={priority}")
            self.priority = priority
        self.handle = self.hip.new_address(1)
        self.closed = False

    def granted_cu_mask(self, words):
        self.hip.call("hipExtStreamGetCUMask")
        mask = list(self.cu_mask or [0xFFFFFFFF] * words)
        return tuple((mask + [0] * words)[:words])

    def synchronize(self):
        self.hip.call("hipStreamSynchronize")

    def wait(self, event):
        self.hip.call("hipStreamWaitEvent")

    def close(self):
        if not self.closed:
            self.closed = True
            self.hip.call("hipStreamDestroy")


class FakeEvent(_Bound):
    def __init__(self, timing=True):
        self.hip.call("hipEventCreateWithFlags", "timing" if timing else "no timing")
        self.t = None

    def record(self, stream):
        self.hip.call("hipEventRecord")
        self.t = self.hip.clock_ms

    def __del__(self):
        self.hip.call("hipEventDestroy", quiet=True)


class FakeEventPool(_Bound):
    def __init__(self, size):
        if size <= 0:
            raise ValueError("EventPool size must be positive")
        self.size = size
        for _ in range(size):
            self.hip.call("hipEventCreateWithFlags", "timing")
        self.t = [None] * size

    def record(self, i, stream):
        self.hip.call("hipEventRecord")
        self.t[i] = self.hip.clock_ms

    def wait(self, i, stream):
        self.hip.call("hipStreamWaitEvent")

    def synchronize(self, i):
        self.hip.call("hipEventSynchronize")

    def elapsed_from(self, base, indices):
        out = []
        for i in indices:
            self.hip.call("hipEventElapsedTime")
            out.append(self.t[i] - self.t[base])
        return out

    def __del__(self):
        for _ in range(self.size):
            self.hip.call("hipEventDestroy", quiet=True)


class FakeHostBuffer(bytearray, _Bound):
    """Pinned host memory: a bytearray (so numpy.frombuffer views it, as the real buffer protocol does)."""

    def __init__(self, nbytes):
        if nbytes == 0:
            raise ValueError("HostBuffer size must be positive")
        self.hip.call("hipHostMalloc", f"{nbytes} bytes")
        super().__init__(nbytes)
        self.nbytes = nbytes
        # A weak entry: the fake's address table must not keep the buffer alive (freeing is tested).
        self.ptr = self.hip.register(weakref.ref(self), nbytes)

    def __del__(self):
        self.hip.call("hipHostFree", quiet=True)


class FakeDeviceBuffer(_Bound):
    def __init__(self, nbytes):
        if nbytes == 0:
            raise ValueError("DeviceBuffer size must be positive")
        self.hip.call("hipMalloc", f"{nbytes} bytes")
        self.nbytes = nbytes
        self.data = bytearray(nbytes)
        self.ptr = self.hip.register(self.data, nbytes)

    def __del__(self):
        self.hip.call("hipFree", quiet=True)


class FakeCopyBatch(_Bound):
    def __init__(self, dsts, srcs, sizes):
        if not dsts or len(srcs) != len(dsts) or len(sizes) != len(dsts):
            raise ValueError("CopyBatch needs equally many (>= 1) destinations, sources and sizes")
        self.copies = list(zip(dsts, srcs, sizes))
        self.count, self.total_bytes = len(self.copies), sum(sizes)

    def enqueue(self, stream):
        for k, (d, s, n) in enumerate(self.copies):
            self.hip.copy("hipMemcpyAsync", d, s, n, f"copy {k} of {self.count}")


class FakePeerCopyBatch(_Bound):
    def __init__(self, dsts, dst_devices, srcs, src_devices, sizes):
        if not dsts or len(srcs) != len(dsts) or len(sizes) != len(dsts):
            raise ValueError("PeerCopyBatch needs equally many (>= 1) destinations, sources and sizes")
        if len(dst_devices) != len(dsts) or len(src_devices) != len(dsts):
            raise ValueError("PeerCopyBatch needs one source and one destination device per copy")
        self.copies = list(zip(dsts, srcs, sizes))
        self.devices = list(zip(dst_devices, src_devices))
        self.count, self.total_bytes = len(self.copies), sum(sizes)

    def enqueue(self, stream):
        for k, (d, s, n) in enumerate(self.copies):
            self.hip.copy("hipMemcpyPeerAsync", d, s, n, f"copy {k} of {self.count}, {self.devices[k]}")


class FakeHip:
    """One fake HIP runtime: ``devices`` GPUs of ``cu_count`` CUs, all in this process."""

    NO_GPU_ERRORS = (35, NO_DEVICE)
    HIP_CALLS = HIP_CALLS
    HipError = HipError

    def __init__(self, devices: int = 1, cu_count: int = 304, name: str = "FakeHIP MI300X (synthetic)"):
        self.devices, self.cu_count, self.name = devices, cu_count, name
        self.calls: list[str] = []
        self.log: list[tuple[str, str]] = []
        self.failures: dict[str, int] = {}
        self.memory: dict[int, object] = {}        # address -> bytearray, or a weak reference to one
        self.clock_ms = 0.0
        self.current = 0
        self.peer_enabled: set[int] = set()
        self.mapped: list[int] = []
        self._next = 0x7F00_0000_0000
        for cls in (FakeStream, FakeEvent, FakeEventPool, FakeHostBuffer, FakeDeviceBuffer, FakeCopyBatch,
                    FakePeerCopyBatch):
            public = cls.__name__.removeprefix("Fake")
            setattr(self, public, type(public, (cls,), {"hip": self}))

    # -- recording, failure injection, memory --------------------------------------------------

    def fail(self, call: str, code: int = 1) -> None:
        """Make every later ``call`` fail with HIP error ``code``."""
        assert call in HIP_CALLS, f"{call} is not a call the backend makes"
        self.failures[call] = code

    def call(self, name: str, detail: str = "", quiet: bool = False) -> None:
        assert name in HIP_CALLS, f"the fake was asked for {name}, which HIP_CALLS does not list"
        self.calls.append(name)
        self.log.append((name, detail))
        code = self.failures.get(name)
        if code is not None and not quiet:
            self.raise_error(name if not detail else f"{name}({detail})", code)

    def raise_error(self, call: str, code: int):
        # What errors.pyx does with a failed status: look up its name and string, raise HipError.
        self.calls += ["hipGetErrorName", "hipGetErrorString"]
        name = ERROR_NAMES.get(code, "hipErrorUnknown")
        raise HipError(call, code, name, f"{name} (fake)")

    def new_address(self, nbytes: int) -> int:
        addr = self._next
        self._next += (nbytes + 0xFFFF) & ~0xFFFF
        return addr

    def register(self, data, nbytes: int) -> int:
        addr = self.new_address(nbytes)
        self.memory[addr] = data
        return addr

    def resolve(self, addr: int, nbytes: int) -> tuple[bytearray, int]:
        for base, entry in self.memory.items():
            data = entry() if isinstance(entry, weakref.ref) else entry
            if data is not None and base <= addr and addr + nbytes <= base + len(data):
                return data, addr - base
        raise AssertionError(f"fake HIP: {nbytes} bytes at {addr:#x} are not inside any allocation")

    def copy(self, call: str, dst: int, src: int, nbytes: int, detail: str = "") -> None:
        self.call(call, detail or f"{nbytes} bytes")
        (d, do), (s, so) = self.resolve(dst, nbytes), self.resolve(src, nbytes)
        d[do:do + nbytes] = s[so:so + nbytes]
        self.clock_ms += nbytes / BYTES_PER_MS

    # -- the runtime package's functions -------------------------------------------------------

    def device_count(self):
        self.call("hipGetDeviceCount")
        return self.devices

    def set_device(self, device):
        self.call("hipSetDevice", str(device))
        self.current = device

    def device_synchronize(self):
        self.call("hipDeviceSynchronize")

    def mem_get_info(self):
        self.call("hipMemGetInfo")
        return 192 * 2**30, 192 * 2**30

    def device_properties(self, device=0):
        self.call("hipDeviceGetName")
        for what in ("MultiprocessorCount", "L2CacheSize", "AsyncEngineCount"):
            self.call("hipDeviceGetAttribute", what)
        return {"name": self.name, "cu_count": self.cu_count, "l2_bytes": 4 * 2**20, "async_engine_count": 2}

    def runtime_version(self):
        self.call("hipRuntimeGetVersion")
        return 70_100_000

    def driver_version(self):
        self.call("hipDriverGetVersion")
        return 70_100_000

    def stream_priority_range(self):
        self.call("hipDeviceGetStreamPriorityRange")
        return 0, -1

    def can_access_peer(self, device, peer):
        self.call("hipDeviceCanAccessPeer", f"{device},{peer}")
        return device != peer

    def enable_peer_access(self, peer):
        self.call("hipDeviceEnablePeerAccess", str(peer))
        if peer in self.peer_enabled:       # already enabled: the real module clears the error and goes on
            self.call("hipGetLastError")
        self.peer_enabled.add(peer)

    def pci_bus_id(self, device):
        self.call("hipDeviceGetPCIBusId", str(device))
        return f"0000:{0x0c + device:02x}:00.0"

    def memcpy_async(self, dst, src, nbytes, stream):
        self.copy("hipMemcpyAsync", dst, src, nbytes)

    def memcpy_peer_async(self, dst, dst_device, src, src_device, nbytes, stream):
        self.copy("hipMemcpyPeerAsync", dst, src, nbytes, f"{nbytes} bytes, {src_device}->{dst_device}")

    def memset_async(self, ptr, value, nbytes, stream):
        self.call("hipMemsetAsync", f"{nbytes} bytes")
        data, off = self.resolve(ptr, nbytes)
        data[off:off + nbytes] = bytes([value & 0xFF]) * nbytes

    def stream_write_value32(self, addr, value, stream):
        self.call("hipStreamWriteValue32", f"{value}")
        data, off = self.resolve(addr, 4)
        data[off:off + 4] = struct.pack("<I", value)

    def stream_wait_value32(self, addr, value, stream):
        self.call("hipStreamWaitValue32", f">= {value}")
        data, off = self.resolve(addr, 4)
        if struct.unpack("<I", data[off:off + 4])[0] < value:
            # A synchronous model cannot wait: the flag must already be set, or the real device would hang.
            raise AssertionError(f"fake HIP: stream waits for flag >= {value} that nothing has set")

    def ipc_mem_handle(self, ptr):
        self.call("hipIpcGetMemHandle")
        return struct.pack("<Q", ptr).ljust(64, b"\0")

    def ipc_open_mem_handle(self, handle):
        self.call("hipIpcOpenMemHandle")
        ptr = struct.unpack("<Q", handle[:8])[0]     # one process: the peer's address is valid here
        self.mapped.append(ptr)
        return ptr

    def ipc_close_mem_handle(self, ptr):
        self.call("hipIpcCloseMemHandle")
        self.mapped.remove(ptr)
