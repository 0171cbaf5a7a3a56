"""Classify the GPU activities of a Kineto trace, and build the table of operations C3 analysis pairs.

Every GPU activity gets a class (c3prof.ingest.kernel_table: gemm, conv, attention, compute,
collective, transfer, memset). Evidence, strongest first:

* the CPU op that launched the activity, found through Kineto's links: the activity's
  ``External id`` (equal to the launching op's), else the CUDA launch with the same ``correlation``
  and then the innermost kept CPU op on that thread whose span contains the launch;
* for collectives, the metadata recent PyTorch attaches to NCCL kernels and ``record_param_comms``
  ops (``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``dtype``), else
  the launching (or enclosing) ``nccl:*``/``c10d::*`` op's name and tensor arguments, and only then
  the kernel name (``ncclKernel_SendRecv`` runs all-to-all, all-gather and reduce-scatter too);
* the kernel name, through kernel_table's rules.

Copy-engine transfers are communication here (HTA counts them as memory): host<->device copies and
peer copies are op "transfer"; a copy launched by a collective (NCCL's single-rank path, CE
collectives) is that collective. Same-device device-to-device copies run on SMs (on Hopper the copy
engines are not used for them), so unless they serve a collective they are memory traffic: class
transfer in the time breakdown, but not paired as communication.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from c3prof.ingest.events import (
    COLLECTIVE, GEMM, GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, KIND_CODES, TRANSFER, CommInfo, GemmShape, GpuOp,
    KinetoTrace, OpIdentity, OpTable,
)
from c3prof.ingest.names import bounded
from c3prof.ingest.kernel_table import (
    ATTENTION_OP, CLASSES, COMPUTE, CONV_OPS, GEMM_OPS, MEMSET, KernelClass, classify_kernel, classify_name,
)

_COMM_CPU_PREFIXES = ("nccl:", "rccl:", "c10d::", "_c10d_functional::", "c10d_functional::", "gloo:",
                      "symm_mem::", "_symmetric_memory::")
_COMM_CPU_NAMES = {"record_param_comms"}
_COLLECTIVE_IN_NAME = re.compile(r"(AllReduce|AllGather|ReduceScatter|AllToAll|Broadcast|SendRecv|Send|Recv|Reduce)")
GEMM_CPU_OPS = GEMM_OPS  # kept name for callers
_MEMCPY_NAME = re.compile(r"^Memcpy\s+(\w+)(?:\s*\(([^)]*?)\s*->\s*([^)]*?)\))?")

# torch ScalarType names (collective ``dtype``) and aten ``Input type`` strings -> element bytes.
_ELEMENT_BYTES = {
    "bfloat16": 2, "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "int8": 1,
    "byte": 1, "uint8": 1, "bool": 1, "signed char": 1, "unsigned char": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "complexfloat": 8, "complexdouble": 16,
}
# aten Input type -> c3prof GEMM dtype (scenarios support bf16, fp16, fp32).
_GEMM_DTYPES = {"bfloat16": "bf16", "half": "fp16", "float16": "fp16", "float": "fp32", "float32": "fp32",
                "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "double": "fp64"}


def _canon_type(t: str) -> str:
    return t.lower().replace("c10::", "").replace("torch.", "").replace("at::", "").strip()


def is_gemm_cpu_op(name: str) -> bool:
    return name in GEMM_OPS


def is_profiler_step(name: str) -> bool:
    return name.startswith("ProfilerStep")


def is_comm_cpu_op(name: str) -> bool:
    return name in _COMM_CPU_NAMES or name.startswith(_COMM_CPU_PREFIXES)


def keep_cpu_op(name: str) -> bool:
    """The scanner keeps the CPU ops that decide a kernel's class (GEMM, convolution, attention and
    collective ops, with their arguments) and the ProfilerStep annotations (iterations)."""
    return _op_matters(name) or is_profiler_step(name)


def is_gemm_kernel_name(name: str) -> bool:
    kc = classify_name(name)
    return kc.cls == GEMM and not kc.helper


def is_collective_kernel_name(name: str) -> bool:
    return classify_name(name).cls == COLLECTIVE


def comm_op_from_cpu_name(name: str) -> str | None:
    """The collective a CPU op's name says (``nccl:all_to_all``, ``c10d::_reduce_scatter_base_``)."""
    for prefix in _COMM_CPU_PREFIXES:
        if name.startswith(prefix):
            op = normalize_collective(name[len(prefix):])
            return op if op not in ("unknown", "") else None
    return None


