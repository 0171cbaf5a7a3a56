"""An SM copy kernel with a chosen number of CTAs: the NCCL-like SM footprint of communication.

A persistent grid of ``ctas`` programs strides over the buffer, so the CTA count (not the size)
sets how many SMs the copy occupies, as NCCL's channel count does for a collective.
"""

from __future__ import annotations

import functools

BLOCK = 4096      # elements per program per iteration (16 KiB of int32: 16-byte vector accesses)
NUM_WARPS = 8


@functools.cache
def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(src, dst, n_elems, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        step = tl.num_programs(0) * BLOCK
        for start in range(pid * BLOCK, n_elems, step):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n_elems
            tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    return copy_kernel


def element_view(torch, buf):
    """View a uint8 buffer as the widest integer type that divides it (wider = fewer instructions)."""
    for dtype, size in ((torch.int32, 4), (torch.int16, 2)):
        if buf.numel() % size == 0:
            return buf.view(dtype)
    return buf


def launch_copy(torch, src_u8, dst_u8, ctas: int, stream) -> None:
    src, dst = element_view(torch, src_u8), element_view(torch, dst_u8)
    n = src.numel()
    if n >= 2**31 - BLOCK * ctas:
        raise ValueError(f"SM copy kernel supports buffers below 2^31 elements, got {n}")
    with torch.cuda.stream(stream.torch):
        _kernel()[(ctas,)](src, dst, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
