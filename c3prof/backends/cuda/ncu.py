"""Per-phase hardware counters through Nsight Compute's range replay.

Per-kernel profilers serialize kernels, which destroys the concurrency being studied. ncu's
``--replay-mode app-range`` (or ``range``) instead profiles everything between
cudaProfilerStart and cudaProfilerStop as one range, with concurrent kernels and copies left
concurrent (observed on the H200). The counter worker (c3prof/capture/counter_worker.py)
wraps each chosen phase in such a range; this module builds the ncu command, runs it and parses
its CSV into one metrics dict per range, in range order.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess

# Metric -> (name in the trace, unit). On GH100 there is no srcunit_ce counter: the non-SM
# (copy engine, host, peer) share of L2 traffic is total minus what came from the SMs (tex unit).
METRICS = {
    "lts__t_sectors.sum": ("lts__t_sectors", "sector"),
    "lts__t_sectors_srcunit_tex.sum": ("lts__t_sectors_srcunit_tex", "sector"),
    "lts__t_bytes.sum": ("lts__t_bytes", "byte"),
    "dram__bytes_read.sum": ("dram__bytes_read", "byte"),
    "dram__bytes_write.sum": ("dram__bytes_write", "byte"),
    "sm__cycles_active.avg": ("sm__cycles_active_avg", "cycle"),
    "sm__cycles_elapsed.avg": ("sm__cycles_elapsed_avg", "cycle"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("sm__warps_active_pct", "%"),
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": ("tensor_pipe_active_pct", "%"),
    "pcie__read_bytes.sum": ("pcie__read_bytes", "byte"),
    "pcie__write_bytes.sum": ("pcie__write_bytes", "byte"),
    "nvlrx__bytes.sum": ("nvlink_rx_bytes", "byte"),
    "nvltx__bytes.sum": ("nvlink_tx_bytes", "byte"),
    "gpu__time_duration.sum": ("gpu__time_duration", "ns"),
    # L2 hit rate of the SMs' loads (during a copy-engine transfer the SM-issued loads are the
    # GEMM's): does copy-engine traffic evict the GEMM's reused operands?
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum": ("l2_sm_read_hit_sectors", "sector"),
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum": ("l2_sm_read_miss_sectors", "sector"),
    # Writes arriving at L2 from every source (copy engine, host, SMs).
    "lts__t_sectors_op_write.sum": ("l2_write_sectors", "sector"),
}
# The smallest set the falsification experiments need; used when the full set is refused.
ESSENTIAL = ["lts__t_sectors.sum", "lts__t_sectors_srcunit_tex.sum", "dram__bytes_read.sum",
             "dram__bytes_write.sum", "sm__cycles_active.avg", "sm__cycles_elapsed.avg"]


def ncu_path() -> str | None:
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.path.exists(p)), None)


def ncu_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    return next((ln.strip() for ln in out.splitlines() if "Version" in ln), out.strip()[:80])


def chip_name(cc_major: int, cc_minor: int) -> str | None:
    """ncu's chip name for --query-metrics (only the chips c3prof has run on are listed)."""
    return {(9, 0): "gh100", (8, 0): "ga100", (10, 0): "gb100"}.get((cc_major, cc_minor))


def available_metrics(path: str, chip: str) -> set[str] | None:
    """Base names of the metrics ncu offers on ``chip`` (None when the query fails).

    The query lists base names (``lts__t_sectors``); roll-ups such as ``.sum`` are implied.
    """
    try:
        out = subprocess.run([path, "--query-metrics", "--chip", chip, "--csv"], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = {row[0].strip() for row in csv.reader(io.StringIO(out)) if row and "__" in row[0]}
    return names or None


def choose_metrics(available: set[str] | None) -> tuple[list[str], list[str]]:
    """(metrics to collect, metrics of METRICS this chip does not offer)."""
    if available is None:
        return list(METRICS), []
    chosen = [m for m in METRICS if m.split(".")[0] in available]
    return chosen, [m for m in METRICS if m not in chosen]


def ncu_command(path: str, ncu_args: list[str], log_file: str, replay: str, worker_args: list[str]) -> list[str]:
    """ncu profiling ``worker_args`` with ranges replayed in ``replay`` mode; ``ncu_args`` choose what
    to collect (["--metrics", "a,b"] or ["--section", "PmSampling", ...])."""
    return [path, "--replay-mode", replay, "--clock-control", "none", *ncu_args,
            "--csv", "--page", "raw", "--log-file", log_file, "--target-processes", "all", *worker_args]


def _number(text: str):
    # Instanced metrics print as "aggregate (v1; v2; ...)": the aggregate comes first.
    t = text.split("(")[0].strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _table(text: str) -> tuple[list[str], list[str] | None, list[list[str]]]:
    """ncu --csv --page raw output -> (header, units row or None, one row per range).

    The CSV has a header row (starting with "ID"), usually a units row, then one row per range;
    ncu's own log lines (starting with ==PROF== or ==WARNING==) are skipped.
    """
    rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("==")]
    head = next((i for i, r in enumerate(rows) if r[0] == "ID"), None)
    if head is None:
        return [], None, []
    units = rows[head + 1] if head + 1 < len(rows) and rows[head + 1][0] == "" else None
    return rows[head], units, rows[head + 1 + (1 if units else 0):]


