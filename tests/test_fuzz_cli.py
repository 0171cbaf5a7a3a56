"""Fuzz the CLI: >= 10,000 mutated traces, scenario files and Kineto traces per run, in-process.

Asserts, for every case: no traceback (the catch-all's exit status 1 counts as one), no hang (a
per-case time limit), no file written outside the named outputs, inputs unchanged (SHA-256).
Each test prints its counts. Seeds are fixed (C3PROF_FUZZ_SEED changes them, C3PROF_FUZZ_SCALE
multiplies the case counts for a longer local run), so CI is reproducible and a failure names
its case's seed.

Inputs are derived from committed SYNTHETIC fixtures (tests/data/synthetic_small.jsonl,
tests/data/synthetic_kineto_rank0.json) and the built-in smoke suite; nothing here is a measurement.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz_harness import Tally, mutate_json_doc, mutate_jsonl, mutate_toml, run_case

DATA = Path(__file__).parent / "data"
SEED = int(os.environ.get("C3PROF_FUZZ_SEED", "12"))
SCALE = float(os.environ.get("C3PROF_FUZZ_SCALE", "1"))
CASES = {"report": 4000, "ingest": 2000, "capture": 2800, "suites": 1200}  # 10,000 in all


def n_cases(command: str) -> int:
    return max(1, int(CASES[command] * SCALE))


# ---------------------------------------------------------------------------------------------
# Base inputs (small, so a valid case runs in milliseconds)
# ---------------------------------------------------------------------------------------------

KEEP_RUNS = ("cb4k-x-32M/base/default", "cb4k-x-32M/dma/ce_peer", "cb4k-x-32M/sp/gemm_first")


def base_trace() -> str:
    """The SYNTHETIC small trace cut to three runs of one scenario and 12 repetitions per phase."""
    out = []
    for line in (DATA / "synthetic_small.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "run" in rec and rec["run"] not in KEEP_RUNS:
            continue
        if rec["record"] == "phase":
            rec["samples"] = {k: v[:12] for k, v in rec["samples"].items()}
            if isinstance(rec.get("rounds"), list):
                rec["rounds"] = rec["rounds"][:12]
        out.append(json.dumps(rec, separators=(",", ":")))
    return "\n".join(out) + "\n"


def base_kineto() -> str:
    return (DATA / "synthetic_kineto_rank0.json").read_text()


def base_suite() -> str:
    """The built-in smoke suite, its first transfer given an explicit link and chunk (so both get fuzzed)."""
    text = (Path(__file__).parents[1] / "c3prof" / "suites" / "smoke.toml").read_text()
    return text.replace('comm = { op = "transfer", bytes = "4MiB" }',
                        'comm = { op = "transfer", link = "hbm", bytes = "4MiB", chunk = "1MiB" }', 1)


@pytest.fixture(scope="module")
def bases():
    return {"trace": base_trace(), "kineto": base_kineto(), "suite": base_suite()}


def _report(tally: Tally, report_to) -> None:
    report_to(tally.line())
    assert not tally.failures, f"{tally.line()}\n" + "\n".join(tally.failures[:20])


@pytest.fixture
def say(capsys):
    def _say(line: str) -> None:
        with capsys.disabled():
            print("\n" + line)
    return _say


def _case_dir(tmp_path: Path, i: int) -> Path:
    d = tmp_path / f"case{i}"
    d.mkdir()
    return d


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------

@pytest.mark.fuzz
def test_fuzz_report(tmp_path, bases, say):
    rng = random.Random(SEED)
    tally = Tally("report")
    for i in range(n_cases("report")):
        d = _case_dir(tmp_path, i)
        (d / "t.jsonl").write_bytes(mutate_jsonl(bases["trace"], rng))
        argv = ["report", "t.jsonl", "-q", "--resamples", "100", "--json", "r.json"]
        outputs = ["r.json"]
        if i % 8 == 0:
            argv += ["--csv", "csv", "--perfetto", "p.json"]
            outputs += ["csv", "p.json"]
        tally.add(run_case(d, argv, ["t.jsonl"], outputs), f"report seed {SEED} case {i}")
        shutil.rmtree(d)
    _report(tally, say)


# ---------------------------------------------------------------------------------------------
# ingest
# ---------------------------------------------------------------------------------------------

@pytest.mark.fuzz
def test_fuzz_ingest(tmp_path, bases, say):
    rng = random.Random(SEED + 1)
    tally = Tally("ingest")
    for i in range(n_cases("ingest")):
        d = _case_dir(tmp_path, i)
        (d / "k.json").write_bytes(mutate_json_doc(bases["kineto"], rng))
        argv = ["ingest", "k.json", "-o", "out", "-q", "--json", "i.json"]
        tally.add(run_case(d, argv, ["k.json"], ["out", "i.json"]), f"ingest seed {SEED} case {i}")
        shutil.rmtree(d)
    _report(tally, say)


# ---------------------------------------------------------------------------------------------
# capture (no GPU here: every case must end in a one-line validation error or "no usable GPU")
# ---------------------------------------------------------------------------------------------

@pytest.mark.fuzz
def test_fuzz_capture(tmp_path, bases, say):
    rng = random.Random(SEED + 2)
    tally = Tally("capture")
    for i in range(n_cases("capture")):
        d = _case_dir(tmp_path, i)
        if i % 2 == 0:  # a mutated scenario file
            (d / "s.toml").write_bytes(mutate_toml(bases["suite"], rng))
            outcome = run_case(d, ["capture", "--scenarios", "s.toml", "-o", "t.jsonl", "-q"], ["s.toml"], [])
        else:  # a mutated trace given to --resume: validated before the GPU, never changed here
            (d / "t.jsonl").write_bytes(mutate_jsonl(bases["trace"], rng))
            outcome = run_case(d, ["capture", "--suite", "smoke", "-o", "t.jsonl", "--resume", "-q"],
                               ["t.jsonl"], [])
        if outcome.kind == "ok":  # impossible without a GPU: a capture that "succeeded" is a bug
            outcome.kind = "traceback"
        tally.add(outcome, f"capture seed {SEED} case {i}")
        shutil.rmtree(d)
    _report(tally, say)


# ---------------------------------------------------------------------------------------------
# suites (a mutated suite file among the built-in ones)
# ---------------------------------------------------------------------------------------------

@pytest.mark.fuzz
def test_fuzz_suites(tmp_path, bases, say, monkeypatch):
    import c3prof.scenarios as scenarios

    rng = random.Random(SEED + 3)
    tally = Tally("suites")
    for i in range(n_cases("suites")):
        d = _case_dir(tmp_path, i)
        root = d / "suites"
        root.mkdir()
        (root / "smoke.toml").write_text(bases["suite"])
        (root / "mutant.toml").write_bytes(mutate_toml(bases["suite"], rng))
        monkeypatch.setattr(scenarios, "suites_root", lambda root=root: root)
        argv = ["suites"] if i % 2 == 0 else ["suites", "mutant"]
        tally.add(run_case(d, argv, ["suites/smoke.toml", "suites/mutant.toml"], []), f"suites seed {SEED} case {i}")
        shutil.rmtree(d)
    _report(tally, say)


# ---------------------------------------------------------------------------------------------
# A few cases through the real entry point (`python -m c3prof`, a fresh process)
# ---------------------------------------------------------------------------------------------

@pytest.mark.fuzz
def test_fuzz_subprocess(tmp_path, bases, say):
    """The in-process runner must not hide what a real process shows (exit code, stderr, atexit)."""
    rng = random.Random(SEED + 4)
    counts = {"ok": 0, "error": 0}
    for i in range(12):
        d = _case_dir(tmp_path, i)
        if i % 3 == 0:
            (d / "k.json").write_bytes(mutate_json_doc(bases["kineto"], rng))
            argv = ["ingest", "k.json", "-o", "out", "-q"]
        elif i % 3 == 1:
            (d / "t.jsonl").write_bytes(mutate_jsonl(bases["trace"], rng))
            argv = ["report", "t.jsonl", "-q", "--resamples", "100", "--json", "r.json"]
        else:
            (d / "s.toml").write_bytes(mutate_toml(bases["suite"], rng))
            argv = ["capture", "--scenarios", "s.toml", "-o", "t.jsonl", "-q"]
        proc = subprocess.run([sys.executable, "-m", "c3prof", *argv], cwd=d, capture_output=True, text=True,
                              timeout=120)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert "Traceback" not in proc.stderr, (i, proc.stderr)
        if proc.returncode == 0:
            counts["ok"] += 1
        else:
            assert proc.returncode == 2 and len(lines) == 1 and ": error: " in lines[0], (i, proc.returncode,
                                                                                         proc.stderr)
            counts["error"] += 1
    say(f"fuzz subprocess: 12 cases, {counts['error']} one-line errors, {counts['ok']} successes, 0 tracebacks")
