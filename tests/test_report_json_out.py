"""The report JSON writer: a large report through orjson (when installed) holds the same values as
the json module's text, and refuses NaN and infinity as the json module does. Reports here are
SYNTHETIC dicts, not measured data."""

import json
import math

import numpy as np
import pytest

from c3prof.report import json_out

orjson = pytest.importorskip("orjson")   # the `fast` extra (installed by .ci/run's dev extra)


def _large(extra: dict | None = None) -> dict:
    rows = [{"run": f"s{i}/base/default", "fraction_of_ideal": i / 7.0, "ci": [1e-05 * i, 1e16 + i],
             "flags": [], "medians_ms": {"T_g": 0.25 + i, "T_c": None}, "paired": i % 2 == 0}
            for i in range(json_out.PRETTY_MAX_RESULTS + 1)]
    return {"schema": "c3prof.report", "results": rows, "notes": ["µs and ü"], **(extra or {})}


def test_compiled_check_is_built():
    assert json_out._finite is not None   # built with the package (setup.py)


def test_large_report_holds_the_json_modules_values():
    report = _large({"numpy_float": np.float64(0.1), "int_keys": {1: "a", 2: [1, 2]}, "pair": (3, 4.5),
                     "big": 2**62})
    data = json_out.fast_encode(report)
    assert data is not None and data.endswith(b"\n")
    assert json.loads(data) == json.loads(json_out.dumps(report))


def test_small_report_stays_indented_by_the_json_module(tmp_path):
    small = {"results": [{"x": 1.5}], "notes": []}
    assert json_out.fast_encode(small) is None
    json_out.write_json(small, str(tmp_path / "r.json"))
    assert (tmp_path / "r.json").read_text() == json_out.dumps(small)


@pytest.mark.parametrize("bad, where", [
    ({"deep": {"list": [1.0, [2.0, math.nan]]}}, "['deep']['list'][1][1]"),
    ({"inf": -math.inf}, "['inf']"),
    ({"numpy": np.float64("nan")}, "['numpy']"),
    ({"keyed": {math.inf: 1}}, "['keyed'][inf]"),
])
def test_nan_and_infinity_are_refused_with_where_they_are(bad, where, tmp_path):
    report = _large(bad)
    with pytest.raises(ValueError, match="not JSON compliant") as caught:
        json_out.write_json(report, str(tmp_path / "r.json"))
    assert str(caught.value).endswith(where)
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(ValueError):   # the json module refuses the same reports
        json_out.dumps(report)


def test_what_orjson_refuses_goes_to_the_json_module(tmp_path):
    report = _large({"huge": 2**70})   # beyond orjson's 64-bit integers
    assert json_out.fast_encode(report) is None
    json_out.write_json(report, str(tmp_path / "r.json"))
    assert json.loads((tmp_path / "r.json").read_text())["huge"] == 2**70
    lone = _large({"bad": "\ud800"})   # a lone surrogate: orjson refuses it, json escapes it
    assert json_out.fast_encode(lone) is None
    json_out.write_json(lone, str(tmp_path / "s.json"))
    assert (tmp_path / "s.json").read_text() == json_out.dumps(lone)


def test_nesting_past_the_checks_depth_is_left_to_the_json_module(tmp_path):
    deep: list = [math.nan]
    for _ in range(300):
        deep = [deep]
    report = _large({"deep": deep})
    assert json_out._finite.non_finite_path(report) is None   # the walk stops at its depth...
    with pytest.raises(ValueError):                      # ...orjson refuses the depth, json the NaN
        json_out.write_json(report, str(tmp_path / "r.json"))


def test_without_orjson_the_json_module_writes_it(monkeypatch, tmp_path):
    monkeypatch.setattr(json_out, "_orjson", None)
    report = _large()
    assert json_out.fast_encode(report) is None
    json_out.write_json(report, str(tmp_path / "r.json"))
    assert (tmp_path / "r.json").read_text() == json_out.dumps(report)


def test_stdout_gets_the_same_json(capsysbinary):
    report = _large()
    json_out.write_json(report, "-")
    assert json.loads(capsysbinary.readouterr().out) == json.loads(json_out.dumps(report))


def _prepared(report: dict, steps: list[int] | None = None) -> json_out.ResultRowsJSON:
    """A ResultRowsJSON that prepared ``report``'s rows, as build_report hands them over: once, or
    (``steps``) once per group, with the rows the groups so far have appended."""
    prepared = json_out.ResultRowsJSON()
    rows = report["results"]
    if steps is None:
        prepared.prepare(report)
        return prepared
    full = list(rows)
    rows.clear()
    for upto in steps:
        rows.extend(full[len(rows):upto])
        prepared.prepare(report)
    assert rows == full
    return prepared


@pytest.mark.parametrize("steps", [None, [4000], [5, 2500, 2500, 4000]])
def test_rows_encoded_ahead_give_the_same_bytes(steps, tmp_path):
    """The result rows encoded ahead (once, or per group as rows are appended) and put in place by
    write_json: the very bytes of the report encoded at once (written to a file, and fast_encode's)."""
    report = _large({"numpy_float": np.float64(0.1), "int_keys": {1: "a"}})
    report["results"] += [dict(r, run=f"x{i}") for i, r in enumerate(report["results"][:1999])]   # 4000 rows
    whole = json_out.fast_encode(report)
    prepared = _prepared(report, steps)
    assert prepared.fragment(report) is not None   # every row encoded ahead: used
    json_out.write_json(report, str(tmp_path / "r.json"), prepared)
    assert (tmp_path / "r.json").read_bytes() == whole
    assert json_out.fast_encode(report, prepared) == whole


def test_rows_changed_after_prepare_are_encoded_again():
    """Rows appended after the last prepare, or another list of rows: write_json encodes the rows
    itself (the encoded ones are not used)."""
    report = _large()
    prepared = _prepared(report)
    report["results"].append({"run": "late", "fraction_of_ideal": 0.5})
    assert prepared.fragment(report) is None
    assert json_out.fast_encode(report, prepared) == json_out.fast_encode(report)
    other = dict(report, results=list(report["results"]))
    assert prepared.fragment(other) is None


@pytest.mark.parametrize("bad, where", [(math.nan, "['results'][1500]['fraction_of_ideal']"),
                                        (2**70, None)])
def test_rows_with_nan_or_what_orjson_refuses_are_left_to_write_json(bad, where, tmp_path):
    """A NaN in a row: write_json still refuses the report and names where (the encoded rows are
    not used); a value orjson refuses: the json module writes the report, as without prepare."""
    report = _large()
    report["results"][1500]["fraction_of_ideal"] = bad
    prepared = _prepared(report)
    assert prepared.fragment(report) is None
    if where is not None:
        with pytest.raises(ValueError, match="not JSON compliant") as caught:
            json_out.write_json(report, str(tmp_path / "r.json"), prepared)
        assert str(caught.value).endswith(where)
    else:
        json_out.write_json(report, str(tmp_path / "r.json"), prepared)
        assert (tmp_path / "r.json").read_text() == json_out.dumps(report)


def test_small_reports_are_not_encoded_ahead():
    small = {"results": [{"x": 1.5}]}
    prepared = _prepared(small)
    assert prepared.fragment(small) is None and json_out.fast_encode(small, prepared) is None
