"""The communication side on one AMD GPU: the same bytes over the same link, carried by CUs or SDMA.

The HIP sibling of c3prof/backends/cuda/transports.py, with the same transport names
(c3prof.plan.model.TRANSPORTS). Buffers are the runtime's own allocations (rt.DeviceBuffer,
pinned rt.HostBuffer), so the copy-engine path and the validation need neither torch nor a GPU
in the tests (tests/fake_hip.py):

    link        CU carrier (base, sp, rp)                      SDMA carrier (dma, dma+rp)
    pcie_h2d    sm_zc_h2d: copy kernel reads pinned host      ce_h2d: hipMemcpyAsync host -> device
    pcie_d2h    sm_zc_d2h: copy kernel writes pinned host     ce_d2h: hipMemcpyAsync device -> host
    pcie_bidir  sm_zc_bidir: one kernel, both directions      ce_bidir: both copies, the second on a forked stream
    hbm         sm_kernel: device copy kernel                 ce_d2d: hipMemcpyAsync device -> device (ROCm
                                                              may run same-device copies as blit kernels:
                                                              the engine evidence says which ran)

Validation is byte-exact, as on CUDA: each source holds random bytes; before a phase the
destination is overwritten with their bitwise complement (so every byte must be rewritten); after
a batch every destination byte is compared with the source's bytes (a device destination is first
copied to a pinned host buffer, then compared there with numpy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from c3prof.plan.model import TRANSPORTS

LINK_OF = {name: link for (link, _), name in TRANSPORTS.items()}
CARRIER_OF = {name: carrier for (_, carrier), name in TRANSPORTS.items()}
DIRECTIONS = {"pcie_h2d": ("h2d",), "pcie_d2h": ("d2h",), "pcie_bidir": ("h2d", "d2h"), "hbm": ("d2d",)}
# A PCIe copy kernel with 16 workgroups, like the CUDA backend's NCCL-like CTA count.
PCIE_CU_WORKGROUPS = 16


def default_workgroups(link: str, cus: int) -> int:
    """Workgroups of the CU carrier: 16 over PCIe; two per CU of its group for a device copy."""
    return PCIE_CU_WORKGROUPS if link.startswith("pcie") else 2 * cus


def host_view(buf) -> np.ndarray:
    return np.frombuffer(buf, dtype=np.uint8)


@dataclass
class Pair:
    """One direction: source and destination buffers (rt.HostBuffer / rt.DeviceBuffer), the bytes the
    destination must hold (``ref``, pinned host) and their complement (``poison``, pinned host)."""

    direction: str
    src: object
    dst: object
    ref: object
    poison: object
    scratch: object = None          # pinned host copy of a device destination, for the comparison


class TransferBuffers:
    """One scenario's transfer buffers, shared by all its strategies (every carrier moves these bytes)."""

    def __init__(self, rt, stream, link: str, nbytes: int, seed: int = 1):
        self.rt, self.link, self.nbytes = rt, link, nbytes
        rng = np.random.default_rng(seed)
        self.pairs = [self._pair(d, rng, stream) for d in DIRECTIONS[link]]
        stream.dma.synchronize()

    def _pair(self, direction: str, rng, stream) -> Pair:
        rt, n = self.rt, self.nbytes
        ref, poison = rt.HostBuffer(n), rt.HostBuffer(n)
        host_view(ref)[:] = rng.integers(0, 256, n, dtype=np.uint8)
        np.bitwise_not(host_view(ref), out=host_view(poison))
        if direction == "h2d":
            return Pair(direction, ref, rt.DeviceBuffer(n), ref, poison, scratch=rt.HostBuffer(n))
        if direction == "d2h":
            src = rt.DeviceBuffer(n)
            rt.memcpy_async(src.ptr, ref.ptr, n, stream.dma)
            return Pair(direction, src, rt.HostBuffer(n), ref, poison)
        src = rt.DeviceBuffer(n)
        rt.memcpy_async(src.ptr, ref.ptr, n, stream.dma)
        return Pair(direction, src, rt.DeviceBuffer(n), ref, poison, scratch=rt.HostBuffer(n))

    @staticmethod
    def bytes_needed(link: str, nbytes: int) -> tuple[int, int]:
        """(device bytes, pinned host bytes) of one scenario's buffers."""
        dirs = DIRECTIONS[link]
        device = sum({"h2d": 1, "d2h": 1, "d2d": 2}[d] for d in dirs) * nbytes
        host = sum({"h2d": 3, "d2h": 3, "d2d": 3}[d] for d in dirs) * nbytes
        return device, host


def _mismatch(got: np.ndarray, want: np.ndarray) -> tuple[int, int | None]:
    ne = got != want
    count = int(np.count_nonzero(ne))
    return count, (int(np.argmax(ne)) if count else None)