def parse_csv(text: str) -> list[dict[str, dict]]:
    """ncu --csv --page raw output -> [{trace_metric: {"value", "unit"}}] per range, in order."""
    header, units, data = _table(text)
    out = []
    for r in data:
        rec = {}
        for col, value in zip(header, r):
            if col in METRICS:
                name, unit = METRICS[col]
                rec[name] = {"value": _number(value), "unit": (units[header.index(col)] if units else unit) or unit}
        out.append(rec)
    return out


# PM-sampling series kept in the trace (ncu's PmSampling section names them "<unit>.TriageCompute.<metric>").
PM_SERIES = {
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_throughput_pct",
    "lts__t_sector_throughput_srcunit_tex.avg.pct_of_peak_sustained_elapsed": "l2_from_sm_throughput_pct",
    "dramc__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed": "dram_read_throughput_pct",
    "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed": "dram_write_throughput_pct",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed": "tensor_pipe_active_pct",
    "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed": "sm_inst_executed_pct",
}


def _instances(cell: str) -> list[float]:
    if "(" not in cell:
        return []
    inside = cell[cell.index("(") + 1:cell.rindex(")")]
    out = []
    for v in inside.split(";"):
        x = _number(v)
        out.append(0.0 if x is None else x)
    return out


def parse_pm_series(text: str) -> list[dict]:
    """ncu --section PmSampling --print-metric-instances values --csv --page raw output ->
    [{"interval_us": float, "series": {"t_ms": [...], name: [...]}}] per range, in order.

    Samples after the last one where any kept metric is non-zero are dropped (the sampler's
    buffer outlives the range).
    """
    header, _, data = _table(text)
    cols = {}
    for i, name in enumerate(header):
        base = name.split(".TriageCompute.")[-1]
        if base in PM_SERIES:
            cols[PM_SERIES[base]] = i
    interval_col = header.index("profiler__pmsampler_interval_time") if "profiler__pmsampler_interval_time" in header else None
    out = []
    for r in data:
        interval_ns = _number(r[interval_col]) if interval_col is not None else None
        series = {name: _instances(r[i]) for name, i in cols.items()}
        n = max((len(v) for v in series.values()), default=0)
        last = max((max((k for k, x in enumerate(v) if x), default=-1) for v in series.values()), default=-1)
        keep = min(n, last + 2)
        series = {name: v[:keep] for name, v in series.items()}
        if interval_ns:
            series = {"t_ms": [round(k * interval_ns / 1e6, 6) for k in range(keep)], **series}
        out.append({"interval_us": interval_ns / 1e3 if interval_ns else None, "series": series})
    return out


def inaccessible_metrics(log: str) -> set[str]:
    """Base names ncu refused ("Unable to access the following N metrics: a.sum, b.avg, ...")."""
    marker = "Unable to access the following"
    for line in log.splitlines():
        if marker in line and ":" in line.split(marker, 1)[1]:
            names = line.split(marker, 1)[1].split(":", 1)[1]
            return {n.strip().rstrip(".").split(".")[0] for n in names.split(",") if n.strip()}
    return set()


def derived(metrics: dict) -> dict:
    """Quantities the report uses: L2 traffic by source, SM activity, DRAM bytes."""
    v = {k: m["value"] for k, m in metrics.items() if m.get("value") is not None}
    out = {}
    if "lts__t_sectors" in v and "lts__t_sectors_srcunit_tex" in v and v["lts__t_sectors"] > 0:
        out["l2_sectors_non_sm"] = v["lts__t_sectors"] - v["lts__t_sectors_srcunit_tex"]
        out["l2_non_sm_share"] = out["l2_sectors_non_sm"] / v["lts__t_sectors"]
    if "sm__cycles_active_avg" in v and v.get("sm__cycles_elapsed_avg"):
        out["sm_active_share"] = v["sm__cycles_active_avg"] / v["sm__cycles_elapsed_avg"]
    if "dram__bytes_read" in v and "dram__bytes_write" in v:
        out["dram_bytes"] = v["dram__bytes_read"] + v["dram__bytes_write"]
    looked_up = v.get("l2_sm_read_hit_sectors", 0) + v.get("l2_sm_read_miss_sectors", 0)
    if "l2_sm_read_hit_sectors" in v and looked_up > 0:
        out["l2_sm_read_hit_rate"] = v["l2_sm_read_hit_sectors"] / looked_up
    return out
