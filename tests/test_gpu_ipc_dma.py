"""c3prof's DMA collectives and multi-GPU capture on ONE GPU (mark `gpu`).

Two processes share GPU 0 (``--share-gpu``): the IPC handle exchange, the device-side flag protocol
(ordering across processes), every copy API, chunking, extra streams and byte-exact validation run
for real; only the copies are same-device (carried by SMs on H200, so no bandwidth claims here).
NCCL (SM and copy-engine variants) runs at world size 1. A deliberately corrupted byte must be caught.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
BENCH = str(ROOT / "benchmarks" / "bench_collectives.py")
SCEN = """format = 1
[[scenario]]
name = "ag-small"
gemm = { m = 1024, n = 1024, k = 1024, dtype = "bf16" }
comm = { op = "all_gather", bytes = "4MiB" }
[[scenario]]
name = "a2a-small"
gemm = { m = 1024, n = 1024, k = 1024, dtype = "bf16" }
comm = { op = "all_to_all", bytes = "2MiB" }
"""
SCEN_AR = SCEN + """[[scenario]]
name = "ar-small"
gemm = { m = 1024, n = 1024, k = 1024, dtype = "bf16" }
comm = { op = "all_reduce", bytes = "1MiB" }
"""
FAST = ["--reps", "3", "--max-reps", "5", "--warmup", "1", "--quiet", "--collective-timeout", "120"]


def torchrun(nproc, *args, cwd, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
           "NVSHMEM_DISABLE_NVLS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", *args]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    print(r.stdout[-6000:])
    print(r.stderr[-6000:], file=sys.stderr)
    return r


def test_stream_flags_order_work_across_streams():
    import torch

    from c3prof.backends.cuda import runtime as rt

    torch.cuda.init()
    flag = rt.DeviceBuffer(256)
    a, b = rt.Stream(), rt.Stream()
    rt.memset_async(flag.ptr, 0, 256, a)
    a.synchronize()
    done = rt.Event(timing=False)
    rt.stream_wait_value32(flag.ptr, 3, a)      # a blocks until the word reaches 3
    done.record(a)
    import time

    time.sleep(0.05)
    assert not done.query(), "a stream waiting on a flag must not pass it early"
    rt.stream_write_value32(flag.ptr, 2, b)
    b.synchronize()
    time.sleep(0.02)
    assert not done.query(), "2 < 3: still waiting"
    rt.stream_write_value32(flag.ptr, 5, b)     # >= 3 releases it (GEQ)
    done.synchronize()
    assert rt.device_by_pci_bus_id(rt.pci_bus_id(0)) == 0
    assert rt.pointer_info(flag.ptr) == {"type": "device", "device": 0}
    pool = rt.EventPool(2)
    pool.record(0, a)
    pool.synchronize(0)
    assert rt.event_pool_query(pool, 0)


def test_peer_copy_batch_same_device_byte_exact():
    import torch

    from c3prof.backends.cuda import runtime as rt

    src = torch.randint(0, 256, (1 << 20,), dtype=torch.uint8, device="cuda")
    dst = torch.zeros_like(src)
    n = src.numel() // 4
    b = rt.PeerCopyBatch([dst.data_ptr() + i * n for i in range(4)], [0] * 4,
                           [src.data_ptr() + i * n for i in range(4)], [0] * 4, [n] * 4)
    s = rt.Stream()
    b.enqueue(s)
    s.synchronize()
    assert torch.equal(src, dst) and b.total_bytes == src.numel()


def test_ipc_dma_collectives_two_processes_one_gpu(tmp_path):
    out = tmp_path / "ipc.json"
    r = torchrun(2, BENCH, "--share-gpu", "--impls", "dma_push,dma_pull", "--dma-api", "memcpy,batch,peer",
                 "--dma-chunks", "1,3", "--dma-streams", "1,2", "--sizes", "64K,1M,16M", "--iters", "5", "--runs", "2",
                 "--warmup", "2", "--corrupt-check", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    rows = doc["rows"]
    # (all_gather out-of-place and in-place, all_to_all out-of-place) x impls x (3 apis x 2 chunks x 2 streams) x sizes
    assert len(rows) == (2 + 1) * 2 * 12 * 3
    assert all(row["wrong"] == 0 for row in rows)
    checks = [v["corrupt_check"] for v in doc["meta"]["diagnostics"].values() if isinstance(v, dict) and "corrupt_check" in v]
    assert checks and all(c == [1, 1] for c in checks), checks
    peers = doc["meta"]["diagnostics"]["peers"]["dma_push"]
    assert peers[0][0]["same_device"] and peers[0][0]["mapped_dst"]["type"] == "device"


def test_capture_dma_collectives_two_processes_one_gpu(tmp_path):
    from c3prof.trace import read_trace

    (tmp_path / "s.toml").write_text(SCEN)
    args = ["-m", "c3prof", "capture", "--scenarios", "s.toml", "--strategies", "dma,dma+rp", "--rp-gemm-sms", "64",
            "--dma-collectives", "dma_push,dma_pull", "--share-gpu", "--out", "cap.jsonl", *FAST]
    r = torchrun(2, *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in range(2):
        t = read_trace(tmp_path / f"cap.rank{rank}.jsonl")
        assert t.header["rank"] == rank and t.header["world_size"] == 2 and t.finished and not t.errors
        assert len(t.runs) == 2 * (2 + 2) and all(run.complete for run in t.runs.values())
        for run in t.runs.values():
            assert [v["ok"] for v in run.validations] == [True] * 3, run.id
            assert run.params["world_size"] == 2 and run.params["rank"] == rank
        ev = {e["transport"]: e for e in t.engine_evidence}
        assert {"dma_push", "dma_pull"} <= set(ev)
    # A deliberately corrupted destination byte is caught on every rank.
    r = torchrun(2, *[a.replace("cap.jsonl", "bad.jsonl") for a in args[:-len(FAST)]], "--strategies", "dma",
                 "--no-evidence", "--inject-corruption", *FAST, cwd=tmp_path)
    assert r.returncode == 1, r.stderr[-3000:]
    for rank in range(2):
        bad = [v for run in read_trace(tmp_path / f"bad.rank{rank}.jsonl").runs.values() for v in run.validations
               if not v["ok"]]
        assert len(bad) == 4 and all(v["mismatched_bytes"] == 1 and v["phase"] == "concurrent" for v in bad)


def test_capture_nccl_world_size_one(tmp_path):
    from c3prof.trace import read_trace

    (tmp_path / "s.toml").write_text(SCEN_AR)
    r = torchrun(1, "-m", "c3prof", "capture", "--scenarios", "s.toml", "--strategies", "base,sp,rp,dma",
                 "--rp-gemm-sms", "64", "--rp-comm-ctas", "8", "--out", "w1.jsonl", *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    t = read_trace(tmp_path / "w1.rank0.jsonl")
    assert t.finished and not t.errors and t.header["world_size"] == 1
    assert {r.variant for r in t.runs.values() if r.strategy == "dma"} == {"nccl_ce", "dma_push", "dma_pull"}
    assert not [r for r in t.runs.values() if r.scenario["name"] == "ar-small" and r.strategy == "dma"]
    for run in t.runs.values():
        assert run.complete and all(v["ok"] for v in run.validations), run.id
    ctas = [r for r in t.runs.values() if r.variant == "ctas8"]
    assert ctas and all(r.params["max_ctas"] == 8 for r in ctas)


def test_bench_collectives_world_size_one(tmp_path):
    out = tmp_path / "w1.json"
    r = torchrun(1, BENCH, "--ops", "all_gather,all_to_all,all_reduce", "--nccl-max-ctas", "8",
                 "--sizes", "64K,4M", "--iters", "5", "--runs", "2", "--corrupt-check", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert {row["impl"] for row in rows} == {"nccl", "nccl[ctas8]", "nccl_ce", "dma_push", "dma_pull"}
    assert all(row["wrong"] == 0 for row in rows)
    assert "# SUMMARY" in r.stdout
