"""End-to-end capture on a real GPU: the smoke suite under every single-GPU strategy."""

import pytest

from c3prof.cli import main
from c3prof.trace import read_trace

pytestmark = pytest.mark.gpu

FAST = ["--reps", "3", "--max-reps", "5", "--warmup", "1", "--quiet"]


def test_smoke_capture_all_strategies(tmp_path):
    out = tmp_path / "smoke.jsonl"
    rc = main(["capture", "--suite", "smoke", "--strategies", "base,sp,rp,dma,dma+rp", "--rp-gemm-sms", "64",
               "--out", str(out), *FAST])
    assert rc == 0
    t = read_trace(out)
    assert t.finished and not t.errors
    strategies = {r.strategy for r in t.runs.values()}
    assert strategies == {"base", "sp", "rp", "dma", "dma+rp"}
    assert all(r.complete for r in t.runs.values())
    for r in t.runs.values():
        assert [v["ok"] for v in r.validations] == [True, True, True], r.id
        assert all(v["batches_checked"] >= 1 for v in r.validations)
        conc = r.phases["concurrent"].samples
        for tot, g, c in zip(conc["total_ms"], conc["gemm_ms"], conc["comm_ms"]):
            assert tot >= max(g, c) - 1e-3
    rp = [r for r in t.runs.values() if r.strategy == "rp" and r.params.get("gemm_sms")]
    assert rp and all(r.params["gemm_sms"] >= 64 and r.params["comm_sms"] > 0 for r in rp)
    # The smoke suite's transfers cross PCIe host->device (the default link): base/sp/rp carry them
    # on SMs (zero copy), dma and dma+rp on a copy engine, and the evidence says so.
    carriers = {e["transport"]: e["carrier"] for e in t.engine_evidence}
    assert carriers == {"sm_zc_h2d": "sm", "ce_h2d": "copy_engine"}
    assert {r.params["link"] for r in t.runs.values()} == {"pcie_h2d"}
    ceilings = t.latest_ceilings
    assert ceilings["gemm_flops_per_s"]["bf16"]["value"] > 1e13
    assert ceilings["copy_bytes_per_s"]["d2d"]["value"] > 1e11


def test_corrupted_transfer_is_caught(tmp_path):
    out = tmp_path / "bad.jsonl"
    rc = main(["capture", "--suite", "smoke", "--only", "smoke-cb2k-x-4M", "--strategies", "base,dma",
               "--inject-corruption", "--no-evidence", "--out", str(out), *FAST])
    assert rc == 1
    t = read_trace(out)
    bad = [v for r in t.runs.values() for v in r.validations if not v["ok"]]
    assert len(bad) == 2 and all(v["mismatched_bytes"] == 1 and v["phase"] == "concurrent" for v in bad)
    assert all(v["first_mismatch_offset"] == v["bytes_per_check"] // 3 and v["injected_corruption"] for v in bad)


def test_resume_completes_an_interrupted_capture(tmp_path):
    out = tmp_path / "r.jsonl"
    assert main(["capture", "--suite", "smoke", "--only", "smoke-cb2k-x-4M", "--strategies", "base",
                 "--no-evidence", "--out", str(out), *FAST]) == 0
    # Cut the trace inside the last phase record, as a crash mid-write would.
    text = out.read_text().splitlines(keepends=True)
    keep = [ln for ln in text if '"record":"end"' not in ln]
    cut = max(i for i, ln in enumerate(keep) if '"phase":"concurrent"' in ln)
    out.write_text("".join(keep[:cut]) + keep[cut][:50])
    assert main(["capture", "--suite", "smoke", "--only", "smoke-cb2k-x-4M", "--strategies", "base",
                 "--no-evidence", "--out", str(out), "--resume", *FAST]) == 0
    t = read_trace(out)
    run = t.runs["smoke-cb2k-x-4M/base/default"]
    assert run.complete and t.finished


def test_scenario_too_big_for_the_gpu_is_refused_before_allocating(tmp_path):
    f = tmp_path / "huge.toml"
    f.write_text('[[scenario]]\nname = "huge"\ngemm = { m = 1024, n = 1024, k = 1024 }\n'
                 'comm = { op = "transfer", bytes = "400GiB" }\n')
    out = tmp_path / "t.jsonl"
    rc = main(["capture", "--scenarios", str(f), "--strategies", "base", "--out", str(out), *FAST])
    assert rc == 2 and not out.exists()
