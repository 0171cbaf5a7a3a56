"""Buffer layouts, copy plans and reference data of c3prof's collectives.

Sizes follow nccl-tests (c3prof/scenarios.py): for ``all_gather`` ``nbytes`` is the gathered output
(each rank contributes ``nbytes / n``); for ``all_to_all`` and ``all_reduce`` it is the per-rank
buffer (``all_to_all`` sends block ``j`` of it, ``nbytes / n`` bytes, to rank ``j``).

Every rank's source bytes are a deterministic function of (seed, rank, byte offset)
(:func:`pattern_bytes`), so every rank can regenerate any peer's source locally and check its own
output byte for byte without trusting any collective, NCCL included: that is the reference.

In-place all-gather (the default, like FSDP's): a rank's shard lives in its own slot of the output
buffer, so no same-device copy is needed (on the H200 with driver 580, a same-device copy runs
on SMs, not on a copy engine).
All-to-all always moves its self block locally (``nbytes / n`` on the rank's own device).
"""

from __future__ import annotations

from dataclasses import dataclass

from c3prof.errors import C3profError

ALIGN = 8                       # pattern granularity (int64 words); every block is a multiple of this
PATTERN_CHUNK = 64 * 2**20      # bytes generated per step (bounds the temporary memory)

# splitmix64's constants as signed int64 (torch has no uint64 arithmetic).
_C0 = 0x9E3779B97F4A7C15 - 2**64
_C1 = 0xBF58476D1CE4E5B9 - 2**64
_C2 = 0x94D049BB133111EB - 2**64


@dataclass(frozen=True)
class Segment:
    """``length`` bytes at ``dst_offset`` of a rank's destination hold rank ``src_rank``'s source
    bytes starting at ``src_offset`` (in that rank's pattern coordinates)."""

    dst_offset: int
    length: int
    src_rank: int
    src_offset: int


@dataclass(frozen=True)
class Copy:
    """One copy of a collective: ``length`` bytes from (src_rank, src_buf, src_offset) to
    (dst_rank, dst_buf, dst_offset). Buffers are named 'src' or 'dst'; the issuing rank's stream
    enqueues it (push: the source rank, pull: the destination rank)."""

    issuer: int
    src_rank: int
    src_buf: str
    src_offset: int
    dst_rank: int
    dst_buf: str
    dst_offset: int
    length: int

    @property
    def local(self) -> bool:
        return self.src_rank == self.dst_rank


@dataclass(frozen=True)
class Layout:
    op: str
    nbytes: int
    world: int
    rank: int
    inplace: bool = True

    def __post_init__(self):
        if self.op not in ("all_gather", "all_to_all", "all_reduce"):
            raise C3profError(f"no collective layout for {self.op!r}")
        if not 0 <= self.rank < self.world:
            raise C3profError(f"rank {self.rank} outside world of {self.world}")
        unit = ALIGN * (self.world if self.op != "all_reduce" else 1)
        if self.nbytes <= 0 or self.nbytes % unit:
            raise C3profError(f"{self.op} of {self.nbytes} bytes on {self.world} ranks: the size must be a "
                              f"positive multiple of {unit} bytes (8-byte blocks per rank)")

    @property
    def block(self) -> int:
        """Bytes exchanged per (source, destination) rank pair."""
        return self.nbytes // self.world if self.op != "all_reduce" else self.nbytes

    @property
    def src_bytes(self) -> int:
        """Size of the separate source buffer (0: the source is a slot of the destination)."""
        if self.op == "all_gather":
            return 0 if self.inplace else self.block
        return self.nbytes

    @property
    def dst_bytes(self) -> int:
        return self.nbytes

    def own_source(self) -> tuple[str, int]:
        """(buffer, offset) where this rank's source bytes start (pattern offset 0)."""
        return ("dst", self.rank * self.block) if self.op == "all_gather" and self.inplace else ("src", 0)

    def source_of(self, rank: int) -> tuple[str, int]:
        return Layout(self.op, self.nbytes, self.world, rank, self.inplace).own_source()

    def segments(self) -> list[Segment]:
        """Where each byte of this rank's destination comes from, after the collective."""
        b, r = self.block, self.rank
        if self.op == "all_gather":
            return [Segment(p * b, b, p, 0) for p in range(self.world)]
        if self.op == "all_to_all":
            return [Segment(p * b, b, p, r * b) for p in range(self.world)]
        raise C3profError("all_reduce has no segment layout (validated against a summed reference)")

    def poison_segments(self) -> list[Segment]:
        """Destination bytes a correct collective must rewrite (in-place all-gather's own slot is
        its source: not rewritten, not poisoned)."""
        segs = self.segments()
        if self.op == "all_gather" and self.inplace:
            segs = [s for s in segs if s.src_rank != self.rank]
        return segs

    def peer_order(self) -> list[int]:
        """Peers in rotated order (r+1, r+2, ...): at each step every rank targets a different peer."""
        return [(self.rank + k) % self.world for k in range(1, self.world)]

    def copies(self, mode: str, chunks: int = 1) -> list[Copy]:
        """The copies this rank issues under ``mode`` ('push' or 'pull'), each split into ``chunks``
        pieces (multiples of ALIGN bytes). Local copies (same rank) come last."""
        if mode not in ("push", "pull"):
            raise C3profError(f"DMA mode must be 'push' or 'pull', got {mode!r}")
        if chunks < 1:
            raise C3profError(f"chunks must be >= 1, got {chunks}")
        r = self.rank
        whole: list[Copy] = []
        for p in self.peer_order() + [r]:
            if mode == "push":   # my data -> rank p's destination
                seg = Layout(self.op, self.nbytes, self.world, p, self.inplace).segments()[r]
                src_buf, src_base = self.own_source()
                c = Copy(r, r, src_buf, src_base + seg.src_offset, p, "dst", seg.dst_offset, seg.length)
            else:                # rank p's data -> my destination
                seg = self.segments()[p]
                src_buf, src_base = self.source_of(p)
                c = Copy(r, p, src_buf, src_base + seg.src_offset, r, "dst", seg.dst_offset, seg.length)
            if c.local and self.op == "all_gather" and self.inplace:
                continue         # the shard is already in place
            whole.append(c)
        return [piece for c in whole for piece in split_copy(c, chunks)]