class Transport:
    """Moves a TransferBuffers' pairs in chunks; the carrier is what subclasses choose."""

    name = ""
    expected_carrier = ""

    def __init__(self, rt, buffers: TransferBuffers, stream, chunk: int | None = None):
        self.rt, self.buf, self.stream = rt, buffers, stream
        self.nbytes, self.link = buffers.nbytes, buffers.link
        self.chunk = chunk or buffers.nbytes
        if self.nbytes % self.chunk:
            raise ValueError(f"chunk {self.chunk} does not divide {self.nbytes} bytes")

    def chunk_ptrs(self, buf) -> list[int]:
        return [buf.ptr + off for off in range(0, self.nbytes, self.chunk)]

    def launch(self, stream, rep: int) -> None:
        raise NotImplementedError

    def poison(self) -> None:
        """Overwrite every destination with the complement of the bytes it must receive."""
        for p in self.buf.pairs:
            self.rt.memcpy_async(p.dst.ptr, p.poison.ptr, self.nbytes, self.stream.dma)
        self.stream.dma.synchronize()

    def validate(self, corrupt: bool = False) -> dict:
        """Compare every destination byte with its reference; ``corrupt`` flips one destination byte
        first (the injected fault that proves the check can fail)."""
        self.rt.device_synchronize()
        count, first = 0, None
        for k, p in enumerate(self.buf.pairs):
            if corrupt and k == 0:
                self._flip_one_byte(p)
            got = p.dst
            if p.scratch is not None:       # device destination: bring it to the host, compare there
                self.rt.memcpy_async(p.scratch.ptr, p.dst.ptr, self.nbytes, self.stream.dma)
                self.stream.dma.synchronize()
                got = p.scratch
            c, f = _mismatch(host_view(got), host_view(p.ref))
            if c and first is None:
                first = f + k * self.nbytes
            count += c
        return {"transport": self.name, "bytes_checked": self.nbytes * len(self.buf.pairs),
                "mismatched_bytes": count, "first_mismatch_offset": first, "ok": count == 0,
                "method": "every destination byte (device destinations copied to pinned host memory first) "
                          "compared on the host with the source's bytes"}

    def _flip_one_byte(self, p: Pair) -> None:
        i = self.nbytes // 3
        if p.scratch is None:                # host destination: flip it in place
            host_view(p.dst)[i] ^= 0xFF
            return
        one = self.rt.HostBuffer(1)
        self.rt.memcpy_async(one.ptr, p.dst.ptr + i, 1, self.stream.dma)
        self.stream.dma.synchronize()
        host_view(one)[0] ^= 0xFF
        self.rt.memcpy_async(p.dst.ptr + i, one.ptr, 1, self.stream.dma)
        self.stream.dma.synchronize()


class CopyEngineTransport(Transport):
    """SDMA carrier: one hipMemcpyAsync per chunk (a CopyBatch per direction, enqueued without the
    GIL). With two directions the second runs on a stream forked from the first (events)."""

    expected_carrier = "copy_engine"

    def __init__(self, rt, buffers: TransferBuffers, stream, chunk: int | None = None, priority: int = 0):
        super().__init__(rt, buffers, stream, chunk)
        self.name = TRANSPORTS[(buffers.link, "copy_engine")]
        self.batches = [rt.CopyBatch(self.chunk_ptrs(p.dst), self.chunk_ptrs(p.src), [self.chunk] * len(self.chunk_ptrs(p.dst)))
                        for p in buffers.pairs]
        two = len(self.batches) > 1
        self.aux = rt.Stream(priority=priority) if two else None
        self.fork = rt.Event(timing=False) if two else None
        self.join = rt.Event(timing=False) if two else None

    def launch(self, stream, rep: int) -> None:
        if self.aux is None:
            self.batches[0].enqueue(stream.dma)
            return
        self.fork.record(stream.dma)
        self.aux.wait(self.fork)
        self.batches[0].enqueue(stream.dma)
        self.batches[1].enqueue(self.aux)
        self.join.record(self.aux)
        stream.dma.wait(self.join)


class CuTransport(Transport):
    """CU carrier: a copy kernel with ``workgroups`` workgroups per chunk (the NCCL-like footprint of
    communication), launched through torch's triton on ROCm. Runs only on an AMD GPU."""

    expected_carrier = "sm"

    def __init__(self, rt, buffers: TransferBuffers, stream, workgroups: int, chunk: int | None = None):
        super().__init__(rt, buffers, stream, chunk)
        self.name = TRANSPORTS[(buffers.link, "sm")]
        if workgroups < len(buffers.pairs):
            raise ValueError(f"{self.name} needs at least {len(buffers.pairs)} workgroups, got {workgroups}")
        self.workgroups = workgroups
        self.segments = [list(zip(self.chunk_ptrs(p.src), self.chunk_ptrs(p.dst))) for p in buffers.pairs]

    def launch(self, stream, rep: int) -> None:
        from c3prof.backends.hip.copy_kernel import launch_ptr_copy

        for i in range(self.nbytes // self.chunk):
            launch_ptr_copy([seg[i] for seg in self.segments], self.chunk, self.workgroups, stream)


def make_transport(rt, name: str, buffers: TransferBuffers, stream, workgroups: int | None = None,
                   chunk: int | None = None, priority: int = 0) -> Transport:
    if LINK_OF.get(name) != buffers.link:
        raise ValueError(f"transport {name!r} does not move bytes over link {buffers.link!r}")
    if CARRIER_OF[name] == "sm":
        if not workgroups or workgroups <= 0:
            raise ValueError(f"{name} needs a positive workgroup count")
        return CuTransport(rt, buffers, stream, workgroups, chunk)
    return CopyEngineTransport(rt, buffers, stream, chunk, priority)
