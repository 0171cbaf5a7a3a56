"""Classify the GPU activities of a Kineto trace: GEMMs, collectives, copy-engine transfers, other.

Evidence used, strongest first:

* the CPU op that launched the activity, found through Kineto's links: the activity's
  ``External id`` (equal to the launching op's), else the CUDA launch with the same ``correlation``
  and then the innermost kept CPU op on that thread whose span contains the launch;
* the collective metadata recent PyTorch attaches to NCCL kernels and to ``record_param_comms``
  ops (``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``dtype``,
  ``Process Group Name``);
* the kernel or memcpy name (cuBLAS/cuBLASLt/CUTLASS/nvjet/xmma GEMMs, NCCL/RCCL kernels,
  ``Memcpy HtoD (Pinned -> Device)``...).

Copy-engine transfers are communication here (HTA counts them as memory): host<->device copies and
peer copies are op "transfer"; a copy launched by a collective (NCCL's single-rank path, CE
collectives) is that collective. Same-device device-to-device copies run on SMs on Hopper
(FACTS-H200.md), so unless they serve a collective they are memory traffic, not communication.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from c3prof.ingest.events import (
    COLLECTIVE, GEMM, GPU_KERNEL, GPU_MEMCPY, TRANSFER, CommInfo, GemmShape, GpuOp, KinetoTrace,
)

# CPU ops whose kernels are GEMMs, and how to read (m, n, k) from their ``Input Dims``.
GEMM_CPU_OPS = {
    "aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::matmul", "aten::bmm", "aten::baddbmm",
    "aten::linear", "aten::_scaled_mm", "aten::addbmm",
}
_COMM_CPU_PREFIXES = ("nccl:", "rccl:", "c10d::", "_c10d_functional::", "c10d_functional::", "gloo:")
_COMM_CPU_NAMES = {"record_param_comms"}

_GEMM_KERNEL = re.compile(
    r"gemm|nvjet|cutlass|cublas|xmma|wgmma|s16816|h16816|s1688|h1688|s884|h884|_mm_|matmul", re.I)
# Kernels that mention a GEMM library in their template arguments but are not GEMMs, and helper
# kernels a GEMM op may launch (copies for contiguity, fills).
_NOT_GEMM_KERNEL = re.compile(
    r"fmha|flash|attention|attn|softmax|elementwise|fill|copy|layer_?norm|rms_?norm|reduce_kernel", re.I)
_COLLECTIVE_KERNEL = re.compile(r"nccl|rccl|msccl", re.I)
_COLLECTIVE_IN_NAME = re.compile(r"(AllReduce|AllGather|ReduceScatter|AllToAll|Broadcast|SendRecv|Send|Recv|Reduce)")
_MEMCPY_NAME = re.compile(r"^Memcpy\s+(\w+)(?:\s*\(([^)]*?)\s*->\s*([^)]*?)\))?")

# torch ScalarType names (collective ``dtype``) and aten ``Input type`` strings -> element bytes.
_ELEMENT_BYTES = {
    "bfloat16": 2, "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "int8": 1,
    "byte": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "complexfloat": 8, "complexdouble": 16,
}
# aten Input type -> c3prof GEMM dtype (scenarios support bf16, fp16, fp32).
_GEMM_DTYPES = {"bfloat16": "bf16", "half": "fp16", "float16": "fp16", "float": "fp32", "float32": "fp32",
                "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "double": "fp64"}


def _canon_type(t: str) -> str:
    return t.lower().replace("c10::", "").replace("torch.", "").replace("at::", "").strip()


def is_gemm_cpu_op(name: str) -> bool:
    return name in GEMM_CPU_OPS


def is_comm_cpu_op(name: str) -> bool:
    return name in _COMM_CPU_NAMES or name.startswith(_COMM_CPU_PREFIXES)


def keep_cpu_op(name: str) -> bool:
    """The scanner keeps only CPU ops that launch GEMMs or collectives (and their arguments)."""
    return is_gemm_cpu_op(name) or is_comm_cpu_op(name)


def is_gemm_kernel_name(name: str) -> bool:
    return bool(_GEMM_KERNEL.search(name)) and not _NOT_GEMM_KERNEL.search(name)


def is_collective_kernel_name(name: str) -> bool:
    return bool(_COLLECTIVE_KERNEL.search(name))


def normalize_collective(name: str) -> str:
    """'allreduce', '_allgather_base', 'reduce_scatter_tensor_coalesced', 'AllReduce'... -> c3prof's op."""
    s = re.sub(r"[^a-z]", "", name.lower())
    for needle, op in (("allreduce", "all_reduce"), ("reducescatter", "reduce_scatter"),
                       ("allgather", "all_gather"), ("alltoall", "all_to_all"), ("broadcast", "broadcast"),
                       ("barrier", "barrier"), ("sendrecv", "send_recv"), ("send", "send_recv"),
                       ("recv", "send_recv"), ("gather", "gather"), ("scatter", "scatter"), ("reduce", "reduce")):
        if needle in s:
            return op
    return s or "unknown"