def comm_from_op(name: str, args: dict) -> CommInfo | None:
    """A collective from its c10d/nccl op: the op from the name; the size (nccl-tests' convention)
    and dtype from the op's ``Input Dims``/``Input type`` when it has tensors: ``c10d::_allgather_base_``,
    ``_reduce_scatter_base_`` and ``alltoall_base_`` record (output, input, ...); ``nccl:*`` ops record
    the input only, which sizes every collective but all_gather (its gathered output needs the
    group size)."""
    op = comm_op_from_cpu_name(name)
    if op is None:
        return None
    dims, types = _dims(args), _types(args)
    tensors = [i for i, d in enumerate(dims) if _valid(d) and len(types) > i and isinstance(types[i], str)]
    if len(tensors) >= 2 and tensors[:2] == [0, 1]:
        pick = {"all_gather": 0, "reduce_scatter": 1, "all_to_all": 1}.get(op, 0)
    elif len(tensors) == 1 and op != "all_gather":
        # nccl:* ops record their input only: the per-rank buffer, or reduce_scatter's full input
        pick = tensors[0]
    else:
        pick = -1  # an all_gather/reduce_scatter input alone does not give the size without the group
    nbytes, dtype = 0, ""
    if pick >= 0:
        dtype = _canon_type(types[pick])
        nbytes = _prod(dims[pick]) * element_bytes(dtype)
    return CommInfo(op=op, bytes=nbytes, dtype=dtype)


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
    m = _COLLECTIVE_IN_NAME.search(bounded(name))
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
    rank: int = 0
    # Per GPU row of the trace: its class (index into kernel_table.CLASSES), whether it is a GEMM
    # helper (epilogue, split-K), and the kept CPU op it is linked to (-1: none).
    row_class: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    row_helper: np.ndarray | None = None
    helper_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    crow: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    families: Counter = field(default_factory=Counter)
    n_helpers_unmerged: int = 0
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


def per_thread(cpu: dict, rows: np.ndarray):
    """((pid, tid), the rows of that thread sorted by start) for the CPU ``rows`` given."""
    if len(rows) == 0:
        return
    keyed = rows[np.lexsort((cpu["start_ns"][rows], cpu["tid"][rows], cpu["pid"][rows]))]
    pid, tid = cpu["pid"][keyed], cpu["tid"][keyed]
    cut = np.nonzero((np.diff(pid) != 0) | (np.diff(tid) != 0))[0] + 1
    for part in np.split(keyed, cut):
        yield (int(cpu["pid"][part[0]]), int(cpu["tid"][part[0]])), part


class _Linker:
    """GPU activity -> the kept CPU op that launched it, vectorized over rows.

    1. the activity's ``External id`` names a kept CPU op;
    2. else the CUDA launch with the activity's ``correlation``: its ``External id``, or else the
       innermost kept CPU op on the launching thread whose span contains the launch.
    """

    def __init__(self, trace: KinetoTrace):
        cpu, launch = trace.cpu, trace.launch
        # ProfilerStep annotations enclose everything: they launch nothing themselves.
        step_names = [i for i, nm in enumerate(trace.names) if is_profiler_step(nm)]
        ops = np.nonzero(~np.isin(cpu["name"], step_names))[0] if step_names else np.arange(len(cpu["name"]))
        order = ops[np.argsort(cpu["external_id"][ops], kind="stable")]
        self.ext_sorted, self.ext_rows = cpu["external_id"][order], order
        order = np.argsort(launch["correlation"], kind="stable")
        self.corr_sorted, self.corr_rows = launch["correlation"][order], order
        self.launch = launch
        # Kept CPU ops per thread, sorted by start, for span containment.
        self.threads: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for key, rows in per_thread(cpu, ops):
            starts = cpu["start_ns"][rows]
            ends = starts + cpu["dur_ns"][rows]
            # Latest end among ops started so far: if it is before t, nothing contains t.
            self.threads[key] = (rows, starts, ends, np.maximum.accumulate(ends))

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


# Class codes of Classified.row_class (kernel_table.CLASSES order).
CLASS_CODES = {c: i for i, c in enumerate(CLASSES)}


