"""read_trace checks phase samples in one batch (c3prof/trace_samples.py): the same trace, the same arrays
and the same errors as the record-by-record checks (trace._read_records without a batch).

The edited traces are SYNTHETIC: tests/data/synthetic_small.jsonl with one or two phase lines changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from c3prof import trace, trace_samples
from c3prof.analysis.dataset import _phase_data
from c3prof.errors import TraceError
from c3prof.trace_samples import SampleBatch

DATA = Path(__file__).parent / "data"
SYNTHETIC = DATA / "synthetic_small.jsonl"


def _exact(path) -> trace.Trace:
    """The record-by-record read (every sample checked where it stands): the reference."""
    return trace._read_records(path, trace.iter_records(path), None)


def _plain(value):
    """A record or samples dict with every array as (dtype, writeable, list): comparable with ==."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.flags.writeable, value.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _phases(t: trace.Trace):
    return [(rid, key, _plain(p.samples), _plain(p.record), p.record["samples"] is p.samples)
            for rid, r in t.runs.items() for key, p in r.phases.items()]


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_committed_traces_read_the_same_with_arrays(path):
    got, want = trace.read_trace(path), _exact(path)
    assert _phases(got) == _phases(want) and got.header == want.header
    raw = {(rec["run"], trace.phase_key(rec["phase"], rec.get("visit"))): rec["samples"]
           for _, rec in trace.iter_records(path) if rec["record"] == "phase"}
    for run in got.runs.values():
        for key, phase in run.phases.items():
            assert list(phase.samples) == list(raw[run.id, key])   # same series, same order
            for name, values in raw[run.id, key].items():
                array = phase.samples[name]
                assert array.dtype == np.float64 and not array.flags.writeable
                assert np.array_equal(array, np.asarray(values, dtype=float))
            # The analysis takes them as they are.
            data = _phase_data(phase)
            assert all(data.series[k] is phase.samples[k] for k in phase.samples)


def _lines() -> list[str]:
    return SYNTHETIC.read_text().splitlines()


def _phase_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if json.loads(line).get("record") == "phase"]


def _edit(lines: list[str], index: int, change) -> None:
    rec = json.loads(lines[index])
    change(rec)
    lines[index] = json.dumps(rec)


def _set_sample(series: str, position: int, value):
    def change(rec):
        if series in rec["samples"]:
            rec["samples"][series][position] = value
        else:
            rec["samples"]["total_ms"][position] = value
    return change


BAD_SAMPLES = [
    ("total_ms", True), ("total_ms", "1.5"), ("total_ms", None), ("total_ms", -1.0), ("total_ms", 0.0),
    ("total_ms", 1e-9), ("total_ms", 2e8), ("total_ms", 10**19), ("total_ms", [1.0]), ("total_ms", {"a": 1}),
    ("gemm_start_ms", -0.5), ("gemm_start_ms", 1e9), ("gemm_start_ms", False),
]


@pytest.mark.parametrize("series,value", BAD_SAMPLES, ids=[f"{s}={v!r}" for s, v in BAD_SAMPLES])
def test_a_bad_sample_gives_the_record_by_record_error(tmp_path, series, value):
    lines = _lines()
    index = _phase_lines(lines)[-1]
    _edit(lines, index, _set_sample(series, 1, value))
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as exact:
        _exact(path)
    with pytest.raises(TraceError) as got:
        trace.read_trace(path)
    assert str(got.value) == str(exact.value) and f"line {index + 1}:" in str(got.value)


def test_the_first_bad_line_is_named_when_a_later_line_fails_its_structure(tmp_path):
    """A bad number (left to the batch) before a bad structure (checked on the spot): the first one."""
    lines = _lines()
    first, later = _phase_lines(lines)[1], _phase_lines(lines)[-1]
    _edit(lines, first, _set_sample("total_ms", 0, -3.0))
    _edit(lines, later, lambda rec: rec["samples"].update(bogus_ms=[1.0] * len(rec["samples"]["total_ms"])))
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as got:
        trace.read_trace(path)
    assert f"line {first + 1}:" in str(got.value) and str(got.value) == _error(path)


def _error(path) -> str:
    try:
        _exact(path)
    except TraceError as exc:
        return str(exc)
    raise AssertionError("the exact read accepted the trace")


def test_batch_takes_only_well_formed_samples_and_checks_the_ranges():
    batch = SampleBatch(frozenset(trace.POSITIVE_SERIES), trace.MIN_DURATION_MS, trace.MAX_MS)
    good = {"total_ms": [1.0, 2], "gemm_start_ms": [0, 0.5]}
    assert batch.add(good, 2, trace.SERIES) and good == {"total_ms": None, "gemm_start_ms": None}
    short, unknown = {"total_ms": [1.0]}, {"nope_ms": [1.0, 2.0]}
    assert not batch.add(short, 2, trace.SERIES) and short == {"total_ms": [1.0]}   # wrong length: not taken
    assert not batch.add(unknown, 2, trace.SERIES)                                   # unknown series: not taken
    assert batch.check()
    assert list(good) == ["total_ms", "gemm_start_ms"]
    assert good["total_ms"].tolist() == [1.0, 2.0] and good["gemm_start_ms"].tolist() == [0.0, 0.5]
    assert not good["total_ms"].flags.writeable
    nan = {"total_ms": [1.0, float("nan")]}
    batch.add(nan, 2, trace.SERIES)
    assert not batch.check()


@pytest.mark.parametrize("bad_at", [0, 3, 2 * trace_samples.CHUNK + 5, None])
def test_batch_checks_every_chunk(bad_at):
    """Values are converted a chunk at a time: a bad one in any chunk fails the batch, and the good
    batch's views hold every value in order across the chunk seams."""
    batch = SampleBatch(frozenset(trace.POSITIVE_SERIES), trace.MIN_DURATION_MS, trace.MAX_MS)
    n = 1000
    records = [{"total_ms": [float(i * n + j + 1) for j in range(n)], "comm_start_ms": [0.0] * n}
               for i in range(3 * trace_samples.CHUNK // n)]
    if bad_at is not None:
        records[bad_at // n]["total_ms"][bad_at % n] = -1.0
    assert all(batch.add(r, n, trace.SERIES) for r in records)
    assert batch.check() is (bad_at is None)
    if bad_at is None:
        assert all(r["total_ms"].tolist() == [float(i * n + j + 1) for j in range(n)] for i, r in enumerate(records))
        assert all(r["comm_start_ms"].tolist() == [0.0] * n for r in records)
