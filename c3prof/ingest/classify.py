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
    COLLECTIVE, GEMM, GPU_KERNEL, GPU_MEMCPY, KIND_CODES, TRANSFER, CommInfo, GemmShape, GpuOp, KinetoTrace,
    OpIdentity, OpTable,
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

    table: OpTable = field(default_factory=OpTable.empty)
    n_kernels: int = 0
    n_memcpys: int = 0
    n_other: int = 0
    other_names: Counter = field(default_factory=Counter)
    gemm_without_shape: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    @property
    def ops(self) -> list[GpuOp]:
        """The operations as objects (for inspection and tests; the analysis uses ``table``)."""
        return self.table.ops()


class _Linker:
    """GPU activity -> the kept CPU op that launched it, vectorized over rows.

    1. the activity's ``External id`` names a kept CPU op;
    2. else the CUDA launch with the activity's ``correlation``: its ``External id``, or else the
       innermost kept CPU op on the launching thread whose span contains the launch.
    """

    def __init__(self, trace: KinetoTrace):
        cpu, launch = trace.cpu, trace.launch
        order = np.argsort(cpu["external_id"], kind="stable")
        self.ext_sorted, self.ext_rows = cpu["external_id"][order], order
        order = np.argsort(launch["correlation"], kind="stable")
        self.corr_sorted, self.corr_rows = launch["correlation"][order], order
        self.launch = launch
        # Kept CPU ops per thread, sorted by start, for span containment.
        self.threads: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        if len(cpu["pid"]):
            keyed = np.lexsort((cpu["start_ns"], cpu["tid"], cpu["pid"]))
            pid, tid = cpu["pid"][keyed], cpu["tid"][keyed]
            cut = np.nonzero((np.diff(pid) != 0) | (np.diff(tid) != 0))[0] + 1
            for rows in np.split(keyed, cut):
                starts = cpu["start_ns"][rows]
                ends = starts + cpu["dur_ns"][rows]
                # Latest end among ops started so far: if it is before t, nothing contains t.
                self.threads[(int(cpu["pid"][rows[0]]), int(cpu["tid"][rows[0]]))] = (
                    rows, starts, ends, np.maximum.accumulate(ends))

    @staticmethod
    def _lookup(sorted_keys: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        if len(sorted_keys) == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.clip(np.searchsorted(sorted_keys, keys), 0, len(sorted_keys) - 1)
        return np.where((sorted_keys[pos] == keys) & (keys >= 0), rows[pos], -1)

    def link(self, external_id: np.ndarray, correlation: np.ndarray) -> np.ndarray:
        crow = self._lookup(self.ext_sorted, self.ext_rows, external_id)
        miss = np.nonzero(crow < 0)[0]
        if len(miss) == 0:
            return crow
        li = self._lookup(self.corr_sorted, self.corr_rows, correlation[miss])
        has_launch = li >= 0
        miss, li = miss[has_launch], li[has_launch]
        crow[miss] = self._lookup(self.ext_sorted, self.ext_rows, self.launch["external_id"][li])
        still = crow[miss] < 0
        miss, li = miss[still], li[still]
        pids, tids, times = self.launch["pid"][li], self.launch["tid"][li], self.launch["start_ns"][li]
        for key in set(zip(pids.tolist(), tids.tolist())):
            entry = self.threads.get(key)
            if entry is None:
                continue
            sel = np.nonzero((pids == key[0]) & (tids == key[1]))[0]
            crow[miss[sel]] = self._innermost(entry, times[sel])
        return crow

    @staticmethod
    def _innermost(entry, t: np.ndarray) -> np.ndarray:
        rows, starts, ends, ends_so_far = entry
        i = np.searchsorted(starts, t, side="right") - 1
        found = np.full(len(t), -1, dtype=np.int64)
        ok = (i >= 0) & (ends[np.maximum(i, 0)] >= t)
        found[ok] = rows[i[ok]]
        # The op that started last has ended, but an earlier one may still enclose t: walk back past
        # finished siblings (only where some earlier op ends late enough).
        maybe = ~ok & (i >= 0) & (ends_so_far[np.maximum(i, 0)] >= t)
        for k in np.nonzero(maybe)[0]:
            for j in range(int(i[k]) - 1, max(int(i[k]) - 64, -1), -1):
                if ends[j] >= t[k]:
                    found[k] = rows[j]
                    break
        return found


def classify(trace: KinetoTrace, rank: int) -> Classified:
    """Find the GEMMs, collectives and transfers of ``trace`` (on rank ``rank``)."""
    gpu, names = trace.gpu, trace.names
    n = trace.n_gpu
    result = Classified()
    if n == 0:
        return result
    kinds = gpu["kind"]
    result.n_kernels = int(np.count_nonzero(kinds == GPU_KERNEL))
    result.n_memcpys = int(np.count_nonzero(kinds == GPU_MEMCPY))
    cpu_names = trace.cpu["name"]

    # Decide per distinct name once (a 1 GB trace has millions of kernels but few distinct names),
    # then visit in Python only the rows that can be GEMMs, collectives or copies.
    name_gemm = np.zeros(len(names), dtype=bool)
    name_coll = np.zeros(len(names), dtype=bool)
    for ident in np.unique(gpu["name"]):
        nm = names[int(ident)]
        name_gemm[ident] = is_gemm_kernel_name(nm)
        name_coll[ident] = is_collective_kernel_name(nm)
    cpu_name_is_gemm = np.array([is_gemm_cpu_op(nm) for nm in names], dtype=bool)
    linker = _Linker(trace)
    direct = linker._lookup(linker.ext_sorted, linker.ext_rows, gpu["external_id"])
    linked_gemm = np.zeros(n, dtype=bool)
    has_cpu = direct >= 0
    linked_gemm[has_cpu] = cpu_name_is_gemm[cpu_names[direct[has_cpu]]]
    candidate = ((kinds == GPU_MEMCPY) | name_gemm[gpu["name"]] | name_coll[gpu["name"]] | linked_gemm
                 | (gpu["args"] >= 0))  # kernels carrying collective metadata
    rows = np.nonzero(candidate)[0]
    result.n_other = n - len(rows)
    other = ~candidate & (kinds == GPU_KERNEL)
    if other.any():
        ids, counts = np.unique(gpu["name"][other], return_counts=True)
        result.other_names.update({names[int(i)]: int(c) for i, c in zip(ids, counts)})

    crow = linker.link(gpu["external_id"][rows], gpu["correlation"][rows])
    linked = crow >= 0
    op_id = np.where(linked, cpu_names[np.maximum(crow, 0)] if len(cpu_names) else -1, -1)
    cargs_id = np.where(linked, trace.cpu["args"][np.maximum(crow, 0)] if len(cpu_names) else -1, -1)
    kind_r, name_r, kargs_r = kinds[rows].astype(np.int64), gpu["name"][rows].astype(np.int64), gpu["args"][rows]
    copy = kind_r == GPU_MEMCPY
    zero = np.zeros(len(rows), dtype=np.int64)
    # Rows with the same key are the same operation: classify each distinct key once, in Python.
    key_cols = [kind_r, name_r, op_id, cargs_id, kargs_r.astype(np.int64),
                np.where(copy, gpu["bytes"][rows], zero), np.where(copy, gpu["src_device"][rows], zero),
                np.where(copy, gpu["dst_device"][rows], zero)]
    inverse, first = _group_ids(key_cols)
    counts = np.bincount(inverse, minlength=len(first))
    uniq = np.stack([c[first] for c in key_cols], axis=1)
    ident_of_key = np.full(len(uniq), -1, dtype=np.int64)
    identities: list[OpIdentity] = []
    ident_index: dict[OpIdentity, int] = {}
    for u, (kind, name_id, op, cargs, kargs, nbytes, src, dst) in enumerate(uniq.tolist()):
        identity = _identify(trace, kind, name_id, op, cargs, kargs, nbytes, src, dst,
                             bool(name_coll[name_id]), bool(name_gemm[name_id]),
                             bool(op >= 0 and cpu_name_is_gemm[op]))
        kname = names[name_id]
        if identity is None:
            result.n_other += int(counts[u])
            if kind == GPU_KERNEL:
                result.other_names[kname] += int(counts[u])
            continue
        if identity.kind == GEMM and identity.gemm is None:
            result.gemm_without_shape[kname] += int(counts[u])
        ident_of_key[u] = ident_index.setdefault(identity, len(ident_index))
        if ident_of_key[u] == len(identities):
            identities.append(identity)
    ident = ident_of_key[inverse.reshape(-1)]
    keep = ident >= 0
    kept_rows = rows[keep]
    start = gpu["start_ns"][kept_rows]
    result.table = OpTable({
        "kind": np.array([KIND_CODES[i.kind] for i in identities], dtype=np.int8)[ident[keep]]
        if identities else np.zeros(0, dtype=np.int8),
        "rank": np.full(len(kept_rows), rank, dtype=np.int64), "device": gpu["device"][kept_rows],
        "stream": gpu["stream"][kept_rows], "start_ns": start, "end_ns": start + gpu["dur_ns"][kept_rows],
        "ident": ident[keep], "row": kept_rows,
    }, identities)
    return result


def _group_ids(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Dense group id of each row over several integer columns, and one row of each group.

    Combines one column at a time into the ids so far (np.unique of int64s): much faster than
    np.unique(axis=0), which sorts rows as structured records."""
    n = len(columns[0])
    ids = np.zeros(n, dtype=np.int64)
    n_ids = 1
    for col in columns:
        c = col.astype(np.int64) - (int(col.min()) if n else 0)
        radix = int(c.max()) + 1 if n else 1
        if n_ids * radix >= 2**62:  # cannot happen for real traces; stay exact anyway
            _, c = np.unique(c, return_inverse=True)
            radix = int(c.max()) + 1
        _, ids = np.unique(ids * radix + c, return_inverse=True)
        ids = ids.reshape(-1)
        n_ids = int(ids.max()) + 1 if n else 1
    _, first = np.unique(ids, return_index=True)
    return ids, first


def _identify(trace: KinetoTrace, kind: int, name_id: int, op: int, cargs: int, kargs: int, nbytes: int,
              src: int, dst: int, coll_name: bool, gemm_name: bool, gemm_op: bool) -> OpIdentity | None:
    """The operation one distinct (activity, launching op, args) key stands for; None if not C3."""
    kname = trace.names[name_id]
    op_name = trace.names[op] if op >= 0 else ""
    if kind == GPU_KERNEL:
        if coll_name or kargs >= 0:
            comm = (comm_from_args(trace.args[kargs] if kargs >= 0 else {})
                    or comm_from_args(trace.args[cargs] if cargs >= 0 else {})
                    or comm_from_kernel_name(kname))
            return OpIdentity(COLLECTIVE, kname, comm=comm)
        if gemm_name or (gemm_op and not _NOT_GEMM_KERNEL.search(kname)):
            shape = gemm_from_args(op_name, trace.args[cargs] if cargs >= 0 else {}) if gemm_op else None
            return OpIdentity(GEMM, kname, gemm=shape)
        return None
    if kind == GPU_MEMCPY:
        collective_args = trace.args[cargs] if cargs >= 0 and is_comm_cpu_op(op_name) else {}
        comm = _copy_comm(kname, nbytes, src, dst, collective_args)
        if comm is None:
            return None
        return OpIdentity(COLLECTIVE if comm.op != "transfer" else TRANSFER, kname, comm=comm)
    return None


def _copy_comm(name: str, nbytes: int, src: int, dst: int, collective_args: dict) -> CommInfo | None:
    """A memcpy as communication, or None when it is local memory traffic."""
    m = _MEMCPY_NAME.match(name)
    direction = m.group(1) if m else "unknown"
    peer = direction == "PtoP" or (src >= 0 and dst >= 0 and src != dst)
    nbytes = max(nbytes, 0)
    if collective_args:
        comm = comm_from_args(collective_args, carrier="copy_engine" if peer or direction in ("HtoD", "DtoH") else "sm")
        if comm is not None:
            return comm
    if peer:
        return CommInfo(op="transfer", bytes=nbytes, carrier="copy_engine", direction="PtoP")
    if direction in ("HtoD", "DtoH"):
        return CommInfo(op="transfer", bytes=nbytes, carrier="copy_engine", direction=direction)
    return None
