"""fast_json.compact_dumps gives the json module's compact text byte for byte, or None (then the json module).

The floats are SYNTHETIC: random bit patterns (every exponent) and decimal-looking values around the
layouts' thresholds (1e-4 and 1e16); the structures hold strings that look like those numbers.
"""

import json

import numpy as np
import pytest

from c3prof.report import fast_json, json_out

pytest.importorskip("orjson")  # without it compact_dumps is always None (tested below)


def _reference(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def _doubles() -> list[float]:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**63, size=200_000, dtype=np.uint64)
    random_bits = bits.view(np.float64)
    random_bits = random_bits[np.isfinite(random_bits)]
    decimal = rng.random(100_000) * 10.0 ** rng.integers(-8, 20, 100_000)
    edges = [1e-4, 9.999999999999999e-05, 1e-5, 1e16, 9999999999999998.0, 1e15, 1e17, 5e-324, 0.0, -0.0,
             1.7976931348623157e308, 2.2250738585072014e-308, 0.1, 1.0, 123456789012345680.0]
    values = np.concatenate([random_bits, -random_bits, decimal, -decimal, edges])
    return values.tolist()


def test_every_double_is_written_as_the_json_module_writes_it():
    values = _doubles()
    assert fast_json.compact_dumps(values) == _reference(values)


def test_numbers_in_keys_strings_and_nested_values():
    obj = {"1e5": "0.00001", "a": [1e-05, {"b": 1e16, "c": "x:1e16,[0.00001"}], "0.0000": -1.5e-07,
           "d": [10.00001, 1e-4, 123456789, -2**63, 2**64 - 1, True, None, False, []], "e": {}}
    assert fast_json.compact_dumps(obj) == _reference(obj)


@pytest.mark.parametrize("obj", [
    {"a": "é"},                      # non-ASCII: the json module escapes it, orjson does not
    {"a": 'quote " inside'},         # any backslash in the text: escapes may be spelled differently
    {"a": "tab\there"},
    {"a": 2**64},                    # beyond 64 bits: orjson refuses it
    {1: "non-string key"},
    {"a": np.float64(1.5)},          # a float subclass: orjson refuses it
], ids=range(6))
def test_what_orjson_cannot_write_alike_is_left_to_the_json_module(obj):
    assert fast_json.compact_dumps(obj) is None
    text = json_out.dumps({"results": [obj] * (json_out.PRETTY_MAX_RESULTS + 1)})
    assert text == _reference({"results": [obj] * (json_out.PRETTY_MAX_RESULTS + 1)}) + "\n"


def test_without_orjson_the_json_module_writes(monkeypatch):
    monkeypatch.setattr(fast_json, "_orjson", None)
    assert fast_json.compact_dumps({"a": 1.0}) is None
    report = {"results": [{"x": 1e-05}] * (json_out.PRETTY_MAX_RESULTS + 1)}
    assert json_out.dumps(report) == _reference(report) + "\n"


def test_large_report_dumps_through_orjson_unchanged(monkeypatch):
    report = {"results": [{"run": f"s{i}/base/default", "ideal": 1.0 + i * 1e-7, "ci": [1e-5 * i, 1e16 + i],
                           "n": i, "flags": []} for i in range(json_out.PRETTY_MAX_RESULTS + 1)]}
    calls = []
    monkeypatch.setattr(fast_json, "_python_floats", lambda raw, real=fast_json._python_floats: calls.append(1)
                        or real(raw))
    assert json_out.dumps(report) == _reference(report) + "\n"
    assert calls, "the orjson path did not run"
