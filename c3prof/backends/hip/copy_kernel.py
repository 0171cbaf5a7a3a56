"""The CU copy kernel on ROCm: the triton kernel both backends share (c3prof/backends/triton_copy.py)
launched on raw device pointers of the HIP runtime's buffers. Runs only on an AMD GPU with torch and
triton for ROCm."""

from __future__ import annotations

from dataclasses import dataclass

from c3prof.backends.triton_copy import BLOCK, NUM_WARPS, kernel


@dataclass
class _Pointer:
    """What triton needs of a tensor argument: its address and element type."""

    ptr: int
    dtype: object

    def data_ptr(self) -> int:
        return self.ptr


def launch_ptr_copy(segments, nbytes: int, workgroups: int, stream) -> None:
    """Copy each (src_ptr, dst_ptr) of ``segments`` (one or two, ``nbytes`` each) in one launch."""
    import torch

    if not 1 <= len(segments) <= 2:
        raise ValueError(f"the copy kernel moves one or two segments per launch, got {len(segments)}")
    dtype, size = next((t, s) for t, s in ((torch.int32, 4), (torch.int16, 2), (torch.uint8, 1)) if nbytes % s == 0)
    n = nbytes // size
    (s0, d0), (s1, d1) = segments[0], segments[-1]
    split = workgroups if len(segments) == 1 else max(1, workgroups // 2)
    with torch.cuda.stream(stream.torch):
        kernel()[(workgroups,)](_Pointer(s0, dtype), _Pointer(d0, dtype), n, _Pointer(s1, dtype), _Pointer(d1, dtype),
                                 0 if len(segments) == 1 else n, split, BLOCK=BLOCK, num_warps=NUM_WARPS)