def classify(trace: KinetoTrace, rank: int) -> Classified:
    """Classify every GPU activity of ``trace`` (rank ``rank``), and build the table of the GEMMs,
    collectives and transfers that C3 analysis pairs."""
    gpu, names = trace.gpu, trace.names
    n = trace.n_gpu
    result = Classified(row_class=np.zeros(n, dtype=np.int8), rank=rank)
    if n == 0:
        return result
    kinds = gpu["kind"]
    result.n_kernels = int(np.count_nonzero(kinds == GPU_KERNEL))
    result.n_memcpys = int(np.count_nonzero(kinds == GPU_MEMCPY))
    crow = _Linker(trace).link(gpu["external_id"], gpu["correlation"])
    linked = crow >= 0
    cpu = trace.cpu
    op_id = np.where(linked, cpu["name"][np.maximum(crow, 0)] if len(cpu["name"]) else -1, -1).astype(np.int64)
    cargs = np.where(linked, cpu["args"][np.maximum(crow, 0)] if len(cpu["name"]) else -1, -1).astype(np.int64)
    # The op naming each activity's collective, by (name, args): rows with the same key are one
    # distinct decision, however many times the collective ran.
    named = _named_comm_rows(trace, crow)
    has_named = named >= 0
    named_name = np.where(has_named, cpu["name"][np.maximum(named, 0)] if len(cpu["name"]) else -1, -1).astype(np.int64)
    named_args = np.where(has_named, cpu["args"][np.maximum(named, 0)] if len(cpu["name"]) else -1, -1).astype(np.int64)
    # Rows that need a decision in Python: all but kernels whose name says "compute" and whose
    # launching op is not one that changes that (most kernels of a real trace).
    name_cls = np.full(len(names), CLASS_CODES[COMPUTE], dtype=np.int8)
    for ident in np.unique(gpu["name"][kinds == GPU_KERNEL]):
        name_cls[ident] = CLASS_CODES[classify_name(names[int(ident)]).cls]
    special_op = np.array([_op_matters(nm) for nm in names], dtype=bool)
    plain = (kinds == GPU_KERNEL) & (name_cls[gpu["name"]] == CLASS_CODES[COMPUTE]) & (gpu["args"] < 0)
    plain &= ~(linked & special_op[np.maximum(op_id, 0)])
    result.row_class[plain] = CLASS_CODES[COMPUTE]
    result.row_class[kinds == GPU_MEMSET] = CLASS_CODES[MEMSET]
    rows = np.nonzero(~plain & (kinds != GPU_MEMSET))[0]
    copy = kinds[rows] == GPU_MEMCPY
    zero = np.zeros(len(rows), dtype=np.int64)
    key_cols = [kinds[rows].astype(np.int64), gpu["name"][rows].astype(np.int64), op_id[rows], cargs[rows],
                gpu["args"][rows].astype(np.int64), named_name[rows], named_args[rows],
                np.where(copy, gpu["bytes"][rows], zero), np.where(copy, gpu["src_device"][rows], zero),
                np.where(copy, gpu["dst_device"][rows], zero)]
    if len(rows):
        _decide_groups(trace, result, rows, key_cols)
    result.helper_rows = np.nonzero(result.row_helper)[0] if result.row_helper is not None else np.zeros(0, np.int64)
    result.table, merged = _merge_helpers(result.table, result.helper_rows, crow, gpu)
    result.n_helpers_unmerged = int(len(result.helper_rows) - merged)
    result.crow = crow
    compute = (result.row_class == CLASS_CODES[COMPUTE]) & (kinds == GPU_KERNEL)
    ids, counts = np.unique(gpu["name"][compute], return_counts=True)
    result.other_names.update({names[int(i)]: int(k) for i, k in zip(ids, counts)})
    result.n_other = n - len(result.table)
    return result


def _op_matters(name: str) -> bool:
    return (name in GEMM_OPS or name in CONV_OPS or is_comm_cpu_op(name) or bool(ATTENTION_OP.search(bounded(name))))


