"""The GEMM side of every backend: torch.matmul on rotating input sets, so repetitions do not measure
the L2. Vendor-neutral: torch's "cuda" device is the GPU on CUDA and on ROCm builds alike, and
cuBLAS/cuBLASLt or hipBLASLt picks the kernel."""

from __future__ import annotations

import math

from c3prof.scenarios import DTYPE_BYTES, GemmSpec

MAX_INPUT_SETS = 8


def input_sets(spec: GemmSpec, l2_bytes: int) -> int:
    """Enough (A, B, C) sets that one repetition's operands are evicted before they come round again:
    the sets together span at least 3x the L2 (60 MiB on an H200), at most 8 sets."""
    return max(1, min(MAX_INPUT_SETS, math.ceil(3 * l2_bytes / set_bytes(spec))))


def set_bytes(spec: GemmSpec) -> int:
    return (spec.m * spec.k + spec.k * spec.n + spec.m * spec.n) * DTYPE_BYTES[spec.dtype]


class TorchGemm:
    """C_i = A_i @ B_i for i = rep mod n_sets, through torch (cuBLAS/cuBLASLt picks the kernel)."""

    def __init__(self, torch, spec: GemmSpec, n_sets: int, seed: int = 0):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[spec.dtype]
        gen = torch.Generator(device="cuda").manual_seed(seed)
        # Random normal operands: zeros run measurably faster than real data on tensor cores.
        self.a = [torch.randn(spec.m, spec.k, dtype=dtype, device="cuda", generator=gen) for _ in range(n_sets)]
        self.b = [torch.randn(spec.k, spec.n, dtype=dtype, device="cuda", generator=gen) for _ in range(n_sets)]
        self.c = [torch.empty(spec.m, spec.n, dtype=dtype, device="cuda") for _ in range(n_sets)]
        self.torch = torch
        self.spec = spec
        self.n_sets = n_sets

    def launch(self, stream, rep: int) -> None:
        i = rep % self.n_sets
        with self.torch.cuda.stream(stream.torch):
            self.torch.matmul(self.a[i], self.b[i], out=self.c[i])

    def close(self) -> None:
        self.a = self.b = self.c = []
