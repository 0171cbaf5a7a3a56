"""Counters on a real GPU: an H2D copy is copy-engine traffic (no SM-sourced L2 sectors, SMs idle),
an SM copy kernel is not. Needs Nsight Compute (ncu) with permission to read counters."""

import shutil

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
    rc = main(["capture", "--suite", "smoke", "--only", "smoke-mb-x-16M", "--strategies", "base,dma",
               "--counters", "gpm,ncu", "--counter-reps", "3", "--out", str(out), *FAST])
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
    # 3 repetitions of a 16 MiB host->device copy pass at least 3 * 16 MiB / 32 B sectors through L2.
    assert dma["lts__t_sectors"]["value"] >= 3 * 16 * 2**20 / 32
    assert dma["lts__t_sectors_srcunit_tex"]["value"] <= 0.01 * dma["lts__t_sectors"]["value"]
    assert sm["lts__t_sectors_srcunit_tex"]["value"] >= 0.9 * sm["lts__t_sectors"]["value"]
    assert _comm(counters_trace, "dma", "ncu")["derived"]["l2_non_sm_share"] > 0.99


def test_gpm_sees_idle_sms_under_copy_engine_traffic(counters_trace):
    sources = {s["source"]: s for s in counters_trace.counter_sources}
    if not sources.get("nvml_gpm", {}).get("available"):
        pytest.skip(f"NVML GPM unavailable: {sources.get('nvml_gpm', {}).get('reason')}")
    assert _comm(counters_trace, "dma", "nvml_gpm")["metrics"]["sm_util"]["value"] < 5
    assert _comm(counters_trace, "base", "nvml_gpm")["metrics"]["sm_util"]["value"] > 20