def _decide_groups(trace: KinetoTrace, result: Classified, rows: np.ndarray, key_cols: list[np.ndarray]) -> None:
    """Classify each distinct (activity, launching op, args) key once; fill the OpTable."""
    gpu = trace.gpu
    inverse, first = _group_ids(key_cols)
    uniq = np.stack([c[first] for c in key_cols], axis=1)
    ident_of_key = np.full(len(uniq), -1, dtype=np.int64)
    class_of_key = np.zeros(len(uniq), dtype=np.int8)
    helper_of_key = np.zeros(len(uniq), dtype=bool)
    identities: list[OpIdentity] = []
    ident_index: dict[OpIdentity, int] = {}
    for u, key in enumerate(uniq.tolist()):
        kclass, identity = _identify(trace, *key)
        class_of_key[u] = CLASS_CODES[kclass.cls]
        helper_of_key[u] = kclass.helper
        result.families[(kclass.cls, kclass.family)] += 1
        if identity is None:
            continue
        if identity.kind == GEMM and identity.gemm is None:
            result.gemm_without_shape[trace.names[key[1]]] += 1
        ident_of_key[u] = ident_index.setdefault(identity, len(ident_index))
        if ident_of_key[u] == len(identities):
            identities.append(identity)
    inverse = inverse.reshape(-1)
    result.row_class[rows] = class_of_key[inverse]
    result.row_helper = np.zeros(trace.n_gpu, dtype=bool)
    result.row_helper[rows] = helper_of_key[inverse]
    ident = ident_of_key[inverse]
    keep = ident >= 0
    kept_rows = rows[keep]
    start = gpu["start_ns"][kept_rows]
    result.table = OpTable({
        "kind": np.array([KIND_CODES[i.kind] for i in identities], dtype=np.int8)[ident[keep]]
        if identities else np.zeros(0, dtype=np.int8),
        "rank": np.full(len(kept_rows), result.rank, dtype=np.int64), "device": gpu["device"][kept_rows],
        "stream": gpu["stream"][kept_rows], "start_ns": start, "end_ns": start + gpu["dur_ns"][kept_rows],
        "ident": ident[keep], "row": kept_rows,
    }, identities)


def _merge_helpers(table: OpTable, helper_rows: np.ndarray, crow: np.ndarray, gpu: dict) -> tuple[OpTable, int]:
    """A cuBLASLt epilogue / split-K kernel runs right after its GEMM on the same stream: it extends the
    last GEMM instance that started before it on its (device, stream) -- of the same launching op
    when both are linked to one -- instead of counting as a GEMM of its own."""
    g_idx = np.nonzero(table.kind == KIND_CODES[GEMM])[0] if len(table) else np.zeros(0, np.int64)
    if len(helper_rows) == 0 or len(g_idx) == 0:
        return table, 0
    lanes, lane = np.unique(np.concatenate([
        np.stack([table.device[g_idx], table.stream[g_idx]], axis=1),
        np.stack([gpu["device"][helper_rows], gpu["stream"][helper_rows]], axis=1)]), axis=0, return_inverse=True)
    lane = lane.reshape(-1)
    g_lane, h_lane = lane[:len(g_idx)], lane[len(g_idx):]
    t0 = min(int(table.start_ns[g_idx].min()), int(gpu["start_ns"][helper_rows].min()))
    width = max(int(table.start_ns[g_idx].max()), int(gpu["start_ns"][helper_rows].max())) - t0 + 1
    g_key = g_lane * width + (table.start_ns[g_idx] - t0)
    order = np.argsort(g_key, kind="stable")
    g_idx, g_key, g_lane = g_idx[order], g_key[order], g_lane[order]
    h_start = gpu["start_ns"][helper_rows]
    pos = np.searchsorted(g_key, h_lane * width + (h_start - t0), side="right") - 1
    safe = np.maximum(pos, 0)
    target = g_idx[safe]
    g_op, h_op = crow[np.maximum(table.row[target], 0)], crow[helper_rows]
    ok = (pos >= 0) & (g_lane[safe] == h_lane) & ((g_op < 0) | (h_op < 0) | (g_op == h_op))
    np.maximum.at(table.end_ns, target[ok], h_start[ok] + gpu["dur_ns"][helper_rows][ok])
    return table, int(np.count_nonzero(ok))


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


def _named_comm_rows(trace: KinetoTrace, crow: np.ndarray) -> np.ndarray:
    """Per GPU row, the kept CPU op that names its collective: the launching op itself when its
    name says which collective (``nccl:all_to_all``, ``c10d::alltoall_base_``), else the innermost
    such op enclosing it on its thread (``record_param_comms`` sits inside ``c10d::*`` in older
    PyTorch); of those, the nearest that also gives the size. -1 when there is none."""
    out = np.full(len(crow), -1, dtype=np.int64)
    index = _CommOpIndex(trace)
    linked = np.intersect1d(np.unique(crow[crow >= 0]), index.rows)
    if len(linked) == 0:
        return out
    best = index.best_many(linked)
    pos = np.clip(np.searchsorted(linked, crow), 0, len(linked) - 1)
    hit = (crow >= 0) & (linked[pos] == crow)
    out[hit] = best[pos[hit]]
    return out


