"""The compiled reader chores (c3prof/_trace_read.pyx) give what their Python versions give.

``text_kind`` against trace._text_kind, and ``SampleColumns`` against trace_samples.SampleBatch, on
random and edge cases; then whole traces read with the compiled module and without it. The random
texts and sample dicts are SYNTHETIC; the traces are the committed ones.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from c3prof import trace
from c3prof.trace_samples import SampleBatch

# The extension must be built (scripts/setup.sh, pip install -e .): missing is a failure, not a skip.
from c3prof import _trace_read  # noqa: E402

DATA = Path(__file__).parent / "data"


def test_the_reader_uses_the_built_module():
    assert trace._trace_read is _trace_read
    assert isinstance(trace.new_sample_batch(), _trace_read.SampleColumns)


PIECES = [b'{"a":', b"[", b"{", b"]", b"}", b"1.5", b"0." + b"1" * 18, b"9" * 19, b"9" * 18, b"7" * 300, b"7" * 299,
          b"1e400", b"2E+300", b"3e-300", b"4e99", b"e12", b"E-1", b"e", b"E+", b"\\u0000", b"\\", b"u", b"\\n",
          b'"x"', b",", b"-12345678901234567890", b"+", b"0"]


@pytest.mark.parametrize("max_depth", [trace.MAX_DEPTH, 2])
def test_text_kind_is_the_python_scan(max_depth):
    rng = random.Random(max_depth)
    texts = [b"", b"\n", b"{}" * 9, b"[" * 16 + b"1", b"[" * 17, b"e000", b"e-00", b"x\\", b"1" * 19 + b"e-000"]
    texts += [b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30))) + b"\n" for _ in range(5000)]
    for raw in texts:
        assert _trace_read.text_kind(raw, max_depth) == trace._text_kind(raw, max_depth), raw
    for line in (DATA / "synthetic_small.jsonl").read_bytes().splitlines(keepends=True):
        assert _trace_read.text_kind(line, max_depth) == trace._text_kind(line, max_depth)


def _batches():
    args = (frozenset(trace.POSITIVE_SERIES), trace.MIN_DURATION_MS, trace.MAX_MS)
    return SampleBatch(*args), _trace_read.SampleColumns(*args)


VALUES = [1.0, 2, 0.5, 0.0, 0, -1.0, trace.MAX_MS, trace.MAX_MS * 2, trace.MIN_DURATION_MS, trace.MIN_DURATION_MS / 2,
          float("nan"), float("inf"), -float("inf"), True, False, None, "1", 10**30, 10**400, 2**63, -0.0, 1e-300]


def _random_samples(rng: random.Random) -> tuple[dict, int]:
    n = rng.randint(0, 4)
    names = rng.sample(trace.SERIES + ("nope_ms",), rng.randint(1, 3))
    samples = {}
    for name in names:
        if rng.random() < 0.05:
            samples[name] = tuple(1.0 for _ in range(n))            # not a list
        else:
            size = n if rng.random() < 0.95 else n + 1              # a list of the wrong length
            samples[name] = [rng.choice(VALUES) if rng.random() < 0.1 else rng.uniform(0.01, 5.0) for _ in range(size)]
    return samples, n


def _plain(samples: dict) -> dict:
    return {k: None if v is None else (v.dtype, v.flags.writeable, v.tolist()) if isinstance(v, np.ndarray) else v
            for k, v in samples.items()}


@pytest.mark.parametrize("seed", range(40))
def test_sample_columns_are_the_sample_batch(seed):
    """Every add() verdict, every dict after it, the check() verdict and the arrays it puts back."""
    rng = random.Random(seed)
    python, compiled = _batches()
    records = []
    for _ in range(rng.randint(1, 60)):
        samples, n = _random_samples(rng)
        mine = {k: list(v) if isinstance(v, list) else v for k, v in samples.items()}
        assert python.add(samples, n, trace.SERIES) == compiled.add(mine, n, trace.SERIES)
        assert samples == mine and list(samples) == list(mine)   # taken (None) or left alike, keys in order
        records.append((samples, mine))
    verdict = python.check()
    assert compiled.check() == verdict
    if verdict:
        for samples, mine in records:
            assert _plain(samples) == _plain(mine)


def test_sample_columns_check_types_and_ranges():
    _, batch = _batches()
    good = {"total_ms": [1.0, 2], "gemm_start_ms": [0, 0.5]}
    assert batch.add(good, 2, trace.SERIES) and good == {"total_ms": None, "gemm_start_ms": None}
    assert not batch.add({"total_ms": [1.0]}, 2, trace.SERIES)
    assert batch.check()
    assert good["total_ms"].tolist() == [1.0, 2.0] and good["gemm_start_ms"].tolist() == [0.0, 0.5]
    assert not good["total_ms"].flags.writeable and good["total_ms"].dtype == np.float64
    for bad in ([True, 1.0], [1.0, float("nan")], [1.0, 10**400], [0.0, 1.0], [1.0, "2"]):
        _, batch = _batches()
        assert batch.add({"total_ms": bad}, 2, trace.SERIES) and not batch.check(), bad
    _, batch = _batches()
    assert batch.add({"total_ms": [1.0, 2.0], "comm_start_ms": [0.0, -1.0]}, 2, trace.SERIES)
    assert not batch.check()   # a start offset below 0


@pytest.mark.parametrize("name", ["synthetic_small.jsonl", "h200_default_1.jsonl", "h200_default_proc2_t.jsonl"])
def test_traces_read_the_same_with_and_without_the_module(name, monkeypatch):
    path = DATA / name
    compiled = trace.read_trace(path)
    monkeypatch.setattr(trace, "_trace_read", None)
    python = trace.read_trace(path)
    assert list(compiled.runs) == list(python.runs)
    for rid, run in compiled.runs.items():
        other = python.runs[rid]
        assert list(run.phases) == list(other.phases)
        for key, phase in run.phases.items():
            assert _plain(phase.samples) == _plain(other.phases[key].samples)
            assert json.dumps(phase.stop) == json.dumps(other.phases[key].stop)
