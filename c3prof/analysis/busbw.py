"""Bandwidth math and table in nccl-tests' form (no torch, no CUDA).

nccl-tests' conventions (doc/PERFORMANCE.md of NVIDIA/nccl-tests), which c3prof follows:

* ``size`` is the collective's buffer size in bytes: for all_gather the gathered (output) buffer,
  for all_to_all and all_reduce the per-rank buffer. ``count`` is ``size / sizeof(type)``.
* algorithm bandwidth ``algbw = size / time``; GB/s means 1e9 bytes per second.
* bus bandwidth ``busbw = algbw * factor`` with factor ``(n-1)/n`` for all_gather, reduce_scatter
  and all_to_all, ``2(n-1)/n`` for all_reduce, 1 for a point-to-point transfer: the rate at which
  each rank's links move data, comparable with the hardware's link bandwidth whatever ``n`` is.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from c3prof.errors import C3profError

TYPE_BYTES = {"int8": 1, "uint8": 1, "bfloat16": 2, "half": 2, "float": 4, "int32": 4}


def busbw_factor(op: str, world_size: int) -> float:
    if world_size < 1:
        raise C3profError(f"world size must be positive, got {world_size}")
    n = world_size
    if op in ("all_gather", "all_to_all", "reduce_scatter"):
        return (n - 1) / n
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op == "transfer":
        return 1.0
    raise C3profError(f"no bus-bandwidth factor for operation {op!r}")


def algbw_gbs(size_bytes: int, time_us: float) -> float:
    """size / time in GB/s (1e9 B/s), as nccl-tests prints it."""
    if time_us <= 0:
        raise C3profError(f"time must be positive, got {time_us} us")
    return size_bytes / (time_us * 1e-6) / 1e9


def busbw_gbs(op: str, size_bytes: int, time_us: float, world_size: int) -> float:
    return algbw_gbs(size_bytes, time_us) * busbw_factor(op, world_size)


def size_sweep(min_bytes: int, max_bytes: int, factor: int = 2) -> list[int]:
    """nccl-tests' -b/-e/-f sweep: min, min*f, ... up to max (inclusive)."""
    if min_bytes <= 0 or max_bytes < min_bytes or factor < 2:
        raise C3profError(f"bad sweep: min {min_bytes}, max {max_bytes}, factor {factor}")
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


@dataclass
class BandwidthRow:
    """One line of the table: one implementation at one size (times are per-rank medians, then the
    slowest rank, as nccl-tests reports the maximum over ranks)."""

    impl: str
    op: str
    size: int
    count: int
    type: str
    redop: str
    root: int
    time_us: float
    algbw: float
    busbw: float
    wrong: int
    world_size: int
    params: dict

    def to_dict(self) -> dict:
        return asdict(self)


def make_row(impl: str, op: str, size: int, time_us: float, world_size: int, wrong: int,
             dtype: str = "uint8", params: dict | None = None) -> BandwidthRow:
    redop = "sum" if op == "all_reduce" else "none"
    return BandwidthRow(impl=impl, op=op, size=size, count=size // TYPE_BYTES[dtype], type=dtype, redop=redop,
                        root=-1, time_us=time_us, algbw=algbw_gbs(size, time_us),
                        busbw=busbw_gbs(op, size, time_us, world_size), wrong=wrong, world_size=world_size,
                        params=params or {})


HEADER = ("#       size         count      type   redop    root     time   algbw   busbw #wrong  impl\n"
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)")


def format_row(r: BandwidthRow) -> str:
    wrong = "N/A" if r.wrong < 0 else str(r.wrong)
    return (f"{r.size:>12d}  {r.count:>12d}  {r.type:>8s}  {r.redop:>6s}  {r.root:>6d}  {r.time_us:>7.1f}  "
            f"{r.algbw:>6.2f}  {r.busbw:>6.2f}  {wrong:>5s}  {r.impl}")


def format_table(rows: list[BandwidthRow], title: str = "") -> str:
    """nccl-tests' table, one block per operation, rows sorted by size then implementation."""
    out = []
    for op in sorted({r.op for r in rows}):
        block = sorted((r for r in rows if r.op == op), key=lambda r: (r.size, r.impl))
        n = block[0].world_size
        out.append(f"# {title + ': ' if title else ''}{op}, {n} ranks, busbw factor {busbw_factor(op, n):.4g}")
        out.append(HEADER)
        out.extend(format_row(r) for r in block)
    return "\n".join(out)


def speedup_summary(rows: list[BandwidthRow], reference: str = "nccl", big: int = 64 * 2**20,
                    lat_range: tuple[int, int] = (2**20, 16 * 2**20)) -> list[dict]:
    """The issue's targets, per operation and implementation, against ``reference``:
    busbw ratio at sizes >= ``big`` (target >= 1.3) and time ratio in ``lat_range`` (target <= 1.5).
    Each entry gives the worst (minimum busbw ratio, maximum time ratio) over the sizes present."""
    out = []
    ref = {(r.op, r.size): r for r in rows if r.impl == reference and r.wrong == 0}
    for op in sorted({r.op for r in rows}):
        for impl in sorted({r.impl for r in rows if r.op == op and r.impl != reference}):
            bw, lat = [], []
            for r in rows:
                if r.op != op or r.impl != impl or (op, r.size) not in ref:
                    continue
                base = ref[(op, r.size)]
                if r.size >= big and base.busbw > 0:
                    bw.append(r.busbw / base.busbw)
                if lat_range[0] <= r.size <= lat_range[1]:
                    lat.append(r.time_us / base.time_us)
            entry = {"op": op, "impl": impl, "reference": reference,
                     "min_busbw_ratio_ge_64MiB": min(bw) if bw else None,
                     "max_time_ratio_1_16MiB": max(lat) if lat else None,
                     "wrong": sum(max(r.wrong, 0) for r in rows if r.op == op and r.impl == impl)}
            entry["busbw_target_met"] = None if not bw else min(bw) >= 1.3
            entry["latency_target_met"] = None if not lat else max(lat) <= 1.5
            out.append(entry)
    return out


def dumps(rows: list[BandwidthRow], meta: dict) -> str:
    return json.dumps({"meta": meta, "rows": [r.to_dict() for r in rows],
                       "targets": speedup_summary(rows)}, indent=1, allow_nan=False,
                      default=lambda x: None if isinstance(x, float) and not math.isfinite(x) else str(x))