def element_bytes(dtype: str) -> int:
    return _ELEMENT_BYTES.get(_canon_type(dtype), 0)


def _as_int(v) -> int:
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return 0


def comm_from_args(args: dict, carrier: str = "sm") -> CommInfo | None:
    """CommInfo from PyTorch's collective metadata (kernel args or record_param_comms args)."""
    coll = args.get("Collective name")
    if not isinstance(coll, str) or not coll:
        return None
    op = normalize_collective(coll)
    dtype = str(args.get("dtype", ""))
    es = element_bytes(dtype)
    n_in = _as_int(args.get("In msg nelems"))
    n_out = _as_int(args.get("Out msg nelems"))
    group = _as_int(args.get("Group size"))
    # nccl-tests' size convention (c3prof.scenarios): all_gather counts the gathered output,
    # reduce_scatter its (full) input, the others the per-rank buffer.
    if op == "all_gather":
        nelems = n_out or n_in * max(group, 1)
    elif op == "send_recv":
        nelems = max(n_in, n_out)
    else:
        nelems = n_in or n_out
    return CommInfo(op=op, bytes=nelems * es, group_size=group, dtype=_canon_type(dtype),
                    process_group=str(args.get("Process Group Name", "")), carrier=carrier)


def comm_from_kernel_name(name: str) -> CommInfo:
    m = _COLLECTIVE_IN_NAME.search(name)
    return CommInfo(op=normalize_collective(m.group(1)) if m else "unknown", bytes=0, carrier="sm")


def _dims(args: dict) -> list:
    dims = args.get("Input Dims")
    return dims if isinstance(dims, list) else []


def _types(args: dict) -> list:
    types = args.get("Input type")
    return types if isinstance(types, list) else []


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _valid(shape) -> bool:
    return isinstance(shape, list) and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape)


def gemm_from_args(op: str, args: dict) -> GemmShape | None:
    """(m, n, k, dtype) of a GEMM CPU op from ``Input Dims`` and ``Input type``; None if unreadable."""
    dims, types = _dims(args), _types(args)
    a_idx, b_idx = (1, 2) if op in ("aten::addmm", "aten::_addmm_activation", "aten::baddbmm", "aten::addbmm") else (0, 1)
    if len(dims) <= b_idx or not _valid(dims[a_idx]) or not _valid(dims[b_idx]):
        return None
    a, b = dims[a_idx], dims[b_idx]
    batch = 1
    if op == "aten::linear":
        # input [..., K], weight [N, K]
        if len(a) < 1 or len(b) != 2:
            return None
        m, k, n = _prod(a[:-1]) if len(a) > 1 else 1, a[-1], b[0]
    elif op in ("aten::bmm", "aten::baddbmm"):
        if len(a) != 3 or len(b) != 3:
            return None
        batch, m, k, n = a[0], a[1], a[2], b[2]
    elif op == "aten::addbmm":
        if len(a) != 3 or len(b) != 3:
            return None
        batch, m, k, n = a[0], a[1], a[2], b[2]
    else:  # mm, addmm, matmul, _scaled_mm
        if len(a) < 2 or len(b) < 2:
            return None
        if len(b) == 2:
            m, k, n = _prod(a[:-1]), a[-1], b[-1]
        else:
            batch, m, k, n = _prod(a[:-2]), a[-2], a[-1], b[-1]
    a_type = types[a_idx] if len(types) > a_idx and isinstance(types[a_idx], str) else ""
    canon = _canon_type(a_type)
    dtype = _GEMM_DTYPES.get(canon, canon or "unknown")
    return GemmShape(m=m, n=n, k=k, dtype=dtype, batch=batch, op=op)


