"""Collectives byte-exact with engine evidence, and a capture of LLaMA-derived scenarios, in three forms:

* ``w1``: world size 1 on one GPU (mark `gpu`): every implementation, NCCL included;
* ``shared``: two processes on ONE GPU (mark `gpu`, ``--share-gpu``): c3prof's DMA collectives only
  (NCCL cannot run two ranks on one GPU), same-device copies;
* ``all``: one rank per GPU on every visible GPU, up to 8 (marks `gpu` and `multigpu`; skips with fewer than 2).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
FORMS = {
    "w1": {"nproc": lambda: 1, "bench": [], "capture": ["--strategies", "base,dma"]},
    "shared": {"nproc": lambda: 2, "bench": ["--share-gpu", "--impls", "dma_push,dma_pull"],
               "capture": ["--share-gpu", "--strategies", "dma", "--dma-collectives", "dma_push,dma_pull"]},
    "all": {"nproc": lambda: min(_ngpus(), 8), "bench": [], "capture": ["--strategies", "base,dma"]},
}
PARAMS = [pytest.param("w1"), pytest.param("shared"), pytest.param("all", marks=pytest.mark.multigpu)]


def _ngpus():
    import torch

    return torch.cuda.device_count()


def torchrun(nproc, *args, cwd, timeout=900):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
           "NVSHMEM_DISABLE_NVLS": "1"}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", *args],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    print(r.stdout[-8000:])
    print(r.stderr[-4000:], file=sys.stderr)
    return r


@pytest.mark.parametrize("form", PARAMS)
def test_all_implementations_byte_exact_with_evidence(tmp_path, form):
    f = FORMS[form]
    n = f["nproc"]()
    out = tmp_path / "mg.json"
    r = torchrun(n, str(ROOT / "benchmarks" / "bench_collectives.py"), *f["bench"], "--sizes", "64K,1M,64M",
                 "--dma-api", "memcpy,batch", "--dma-chunks", "1,4", "--iters", "5", "--runs", "2",
                 "--corrupt-check", "--evidence", "--breakdown", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["rows"] and all(row["wrong"] == 0 for row in doc["rows"])
    assert doc["meta"]["world_size"] == n
    dma = [e for e in doc["meta"]["evidence"] if e["impl"].startswith("dma_")]
    assert dma and all(len(e["per_rank"]) == n for e in dma)
    if form == "all":
        # Between GPUs c3prof's DMA collectives must leave the SMs idle when they run alone.
        assert all(rank["carrier"] in ("copy_engine", "unknown") for e in dma for rank in e["per_rank"])
    assert all("breakdown" in row["params"] for row in doc["rows"] if row["impl"].startswith("dma_"))


@pytest.mark.parametrize("form", PARAMS)
def test_capture_llama_scenarios(tmp_path, form):
    from c3prof.trace import read_trace

    f = FORMS[form]
    n = f["nproc"]()
    r = torchrun(n, "-m", "c3prof", "capture", "--suite", "llama70b", "--only",
                 "llama70b-tp-ag-decode,llama70b-ep-a2a", *f["capture"], "--out", "llama.jsonl",
                 "--reps", "3", "--max-reps", "5", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in range(n):
        t = read_trace(tmp_path / f"llama.rank{rank}.jsonl")
        assert t.finished and t.header["world_size"] == n
        assert t.engine_evidence and all(len(e["carrier_per_rank"]) == n for e in t.engine_evidence)
        for run in t.runs.values():
            if run.strategy.startswith("dma") and run.params.get("impl", "").startswith("dma_"):
                assert "latency_breakdown" in run.params, run.id
        assert all(v["ok"] for run in t.runs.values() for v in run.validations)
        # Every run either completed or was skipped on evidence, the same way on every rank.
        assert all(run.complete or run.errors for run in t.runs.values())