class _CommOpIndex:
    """The kept communication ops of a trace, per thread and sorted by start, for finding the op
    that encloses another (a short backward scan: collectives nest a few levels deep at most)."""

    SCAN = 8  # named collective ops nest a few deep; earlier siblings end before r starts

    def __init__(self, trace: KinetoTrace):
        self.trace, cpu, names = trace, trace.cpu, trace.names
        comm_names = [i for i, nm in enumerate(names) if is_comm_cpu_op(nm)]
        self.rows = np.sort(np.nonzero(np.isin(cpu["name"], comm_names))[0]) if comm_names else np.zeros(0, np.int64)
        self.named_names = [i for i in comm_names if comm_op_from_cpu_name(names[i])]
        named_rows = self.rows[np.isin(cpu["name"][self.rows], self.named_names)] if self.named_names else self.rows[:0]
        self.named = set(named_rows.tolist())
        # Per thread, the ops that name a collective, sorted by start (the only possible enclosers).
        self.threads: dict[tuple[int, int], tuple] = {}
        for key, part in per_thread(cpu, named_rows):
            starts = cpu["start_ns"][part]
            ends = starts + cpu["dur_ns"][part]
            self.threads[key] = (part.tolist(), starts, ends.tolist(), part, ends)
        self._info: dict[tuple[int, int], CommInfo | None] = {}

    def info(self, r: int) -> CommInfo | None:
        cpu = self.trace.cpu
        key = (int(cpu["name"][r]), int(cpu["args"][r]))
        if key not in self._info:
            self._info[key] = comm_from_op(self.trace.names[key[0]], self.trace.cpu_args_of(r))
        return self._info[key]

    def enclosing(self, r: int) -> int:
        """The innermost collective-naming op on r's thread that contains r (-1: none)."""
        cpu = self.trace.cpu
        entry = self.threads.get((int(cpu["pid"][r]), int(cpu["tid"][r])))
        if entry is None:
            return -1
        rows, starts, ends = entry[:3]
        t = cpu["start_ns"][r]
        end = int(t + cpu["dur_ns"][r])
        i = int(np.searchsorted(starts, t, side="right"))
        for j in range(i - 1, max(i - self.SCAN, -1), -1):
            if rows[j] != r and ends[j] >= end:
                return rows[j]
        return -1

    def best_many(self, rs: np.ndarray) -> np.ndarray:
        """``best`` of every row of ``rs``: vectorized for the usual case (the op names and sizes its
        collective, or the nearest named op before it on its thread encloses it and gives the size),
        op by op for the rest."""
        cpu = self.trace.cpu
        is_named = np.isin(cpu["name"][rs], self.named_names) if self.named_names else np.zeros(len(rs), bool)
        first = np.where(is_named, rs, self._nearest_enclosing(rs))
        sized = np.zeros(len(rs), dtype=bool)
        ok = first >= 0
        keys = np.stack([cpu["name"][first[ok]], cpu["args"][first[ok]]], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True) if len(keys) else (keys, np.zeros(0, np.int64))
        has = np.array([self._gives_size(n, a) for n, a in uniq.tolist()], dtype=bool)
        sized[ok] = has[inv.reshape(-1)] if len(has) else False
        out = first.copy()
        for k in np.nonzero(~sized)[0].tolist():  # no encloser found at once, or no size: the full search
            out[k] = self.best(int(rs[k]))
        return out

    def _gives_size(self, name_id: int, args_id: int) -> bool:
        info = comm_from_op(self.trace.names[name_id], self.trace.args[args_id] if args_id >= 0 else {})
        return info is not None and info.bytes > 0

    def _nearest_enclosing(self, rs: np.ndarray) -> np.ndarray:
        """Per row, the last named op that started before it on its thread, if it encloses it; -1
        otherwise (``best`` then searches further back)."""
        cpu = self.trace.cpu
        out = np.full(len(rs), -1, dtype=np.int64)
        for key, part in per_thread(cpu, rs):
            entry = self.threads.get(key)
            if entry is None:
                continue
            _, starts, _, rows, ends = entry
            t = cpu["start_ns"][part]
            j = np.searchsorted(starts, t, side="right") - 1
            jj = np.maximum(j, 0)
            hit = (j >= 0) & (rows[jj] != part) & (ends[jj] >= t + cpu["dur_ns"][part])
            pos = np.searchsorted(rs, part)  # rs is sorted (np.intersect1d)
            out[pos[hit]] = rows[jj[hit]]
        return out

    def best(self, r: int) -> int:
        """r if it names its collective, else its innermost named encloser; then the nearest of
        those outward (up to 3 levels) that also gives the size."""
        first = r if r in self.named else self.enclosing(r)
        c, depth = first, 0
        while c >= 0 and depth < 3:
            info = self.info(c)
            if info is not None and info.bytes > 0:
                return c
            c, depth = self.enclosing(c), depth + 1
        return first


