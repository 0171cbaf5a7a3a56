import json

import pytest

from c3prof.errors import TraceError
from c3prof.trace import TraceWriter, read_trace, run_id

SCEN = {"name": "s1", "gemm": {"m": 1, "n": 1, "k": 1, "dtype": "bf16"}, "comm": {"op": "transfer", "bytes": 8}}


def phase(phase="gemm", total=(1.0, 2.0, 3.0), strategy="base", variant="default", **series):
    return {"record": "phase", "run": run_id("s1", strategy, variant), "scenario": SCEN, "strategy": strategy,
            "variant": variant, "params": {}, "phase": phase, "samples": {"total_ms": list(total), **series},
            "stop": {"reason": "noise"}}


def write(path, *records):
    w = TraceWriter(path, fsync=False)
    for r in records:
        w.write(r)
    w.close()


def test_round_trip(tmp_path):
    p = tmp_path / "t.jsonl"
    write(p, {"record": "machine", "gpu": {"name": "X"}, "versions": {}, "clocks_start": {}},
          phase("gemm"), phase("concurrent", gemm_ms=[1, 1, 1], comm_ms=[1, 1, 1]),
          {"record": "validation", "run": "s1/base/default", "transport": "t", "bytes_checked": 8,
           "mismatched_bytes": 0, "ok": True},
          {"record": "end", "status": "complete"})
    t = read_trace(p)
    run = t.runs["s1/base/default"]
    assert run.phases["gemm"].total_ms == [1.0, 2.0, 3.0]
    assert run.missing_phases == ["comm", "serial"] and not run.complete
    assert run.validations[0]["ok"] and t.finished and t.machine["gpu"]["name"] == "X"


def test_writer_refuses_to_overwrite(tmp_path):
    p = tmp_path / "t.jsonl"
    write(p)
    with pytest.raises(TraceError, match="already exists"):
        TraceWriter(p)


@pytest.mark.parametrize("bad,message", [
    (phase(total=(1.0, -2.0)), "must be positive"),
    (phase(total=(1.0, 0.0)), "must be positive"),
    (phase(total=()), "has no samples"),
    (phase(gemm_ms=[1.0]), "must be a list of 3"),
    (phase(phase="warmup"), "unknown phase"),
    ({"record": "mystery"}, "unknown record type"),
    ({**phase(), "run": "other/base/default"}, "does not match"),
    ({"record": "validation", "run": "s1/base/default", "transport": "t", "bytes_checked": 8,
      "mismatched_bytes": 3, "ok": True}, "disagrees"),
])
def test_writer_rejects_bad_records(tmp_path, bad, message):
    w = TraceWriter(tmp_path / "t.jsonl", fsync=False)
    with pytest.raises(TraceError, match=message):
        w.write(bad)


def _lines(p):
    return p.read_text().splitlines(keepends=True)


def test_reader_errors_name_file_and_line(tmp_path):
    p = tmp_path / "t.jsonl"
    write(p, phase())
    good = _lines(p)
    cases = {
        "truncated": (good[0] + good[1][:-10], "line 2: truncated"),
        "json": (good[0] + "{not json}\n", "line 2: not valid JSON"),
        "version": (good[0].replace('"version":1', '"version":99') + good[1], "version 99 is not supported"),
        "not a trace": ('{"hello": 1}\n', "not a c3prof trace"),
        "nonpositive": (good[0] + good[1].replace("[1.0,2.0,3.0]", "[1.0,0,3.0]"), "must be positive"),
        "empty": ("", "empty file"),
    }
    for name, (text, message) in cases.items():
        q = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        q.write_text(text)
        with pytest.raises(TraceError, match=message) as exc:
            read_trace(q)
        assert str(q) in str(exc.value), name


def test_a_complete_last_record_without_its_newline_is_read(tmp_path):
    """Only the newline missing (an editor, `head -c -1`): the record is complete and kept; a last
    line cut inside the record is still the trace's truncation; a one-line file that is not a trace
    says so rather than "truncated"."""
    p = tmp_path / "t.jsonl"
    write(p, phase("gemm"), phase("comm"))
    whole = read_trace(p)
    q = tmp_path / "no_newline.jsonl"
    q.write_text(p.read_text()[:-1])
    kept = read_trace(q)
    assert set(kept.runs["s1/base/default"].phases) == set(whole.runs["s1/base/default"].phases) == {"gemm", "comm"}
    torn = tmp_path / "torn.jsonl"
    torn.write_text(p.read_text()[:-20])
    with pytest.raises(TraceError, match="line 3: truncated .*remove that line"):
        read_trace(torn)
    kineto = tmp_path / "kineto.json"
    kineto.write_text('{"traceEvents": []}')
    with pytest.raises(TraceError, match="line 1: not a c3prof trace"):
        read_trace(kineto)


def test_missing_file():
    with pytest.raises(TraceError, match="cannot open"):
        read_trace("/nonexistent/trace.jsonl")


def test_resume_repairs_incomplete_tail(tmp_path):
    p = tmp_path / "t.jsonl"
    write(p, phase("gemm"))
    with open(p, "a") as f:
        f.write(json.dumps(phase("comm"))[:40])       # an interrupted write
    w = TraceWriter(p, resume=True, fsync=False)
    assert w.repaired_bytes == 40
    assert ("s1/base/default", "gemm") in w.existing.completed_phases()
    w.write(phase("comm"))
    w.close()
    assert set(read_trace(p).runs["s1/base/default"].phases) == {"gemm", "comm"}
