"""An SM copy kernel with a chosen number of CTAs: the NCCL-like SM footprint of communication.

A persistent grid of ``ctas`` programs strides over the buffer, so the CTA count (not the size) sets
how many SMs the copy occupies, as NCCL's channel count does for a collective. Sources and
destinations may be device memory or pinned host memory (the kernel then reads or writes it over
PCIe through its device mapping: a zero-copy transfer carried by SMs). One launch can move two
segments at once (both directions of a PCIe transfer), each with half the CTAs.
"""

from __future__ import annotations

from c3prof.backends.triton_copy import BLOCK, NUM_WARPS, kernel


def element_view(torch, buf):
    """View a uint8 buffer as the widest integer type that divides it (wider = fewer instructions)."""
    for dtype, size in ((torch.int32, 4), (torch.int16, 2)):
        if buf.numel() % size == 0:
            return buf.view(dtype)
    return buf


def launch_copy(torch, segments, ctas: int, stream) -> None:
    """Copy each (src, dst) uint8 pair of ``segments`` (one or two) in one launch of ``ctas`` CTAs."""
    if not 1 <= len(segments) <= 2:
        raise ValueError(f"the copy kernel moves one or two segments per launch, got {len(segments)}")
    views = [(element_view(torch, s), element_view(torch, d)) for s, d in segments]
    for s, d in views:
        if s.dtype != d.dtype or s.numel() != d.numel():
            raise ValueError("copy segment source and destination differ in size")
        if s.numel() >= 2**31 - BLOCK * ctas:
            raise ValueError(f"SM copy kernel supports segments below 2^31 elements, got {s.numel()}")
    (s0, d0), (s1, d1) = views[0], views[-1]
    split = ctas if len(views) == 1 else max(1, ctas // 2)
    n1 = 0 if len(views) == 1 else s1.numel()
    with torch.cuda.stream(stream.torch):
        kernel()[(ctas,)](s0, d0, s0.numel(), s1, d1, n1, split, BLOCK=BLOCK, num_warps=NUM_WARPS)