def _identify(trace: KinetoTrace, kind: int, name_id: int, op: int, cargs: int, kargs: int, named_name: int,
              named_args: int, nbytes: int, src: int, dst: int) -> tuple[KernelClass, OpIdentity | None]:
    """The class of one distinct (activity, launching op, args) key, and the operation C3 analysis
    pairs it as (None: not a GEMM, collective or transfer)."""
    kname = trace.names[name_id]
    op_name = trace.names[op] if op >= 0 else ""
    kargs_d = trace.args[kargs] if kargs >= 0 else {}
    cargs_d = trace.args[cargs] if cargs >= 0 else {}
    named_comm = _named_comm_info(trace, named_name, named_args)
    if kind == GPU_MEMCPY:
        coll = cargs_d if is_comm_cpu_op(op_name) else {}
        comm = _copy_comm(kname, nbytes, src, dst, coll, named_comm)
        if comm is None:
            return KernelClass(TRANSFER, "memcpy (same device)"), None
        if comm.op != "transfer":
            return KernelClass(COLLECTIVE, "copy of a collective", by="op"), OpIdentity(COLLECTIVE, kname, comm=comm)
        return KernelClass(TRANSFER, f"memcpy {comm.direction}"), OpIdentity(TRANSFER, kname, comm=comm)
    collective_op = is_comm_cpu_op(op_name) or named_comm is not None or bool(kargs_d.get("Collective name"))
    kc = classify_kernel(kname, op_name, collective_op=collective_op)
    if kc.cls == COLLECTIVE:
        comm = (_with_size(comm_from_args(kargs_d), named_comm) or _with_size(comm_from_args(cargs_d), named_comm)
                or named_comm or _named_by_kernel(kname))
        return kc, OpIdentity(COLLECTIVE, kname, comm=comm)
    if kc.cls == GEMM and not kc.helper:
        shape = gemm_from_args(op_name, cargs_d) if op_name in GEMM_OPS else None
        return kc, OpIdentity(GEMM, kname, gemm=shape)
    return kc, None


def _named_by_kernel(kname: str) -> CommInfo:
    comm = comm_from_kernel_name(kname)
    if comm.op == "unknown" and re.search(r"multimem_all_reduce|all_reduce|allreduce", bounded(kname), re.I):
        return CommInfo(op="all_reduce", bytes=0)
    return comm


def _with_size(comm: CommInfo | None, named: CommInfo | None) -> CommInfo | None:
    """Metadata without a size takes the size the collective's own op gives (same operation)."""
    if comm is not None and comm.bytes <= 0 and named is not None and named.op == comm.op and named.bytes > 0:
        return CommInfo(op=comm.op, bytes=named.bytes, group_size=comm.group_size or named.group_size,
                        dtype=comm.dtype or named.dtype, process_group=comm.process_group, carrier=comm.carrier)
    return comm


def _named_comm_info(trace: KinetoTrace, name_id: int, args_id: int) -> CommInfo | None:
    if name_id < 0:
        return None
    return comm_from_op(trace.names[name_id], trace.args[args_id] if args_id >= 0 else {})


def _copy_comm(name: str, nbytes: int, src: int, dst: int, collective_args: dict,
               named: CommInfo | None = None) -> CommInfo | None:
    """A memcpy as communication, or None when it is local memory traffic."""
    m = _MEMCPY_NAME.match(name)
    direction = m.group(1) if m else "unknown"
    peer = direction == "PtoP" or (src >= 0 and dst >= 0 and src != dst)
    nbytes = max(nbytes, 0)
    carrier = "copy_engine" if peer or direction in ("HtoD", "DtoH") else "sm"
    comm = comm_from_args(collective_args, carrier=carrier) if collective_args else None
    if comm is None and named is not None:
        comm = CommInfo(op=named.op, bytes=named.bytes, group_size=named.group_size, dtype=named.dtype, carrier=carrier)
    if comm is not None:
        return comm
    if peer:
        return CommInfo(op="transfer", bytes=nbytes, carrier="copy_engine", direction="PtoP")
    if direction in ("HtoD", "DtoH"):
        return CommInfo(op="transfer", bytes=nbytes, carrier="copy_engine", direction=direction)
    return None