@dataclass
class Classified:
    """The operations c3prof analyzes from one trace, and what it could not classify."""

    ops: list[GpuOp]
    n_kernels: int = 0
    n_memcpys: int = 0
    n_other: int = 0
    other_names: Counter = field(default_factory=Counter)
    gemm_without_shape: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


class _CpuIndex:
    """Kept CPU ops by External id, and by thread for span containment."""

    def __init__(self, trace: KinetoTrace):
        cpu = trace.cpu
        self.trace = trace
        ext = cpu["external_id"]
        order = np.argsort(ext, kind="stable")
        self.ext_sorted = ext[order]
        self.ext_rows = order
        self.by_thread: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        keys = np.stack([cpu["pid"], cpu["tid"]], axis=1) if len(ext) else np.zeros((0, 2), np.int64)
        for key in {tuple(map(int, k)) for k in keys}:
            rows = np.nonzero((cpu["pid"] == key[0]) & (cpu["tid"] == key[1]))[0]
            rows = rows[np.argsort(cpu["start_ns"][rows], kind="stable")]
            starts = cpu["start_ns"][rows]
            ends = starts + cpu["dur_ns"][rows]
            self.by_thread[key] = (rows, starts, ends)

    def rows_for_external_ids(self, ext: np.ndarray) -> np.ndarray:
        """Vectorized External id -> kept CPU row (-1 where none)."""
        if len(self.ext_sorted) == 0:
            return np.full(len(ext), -1, dtype=np.int64)
        pos = np.searchsorted(self.ext_sorted, ext)
        pos = np.clip(pos, 0, len(self.ext_sorted) - 1)
        hit = (self.ext_sorted[pos] == ext) & (ext >= 0)
        return np.where(hit, self.ext_rows[pos], -1)

    def innermost_containing(self, pid: int, tid: int, t_ns: int) -> int:
        entry = self.by_thread.get((pid, tid))
        if entry is None:
            return -1
        rows, starts, ends = entry
        i = int(np.searchsorted(starts, t_ns, side="right")) - 1
        # Nested ops: the innermost container starts last; siblings that ended are passed over.
        for j in range(i, max(i - 64, -1), -1):
            if ends[j] >= t_ns:
                return int(rows[j])
        return -1


