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
    # The distinct ``args`` c3prof reads (shapes, dtypes, collective metadata), parsed once each;
    # gpu["args"] and cpu["args"] index into it (-1: none).
    args: list[dict]
    # Top-level keys of the document other than traceEvents (distributedInfo, deviceProperties...).
    metadata: dict[str, Any]
    truncated: bool = False
    bytes_read: int = 0
    events_seen: int = 0
    warnings: list[str] = field(default_factory=list)
    # GPU activities whose duration was zero, negative or missing (the latter two are stored as 0).
    duration_issues: dict[str, int] = field(default_factory=dict)

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

    def gpu_args_of(self, row: int) -> dict:
        i = int(self.gpu["args"][row])
        return self.args[i] if i >= 0 else {}

    def cpu_args_of(self, row: int) -> dict:
        i = int(self.cpu["args"][row])
        return self.args[i] if i >= 0 else {}


@dataclass(frozen=True)
class GemmShape:
    """C[m, n] = A[m, k] @ B[k, n]; ``batch`` > 1 for bmm/baddbmm (c3prof folds it into m to replay)."""

    m: int
    n: int
    k: int
    dtype: str  # c3prof's name (bf16, fp16, fp32) or the trace's own when c3prof has none
    batch: int = 1
    # The CPU op the shape came from (aten::mm, aten::linear...): not part of the GEMM's identity.
    op: str = field(default="", compare=False)

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
    process_group: str = field(default="", compare=False)
    carrier: str = "sm"  # "sm" for collective kernels, "copy_engine" for memcpys
    direction: str = ""  # HtoD, DtoH, PtoP... for transfers

    @property
    def label(self) -> str:
        from c3prof.units import format_bytes

        size = format_bytes(self.bytes) if self.bytes > 0 else "?B"
        extra = f" {self.direction}" if self.direction else ""
        ranks = f" x{self.group_size}" if self.group_size > 1 else ""
        return f"{self.op}{extra} {size}{ranks}"


KIND_CODES = {GEMM: 0, COLLECTIVE: 1, TRANSFER: 2}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}


@dataclass(frozen=True)
class OpIdentity:
    """What makes two instances "the same operation": kind, kernel name and shape/size."""

    kind: str  # GEMM, COLLECTIVE or TRANSFER
    kernel: str  # the kernel or memcpy name as the trace gives it
    gemm: GemmShape | None = None
    comm: CommInfo | None = None

    @property
    def label(self) -> str:
        if self.gemm is not None:
            return self.gemm.label
        if self.comm is not None:
            return self.comm.label
        return self.kernel


@dataclass(slots=True, eq=False)
class GpuOp:
    """One GEMM, collective or transfer on one device of one rank (one row of an OpTable)."""

    kind: str
    rank: int
    device: int
    stream: int
    start_ns: int
    end_ns: int
    kernel: str
    gemm: GemmShape | None = None
    comm: CommInfo | None = None
    row: int = -1  # row in KinetoTrace.gpu

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def identity(self) -> OpIdentity:
        return OpIdentity(self.kind, self.kernel, self.gemm, self.comm)

    @property
    def label(self) -> str:
        return self.identity.label


class OpTable:
    """Operations as columns (a 1 GB trace has about a million): ``ident`` indexes ``identities``."""

    COLUMNS = ("kind", "rank", "device", "stream", "start_ns", "end_ns", "ident", "row")

    def __init__(self, columns: dict[str, np.ndarray], identities: list[OpIdentity]):
        self.kind = np.asarray(columns["kind"], dtype=np.int8)
        self.rank = np.asarray(columns["rank"], dtype=np.int64)
        self.device = np.asarray(columns["device"], dtype=np.int64)
        self.stream = np.asarray(columns["stream"], dtype=np.int64)
        self.start_ns = np.asarray(columns["start_ns"], dtype=np.int64)
        self.end_ns = np.asarray(columns["end_ns"], dtype=np.int64)
        self.ident = np.asarray(columns["ident"], dtype=np.int64)
        self.row = np.asarray(columns.get("row", np.full(len(self.kind), -1)), dtype=np.int64)
        self.identities = identities

    def __len__(self) -> int:
        return int(len(self.kind))

    @property
    def dur_ns(self) -> np.ndarray:
        return self.end_ns - self.start_ns

    @classmethod
    def empty(cls) -> "OpTable":
        return cls({k: np.zeros(0, dtype=np.int64) for k in cls.COLUMNS}, [])

    @classmethod
    def from_ops(cls, ops: list[GpuOp]) -> "OpTable":
        ids: dict[OpIdentity, int] = {}
        cols: dict[str, list] = {k: [] for k in cls.COLUMNS}
        for op in ops:
            ident = ids.setdefault(op.identity, len(ids))
            for k, v in (("kind", KIND_CODES[op.kind]), ("rank", op.rank), ("device", op.device),
                         ("stream", op.stream), ("start_ns", op.start_ns), ("end_ns", op.end_ns),
                         ("ident", ident), ("row", op.row)):
                cols[k].append(v)
        return cls({k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}, list(ids))

    @classmethod
    def concat(cls, tables: list["OpTable"]) -> "OpTable":
        """One table for several traces: identities merged, ``ident`` renumbered."""
        ids: dict[OpIdentity, int] = {}
        parts: dict[str, list[np.ndarray]] = {k: [] for k in cls.COLUMNS}
        for t in tables:
            remap = np.array([ids.setdefault(i, len(ids)) for i in t.identities], dtype=np.int64)
            for k in cls.COLUMNS:
                col = getattr(t, k)
                parts[k].append(remap[col] if k == "ident" and len(col) else col)
        if not tables:
            return cls.empty()
        return cls({k: np.concatenate(v) for k, v in parts.items()}, list(ids))

    def op(self, i: int) -> GpuOp:
        ident = self.identities[int(self.ident[i])]
        return GpuOp(kind=ident.kind, rank=int(self.rank[i]), device=int(self.device[i]), stream=int(self.stream[i]),
                     start_ns=int(self.start_ns[i]), end_ns=int(self.end_ns[i]), kernel=ident.kernel,
                     gemm=ident.gemm, comm=ident.comm, row=int(self.row[i]))

    def ops(self) -> list[GpuOp]:
        return [self.op(i) for i in range(len(self))]
