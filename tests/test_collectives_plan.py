"""GPU-free: nccl-tests bandwidth math and table, collective layouts and copy plans (simulated on the
host), collective planning per strategy, and the LLaMA suites' derivation from model dimensions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from c3prof.analysis.busbw import (algbw_gbs, busbw_factor, busbw_gbs, format_table, make_row, size_sweep,
                                      speedup_summary)
from c3prof.errors import C3profError
from c3prof.plan.collectives import collective_variants, parse_dma_collectives
from c3prof.plan.layout import Layout, expected_bytes, pattern_bytes, simulate, split_copy
from c3prof.plan.model import PlanOptions
from c3prof.plan.strategies import plan_runs
from c3prof.scenarios import load_suite, parse_scenarios

OPTS = PlanOptions(sm_count=132, greatest_priority=-5, distributed=True)


# -- bandwidth math (nccl-tests' doc/PERFORMANCE.md) ------------------------------------------------

def test_busbw_factors_match_nccl_tests():
    assert busbw_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert busbw_factor("all_to_all", 2) == pytest.approx(1 / 2)
    assert busbw_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert busbw_factor("all_gather", 1) == 0
    with pytest.raises(C3profError):
        busbw_factor("broadcast", 2)


def test_algbw_and_busbw_by_hand():
    # 256 MiB gathered in 1176 us on 2 ranks (a two-H200 NVLink measurement): algbw 228.3 GB/s, busbw half of it.
    size = 256 * 2**20
    assert algbw_gbs(size, 1176) == pytest.approx(size / 1176e-6 / 1e9)
    assert busbw_gbs("all_gather", size, 1176, 2) == pytest.approx(algbw_gbs(size, 1176) / 2)
    assert busbw_gbs("all_reduce", 2**30, 1000, 8) == pytest.approx(2**30 / 1e-3 / 1e9 * 1.75)


def test_size_sweep_and_table():
    assert size_sweep(64 * 1024, 2**30)[0] == 64 * 1024 and size_sweep(64 * 1024, 2**30)[-1] == 2**30
    assert len(size_sweep(64 * 1024, 2**30)) == 15
    rows = [make_row("nccl", "all_gather", 2**26, 361.0, 2, 0), make_row("dma_push", "all_gather", 2**26, 200.0, 2, 0),
            make_row("dma_pull", "all_gather", 2**26, 250.0, 2, 3)]
    text = format_table(rows, "H200")
    lines = text.splitlines()
    assert lines[0].startswith("# H200: all_gather, 2 ranks, busbw factor 0.5")
    assert "#wrong" in lines[1] and "(GB/s)" in lines[2]
    row = next(ln for ln in lines if ln.endswith("dma_pull"))
    assert row.split()[:5] == [str(2**26), str(2**26), "uint8", "none", "-1"] and row.split()[-2] == "3"
    assert rows[0].busbw == pytest.approx(2**26 / 361e-6 / 1e9 / 2)
    s = {e["impl"]: e for e in speedup_summary(rows)}
    assert s["dma_push"]["min_busbw_ratio_ge_64MiB"] == pytest.approx(361 / 200)
    assert s["dma_push"]["busbw_target_met"] is True and s["dma_pull"]["wrong"] == 3


# -- layouts and copy plans --------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["all_gather", "all_to_all"]), world=st.integers(1, 8), mode=st.sampled_from(["push", "pull"]),
       inplace=st.booleans(), chunks=st.integers(1, 5), words=st.integers(1, 9))
def test_every_copy_plan_produces_the_reference(op, world, mode, inplace, chunks, words):
    nbytes = 8 * world * words
    got = simulate(op, nbytes, world, mode, inplace, chunks, seed=11)
    for r in range(world):
        assert got[r] == expected_bytes(op, nbytes, world, r, inplace, seed=11)


def test_copy_plan_shapes():
    lay = Layout("all_gather", 8 * 2**20, 4, 1)
    push = lay.copies("push")
    # in place: 3 remote copies, none local, peers rotated (2, 3, 0), all issued by rank 1 from its own slot
    assert [c.dst_rank for c in push] == [2, 3, 0] and all(c.src_rank == 1 and c.src_buf == "dst" for c in push)
    assert all(c.dst_offset == 1 * 2**21 and c.length == 2**21 for c in push)
    pull = lay.copies("pull", chunks=4)
    assert len(pull) == 12 and all(c.dst_rank == 1 for c in pull)
    out = Layout("all_to_all", 8 * 2**20, 4, 1).copies("push")
    assert out[-1].local and out[-1].src_offset == out[-1].dst_offset == 2**21
    assert Layout("all_gather", 64, 2, 0, inplace=False).copies("pull")[-1].local
    pieces = split_copy(push[0], 3)
    assert sum(p.length for p in pieces) == push[0].length and all(p.length % 8 == 0 for p in pieces)


def test_layout_rejects_sizes_that_do_not_split():
    with pytest.raises(C3profError, match="multiple of 64 bytes"):
        Layout("all_gather", 1000, 8, 0)
    with pytest.raises(C3profError):
        Layout("all_gather", 64, 2, 2)


def test_patterns_are_rank_specific_and_offset_consistent():
    a = pattern_bytes(0, 0, 0, 4096)
    assert not np.array_equal(a, pattern_bytes(0, 1, 0, 4096))
    assert np.array_equal(a[1024:2048], pattern_bytes(0, 0, 1024, 1024))
    assert len(set(a.tolist())) > 200   # bytes well spread


# -- planning ------------------------------------------------------------------------------------------

def test_collective_variants_per_strategy():
    assert [v.transport for v in collective_variants("all_gather", "base", OPTS)] == ["nccl"]
    rp = collective_variants("all_gather", "rp", OPTS)
    assert [(v.name, v.gemm_sms, v.comm_ctas) for v in rp] == [("gemm104sm", 104, 28), ("gemm120sm", 120, 12),
                                                              ("ctas32", None, 32)]
    assert [v.transport for v in collective_variants("all_to_all", "dma", OPTS)] == ["nccl_ce", "dma_push", "dma_pull"]
    assert collective_variants("all_reduce", "dma", OPTS) == []
    assert len(collective_variants("all_gather", "dma+rp", OPTS)) == 6   # 3 implementations x 2 GEMM partitions
    assert parse_dma_collectives("dma_pull, nccl_ce") == ("dma_pull", "nccl_ce")
    with pytest.raises(C3profError, match="unknown DMA collective"):
        parse_dma_collectives("dma_fast")


def test_plan_runs_with_collectives():
    scen = load_suite("llama70b")
    with pytest.raises(C3profError, match="torchrun --nproc-per-node N"):
        plan_runs(scen, ("base", "dma"), PlanOptions(sm_count=132))
    plans = plan_runs(scen + load_suite("smoke"), ("dma", "base"), OPTS)
    ag = [p.id for p in plans if p.scenario.name == "llama70b-tp-ag"]
    assert ag == ["llama70b-tp-ag/base/default", "llama70b-tp-ag/dma/nccl_ce", "llama70b-tp-ag/dma/dma_push",
                  "llama70b-tp-ag/dma/dma_pull"]
    assert [p.id for p in plans if p.scenario.name == "llama70b-tp-ar"] == ["llama70b-tp-ar/base/default"]
    assert [p.variant.transport for p in plans if p.scenario.name == "smoke-cb2k-x-4M"] == ["sm_zc_h2d", "ce_h2d"]


# -- LLaMA suites: every size re-derived from the model dimensions ------------------------------------

MODELS = {"llama70b": (8192, 28672, 64, 8), "llama405b": (16384, 53248, 128, 8)}
T, W, B = 8192, 8, 2


@pytest.mark.parametrize("suite", sorted(MODELS))
def test_llama_suite_derivation(suite):
    h, f, heads, kv = MODELS[suite]
    s = {sc.name.removeprefix(suite + "-"): sc for sc in load_suite(suite)}
    kvd = kv * (h // heads)
    attn, mlp = (2 * h * h + 2 * h * kvd) * B, h * f * B
    fsdp_mlp = s.get("fsdp-ag-mlp") or s["fsdp-ag-mlp-half"]
    assert fsdp_mlp.comm.bytes == (mlp if mlp <= 2**30 else mlp // 2)
    assert (fsdp_mlp.gemm.m, fsdp_mlp.gemm.n, fsdp_mlp.gemm.k) == (T, f, h)
    fsdp_attn = s.get("fsdp-ag-attn") or s["fsdp-ag-wq"]
    assert fsdp_attn.comm.bytes == (attn if attn <= 2**30 else h * h * B)
    assert s["tp-ag"].comm.bytes == T * h * B and (s["tp-ag"].gemm.n, s["tp-ag"].gemm.k) == (f // W, h)
    assert s["tp-ar"].comm.op == "all_reduce" and s["tp-ar"].comm.bytes == T * h * B
    assert s["tp-ag-decode"].comm.bytes == 64 * h * B and s["tp-ag-decode"].gemm.m == 64
    assert s["tp-ag-decode-min"].comm.bytes == 64 * 1024
    assert s["ep-a2a"].comm.op == "all_to_all" and s["ep-a2a"].comm.bytes == T * 2 * h * B // 2
    for sc in s.values():
        assert 64 * 1024 <= sc.comm.bytes <= 2**30 and sc.comm.bytes % (8 * W) == 0
        Layout(sc.comm.op, sc.comm.bytes, W, 0)       # splits over 8 ranks


def test_scenario_file_with_collectives_round_trips():
    sc = parse_scenarios('[[scenario]]\nname = "x"\ngemm = { m = 8, n = 8, k = 8 }\n'
                         'comm = { op = "all_to_all", bytes = "1MiB" }\n', "t")
    assert sc[0].comm.op == "all_to_all"


def test_device_pattern_helpers_match_the_host_reference():
    """The torch fill/check of c3prof.backends.cuda.patterns, run on CPU tensors, computes the same
    bytes as the numpy reference and finds a flipped byte."""
    torch = pytest.importorskip("torch")
    from c3prof.backends.cuda.patterns import count_mismatches, fill_pattern

    buf = torch.empty(4096, dtype=torch.uint8)
    fill_pattern(torch, buf, seed=3, rank=1, offset=512)
    assert bytes(buf.numpy()) == bytes(pattern_bytes(3, 1, 512, 4096))
    assert count_mismatches(torch, buf, seed=3, rank=1, offset=512) == (0, None)
    buf[1000] ^= 0xFF
    assert count_mismatches(torch, buf, seed=3, rank=1, offset=512) == (1, 1000)
    fill_pattern(torch, buf, seed=3, rank=1, offset=512, invert=True)
    assert count_mismatches(torch, buf, seed=3, rank=1, offset=512) == (4096, 0)
