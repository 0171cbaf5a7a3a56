"""A trace read in two processes (trace_parts.py, report -j) is the trace read in one: the same runs,
phases, samples, records and line numbers in every error, on every committed trace (real H200
captures) and on copies of one with a bad line put in either half. A refused fork, a one-line file
and the choice of processes (size, -j, CPUs) are covered too."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from c3prof import forked, trace, trace_parts
from c3prof.errors import TraceError
from trace_helpers import trace_contents

if trace._trace_read is None or not forked.can_fork():
    pytest.skip("needs the compiled reader and the fork start method", allow_module_level=True)

DATA = Path(__file__).parent / "data"
SMOKE = DATA / "h200_smoke.jsonl"


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_committed_traces_read_in_two_processes_are_the_same(path):
    one, two = trace.read_trace(path), trace.read_trace(path, processes=2)
    assert trace_contents(two) == trace_contents(one)
    for run in two.runs.values():
        for phase in run.phases.values():
            assert all(not v.flags.writeable and v.dtype == np.float64 for v in phase.samples.values())


def _second_half_line(path: Path) -> int:
    """The index of the first line the child reads."""
    at = trace_parts.split_at(path)
    assert at is not None
    return path.read_bytes()[:at].count(b"\n")


def _error(path: Path, processes: int) -> str:
    with pytest.raises(TraceError) as info:
        trace.read_trace(path, processes=processes)
    return str(info.value)


def _changed(tmp_path: Path, change, in_second_half: bool) -> tuple[Path, int]:
    """A copy of the smoke trace with its first phase record of one half changed; and that line's number."""
    lines = SMOKE.read_bytes().splitlines(keepends=True)
    start = _second_half_line(SMOKE) if in_second_half else 0
    at = next(i for i in range(start, len(lines)) if json.loads(lines[i])["record"] == "phase")
    lines[at] = change(lines[at])
    out = tmp_path / "changed.jsonl"
    out.write_bytes(b"".join(lines))
    return out, at + 1


def _negative_sample(line: bytes) -> bytes:
    rec = json.loads(line)
    rec["samples"]["total_ms"][0] = -1.0
    return json.dumps(rec).encode() + b"\n"


CHANGES = {
    "not JSON": lambda line: b"{not json\n",
    "bad record": lambda line: b'{"record": "phase", "run": 3}\n',
    "negative sample": _negative_sample,
    "second header": lambda line: SMOKE.read_bytes().splitlines(keepends=True)[0],
}


@pytest.mark.parametrize("in_second_half", [False, True], ids=["first half", "second half"])
@pytest.mark.parametrize("name", list(CHANGES))
def test_a_bad_line_in_either_half_is_the_error_of_the_one_process_read(tmp_path, name, in_second_half):
    path, lineno = _changed(tmp_path, CHANGES[name], in_second_half)
    message = _error(path, 1)
    assert f"line {lineno}:" in message
    assert _error(path, 2) == message


def test_a_truncated_last_line_is_the_error_of_the_one_process_read(tmp_path):
    path = tmp_path / "torn.jsonl"
    path.write_bytes(SMOKE.read_bytes()[:-40])
    assert "truncated" in _error(path, 1) and _error(path, 2) == _error(path, 1)


def test_a_refused_fork_reads_both_halves_here_and_says_so(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked.ProcessPoolExecutor, "submit", refuse)
    assert trace_contents(trace.read_trace(SMOKE, processes=2)) == trace_contents(trace.read_trace(SMOKE))
    assert "could not start another process" in capsys.readouterr().err


def test_a_file_of_one_line_has_no_second_part(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_bytes(SMOKE.read_bytes().splitlines(keepends=True)[0])
    assert trace_parts.split_at(path) is None
    assert trace_contents(trace.read_trace(path, processes=2)) == trace_contents(trace.read_trace(path))
    at = trace_parts.split_at(SMOKE)
    assert SMOKE.read_bytes()[at - 1:at] == b"\n" and at > SMOKE.stat().st_size * trace_parts.FIRST_SHARE


def test_processes_for_a_trace(monkeypatch, tmp_path):
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    assert trace_parts.processes_for(SMOKE, -1) == 1                 # small: one process
    monkeypatch.setattr(trace_parts, "MIN_BYTES", SMOKE.stat().st_size)
    assert trace_parts.processes_for(SMOKE, -1) == 2 == trace_parts.processes_for(SMOKE, 4)
    assert trace_parts.processes_for(SMOKE, 1) == 1                  # report -j 1
    assert trace_parts.processes_for(tmp_path / "missing.jsonl", -1) == 1   # the reader names the problem
    monkeypatch.setattr(forked, "available_cpus", lambda: 1)
    assert trace_parts.processes_for(SMOKE, -1) == 1


def test_report_reading_in_two_processes_is_the_report_reading_in_one(monkeypatch, tmp_path):
    from c3prof.cli import main

    monkeypatch.setattr(trace_parts, "MIN_BYTES", 0)
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    calls = []
    real = trace.read_trace
    monkeypatch.setattr("c3prof.analysis.dataset.read_trace", lambda p, processes=1: calls.append(processes) or
                        real(p, processes=processes))
    outs = {}
    for jobs in ("1", "auto"):
        outs[jobs] = tmp_path / f"{jobs}.json"
        assert main(["report", str(SMOKE), "-q", "-j", jobs, "--json", str(outs[jobs])]) == 0
    assert calls == [1, 2]
    one, two = (json.loads(outs[j].read_text()) for j in ("1", "auto"))
    assert two == one


def test_sample_columns_adopt_refuses_columns_that_do_not_hold_the_series():
    columns = trace.new_sample_batch()
    with pytest.raises(ValueError, match="do not hold"):
        columns.adopt(False, [{"total_ms": None}], np.array([3]), np.zeros(2), np.zeros(0))
    with pytest.raises(ValueError, match="one repetition count"):
        columns.adopt(False, [{"total_ms": None}], np.array([3, 1]), np.zeros(3), np.zeros(0))
    # A part where a number broke the rule (its columns stop there): the whole read fails its check.
    columns.adopt(True, [{"total_ms": None}], np.array([3]), np.zeros(1), np.zeros(0))
    assert columns.check() is False
