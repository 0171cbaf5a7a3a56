"""The communication side on one GPU: the same bytes over the same link, carried by SMs or a copy engine.

A scenario's transfer names its link (c3prof.scenarios.LINKS); a strategy chooses only the carrier:

    link        SM carrier (base, sp, rp)                     copy-engine carrier (dma, dma+rp)
    pcie_h2d    sm_zc_h2d: copy kernel reads pinned host      ce_h2d: cudaMemcpyAsync host -> device
                memory through its device mapping (zero copy)
    pcie_d2h    sm_zc_d2h: copy kernel writes pinned host     ce_d2h: cudaMemcpyAsync device -> host
    pcie_bidir  sm_zc_bidir: one kernel, half its CTAs each   ce_bidir: both copies at once, the second
                direction                                     on a forked stream
    hbm         sm_kernel: device copy kernel                 ce_d2d: cudaMemcpyAsync device -> device;
                                                              on H200/driver 580 it runs on SMs, so the
                                                              capture measures its engine and reports
                                                              dma "not applicable" on this link

Every carrier moves the transfer in copies of ``chunk`` bytes (one kernel launch or one
cudaMemcpyAsync per chunk and direction), so latency-bound transfers keep their per-copy cost. A
``gap`` puts a 1-thread spin kernel between consecutive copies on the carrier's stream: the copy size
stays fixed while the byte rate falls (the interference study's throttled copy engine).

``sm_sleep`` (a scenario with op = "sleep") is the study's concurrency-alone control: one 1-CTA spin
kernel on the communication stream, no bytes moved, so nothing to validate.

Validation is byte-exact: each source holds random bytes and a reference copy of them sits beside the
destination; before a phase the destination is poisoned with the bitwise complement of the reference,
so every byte must be rewritten; after each batch the destination is compared with the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from c3prof.backends.cuda import runtime as _dma
from c3prof.backends.cuda.copy_kernel import launch_copy
from c3prof.backends.cuda.streams import spin
from c3prof.plan.model import TRANSPORTS

COMPARE_CHUNK = 256 * 2**20
# An NCCL-like CTA count for PCIe: 8 or more CTAs saturate the link on an H200 (49-50 GB/s).
PCIE_SM_CTAS = 16

LINK_OF = {name: link for (link, _), name in TRANSPORTS.items()}
CARRIER_OF = {name: carrier for (_, carrier), name in TRANSPORTS.items()}
DIRECTIONS = {"pcie_h2d": ("h2d",), "pcie_d2h": ("d2h",), "pcie_bidir": ("h2d", "d2h"), "hbm": ("d2d",)}


def transport_for(link: str, carrier: str) -> str:
    try:
        return TRANSPORTS[(link, carrier)]
    except KeyError:
        raise ValueError(f"no transport for link {link!r} and carrier {carrier!r}") from None


def default_sm_ctas(link: str, sms: int) -> int:
    """CTAs of the SM carrier: NCCL-like 16 for PCIe; two per SM of its group for a device copy."""
    return PCIE_SM_CTAS if link.startswith("pcie") else 2 * sms


@dataclass
class Pair:
    """One direction of a transfer: source, destination, and on the device the bytes the destination
    must hold after the copy (``ref``), their complement (``poison``) and, for a host destination, a
    device scratch buffer to compare it on the GPU (checking 100 MiB on the host costs far more)."""

    direction: str
    src: object
    dst: object
    ref: object
    poison: object
    scratch: object = None


class TransferBuffers:
    """One scenario's transfer buffers, shared by all its strategies (every carrier moves these bytes)."""

    def __init__(self, torch, link: str, nbytes: int, seed: int = 1):
        self.torch = torch
        self.link = link
        self.nbytes = nbytes
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.pairs = [self._pair(d, gen) for d in DIRECTIONS[link]]
        torch.cuda.synchronize()

    def _pair(self, direction: str, gen) -> Pair:
        torch, n = self.torch, self.nbytes
        ref = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda", generator=gen)
        poison = torch.bitwise_not(ref)
        if direction == "h2d":  # pinned (page-locked, device-mapped) host source, device destination
            src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            src.copy_(ref)
            return Pair(direction, src, torch.empty(n, dtype=torch.uint8, device="cuda"), ref, poison)
        if direction == "d2h":
            dst = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            return Pair(direction, ref, dst, ref, poison, scratch=torch.empty_like(ref))
        return Pair(direction, ref, torch.empty(n, dtype=torch.uint8, device="cuda"), ref, poison)

    @staticmethod
    def bytes_needed(link: str, nbytes: int) -> tuple[int, int]:
        """(device bytes, pinned host bytes) the buffers of one scenario take."""
        # Per direction: reference, poison and the device side (destination, source or scratch) on the
        # device; the pinned host side of a PCIe direction on the host.
        dirs = DIRECTIONS[link]
        return 3 * len(dirs) * nbytes, sum(d != "d2d" for d in dirs) * nbytes


