"""The streaming Kineto reader: Cython scanner vs the json.load reference, chunking, gzip, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from c3prof.ingest import reader
from c3prof.ingest.classify import keep_cpu_op
from c3prof.ingest.errors import KinetoTraceError, ScannerMissingError
from c3prof.ingest.reader import read_kineto, read_kineto_reference

DATA = Path(__file__).parent / "data"
SYNTHETIC = sorted(DATA.glob("synthetic_kineto_*.json*"))
REAL = sorted(DATA.glob("h200_kineto_*.json*"))
ALL_TRACES = SYNTHETIC + REAL

# The compiled scanner must be built (pip install -e . or build_ext --inplace): missing is a failure, not a skip.
from c3prof.ingest import _kineto  # noqa: E402


def _columns_equal(a: dict, b: dict, names_a: list, names_b: list):
    """Tables equal, names compared as text (the scanner also interns names of events it drops)."""
    for table in ("gpu", "launch", "cpu"):
        ta, tb = a[table], b[table]
        assert ta.keys() == tb.keys()
        for k in ta:
            if k == "name":
                assert [names_a[i] for i in ta[k]] == [names_b[i] for i in tb[k]], f"{table}.name"
            elif k == "args":
                resolve_a = [json.loads(a["args"][i]) if i >= 0 else None for i in ta[k]]
                resolve_b = [json.loads(b["args"][i]) if i >= 0 else None for i in tb[k]]
                assert resolve_a == resolve_b, f"{table}.args"
            else:
                np.testing.assert_array_equal(ta[k], tb[k], err_msg=f"{table}.{k}")


def _same(a, b):
    def cols(t):
        return {"gpu": t.gpu, "launch": t.launch, "cpu": t.cpu, "args": [json.dumps(x).encode() for x in t.args]}

    _columns_equal(cols(a), cols(b), a.names, b.names)
    assert a.metadata == b.metadata


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: p.name)
def test_scanner_matches_json_load_reference(path):
    fast = read_kineto(path)
    ref = read_kineto_reference(path)
    assert not fast.truncated
    _same(fast, ref)
    assert fast.n_gpu > 0


def test_synthetic_fixture_contents():
    t = read_kineto(DATA / "synthetic_kineto_rank0.json")
    assert t.rank == 0 and t.world_size == 2
    assert t.metadata["c3prof_note"].startswith("SYNTHETIC")
    # Times are exact integer nanoseconds (Kineto: microseconds with three decimals).
    assert t.gpu["start_ns"].dtype == np.int64
    assert (t.gpu["start_ns"] % 1000 == 0).all()
    names = set(t.names)
    assert 'my_team_fused_kernel<"v2">' in names  # escaped quote in a name, unescaped
    assert "Memcpy HtoD (Pinned -> Device)" in names
    # Only GEMM and collective CPU ops and ProfilerSteps are kept (aten::copy_, aten::fill_ are not).
    kept = {t.names[i] for i in t.cpu["name"]}
    assert kept == {"aten::mm", "aten::linear", "aten::addmm", "aten::bmm", "c10d::allreduce_", "record_param_comms",
                    "ProfilerStep#3"}


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_any_chunking_gives_the_same_columns(chunk, monkeypatch):
    path = DATA / "synthetic_kineto_rank0.json"
    whole = read_kineto(path)
    monkeypatch.setattr(reader, "CHUNK_BYTES", chunk)
    _same(read_kineto(path), whole)


def test_gzip_equals_plain(tmp_path):
    plain = DATA / "synthetic_kineto_rank0.json"
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    _same(read_kineto(gz), read_kineto(plain))


def _scan(doc: bytes, step: int):
    s = _kineto.KinetoScanner(keep_cpu_op, 64)
    for i in range(0, len(doc), step):
        s.feed(doc[i:i + step])
    s.finish()
    return s


_event = st.fixed_dictionaries({
    "ph": st.sampled_from(["X", "i", "f"]),
    "cat": st.sampled_from(["kernel", "gpu_memcpy", "cpu_op", "cuda_runtime", "python_function", "ac2g"]),
    "name": st.one_of(st.sampled_from(["aten::mm", "nvjet_x", "Memcpy HtoD (Pinned -> Device)", "aten::add"]),
                      st.text(max_size=12)),
    "pid": st.integers(0, 2**31), "tid": st.integers(0, 2**31),
    "ts": st.integers(0, 2**52).map(lambda v: v / 1000),
    "dur": st.integers(0, 2**30).map(lambda v: v / 1000),
    "args": st.fixed_dictionaries({"External id": st.integers(0, 2**40), "correlation": st.integers(0, 2**40)},
                                  optional={"Input Dims": st.lists(st.lists(st.integers(1, 9), max_size=3), max_size=3),
                                            "junk": st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False,
                                                                 allow_infinity=False) | st.text(max_size=5),
                                                                 lambda c: st.lists(c, max_size=3) | st.dictionaries(
                                                                     st.text(max_size=4), c, max_size=3),
                                                                 max_leaves=6)}),
})


@settings(max_examples=150, deadline=None)
@given(events=st.lists(_event, max_size=8), step=st.integers(1, 50), indent=st.sampled_from([None, 1]))
def test_scanner_agrees_with_json_on_random_documents(events, step, indent):
    doc = {"schemaVersion": 1, "traceEvents": events, "distributedInfo": {"rank": 1}}
    raw = json.dumps(doc, indent=indent).encode()
    s = _scan(raw, step)
    assert not s.truncated and s.done
    from c3prof.ingest._kineto_py import read_columns

    ref = read_columns(json.loads(raw), keep_cpu_op)
    got = s.columns()
    _columns_equal(got, ref, got["names"], ref["names"])


@pytest.mark.parametrize("bad, where", [
    (b"[1, 2]", 1),  # the legacy array format, but its elements are not events
    (b'{"traceEvents": [{"ph": "X" "cat": "kernel"}]}', 28),
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "args": {"a": [1, 2}}]}', None),
    (b'{"traceEvents": [1]}', 17),
    (b'{"traceEvents": [{"ph": "X"}]} trailing', 31),
    (b'{"traceEvents": {}}', 16),
])
def test_invalid_json_names_the_byte(tmp_path, bad, where):
    p = tmp_path / "bad.json"
    p.write_bytes(bad)
    with pytest.raises(KinetoTraceError) as exc:
        read_kineto(p)
    msg = str(exc.value)
    assert "\n" not in msg and str(p) in msg
    if where is not None:
        assert f"byte {where}" in msg


def test_empty_and_not_kineto(tmp_path):
    for content, words in ((b"", "empty"), (b"   \n", "empty"), (b'{"schemaVersion": 1}', "no 'traceEvents'")):
        p = tmp_path / "x.json"
        p.write_bytes(content)
        with pytest.raises(KinetoTraceError, match=words):
            read_kineto(p)


def test_truncated_file_keeps_complete_events(tmp_path):
    raw = (DATA / "synthetic_kineto_rank0.json").read_bytes()
    full = read_kineto(DATA / "synthetic_kineto_rank0.json")
    p = tmp_path / "cut.json"
    p.write_bytes(raw[: len(raw) // 2])
    t = read_kineto(p)
    assert t.truncated
    assert any("truncated" in w for w in t.warnings)
    assert 0 < t.n_gpu < full.n_gpu
    # The kept events are a prefix of the full file's.
    np.testing.assert_array_equal(t.gpu["start_ns"], full.gpu["start_ns"][: t.n_gpu])


def test_truncated_gzip_keeps_what_decompressed(tmp_path):
    raw = gzip.compress((DATA / "synthetic_kineto_rank0.json").read_bytes())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(raw[: len(raw) * 2 // 3])
    t = read_kineto(p)
    assert t.truncated and t.n_gpu > 0
    assert any("gzip" in w for w in t.warnings)


def test_truncated_before_trace_events(tmp_path):
    p = tmp_path / "cut.json"
    p.write_bytes(b'{"schemaVersion": 1, "deviceProp')
    with pytest.raises(KinetoTraceError, match="before its 'traceEvents'"):
        read_kineto(p)


def test_missing_file():
    with pytest.raises(KinetoTraceError, match="cannot read"):
        read_kineto("/nonexistent/trace.json")


def test_missing_extension_is_reported_not_hidden(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "c3prof.ingest._kineto" or (name == "c3prof.ingest" and args and args[2] and "_kineto" in args[2]):
            raise ImportError("No module named 'c3prof.ingest._kineto'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ScannerMissingError, match="build_ext --inplace"):
        read_kineto(DATA / "synthetic_kineto_rank0.json")


def test_memory_is_bounded_by_kept_events_not_file_size(tmp_path):
    """Skipped events cost no memory: a file padded with 200k CPU-only events keeps nothing more."""
    pad = ",\n".join(json.dumps({"ph": "X", "cat": "python_function", "name": f"f{i % 50}", "pid": 1, "tid": 1,
                                 "ts": i, "dur": 1, "args": {"Python id": i}}) for i in range(200_000))
    base = (DATA / "synthetic_kineto_rank0.json").read_text()
    padded = base.replace('"traceEvents": [\n', '"traceEvents": [\n' + pad + ",\n", 1)
    p = tmp_path / "padded.json"
    p.write_text(padded)
    a, b = read_kineto(p), read_kineto(DATA / "synthetic_kineto_rank0.json")
    _same(a, b)
    assert a.events_seen == b.events_seen + 200_000
