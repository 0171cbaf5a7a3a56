"""rocprofv3 (ROCprofiler-SDK) for the HIP backend: its command line, its CSV output, and the
mapping of its counters onto c3prof's trace fields. Pure Python: tested on real rocprofv3 files
(tests/data/rocprof/README.md says where they come from).

``rocprofv3 --pmc C1 C2 ... -f csv -d DIR -o run -- CMD`` writes ``DIR/.../run_counter_collection.csv``:
one row per (kernel dispatch, counter) with ``Dispatch_Id``, ``Kernel_Name``, ``Counter_Name``,
``Counter_Value``, ``Start_Timestamp`` and ``End_Timestamp`` (ns). Dispatches are assigned to
c3prof's phase ranges by their start time (the worker records each range's window, see
counters.py).

Counters (names as rocprofv3 lists them for MI300X, gfx942; the set actually collected is what
``rocprofv3 --list-avail`` accepts at run time, see counters.py):

    TCC_HIT_sum, TCC_MISS_sum        L2 (TCC) hits and misses, summed over channels
    TCC_EA0_RDREQ_sum, _32B_sum      L2 -> memory read requests (64 B unless counted in _32B)
    TCC_EA0_WRREQ_sum, _64B_sum      L2 -> memory write requests (32 B unless counted in _64B)
    TCC_EA0_RDREQ_DRAM_sum           read requests that went to DRAM (HBM) rather than elsewhere
    GRBM_GUI_ACTIVE                  GPU busy cycles
    SQ_BUSY_CU_CYCLES                cycles (quad) with at least one busy CU, summed over CUs
    SQ_WAVES, SQ_WAVE_CYCLES         waves launched, and wave-cycles resident (occupancy)

The byte formulas are rocprof-compute's (its HBM read/write bandwidth metrics). MI300X's
Infinity Cache (MALL) sits behind the memory-side EA requests; rocprofv3 offers no per-dispatch
MALL hit counter on gfx942 that c3prof uses, so "dram" bytes here include MALL hits (docs/backends.md).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

COUNTERS = ["TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_WRREQ_sum",
            "TCC_EA0_WRREQ_64B_sum", "TCC_EA0_RDREQ_DRAM_sum", "GRBM_GUI_ACTIVE", "SQ_BUSY_CU_CYCLES", "SQ_WAVES",
            "SQ_WAVE_CYCLES"]
# The smallest useful set (L2 and memory traffic): tried when the full set is refused.
ESSENTIAL = ["TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"]
REQUIRED_COLUMNS = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")


@dataclass
class Dispatch:
    """One kernel dispatch and its counters."""

    dispatch_id: int
    kernel: str
    agent: str
    start_ns: int | None
    end_ns: int | None
    counters: dict[str, float] = field(default_factory=dict)


def parse_counter_collection(text: str, source: str = "counter_collection.csv") -> list[Dispatch]:
    """Dispatches (in order of first appearance) from the CSV text; ValueError naming ``source``
    if a required column is missing or a value is not a number."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{source}: not a rocprofv3 counter collection (missing columns {', '.join(missing)})")
    out: dict[int, Dispatch] = {}
    for line, row in enumerate(reader, start=2):
        try:
            did = int(row["Dispatch_Id"])
            value = float(row["Counter_Value"])
            start = int(row["Start_Timestamp"]) if row.get("Start_Timestamp") else None
            end = int(row["End_Timestamp"]) if row.get("End_Timestamp") else None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}:{line}: bad number ({exc})") from None
        d = out.setdefault(did, Dispatch(did, row["Kernel_Name"], row.get("Agent_Id", ""), start, end))
        # Some counters are reported per instance (several rows): their sum is the dispatch's value.
        d.counters[row["Counter_Name"]] = d.counters.get(row["Counter_Name"], 0.0) + value
    return list(out.values())


def find_outputs(directory: Path, suffix: str = "_counter_collection.csv") -> list[Path]:
    """rocprofv3 puts its files under DIR/<host>/<pid>/ (or DIR directly with -o): find them all."""
    return sorted(p for p in Path(directory).rglob(f"*{suffix}") if p.is_file())


def assign_to_windows(dispatches: list[Dispatch], windows: list[tuple[int, int]]) -> list[list[Dispatch]]:
    """Dispatches per window (start_ns, end_ns), by dispatch start time; a dispatch outside every
    window (warm-up, the unprofiled batch, setup) belongs to none."""
    out: list[list[Dispatch]] = [[] for _ in windows]
    for d in dispatches:
        if d.start_ns is None:
            continue
        for k, (lo, hi) in enumerate(windows):
            if lo <= d.start_ns <= hi:
                out[k].append(d)
                break
    return out


def totals(dispatches: list[Dispatch]) -> dict[str, float]:
    out: dict[str, float] = {}
    for d in dispatches:
        for name, value in d.counters.items():
            out[name] = out.get(name, 0.0) + value
    return out


def metrics(total: dict[str, float], n_dispatches: int) -> dict[str, dict]:
    """Trace metrics (name -> {value, unit}) from summed counters. Where the NVIDIA backend has the
    same quantity the name is the same (``dram__bytes_read``, ``dram__bytes_write``); the others
    keep rocprofv3's names."""
    out: dict[str, dict] = {name: {"value": value, "unit": "count"} for name, value in sorted(total.items())}
    out["dispatches"] = {"value": float(n_dispatches), "unit": "count"}
    rd, rd32 = total.get("TCC_EA0_RDREQ_sum"), total.get("TCC_EA0_RDREQ_32B_sum")
    if rd is not None and rd32 is not None:
        out["dram__bytes_read"] = {"value": 32.0 * rd32 + 64.0 * (rd - rd32), "unit": "byte"}
    wr, wr64 = total.get("TCC_EA0_WRREQ_sum"), total.get("TCC_EA0_WRREQ_64B_sum")
    if wr is not None and wr64 is not None:
        out["dram__bytes_write"] = {"value": 64.0 * wr64 + 32.0 * (wr - wr64), "unit": "byte"}
    hit, miss = total.get("TCC_HIT_sum"), total.get("TCC_MISS_sum")
    if hit is not None and miss is not None and hit + miss > 0:
        out["l2_hit_rate"] = {"value": hit / (hit + miss), "unit": "fraction"}
    return out


def rocprofv3_command(path: str, counters: list[str], out_dir: str, worker: list[str]) -> list[str]:
    """The command line that runs ``worker`` under rocprofv3 counter collection (CSV output)."""
    return [path, "--pmc", *counters, "--kernel-trace", "--output-format", "csv", "-d", out_dir, "-o", "run",
            "--", *worker]


def parse_memory_copy_trace(text: str, source: str = "memory_copy_trace.csv") -> list[dict]:
    """Copies recorded by ``rocprofv3 --memory-copy-trace``: direction and duration (ns) of each.
    These are the runtime's SDMA (or blit) copies; the engine evidence can use them."""
    reader = csv.DictReader(io.StringIO(text))
    need = ("Direction", "Start_Timestamp", "End_Timestamp")
    if any(c not in (reader.fieldnames or []) for c in need):
        raise ValueError(f"{source}: not a rocprofv3 memory copy trace (needs {', '.join(need)})")
    return [{"direction": r["Direction"].removeprefix("MEMORY_COPY_").lower(),
             "duration_ns": int(r["End_Timestamp"]) - int(r["Start_Timestamp"]),
             "start_ns": int(r["Start_Timestamp"])} for r in reader]
