"""The data model of ``c3prof ingest``: what is kept of a Kineto trace, and the operations found in it.

Two layers:

* :class:`KinetoTrace` holds the events the reader kept from one file, as numpy columns (GPU
  activities, CUDA launches, the CPU ops of interest) plus the interned names and the raw ``args``
  of the few events whose arguments matter (collective kernels, GEMM and collective CPU ops).
* :class:`GpuOp` is one classified GPU operation (a GEMM, a collective, a transfer) with what c3prof
  needs to compare it with other instances of the same operation and to replay it.

Times are integer nanoseconds on the trace's clock (Kineto writes microseconds with three decimals).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# GPU activity kinds in KinetoTrace.gpu["kind"] (the scanner writes these codes).
GPU_KERNEL = 0
GPU_MEMCPY = 1
GPU_MEMSET = 2

# Operation classes (GpuOp.kind).
GEMM = "gemm"
COLLECTIVE = "collective"
TRANSFER = "transfer"
COMM_KINDS = (COLLECTIVE, TRANSFER)


@dataclass
class KinetoTrace:
    """The events c3prof kept from one Kineto trace file."""

    path: str
    names: list[str]
    gpu: dict[str, np.ndarray]
    launch: dict[str, np.ndarray]
    cpu: dict[str, np.ndarray]
    # Parsed ``args`` of collective kernels (row of ``gpu`` -> dict) and of kept CPU ops (row of ``cpu``).
    gpu_args: dict[int, dict]
    cpu_args: dict[int, dict]
    # Top-level keys of the document other than traceEvents (distributedInfo, deviceProperties...).
    metadata: dict[str, Any]
    truncated: bool = False
    bytes_read: int = 0
    events_seen: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int | None:
        info = self.metadata.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("rank"), int):
            return info["rank"]
        return None

    @property
    def world_size(self) -> int | None:
        info = self.metadata.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("world_size"), int):
            return info["world_size"]
        return None

    @property
    def n_gpu(self) -> int:
        return int(len(self.gpu["kind"]))

    def name(self, ident: int) -> str:
        return self.names[ident]


@dataclass(frozen=True)
class GemmShape:
    """C[m, n] = A[m, k] @ B[k, n]; ``batch`` > 1 for bmm/baddbmm (c3prof folds it into m to replay)."""

    m: int
    n: int
    k: int
    dtype: str  # c3prof's name (bf16, fp16, fp32) or the trace's own when c3prof has none
    batch: int = 1
    op: str = ""  # the CPU op the shape came from (aten::mm, aten::linear...)

    @property
    def label(self) -> str:
        b = f"{self.batch}x" if self.batch > 1 else ""
        return f"{b}{self.m}x{self.n}x{self.k} {self.dtype}"


@dataclass(frozen=True)
class CommInfo:
    """A communication operation: a collective (NCCL/RCCL) or a copy-engine transfer.

    ``op`` is the trace's operation normalized (all_reduce, all_gather, reduce_scatter, all_to_all,
    broadcast, reduce, send_recv, barrier, transfer). ``bytes`` follows nccl-tests' convention (as
    c3prof scenarios do): all_gather: the gathered output; reduce_scatter: the input; others: the
    per-rank buffer; transfer: the bytes copied. 0 when the trace does not say.
    """

    op: str
    bytes: int
    group_size: int = 0
    dtype: str = ""
    process_group: str = ""
    carrier: str = "sm"  # "sm" for collective kernels, "copy_engine" for memcpys
    direction: str = ""  # HtoD, DtoH, PtoP... for transfers

    @property
    def label(self) -> str:
        from c3prof.units import format_bytes

        size = format_bytes(self.bytes) if self.bytes > 0 else "?B"
        extra = f" {self.direction}" if self.direction else ""
        ranks = f" x{self.group_size}" if self.group_size > 1 else ""
        return f"{self.op}{extra} {size}{ranks}"


@dataclass(frozen=True)
class GpuOp:
    """One GEMM, collective or transfer on one device of one rank."""

    kind: str  # GEMM, COLLECTIVE or TRANSFER
    rank: int
    device: int
    stream: int
    start_ns: int
    end_ns: int
    kernel: str  # the kernel or memcpy name as the trace gives it
    gemm: GemmShape | None = None
    comm: CommInfo | None = None
    row: int = -1  # row in KinetoTrace.gpu

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def label(self) -> str:
        if self.gemm is not None:
            return self.gemm.label
        if self.comm is not None:
            return self.comm.label
        return self.kernel

    @property
    def identity(self) -> tuple:
        """Same operation = same kernel name and same shape/size: the key for 'alone' baselines."""
        return (self.kind, self.kernel, self.gemm, self.comm)
