"""Counters on a real GPU: an H2D copy is copy-engine traffic (no SM-sourced L2 sectors, SMs idle),
an SM copy kernel is not. Needs Nsight Compute (ncu) with permission to read counters."""


import pytest

from c3prof.cli import main
from c3prof.trace import read_trace

pytestmark = pytest.mark.gpu

FAST = ["--reps", "3", "--max-reps", "5", "--warmup", "1", "--quiet", "--no-evidence"]


@pytest.fixture(scope="module")
def counters_trace(tmp_path_factory):
    from c3prof.backends.cuda.ncu import ncu_path

    if ncu_path() is None:
        pytest.skip("Nsight Compute (ncu) not installed")
    out = tmp_path_factory.mktemp("counters") / "c.jsonl"
    # 8 MiB host->device beside the memory-bound GEMM: the same bytes over PCIe, carried by a 16-CTA
    # zero-copy SM kernel (base) or a copy engine (dma).
    rc = main(["capture", "--suite", "default", "--only", "mb64-h2d-8M", "--strategies", "base,dma",
               "--counters", "gpm,ncu,pmsampling", "--counter-reps", "3", "--out", str(out), *FAST])
    assert rc == 0
    return read_trace(out)


def _comm(trace, strategy, source):
    run = next(r for r in trace.runs.values() if r.strategy == strategy)
    return next(c for c in run.counters if c["phase"] == "comm" and c["source"] == source)


def test_ncu_sees_copy_engine_and_sm_traffic(counters_trace):
    sources = {s["source"]: s for s in counters_trace.counter_sources}
    if not sources.get("ncu", {}).get("available"):
        pytest.skip(f"ncu could not profile here: {sources.get('ncu', {}).get('reason')}")
    dma = _comm(counters_trace, "dma", "ncu")["metrics"]
    sm = _comm(counters_trace, "base", "ncu")["metrics"]
    # 3 repetitions of an 8 MiB host->device copy: every byte passes L2 once (32-byte sectors),
    # none of it from the SMs, and the SMs stay idle.
    sectors = 3 * 8 * 2**20 / 32
    assert 0.99 * sectors <= dma["lts__t_sectors"]["value"] <= 1.1 * sectors
    assert dma["lts__t_sectors_srcunit_tex"]["value"] <= 0.001 * dma["lts__t_sectors"]["value"]
    assert dma["sm__cycles_active_avg"]["value"] <= 0.001 * dma["sm__cycles_elapsed_avg"]["value"]
    # The zero-copy SM kernel: its device writes reach L2 from the SMs, and its 16 CTAs keep some SMs
    # busy (measured on H200: 3.7% of the average SM's cycles, against <= 0.1% for the copy engine).
    assert sm["lts__t_sectors_srcunit_tex"]["value"] >= 0.5 * sm["lts__t_sectors"]["value"]
    assert sm["sm__cycles_active_avg"]["value"] >= 0.02 * sm["sm__cycles_elapsed_avg"]["value"]


def test_gpm_sees_idle_sms_under_copy_engine_traffic(counters_trace):
    sources = {s["source"]: s for s in counters_trace.counter_sources}
    if not sources.get("nvml_gpm", {}).get("available"):
        pytest.skip(f"NVML GPM unavailable: {sources.get('nvml_gpm', {}).get('reason')}")
    assert _comm(counters_trace, "dma", "nvml_gpm")["metrics"]["sm_util"]["value"] < 5
    assert _comm(counters_trace, "base", "nvml_gpm")["metrics"]["sm_util"]["value"] > 5   # 16 CTAs of 132 SMs


def test_pm_sampling_series_show_where_l2_traffic_comes_from(counters_trace):
    sources = {s["source"]: s for s in counters_trace.counter_sources}
    if not sources.get("pm_sampling", {}).get("available"):
        pytest.skip(f"PM sampling unavailable: {sources.get('pm_sampling', {}).get('reason')}")
    dma = _comm(counters_trace, "dma", "pm_sampling")["series"]
    sm = _comm(counters_trace, "base", "pm_sampling")["series"]
    assert len(dma["t_ms"]) > 10 and len(sm["t_ms"]) > 10
    # Copy-engine traffic loads L2 but none of it comes from the SMs; the SM copy kernel's does (a
    # 16-CTA PCIe copy writes L2 at about 50 GB/s: 1-2% of its throughput, measured on H200).
    assert max(dma["l2_throughput_pct"]) > 1 and max(dma["l2_from_sm_throughput_pct"]) < 1
    assert max(sm["l2_from_sm_throughput_pct"]) > max(0.5, 10 * max(dma["l2_from_sm_throughput_pct"]))
