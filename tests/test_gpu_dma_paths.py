"""Every path of c3prof's DMA collectives with two processes on ONE GPU (mark `gpu`; skips without one).

Two ranks share GPU 0, so every copy is a same-device copy (no bandwidth claims): what is checked is
correctness and control flow. push, pull and auto (push/pull by size); the all_to_all local block
on its own stream, with the copy-engine hint, and inline; one stream and the automatic per-peer
schedule; the three ways of writing flags (memcpy, memop, one cuStreamBatchMemOp per exchange);
byte-exact validation of every row (and a deliberately flipped byte caught on every rank);
the latency breakdown (every part measured, the table printed, the copy-stage fit written);
--isolate-devices (on one GPU both ranks isolate to the same GPU: this checks that the option no
longer fails, not the invisible-peer mapping, which needs two GPUs); a dead rank and a slow rank
(the survivor fails with a message before its deadline, no hang).

This file is also the worker of the dead-rank and timeout tests:
``python tests/test_gpu_dma_paths.py worker dead|timeout`` (rank and rendezvous from the environment).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
BENCH = str(ROOT / "benchmarks" / "bench_collectives.py")
ENV = {"PYTHONPATH": str(ROOT), "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
       "NVSHMEM_DISABLE_NVLS": "1"}
BREAKDOWN_PARTS = {"host_enqueue_us", "ready_wait_us", "copies_us", "done_wait_us", "local_tail_us", "total_us"}


def torchrun(nproc, *args, cwd, timeout=600):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", *args]
    r = subprocess.run(cmd, cwd=cwd, env={**os.environ, **ENV}, capture_output=True, text=True, timeout=timeout)
    print(r.stdout[-6000:])
    print(r.stderr[-6000:], file=sys.stderr)
    return r


def test_every_dma_path_byte_exact_with_breakdown(tmp_path):
    out = tmp_path / "paths.json"
    r = torchrun(2, BENCH, "--share-gpu", "--impls", "dma_push,dma_pull,dma_auto", "--dma-local", "stream,ce_hint,inline",
                 "--dma-streams", "1,auto", "--sizes", "64K,8M", "--iters", "4", "--runs", "2", "--warmup", "2",
                 "--breakdown", "--breakdown-launches", "4", "--corrupt-check", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    rows = doc["rows"]
    # (all_gather in two placements + all_to_all) x 3 impls x 3 local modes x 2 stream choices x 2 sizes
    assert len(rows) == 3 * 3 * 3 * 2 * 2
    assert all(row["wrong"] == 0 for row in rows)
    checks = [v["corrupt_check"] for v in doc["meta"]["diagnostics"].values() if isinstance(v, dict) and "corrupt_check" in v]
    assert len(checks) == 3 * 3 * 2 and all(c == [1, 1] for c in checks), checks
    a2a = [row for row in rows if row["op"] == "all_to_all"]
    assert {row["params"]["local"] for row in a2a} == {"stream", "ce_hint", "inline"}
    assert all(row["params"]["local_bytes"] == row["size"] // 2 for row in a2a)
    auto = [row for row in rows if row["impl"].startswith("dma_auto")]
    assert {row["params"]["mode"] for row in auto} == {"push", "pull"}   # 64K push, 8M (4 MiB blocks) pull
    for row in rows:
        bd = row["params"]["breakdown"]
        assert set(bd["parts_us"]) == BREAKDOWN_PARTS and bd["parts_us"]["total_us"] > 0
        assert bd["parts_us"]["host_enqueue_us"] > 0 and len(bd["per_rank"]) == 2
        assert bd["enqueue_calls"]["flag_ops"] > 0
    assert "# latency breakdown: all_to_all" in r.stdout and "copy stage fit over 2 sizes" in r.stdout
    fits = doc["meta"]["copy_stage_fits"]
    assert fits and all((f["fit"] is None) == f["impl"].startswith("dma_auto") for f in fits)   # auto mixes modes


@pytest.mark.parametrize("flag_write", ["memop", "batch"])
def test_flag_writes_byte_exact(tmp_path, flag_write):
    """cuStreamWriteValue32 into the peer's flags, and every flag op of an exchange in one cuStreamBatchMemOp."""
    out = tmp_path / "flags.json"
    r = torchrun(2, BENCH, "--share-gpu", "--impls", "dma_push,dma_pull", "--flag-write", flag_write, "--sizes", "64K,4M",
                 "--iters", "20", "--runs", "2", "--breakdown", "--breakdown-launches", "4", "--corrupt-check",
                 "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 3 * 2 * 2 and all(row["wrong"] == 0 for row in rows)
    assert all(row["params"]["flag_write"] == flag_write for row in rows)
    exchanges = {"dma_push": 2, "dma_pull": 1}
    want = {"memop": 2, "batch": 2}[flag_write]   # world 2: one peer, so memop's 2(n-1) is 2 as well
    assert all(row["params"]["breakdown"]["enqueue_calls"]["flag_ops"] == exchanges[row["impl"]] * want for row in rows)


def test_isolate_devices_runs_on_one_gpu(tmp_path):
    out = tmp_path / "iso.json"
    r = torchrun(2, BENCH, "--share-gpu", "--isolate-devices", "--impls", "dma_push,dma_pull", "--sizes", "1M",
                 "--iters", "3", "--runs", "1", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["meta"]["visible_gpus"] == 1 and all(row["wrong"] == 0 for row in doc["rows"])


def test_capture_isolate_devices_with_breakdown_and_counters(tmp_path):
    # --no-evidence: on a shared GPU the evidence may read "sm" (same-device copies) and skip the
    # runs as not applicable; the evidence path is covered by test_multigpu_collectives.py[shared].
    from c3prof.trace import read_trace

    (tmp_path / "s.toml").write_text('format = 1\n[[scenario]]\nname = "a2a"\n'
                                     'gemm = { m = 1024, n = 1024, k = 1024, dtype = "bf16" }\n'
                                     'comm = { op = "all_to_all", bytes = "2MiB" }\n')
    r = torchrun(2, "-m", "c3prof", "capture", "--scenarios", "s.toml", "--strategies", "dma",
                 "--dma-collectives", "dma_push,dma_pull", "--share-gpu", "--isolate-devices", "--counters", "gpm",
                 "--counter-strategies", "dma", "--no-evidence", "--out", "cap.jsonl", "--reps", "3", "--max-reps", "5", "--warmup", "1",
                 "--quiet", "--collective-timeout", "120", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in range(2):
        t = read_trace(tmp_path / f"cap.rank{rank}.jsonl")
        assert t.finished and t.machine["distributed"]["isolated_devices"] is not None
        for run in t.runs.values():
            assert run.complete and all(v["ok"] for v in run.validations), run.id
            assert set(run.params["latency_breakdown"]["parts_us"]) == BREAKDOWN_PARTS
            assert run.params["local"] == "stream" and run.params["local_bytes"] == 2**20
            assert {c["source"] for c in run.counters} <= {"nvml_gpm"}


# ------------------------------------------------------------------------------------------------
# A dead rank and a slow rank: two plain processes (not torchrun, which would stop the survivor
# itself) that rendezvous over a TCP store.
# ------------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_ranks(mode: str, cwd: Path, timeout: float = 180.0):
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, **ENV, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, __file__, "worker", mode], cwd=cwd, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    t0 = time.monotonic()
    outs = [p.communicate(timeout=timeout)[0] for p in procs]
    for o in outs:
        print(o[-3000:])
    return [p.returncode for p in procs], outs, time.monotonic() - t0


def test_dead_rank_fails_the_survivor_with_a_message(tmp_path):
    codes, outs, wall = _two_ranks("dead", tmp_path)
    assert codes[1] == 7, codes
    # The survivor's device waits for a flag the dead rank never writes: its host wait hits the
    # deadline (3). If the driver instead reports the dead exporter's mapping as an error (6), that
    # is a message too; either way no hang.
    assert (codes[0] == 3 and "stuck or gone" in outs[0]) or (codes[0] == 6 and "CUDA_ERROR" in outs[0]), codes
    assert wall < 150


def test_slow_rank_times_out_and_both_stop(tmp_path):
    codes, outs, wall = _two_ranks("timeout", tmp_path)
    assert codes == [3, 4], codes
    assert "PEER_FAILED" in outs[0] and "did not finish within" in outs[0]
    assert "ABORT_SEEN" in outs[1]


def worker(mode: str) -> int:
    """One rank of the dead/timeout tests: an all_to_all of 1 MiB between two ranks on GPU 0."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from c3prof.backends.cuda import runtime as rt
    from c3prof.backends.cuda.dma_collective import DmaCollective
    from c3prof.backends.cuda.streams import make_stream
    from c3prof.capture.agreement import Control
    from c3prof.errors import PeerFailed
    from c3prof.plan.layout import Layout

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    store = dist.distributed_c10d._get_default_store()
    ctrl = Control(dist, dist.new_group(backend="gloo"), store, rank, 2, 60)
    torch.cuda.set_device(0)
    coll = DmaCollective(torch, ctrl, Layout("all_to_all", 2**20, 2, rank, False), 0, "pull")
    coll.exchange()
    stream = make_stream(torch, label="comm")
    if rank == 1 and mode == "dead":
        os._exit(7)                       # a crash: no message, no abort key
    if rank == 1:                         # slow: wakes after rank 0's deadline, must see the abort
        time.sleep(15)
        try:
            ctrl.check_abort(force=True)
        except PeerFailed:
            print("ABORT_SEEN", flush=True)
            store.set("test/rank1-exit", "1")
            os._exit(4)
        os._exit(5)
    done = rt.Event(timing=False)
    coll.launch(stream, 0)
    done.record(stream.dma)
    try:
        ctrl.wait_until(done.query, 5.0, "a DMA all_to_all")
    except rt.CudaError as exc:
        print(f"CUDA_ERROR: {exc}", flush=True)
        os._exit(6)
    except PeerFailed as exc:
        print(f"PEER_FAILED: {exc}", flush=True)
        ctrl.abort(f"rank 0: {exc}")
        if mode == "timeout":             # keep the store (hosted here) up until rank 1 has read the key
            store.wait(["test/rank1-exit"], timedelta(seconds=60))
        os._exit(3)
    os._exit(0)


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    sys.path.insert(0, str(ROOT))
    sys.exit(worker(sys.argv[2]))
