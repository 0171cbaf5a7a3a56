"""Reading a trace gives the same records with orjson (the optional `fast` extra) as with the json module.

trace.parse_record hands lines to orjson when it is installed and every integer in the line fits in
64 bits; whatever orjson refuses goes to the json module. These tests compare the two paths on every
committed trace and on SYNTHETIC lines at the edges (huge integers, lone surrogates, NaN, overflowing
exponents, duplicate keys, bad bytes), for equal values and types and for equal error messages.
"""

from pathlib import Path

import pytest

from c3prof import trace
from c3prof.errors import TraceError

orjson = pytest.importorskip("orjson")  # without it there is only one path (the json module's)

DATA = Path(__file__).parent / "data"


def _typed(value):
    """The value with every element's type made explicit (1 == 1.0 == True in Python); recursive,
    so the edge lines nest less than the interpreter's recursion limit when they parse."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}, list(value)
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value).__name__, repr(value)


def _records(path, monkeypatch, fast: bool):
    monkeypatch.setattr(trace, "_orjson", orjson if fast else None)
    return [_typed(rec) for _, rec in trace.iter_records(path)]


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_committed_traces_read_the_same(path, monkeypatch):
    assert _records(path, monkeypatch, True) == _records(path, monkeypatch, False)


LINES = [
    b'{"a": 18446744073709551616, "b": -12345678901234567890, "c": 123456789012345678}',
    b'{"a": 1, "b": 2, "a": 3}',
    b'{"a": -0, "b": -0.0, "c": 1e5, "d": 1E-7, "e": 4.9e-324, "f": 2.2250738585072011e-308}',
    b'{"a": 0.1000000000000000055511151231257827021181583404541015625}',
    b'{"a": "\\u00e9\xc3\xa9", "b": "x\\u0000y", "c": "\\ud800"}',
    b'{"a": NaN}', b'{"a": Infinity}', b'{"a": 1e400}', b'{"a": [1,]}', b'{"a": "\xff"}', b'[1, 2]',
    b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}",
    b'{"a": ' + b"[" * 1010 + b"]" * 1010 + b"}",   # orjson parses it, the json module refuses it
    b'{"a": 1' + b"0" * 25 + b"}",
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_edge_lines_parse_the_same(line, monkeypatch):
    def parse(fast: bool):
        monkeypatch.setattr(trace, "_orjson", orjson if fast else None)
        simple = trace._is_simple_json(line, line.translate(trace._DIGITS_AS_ZERO))
        try:
            return _typed(trace.parse_record(line, "t.jsonl", 3, simple=simple))
        except TraceError as exc:
            return str(exc)

    assert parse(True) == parse(False)
