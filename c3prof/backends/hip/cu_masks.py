"""CU masks for hipExtStreamCreateWithCUMask: a GEMM group and a communication group of compute
units, balanced across the XCDs (pure arithmetic, no HIP).

MI300X geometry: 304 CUs in 8 XCDs (accelerator complex dies) of 38 CUs each. MI300A: 228 CUs in 6
XCDs of 38. A GPU in CPX compute-partition mode is one XCD (38 CUs) and needs no balancing.

The CU numbering of a CU mask (bit i of the mask = word i // 32, bit i % 32 = logical CU i) is the
driver's: for GFX 9.4.3 (MI300) the Linux amdkfd driver maps mask bit i to XCC (= XCD) i mod n_xcc,
round-robin, and within an XCC round-robin over its shader engines and arrays (Linux,
drivers/gpu/drm/amd/amdkfd/kfd_mqd_manager.c, mqd_symmetrically_map_cu_mask and its comment "For
GFX 9.4.3 ... cu_mask[0] bit0 -> XCC0 ..., bit1 -> XCC1 ..."). So logical CU i sits on XCD i % 8,
as its (i // 8)-th CU there. HIP documents the mask words only as "the first 32 bits represent the
first 32 CUs" (hipExtStreamCreateWithCUMask); the XCD mapping is the driver's.

Why balance: a kernel's workgroups are dispatched round-robin to the XCDs, so a mask that leaves an
XCD without CUs stalls every workgroup sent there, and an unbalanced mask makes the XCD with the
fewest CUs the straggler. Every group therefore gets the same number of CUs on every XCD (at least
one), which rounds a request up to a multiple of the XCD count, as green contexts round an SM
request up to their granularity on NVIDIA; the granted count is what the trace records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from c3prof.errors import C3profError

WORD_BITS = 32


@dataclass(frozen=True)
class Geometry:
    """A GPU's compute units as CU masks see them: ``cus`` logical CUs over ``xcds`` XCDs."""

    cus: int
    xcds: int = 1

    def __post_init__(self):
        if self.cus <= 0 or self.xcds <= 0 or self.cus % self.xcds:
            raise ValueError(f"{self.cus} CUs cannot be split evenly over {self.xcds} XCDs")

    @property
    def cus_per_xcd(self) -> int:
        return self.cus // self.xcds

    @property
    def words(self) -> int:
        """32-bit words of a mask covering every CU (10 on MI300X)."""
        return math.ceil(self.cus / WORD_BITS)

    def xcd_of(self, cu: int) -> int:
        return cu % self.xcds

    def cu(self, xcd: int, slot: int) -> int:
        """The logical CU that is the ``slot``-th CU of ``xcd``."""
        return slot * self.xcds + xcd


MI300X = Geometry(cus=304, xcds=8)
MI300A = Geometry(cus=228, xcds=6)
# CU counts of the multi-XCD parts: (CUs, XCDs). A count not listed (one XCD of a CPX partition,
# or a single-die GPU) is treated as one XCD.
KNOWN_XCDS = {304: 8, 228: 6}


def geometry_for(cu_count: int) -> Geometry:
    """The geometry of a device that reports ``cu_count`` CUs (hipDeviceAttributeMultiprocessorCount)."""
    return Geometry(cu_count, KNOWN_XCDS.get(cu_count, 1))


@dataclass(frozen=True)
class CuPartition:
    """Two disjoint, XCD-balanced CU groups and their masks (``words`` 32-bit words each)."""

    geometry: Geometry
    gemm_cus: frozenset[int]
    comm_cus: frozenset[int]

    @property
    def gemm_mask(self) -> list[int]:
        return to_words(self.gemm_cus, self.geometry.words)

    @property
    def comm_mask(self) -> list[int]:
        return to_words(self.comm_cus, self.geometry.words)


def granted(requested: int, geometry: Geometry) -> int:
    """The CU count a request of ``requested`` gets: rounded up to a multiple of the XCD count,
    at least one CU per XCD, and leaving at least one CU per XCD to the other group."""
    per_xcd = max(1, math.ceil(requested / geometry.xcds))
    if per_xcd >= geometry.cus_per_xcd:
        raise C3profError(f"a group of {requested} CUs leaves none for communication on a GPU of "
                          f"{geometry.cus} CUs in {geometry.xcds} XCDs (at most "
                          f"{(geometry.cus_per_xcd - 1) * geometry.xcds})")
    return per_xcd * geometry.xcds


def split(gemm_cus: int, geometry: Geometry) -> CuPartition:
    """The GEMM gets the first ``granted(gemm_cus)/xcds`` CUs of every XCD, communication the rest."""
    if gemm_cus <= 0:
        raise C3profError(f"a CU group needs at least one CU, got {gemm_cus}")
    per_xcd = granted(gemm_cus, geometry) // geometry.xcds
    gemm = frozenset(geometry.cu(x, s) for x in range(geometry.xcds) for s in range(per_xcd))
    comm = frozenset(range(geometry.cus)) - gemm
    return CuPartition(geometry, gemm, comm)


def to_words(cus, words: int) -> list[int]:
    """Logical CU numbers -> ``words`` 32-bit mask words (bit i of the mask is CU i)."""
    out = [0] * words
    for cu in cus:
        if not 0 <= cu < words * WORD_BITS:
            raise ValueError(f"CU {cu} is outside a mask of {words} words")
        out[cu // WORD_BITS] |= 1 << (cu % WORD_BITS)
    return out


def from_words(mask) -> frozenset[int]:
    """Mask words -> the set of logical CUs whose bits are set."""
    return frozenset(k * WORD_BITS + b for k, w in enumerate(mask) for b in range(WORD_BITS) if (w >> b) & 1)


def per_xcd(cus, geometry: Geometry) -> list[int]:
    """How many of ``cus`` sit on each XCD (the balance check, and what the trace records)."""
    counts = [0] * geometry.xcds
    for cu in cus:
        counts[geometry.xcd_of(cu)] += 1
    return counts
