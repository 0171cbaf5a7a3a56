"""`c3prof ingest` end to end: outputs, the replayable scenario file, and bad input (one line, exit 2)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from c3prof.cli import main
from c3prof.scenarios import COMM_OPS, load_scenario_file

DATA = Path(__file__).parent / "data"
RANK0 = DATA / "synthetic_kineto_rank0.json"
RANK1 = DATA / "synthetic_kineto_rank1.json.gz"
REAL = sorted(DATA.glob("h200_kineto_*.json*"))
import c3prof.ingest._kineto  # noqa: E402,F401  (built by pip install -e .; missing fails, not skips)

REPORT_FIELDS = {"scenario", "taxonomy", "carrier", "medians_ms", "ideal_speedup", "ideal_speedup_ci",
                 "realized_speedup", "realized_speedup_ci", "fraction_of_ideal", "fraction_ci", "gemm_slowdown",
                 "gemm_slowdown_ci", "comm_slowdown", "comm_slowdown_ci", "overlap_fraction", "ci_reasons", "sources",
                 "n_instances"}


def _run(*argv):
    return subprocess.run([sys.executable, "-m", "c3prof", *map(str, argv)], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)


def test_outputs(tmp_path):
    out = tmp_path / "out"
    rc = main(["ingest", str(RANK0), str(RANK1), "--out", str(out), "--json", str(tmp_path / "r.json"),
               "--figures", str(tmp_path / "fig"), "--figure-formats", "png,pdf"])
    assert rc == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc == json.loads((out / "ingest.json").read_text())
    assert doc["format"] == "c3prof-ingest" and doc["version"] == 2
    assert [i["rank"] for i in doc["inputs"]] == [0, 1]
    assert doc["results"] and all(REPORT_FIELDS <= set(r) for r in doc["results"])
    for ext in ("png", "pdf"):  # one summary figure (breakdown, time share, slowdowns, fraction)
        assert (tmp_path / "fig" / f"ingest_summary.{ext}").stat().st_size > 1000

    scenarios = load_scenario_file(out / "scenarios.toml")
    assert doc["scenario_file"] == str(out / "scenarios.toml")
    by_name = {s.name: s for s in scenarios}
    ar = by_name["4096x4096x4096-bf16--all_reduce-64MiB-x2"]
    assert (ar.gemm.m, ar.gemm.n, ar.gemm.k, ar.gemm.dtype) == (4096, 4096, 4096, "bf16")
    assert (ar.comm.op, ar.comm.bytes) == ("all_reduce", 64 << 20)
    assert all(s.comm.op in COMM_OPS for s in scenarios)
    # weights are shares of overlapped time; the mapped reduce_scatter merged into the same-size all_gather
    assert sum(s.weight for s in scenarios) == pytest.approx(1.0, abs=1e-5)
    ag = by_name["2048x8192x8192-bf16--all_gather-64MiB-x2"]
    assert "mapped-from:reduce_scatter" in ag.tags and "reduce_scatter replayed as all_gather" in ag.description
    assert {s.comm.op for s in scenarios} == {"all_reduce", "all_gather", "transfer"}


def test_terminal_table(tmp_path):
    """The compact table in 100 columns (names broken after their hyphens, the fraction of ideal as a
    percentage, as report prints it); --wide: every column, whole names."""
    p = _run("ingest", RANK0, "--out", tmp_path / "compact")
    assert p.returncode == 0, p.stderr
    assert max(map(len, p.stdout.splitlines())) <= 100
    assert "C3 regions by scenario" in p.stdout and "4096x4096x4096-  " in p.stdout and "bf16--all_reduce-  " in p.stdout
    assert "54% [" in p.stdout  # fraction of ideal of the planned all_reduce scenario, with its CI
    assert "mapped: reduce_scatter replayed as all_gather" in " ".join(p.stdout.split())   # notes wrap at 100
    wide = _run("ingest", RANK0, "--out", tmp_path / "wide", "--wide")
    assert wide.returncode == 0 and "4096x4096x4096-bf16--all_reduce-64MiB-x2" in wide.stdout
    assert "overlap ms" in wide.stdout and "54% [" in wide.stdout
    assert "wrote" in p.stdout and "Traceback" not in p.stderr


def _one_line_error(p):
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("c3prof ingest: error:"), p.stderr
    assert "Traceback" not in p.stderr
    return lines[0]


def test_invalid_json_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel",, }]}')
    msg = _one_line_error(_run("ingest", bad, "--out", tmp_path / "o"))
    assert "not valid Kineto JSON at byte" in msg


def test_missing_file_exit_2(tmp_path):
    assert "nope.json: cannot open trace file" in _one_line_error(_run("ingest", tmp_path / "nope.json", "--out", tmp_path))


def test_no_gpu_events_exit_2(tmp_path):
    doc = json.loads(RANK0.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    p = tmp_path / "cpu_only.json"
    p.write_text(json.dumps(doc))
    msg = _one_line_error(_run("ingest", p, "--out", tmp_path / "o"))
    assert "no GPU kernels or memcpys" in msg and "ProfilerActivity.CUDA" in msg


def test_truncated_file_partial_results_and_warning(tmp_path):
    raw = RANK0.read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(gzip.compress(raw[: int(len(raw) * 0.8)]))
    r = _run("ingest", p, "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "truncated" in r.stdout and "warning" in r.stdout
    doc = json.loads((tmp_path / "o" / "ingest.json").read_text())
    assert doc["inputs"][0]["truncated"] is True and doc["warnings"]
    assert doc["results"]  # what was read before the cut is analyzed


def test_unknown_kernels_only(tmp_path):
    ev = [{"ph": "X", "cat": "kernel", "name": f"mystery_kernel_{i % 3}", "pid": 0, "tid": 7, "ts": 10.0 * i,
           "dur": 5.0, "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(9)]
    p = tmp_path / "mystery.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    r = _run("ingest", p, "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())   # notes wrap at 100 columns
    assert "9 kernels of 3 names are other compute" in text
    assert "no GEMM ran concurrently with a communication operation" in text
    assert not (tmp_path / "o" / "scenarios.toml").exists()
    doc = json.loads((tmp_path / "o" / "ingest.json").read_text())
    assert doc["results"] == [] and doc["scenario_file"] is None


def test_cannot_create_output_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert "--out " in (msg := _one_line_error(_run("ingest", RANK0, "--out", blocker / "sub"))) and "cannot write it" in msg


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_h200_trace(tmp_path, path):
    """A trace recorded by tests/data/record_kineto_trace.py on an H200 (skipped until one is committed)."""
    rc = main(["ingest", str(path), "--out", str(tmp_path), "--quiet"])
    assert rc == 0
    doc = json.loads((tmp_path / "ingest.json").read_text())
    (inp,) = doc["inputs"]
    assert inp["n_gemm"] > 0 and not inp["truncated"]
    # The recorder overlaps bf16 GEMMs with pinned host<->device copies on a side stream.
    transfers = [r for r in doc["results"] if r["comm"]["op"] == "transfer"]
    assert transfers, "the recorder overlaps GEMMs with copy-engine transfers"
    assert all(r["gemm"] is not None and r["gemm"]["dtype"] == "bf16" for r in transfers)
    assert all(r["n_gemm_alone"] > 0 and r["n_comm_alone"] > 0 for r in transfers)
    if (tmp_path / "scenarios.toml").exists():
        assert load_scenario_file(tmp_path / "scenarios.toml")


def test_rerun_replaces_the_output_set_and_refuses_a_foreign_directory(tmp_path):
    """-o DIR is replaced as a whole (c3prof.outputs): a re-run that finds no scenario removes the
    previous run's scenarios.toml instead of leaving it beside the new ingest.json."""
    out = tmp_path / "out"
    assert main(["ingest", str(RANK0), "-o", str(out), "-q"]) == 0
    assert (out / "scenarios.toml").exists()
    ev = [{"ph": "X", "cat": "kernel", "name": "mystery_kernel", "pid": 0, "tid": 7, "ts": 10.0 * i, "dur": 5.0,
           "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(3)]
    (tmp_path / "mystery.json").write_text(json.dumps({"traceEvents": ev}))
    assert main(["ingest", str(tmp_path / "mystery.json"), "-o", str(out), "-q"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ingest.json"]
    (out / "notes.txt").write_text("mine")
    msg = _one_line_error(_run("ingest", RANK0, "-o", out))
    assert "would not write again" in msg and "notes.txt" in msg
    assert (out / "notes.txt").read_text() == "mine" and (out / "ingest.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_max_rows_cuts_the_scenario_table_and_counts_the_rest(tmp_path):
    """--max-rows as report takes it: the first N scenarios (the JSON's order), a line counting the rest;
    a value that is not a whole number from 1 is one line and exit 2."""
    p = _run("ingest", RANK0, RANK1, "--out", tmp_path / "o", "--json", tmp_path / "r.json", "--max-rows", "1")
    assert p.returncode == 0, p.stderr
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert len(results) > 1
    more = f"... {len(results) - 1} more scenarios not shown (--max-rows N shows more; --json has them all)"
    assert more in p.stdout
    table = p.stdout[p.stdout.index("C3 regions by scenario"):p.stdout.index(more)]
    rows = [line for line in table.splitlines() if "% [" in line]   # one fraction of ideal per scenario
    assert len(rows) == 1 and f"{100 * results[0]['time_share']:.1f}%" in rows[0]
    for value in ("0", "x", "100001"):
        line = _one_line_error(_run("ingest", RANK0, "--out", tmp_path / "bad", "--max-rows", value))
        assert "--max-rows" in line
