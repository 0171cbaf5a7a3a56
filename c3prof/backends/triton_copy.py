"""The SM/CU copy kernel in triton, shared by the CUDA and ROCm backends (each launches it on its own
buffers: cuda/copy_kernel.py on torch tensors, hip/copy_kernel.py on the HIP runtime's pointers).

A persistent grid of programs strides over the buffer, so the program count (not the size) sets how
many SMs or CUs the copy occupies, as NCCL's channel count does for a collective. One launch moves one
or two segments (both directions of a PCIe transfer), each with its share of the programs.
"""

from __future__ import annotations

import functools

BLOCK = 4096      # elements per program per iteration (16 KiB of int32: 16-byte vector accesses)
NUM_WARPS = 8


@functools.cache
def kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def copy2_kernel(src0, dst0, n0, src1, dst1, n1, split, BLOCK: tl.constexpr):
        # Programs [0, split) copy segment 0, the others segment 1 (n1 == 0: a single segment).
        pid = tl.program_id(0)
        if pid < split:
            step = split * BLOCK
            for start in range(pid * BLOCK, n0, step):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n0
                tl.store(dst0 + offs, tl.load(src0 + offs, mask=mask), mask=mask)
        else:
            step = (tl.num_programs(0) - split) * BLOCK
            for start in range((pid - split) * BLOCK, n1, step):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n1
                tl.store(dst1 + offs, tl.load(src1 + offs, mask=mask), mask=mask)

    return copy2_kernel