def _mismatch(torch, got, want) -> tuple[int, int | None]:
    count, first = 0, None
    for off in range(0, got.numel(), COMPARE_CHUNK):
        ne = got[off:off + COMPARE_CHUNK] != want[off:off + COMPARE_CHUNK]
        c = int(ne.sum().item())
        if c and first is None:
            first = off + int(ne.nonzero()[0].item())
        count += c
    return count, first


class Transport:
    """Moves a TransferBuffers' pairs in chunks; the carrier is what subclasses choose."""

    name = ""
    expected_carrier = ""

    moves_bytes = True

    def __init__(self, torch, buffers: TransferBuffers, chunk: int | None = None, gap_us: float | None = None):
        self.torch = torch
        self.buf = buffers
        self.nbytes = buffers.nbytes
        self.link = buffers.link
        self.chunk = chunk or buffers.nbytes
        self.gap_us = gap_us or 0.0
        if self.nbytes % self.chunk:
            raise ValueError(f"chunk {self.chunk} does not divide {self.nbytes} bytes")

    @property
    def copies(self) -> int:
        return self.nbytes // self.chunk

    def pause(self, stream, i: int) -> None:
        """The gap after copy ``i`` (none after the last: the transfer ends with its last byte)."""
        if self.gap_us and i < self.copies - 1:
            spin(self.torch, stream, self.gap_us)

    def chunks(self, t) -> list:
        return [t[i:i + self.chunk] for i in range(0, self.nbytes, self.chunk)]

    def launch(self, stream, rep: int) -> None:
        raise NotImplementedError

    def poison(self) -> None:
        self.torch.cuda.synchronize()
        for p in self.buf.pairs:
            p.dst.copy_(p.poison)
        self.torch.cuda.synchronize()

    def validate(self, corrupt: bool = False) -> dict:
        """Compare every destination with its reference byte for byte. ``corrupt`` flips one
        destination byte first: a fault injected on purpose to prove the check catches it."""
        self.torch.cuda.synchronize()
        if corrupt:
            i = self.nbytes // 3
            self.buf.pairs[0].dst[i:i + 1].bitwise_not_()
        count, first = 0, None
        for k, p in enumerate(self.buf.pairs):
            got = p.dst
            if p.scratch is not None:   # host destination: bring it to the device, compare there
                p.scratch.copy_(p.dst)
                got = p.scratch
            c, f = _mismatch(self.torch, got, p.ref)
            if c and first is None:
                first = f + k * self.nbytes
            count += c
        return {"transport": self.name, "bytes_checked": self.nbytes * len(self.buf.pairs),
                "mismatched_bytes": count, "first_mismatch_offset": first, "ok": count == 0,
                "method": "every destination byte (host destinations copied to the device first) compared "
                          "on the device with a reference copy of the source"}