def classify(trace: KinetoTrace, rank: int) -> Classified:
    """Find the GEMMs, collectives and transfers of ``trace`` (on rank ``rank``)."""
    gpu, names = trace.gpu, trace.names
    n = trace.n_gpu
    result = Classified(ops=[])
    if n == 0:
        return result
    kinds = gpu["kind"]
    result.n_kernels = int(np.count_nonzero(kinds == GPU_KERNEL))
    result.n_memcpys = int(np.count_nonzero(kinds == GPU_MEMCPY))

    index = _CpuIndex(trace)
    cpu_row = index.rows_for_external_ids(gpu["external_id"])
    launch = trace.launch
    corr_to_launch = {int(c): i for i, c in enumerate(launch["correlation"])} if len(launch["correlation"]) else {}
    cpu_names = trace.cpu["name"]

    # Decide per distinct name once (a 1 GB trace has millions of kernels but few distinct names),
    # then visit in Python only the rows that can be GEMMs, collectives or copies.
    name_gemm = np.zeros(len(names), dtype=bool)
    name_coll = np.zeros(len(names), dtype=bool)
    for ident in np.unique(gpu["name"]):
        nm = names[int(ident)]
        name_gemm[ident] = is_gemm_kernel_name(nm)
        name_coll[ident] = is_collective_kernel_name(nm)
    cpu_is_gemm = np.array([is_gemm_cpu_op(names[int(i)]) for i in cpu_names], dtype=bool)
    linked_gemm = np.zeros(n, dtype=bool)
    has_cpu = cpu_row >= 0
    linked_gemm[has_cpu] = cpu_is_gemm[cpu_row[has_cpu]]
    candidate = (kinds == GPU_MEMCPY) | name_gemm[gpu["name"]] | name_coll[gpu["name"]] | linked_gemm
    if trace.gpu_args:
        candidate[np.fromiter(trace.gpu_args.keys(), dtype=np.int64)] = True
    rows = np.nonzero(candidate)[0]
    result.n_other = n - len(rows)
    other = ~candidate & (kinds == GPU_KERNEL)
    if other.any():
        ids, counts = np.unique(gpu["name"][other], return_counts=True)
        result.other_names.update({names[int(i)]: int(c) for i, c in zip(ids, counts)})

    col = {k: gpu[k][rows].tolist() for k in ("kind", "name", "start_ns", "dur_ns", "device", "stream", "correlation")}
    crows = cpu_row[rows].tolist()
    for j, row in enumerate(rows.tolist()):
        kind = col["kind"][j]
        name_id = col["name"][j]
        kname = names[name_id]
        crow = crows[j]
        if crow < 0:
            crow = _link_through_launch(index, launch, corr_to_launch, col["correlation"][j])
        op_name = names[int(cpu_names[crow])] if crow >= 0 else ""
        cargs = trace.cpu_args.get(crow, {}) if crow >= 0 else {}
        start = col["start_ns"][j]
        common = dict(rank=rank, device=col["device"][j], stream=col["stream"][j],
                      start_ns=start, end_ns=start + col["dur_ns"][j], kernel=kname, row=row)
        if kind == GPU_KERNEL:
            if name_coll[name_id] or row in trace.gpu_args:
                comm = comm_from_args(trace.gpu_args.get(row, {})) or comm_from_args(cargs) \
                    or comm_from_kernel_name(kname)
                result.ops.append(GpuOp(kind=COLLECTIVE, comm=comm, **common))
                continue
            gemm_op = is_gemm_cpu_op(op_name)
            if name_gemm[name_id] or (gemm_op and not _NOT_GEMM_KERNEL.search(kname)):
                shape = gemm_from_args(op_name, cargs) if gemm_op else None
                if shape is None:
                    result.gemm_without_shape[kname] += 1
                result.ops.append(GpuOp(kind=GEMM, gemm=shape, **common))
                continue
            result.n_other += 1
            result.other_names[kname] += 1
        else:  # memcpy
            comm = _copy_comm(kname, gpu, row, cargs if is_comm_cpu_op(op_name) else {})
            if comm is None:
                result.n_other += 1
                continue
            result.ops.append(GpuOp(kind=COLLECTIVE if comm.op != "transfer" else TRANSFER, comm=comm, **common))
    return result


def _link_through_launch(index: _CpuIndex, launch: dict, corr_to_launch: dict, corr: int) -> int:
    li = corr_to_launch.get(corr) if corr >= 0 else None
    if li is None:
        return -1
    ext = int(launch["external_id"][li])
    if ext >= 0:
        row = int(index.rows_for_external_ids(np.array([ext], dtype=np.int64))[0])
        if row >= 0:
            return row
    return index.innermost_containing(int(launch["pid"][li]), int(launch["tid"][li]), int(launch["start_ns"][li]))


def _copy_comm(name: str, gpu: dict, row: int, collective_args: dict) -> CommInfo | None:
    """A memcpy as communication, or None when it is local memory traffic."""
    m = _MEMCPY_NAME.match(name)
    direction = m.group(1) if m else "unknown"
    src, dst = int(gpu["src_device"][row]), int(gpu["dst_device"][row])
    peer = direction == "PtoP" or (src >= 0 and dst >= 0 and src != dst)
    nbytes = max(int(gpu["bytes"][row]), 0)
    if collective_args:
        comm = comm_from_args(collective_args, carrier="copy_engine" if peer or direction in ("HtoD", "DtoH") else "sm")
        if comm is not None:
            return comm
    if peer:
        return CommInfo(op="transfer", bytes=nbytes, carrier="copy_engine", direction="PtoP")
    if direction in ("HtoD", "DtoH"):
        return CommInfo(op="transfer", bytes=nbytes, carrier="copy_engine", direction=direction)
    return None
