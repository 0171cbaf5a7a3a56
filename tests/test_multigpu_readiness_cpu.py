"""GPU-free parts of the multi-GPU readiness work (issue 16): the DMA schedule (push/pull by size,
streams by world size, peers per stream), the isolated-devices environment, the latency-breakdown
table and fit, the collectives figures and the session script's argument checks.

Rows and breakdowns here are SYNTHETIC (made up in this file to exercise formatting and fitting);
nothing in them was measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# c3prof first, so that it stays the installed package once the repository root is put first on
# sys.path for `benchmarks` (as in tests/test_bench_collectives.py).
from c3prof.errors import C3profError, NoGPUError
from c3prof.plan.dma_schedule import PUSH_BELOW, assign_streams, auto_streams, choose_mode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


# -- schedule --------------------------------------------------------------------------------------

def test_auto_mode_pushes_small_blocks_and_pulls_large_ones():
    assert choose_mode("auto", "all_gather", 2 * 2**20, 2) == "push"          # 1 MiB blocks
    assert choose_mode("auto", "all_to_all", 2 * PUSH_BELOW, 2) == "pull"     # blocks of exactly PUSH_BELOW
    assert choose_mode("auto", "all_to_all", 8 * (PUSH_BELOW - 8), 8) == "push"
    assert choose_mode("pull", "all_gather", 64, 8) == "pull"                 # explicit modes are kept
    with pytest.raises(C3profError):
        choose_mode("sideways", "all_gather", 64, 8)


def test_auto_streams_by_world_size_and_size():
    assert auto_streams(1, 2**20) == 1 and auto_streams(2, 2**30) == 1        # one peer: one stream
    assert auto_streams(8, 8 * 2**20) == 4                                    # 1 MiB blocks: latency-bound
    assert auto_streams(4, 4 * 2**20) == 3
    assert auto_streams(8, 8 * 2**30) == 2                                    # 1 GiB blocks: bandwidth-bound


def test_peer_groups_keep_each_peers_chunks_on_one_stream():
    peers = [1, 1, 1, 2, 2, 2, 3, 3, 3]          # 3 peers x 3 chunks, in issue order
    plan = assign_streams(peers, 2)
    assert plan.rule == "peer groups"
    assert sorted(i for s in plan.per_stream for i in s) == list(range(9))
    for s in plan.per_stream:
        for p in {peers[i] for i in s}:
            assert all(i in s for i, q in enumerate(peers) if q == p)   # all of p's chunks on this stream
    assert [sorted({peers[i] for i in s}) for s in plan.per_stream] == [[1, 3], [2]]


def test_more_streams_than_peers_deals_copies_round_robin():
    plan = assign_streams([1, 1, 1, 1], 3)        # two GPUs, 4 chunks, 3 streams (the measured option)
    assert plan.rule == "round-robin copies" and plan.per_stream == ((0, 3), (1,), (2,))
    with pytest.raises(C3profError):
        assign_streams([1], 0)


# -- isolated devices --------------------------------------------------------------------------------

def test_isolated_devices_pick_each_ranks_gpu():
    from c3prof.backends.base import isolated_visible_devices as iso

    assert [iso(r, None, 2, False) for r in range(2)] == ["0", "1"]
    assert iso(1, "3, 5", 8, False) == "5"                      # entries of the launcher's own list
    assert iso(1, None, 1, True) == "0"                         # two ranks sharing the one GPU
    with pytest.raises(NoGPUError, match="only 1 GPU"):
        iso(1, None, 1, False)                                  # the old failure, now a clear one
    with pytest.raises(NoGPUError, match="empty"):
        iso(0, "", 4, False)
    with pytest.raises(NoGPUError, match="no GPU counted"):
        iso(0, None, 0, False)


def test_isolate_devices_sets_the_variable_before_any_device_query(monkeypatch):
    from c3prof.backends import isolate_devices
    from c3prof.backends.cuda import device

    monkeypatch.setattr(device, "node_gpu_count", lambda: 4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert isolate_devices("auto", 2, False) == "2"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2"
    with pytest.raises(C3profError, match="unknown backend"):
        isolate_devices("nope", 0, False)


# -- latency breakdown -------------------------------------------------------------------------------

def _synthetic_row(size: int, copies_us: float, host_us: float = 5.0):
    from c3prof.analysis.busbw import make_row

    parts = {"host_enqueue_us": host_us, "ready_wait_us": 4.0, "copies_us": copies_us, "done_wait_us": 0.0,
             "local_tail_us": 1.0, "total_us": 5.0 + copies_us}
    bd = {"parts_us": parts, "per_copy_us": copies_us, "enqueue_calls": {"copy_batches": 2, "copy_calls": 2,
                                                                        "flag_ops": 3, "event_ops": 2}}
    return make_row("dma_pull", "all_to_all", size, parts["total_us"], 2, 0,
                    params={"placement": "out-of-place", "remote_bytes": size // 2, "breakdown": bd})


def test_copy_stage_fit_recovers_startup_and_bandwidth():
    from c3prof.backends.cuda.dma_breakdown import fit_startup

    # copies_us = 7 + bytes / (100 GB/s): 100 GB/s is 1e5 bytes per us
    pts = [(b, 7.0 + b / 1e5) for b in (2**16, 2**20, 2**24)]
    f = fit_startup(pts)
    assert f["startup_us"] == pytest.approx(7.0, abs=1e-6) and f["copy_gbps"] == pytest.approx(100.0, rel=1e-6)
    assert fit_startup(pts[:1]) is None


def test_breakdown_table_names_the_dominant_part_and_the_fit():
    from benchmarks.breakdown_table import copy_stage_fits, dominant_part, format_breakdown, rank_max_parts
    from c3prof.backends.cuda.dma_breakdown import fit_startup

    rows = [_synthetic_row(2**20, 2.0), _synthetic_row(2**24, 60.0)]
    text = format_breakdown(rows, fit_startup)
    lines = text.splitlines()
    assert lines[0].startswith("# latency breakdown: all_to_all dma_pull out-of-place, 2 ranks")
    assert lines[3].split()[-1] == "ready_wait_us" and lines[4].split()[-1] == "copies_us"
    assert "copy stage fit over 2 sizes" in text
    assert copy_stage_fits(rows, fit_startup)[0]["fit"]["sizes"] == 2
    assert dominant_part({**rows[0].params["breakdown"]["parts_us"], "host_enqueue_us": 1e3}) == "host_enqueue_us"
    per_rank = [{"parts_us": {"a": 1.0, "b": 5.0}}, {"parts_us": {"a": 3.0, "b": 2.0}}]
    assert rank_max_parts(per_rank) == {"a": 3.0, "b": 5.0}
    assert "no latency breakdown" in format_breakdown([], fit_startup)
    # dma_auto pushes small sizes and pulls large ones: no single line is fitted through both.
    auto = [_synthetic_row(2**20, 2.0), _synthetic_row(2**24, 60.0)]
    auto[0].params["mode"], auto[1].params["mode"] = "push", "pull"
    assert "needs two or more sizes in one mode" in format_breakdown(auto, fit_startup)
    assert copy_stage_fits(auto, fit_startup)[0]["fit"] is None


def test_collectives_figures_from_a_synthetic_json(tmp_path):
    from benchmarks.plot_collectives import main

    rows = [_synthetic_row(s, c).to_dict() for s, c in ((2**20, 2.0), (2**24, 60.0))]
    src = tmp_path / "c.json"
    src.write_text(json.dumps({"meta": {"world_size": 2}, "rows": rows}))
    assert main([str(src), "--out", str(tmp_path / "fig")]) == 0
    assert {p.name for p in (tmp_path / "fig").iterdir()} == {"busbw_all_to_all.png", "breakdown_all_to_all.png"}
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main([str(bad), "--out", str(tmp_path / "fig2")]) == 2


def test_decision_carrier_prefers_the_agreed_one():
    from c3prof.capture.runner import decision_carrier

    assert decision_carrier({"carrier": "sm", "carrier_agreed": "unknown"}) == "unknown"
    assert decision_carrier({"carrier": "copy_engine"}) == "copy_engine"


# -- the session script --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--bogus"], ["--nproc", "two"], ["--nproc", "0"]])
def test_session_script_rejects_bad_arguments(args, tmp_path):
    r = subprocess.run(["bash", str(ROOT / "benchmarks" / "multigpu_session.sh"), *args, "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 2 and "multigpu_session.sh:" in r.stderr and not list(tmp_path.iterdir())
