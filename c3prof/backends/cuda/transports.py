"""The communication side on one GPU: transfers carried by copy engines or by SMs.

    ce_h2d       pinned host -> device, cudaMemcpyAsync through the runtime extension (copy engine)
    ce_d2h       device -> pinned host (copy engine)
    memcpy_d2d   device -> device on the same GPU, cudaMemcpyAsync (measured to run on SMs here)
    sm_kernel    device -> device by an SM copy kernel with a chosen CTA count (NCCL-like)

Validation is byte-exact: the source holds random bytes; before a phase the destination is
poisoned with the bitwise complement of the source, so every byte must be rewritten; after the
phase's repetitions the destination is compared with the source, byte for byte.
"""

from __future__ import annotations

import numpy as np

from c3prof.backends.cuda import runtime as _dma
from c3prof.backends.cuda.copy_kernel import launch_copy

COMPARE_CHUNK = 256 * 2**20


class TransferBuffers:
    """One scenario's transfer buffers, shared by all its strategies; host buffers made on demand."""

    def __init__(self, torch, nbytes: int, seed: int = 1):
        self.torch = torch
        self.nbytes = nbytes
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.dev_src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda", generator=gen)
        self.dev_dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        self._host_src: _dma.HostBuffer | None = None
        self._host_dst: _dma.HostBuffer | None = None

    def host_src(self) -> _dma.HostBuffer:
        """Pinned host copy of dev_src (so host and device sources hold the same bytes)."""
        if self._host_src is None:
            self._host_src = _dma.HostBuffer(self.nbytes)
            s = _dma.Stream()
            _dma.memcpy_async(self._host_src.ptr, self.dev_src.data_ptr(), self.nbytes, s)
            s.synchronize()
        return self._host_src

    def host_dst(self) -> _dma.HostBuffer:
        if self._host_dst is None:
            self._host_dst = _dma.HostBuffer(self.nbytes)
        return self._host_dst

    @staticmethod
    def host_bytes_needed(transport: str, nbytes: int) -> int:
        return {"ce_h2d": nbytes, "ce_d2h": 2 * nbytes}.get(transport, 0)


def _mismatch_device(torch, got, want) -> tuple[int, int | None]:
    count, first = 0, None
    for off in range(0, got.numel(), COMPARE_CHUNK):
        ne = got[off:off + COMPARE_CHUNK] != want[off:off + COMPARE_CHUNK]
        c = int(ne.sum().item())
        if c and first is None:
            first = off + int(ne.nonzero()[0].item())
        count += c
    return count, first


def _mismatch_host(got: np.ndarray, want: np.ndarray) -> tuple[int, int | None]:
    count, first = 0, None
    for off in range(0, got.size, COMPARE_CHUNK):
        ne = got[off:off + COMPARE_CHUNK] != want[off:off + COMPARE_CHUNK]
        c = int(np.count_nonzero(ne))
        if c and first is None:
            first = off + int(np.flatnonzero(ne)[0])
        count += c
    return count, first


class Transport:
    name = ""
    expected_carrier = ""

    def __init__(self, torch, buffers: TransferBuffers):
        self.torch = torch
        self.buf = buffers
        self.nbytes = buffers.nbytes

    def launch(self, stream, rep: int) -> None:
        raise NotImplementedError

    # Device-destination transports share poison/validate; the host-destination one overrides.
    def poison(self) -> None:
        self.torch.bitwise_not(self.buf.dev_src, out=self.buf.dev_dst)
        self.torch.cuda.synchronize()

    def validate(self, corrupt: bool = False) -> dict:
        """Compare destination with source byte for byte. ``corrupt`` flips one destination byte
        first: a fault injected on purpose to prove the check catches it."""
        self.torch.cuda.synchronize()
        if corrupt:
            i = self.nbytes // 3
            self.buf.dev_dst[i:i + 1].bitwise_not_()
        count, first = _mismatch_device(self.torch, self.buf.dev_dst, self.buf.dev_src)
        return self._result(count, first, "device compare with the source")

    def _result(self, count, first, method) -> dict:
        return {"transport": self.name, "bytes_checked": self.nbytes, "mismatched_bytes": count,
                "first_mismatch_offset": first, "ok": count == 0, "method": method}


class SmKernelTransport(Transport):
    name = "sm_kernel"
    expected_carrier = "sm"

    def __init__(self, torch, buffers, ctas: int):
        super().__init__(torch, buffers)
        self.ctas = ctas

    def launch(self, stream, rep: int) -> None:
        launch_copy(self.torch, self.buf.dev_src, self.buf.dev_dst, self.ctas, stream)


class MemcpyD2DTransport(Transport):
    name = "memcpy_d2d"
    expected_carrier = "sm"  # measured on H200/driver 580; engine_evidence records what this run saw

    def launch(self, stream, rep: int) -> None:
        _dma.memcpy_async(self.buf.dev_dst.data_ptr(), self.buf.dev_src.data_ptr(), self.nbytes, stream.dma)


class CopyEngineH2D(Transport):
    name = "ce_h2d"
    expected_carrier = "copy_engine"

    def __init__(self, torch, buffers):
        super().__init__(torch, buffers)
        src = buffers.host_src()
        self.copy = _dma.CopyBatch([buffers.dev_dst.data_ptr()], [src.ptr], [self.nbytes])

    def launch(self, stream, rep: int) -> None:
        self.copy.enqueue(stream.dma)


class CopyEngineD2H(Transport):
    name = "ce_d2h"
    expected_carrier = "copy_engine"

    def __init__(self, torch, buffers):
        super().__init__(torch, buffers)
        self.src_host = np.frombuffer(buffers.host_src(), dtype=np.uint8)
        self.dst_host = np.frombuffer(buffers.host_dst(), dtype=np.uint8)
        self.copy = _dma.CopyBatch([buffers.host_dst().ptr], [buffers.dev_src.data_ptr()], [self.nbytes])

    def launch(self, stream, rep: int) -> None:
        self.copy.enqueue(stream.dma)

    def poison(self) -> None:
        self.torch.cuda.synchronize()
        np.invert(self.src_host, out=self.dst_host)

    def validate(self, corrupt: bool = False) -> dict:
        self.torch.cuda.synchronize()
        if corrupt:
            self.dst_host[self.nbytes // 3] ^= 0xFF
        count, first = _mismatch_host(self.dst_host, self.src_host)
        return self._result(count, first, "host compare with a pinned copy of the source")


def make_transport(torch, name: str, buffers: TransferBuffers, ctas: int | None = None) -> Transport:
    if name == "sm_kernel":
        if not ctas or ctas <= 0:
            raise ValueError("sm_kernel needs a positive CTA count")
        return SmKernelTransport(torch, buffers, ctas)
    if name == "memcpy_d2d":
        return MemcpyD2DTransport(torch, buffers)
    if name == "ce_h2d":
        return CopyEngineH2D(torch, buffers)
    if name == "ce_d2h":
        return CopyEngineD2H(torch, buffers)
    raise ValueError(f"unknown transport {name!r}")