class SmTransport(Transport):
    """SM carrier: one copy-kernel launch per chunk with ``ctas`` CTAs; for pcie_bidir both directions
    share each launch (half the CTAs each), as a send/recv kernel does."""

    expected_carrier = "sm"

    def __init__(self, torch, buffers: TransferBuffers, ctas: int, chunk: int | None = None,
                 gap_us: float | None = None):
        super().__init__(torch, buffers, chunk, gap_us)
        self.name = transport_for(buffers.link, "sm")
        if ctas < len(buffers.pairs):
            raise ValueError(f"{self.name} needs at least {len(buffers.pairs)} CTAs, got {ctas}")
        self.ctas = ctas
        self.segments = [list(zip(self.chunks(p.src), self.chunks(p.dst))) for p in buffers.pairs]

    def launch(self, stream, rep: int) -> None:
        for i in range(self.copies):
            launch_copy(self.torch, [seg[i] for seg in self.segments], self.ctas, stream)
            self.pause(stream.torch, i)


class CopyEngineTransport(Transport):
    """Copy-engine carrier: one cudaMemcpyAsync per chunk (a CopyBatch per direction, enqueued
    without the GIL). With two directions the second runs on a stream forked from the first."""

    expected_carrier = "copy_engine"

    def __init__(self, torch, buffers: TransferBuffers, chunk: int | None = None, priority: int = 0,
                 gap_us: float | None = None):
        super().__init__(torch, buffers, chunk, gap_us)
        self.name = transport_for(buffers.link, "copy_engine")
        # Per direction, the copies to enqueue between gaps: one batch of all chunks without a gap,
        # one single-copy batch per chunk with one.
        self.batches = [self._batches(p) for p in buffers.pairs]
        self.aux = _dma.Stream(priority=priority) if len(self.batches) > 1 else None
        self.aux_torch = torch.cuda.ExternalStream(self.aux.handle) if self.aux else None
        self.fork = _dma.Event(timing=False) if self.aux else None
        self.join = _dma.Event(timing=False) if self.aux else None

    def _batches(self, p: Pair) -> list:
        dst, src = [d.data_ptr() for d in self.chunks(p.dst)], [s.data_ptr() for s in self.chunks(p.src)]
        if not self.gap_us:
            return [_dma.CopyBatch(dst, src, [self.chunk] * len(dst))]
        return [_dma.CopyBatch([d], [s], [self.chunk]) for d, s in zip(dst, src)]

    def _enqueue(self, batches: list, dma_stream, torch_stream) -> None:
        for i, batch in enumerate(batches):
            batch.enqueue(dma_stream)
            self.pause(torch_stream, i)     # no-op without a gap (then ``batches`` is one batch)

    def launch(self, stream, rep: int) -> None:
        if self.aux is None:
            self._enqueue(self.batches[0], stream.dma, stream.torch)
            return
        self.fork.record(stream.dma)
        self.aux.wait(self.fork)
        self._enqueue(self.batches[0], stream.dma, stream.torch)
        self._enqueue(self.batches[1], self.aux, self.aux_torch)
        self.join.record(self.aux)
        stream.dma.wait(self.join)


class SleepTransport:
    """The concurrency-alone control (op = "sleep"): one 1-CTA spin kernel, no bytes moved."""

    name = "sm_sleep"
    expected_carrier = "sm"
    moves_bytes = False

    def __init__(self, torch, duration_us: float):
        self.torch = torch
        self.duration_us = duration_us

    def launch(self, stream, rep: int) -> None:
        spin(self.torch, stream.torch, self.duration_us)

    def poison(self) -> None:
        """Nothing to overwrite: the control has no destination."""

    def validate(self, corrupt: bool = False) -> dict:
        raise RuntimeError("sm_sleep moves no bytes: the runner does not validate it")


def make_transport(torch, name: str, buffers: TransferBuffers, ctas: int | None = None,
                   chunk: int | None = None, priority: int = 0, gap_us: float | None = None) -> Transport:
    if LINK_OF.get(name) != buffers.link:
        raise ValueError(f"transport {name!r} does not move bytes over link {buffers.link!r}")
    if CARRIER_OF[name] == "sm":
        if not ctas or ctas <= 0:
            raise ValueError(f"{name} needs a positive CTA count")
        return SmTransport(torch, buffers, ctas, chunk, gap_us)
    return CopyEngineTransport(torch, buffers, chunk, priority, gap_us)
