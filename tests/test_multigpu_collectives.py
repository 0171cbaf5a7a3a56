"""Collectives on >= 2 GPUs (mark `multigpu`; skips cleanly with fewer): every implementation
byte-exact at several sizes, copy-engine evidence, and a capture of LLaMA-derived scenarios."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]

ROOT = Path(__file__).resolve().parents[1]


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


def test_all_implementations_byte_exact_with_evidence(tmp_path):
    n = min(_ngpus(), 8)
    out = tmp_path / "mg.json"
    r = torchrun(n, str(ROOT / "benchmarks" / "bench_collectives.py"), "--sizes", "64K,1M,64M",
                 "--dma-api", "memcpy,batch", "--dma-chunks", "1,4", "--iters", "5", "--runs", "2",
                 "--corrupt-check", "--evidence", "--json", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["rows"] and all(row["wrong"] == 0 for row in doc["rows"])
    dma = [e for e in doc["meta"]["evidence"] if e["impl"].startswith("dma_")]
    # c3prof's DMA collectives must leave the SMs idle when they run alone.
    assert dma and all(rank["carrier"] in ("copy_engine", "unknown") for e in dma for rank in e["per_rank"])


def test_capture_llama_scenarios(tmp_path):
    from c3prof.trace import read_trace

    n = min(_ngpus(), 8)
    r = torchrun(n, "-m", "c3prof", "capture", "--suite", "llama70b", "--only", "llama70b-tp-ag,llama70b-tp-ag-decode",
                 "--strategies", "base,dma", "--out", "llama.jsonl", "--reps", "3", "--max-reps", "5", "--quiet",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in range(n):
        t = read_trace(tmp_path / f"llama.rank{rank}.jsonl")
        assert t.finished and all(run.complete for run in t.runs.values())
        assert all(v["ok"] for run in t.runs.values() for v in run.validations)