def split_copy(c: Copy, chunks: int) -> list[Copy]:
    """``c`` in ``chunks`` nearly equal pieces, each a multiple of ALIGN bytes (fewer if too small)."""
    units = c.length // ALIGN
    n = max(1, min(chunks, units))
    out, done = [], 0
    for i in range(n):
        length = (units * (i + 1) // n - units * i // n) * ALIGN
        if i == n - 1:
            length = c.length - done
        out.append(Copy(c.issuer, c.src_rank, c.src_buf, c.src_offset + done, c.dst_rank, c.dst_buf,
                        c.dst_offset + done, length))
        done += length
    return out


def simulate(op: str, nbytes: int, world: int, mode: str, inplace: bool = True, chunks: int = 1,
             seed: int = 0) -> list[bytes]:
    """Run every rank's copy plan on host byte arrays (no GPU): returns each rank's destination.
    The GPU-free tests compare it with :meth:`Layout.segments` applied to the patterns."""
    import numpy as np

    layouts = [Layout(op, nbytes, world, r, inplace) for r in range(world)]
    bufs = []
    for lay in layouts:
        dst = np.full(lay.dst_bytes, 0x5A, dtype=np.uint8)
        if op == "all_gather" and inplace:
            dst[lay.rank * lay.block:(lay.rank + 1) * lay.block] = pattern_bytes(seed, lay.rank, 0, lay.block)
            src = np.zeros(0, dtype=np.uint8)
        else:
            src = pattern_bytes(seed, lay.rank, 0, lay.src_bytes)
        bufs.append({"src": src, "dst": dst})
    # Issue copies in rank order; a copy reads only source bytes, never a destination another copy
    # writes (checked here), so order does not matter.
    written = [np.zeros(lay.dst_bytes, dtype=bool) for lay in layouts]
    for lay in layouts:
        for c in lay.copies(mode, chunks):
            assert c.issuer == lay.rank
            assert (c.src_rank == lay.rank) if mode == "push" else (c.dst_rank == lay.rank)
            src = bufs[c.src_rank][c.src_buf][c.src_offset:c.src_offset + c.length]
            w = written[c.dst_rank][c.dst_offset:c.dst_offset + c.length]
            if w.any():
                raise AssertionError(f"bytes written twice by {c}")
            w[:] = True
            bufs[c.dst_rank]["dst"][c.dst_offset:c.dst_offset + c.length] = src
    return [bytes(b["dst"]) for b in bufs]


def expected_bytes(op: str, nbytes: int, world: int, rank: int, inplace: bool = True, seed: int = 0) -> bytes:
    """The reference destination of ``rank`` (host, numpy): what every implementation must produce."""
    import numpy as np

    lay = Layout(op, nbytes, world, rank, inplace)
    out = np.empty(nbytes, dtype=np.uint8)
    for s in lay.segments():
        out[s.dst_offset:s.dst_offset + s.length] = pattern_bytes(seed, s.src_rank, s.src_offset, s.length)
    return bytes(out)


# ------------------------------------------------------------------------------------------------
# Deterministic source bytes: splitmix64 of the 8-byte word index, keyed by (seed, rank).
# Identical on CPU (numpy or torch) and GPU (torch), so any rank can rebuild any peer's data.
# ------------------------------------------------------------------------------------------------

def pattern_key(seed: int, rank: int) -> int:
    """The word-index offset that makes rank ``rank``'s pattern (under ``seed``) its own."""
    return (seed * 1_000_003 + rank * 7919 + 1) % 2**63


def splitmix64(x):
    """splitmix64's finalizer on int64 words: a numpy array or a torch tensor (same operators,
    wrapping multiplication), so the host reference and the device fill compute the same bytes."""
    x = x * _C0
    x = (x ^ (x >> 30)) * _C1
    x = (x ^ (x >> 27)) * _C2
    return x ^ (x >> 31)


def pattern_bytes(seed: int, rank: int, offset: int, length: int):
    """numpy uint8 array of rank ``rank``'s source bytes [offset, offset + length) (host reference)."""
    import numpy as np

    if offset % ALIGN or length % ALIGN:
        raise C3profError(f"pattern offset and length must be multiples of {ALIGN}")
    with np.errstate(over="ignore"):
        x = splitmix64(np.arange(offset // ALIGN, (offset + length) // ALIGN, dtype=np.int64)
                       + np.int64(pattern_key(seed, rank)))
    return x.astype("<i8").view(np.uint8)
