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


def _with_lists(report: dict) -> dict:
    """``report`` with falsification and interference lists too (the other lists encoded ahead)."""
    report["falsification"] = [{"scenario": f"s{i}", "ratio": i / 3.0, "ci": [0.1 * i, None]} for i in range(40)]
    report["interference"] = [{"arms": [{"dose": 0.5, "slope": -2.5e-07}], "platform": "H200"}]
    return report


def _prepared(report: dict, steps: list[int] | None = None) -> json_out.ReportListsJSON:
    """A ReportListsJSON that prepared ``report``'s lists, as build_report hands them over: once, or
    (``steps``) once per group, with the result rows the groups so far have appended (and as many
    falsification and interference items as the step's share of them)."""
    prepared = json_out.ReportListsJSON()
    if steps is None:
        prepared.prepare(report)
        return prepared
    full = {key: list(report.get(key, [])) for key in json_out.ENCODED_AHEAD}
    for items in (report.get(key) for key in json_out.ENCODED_AHEAD):
        if items is not None:
            items.clear()
    for upto in steps:
        share = upto / len(full["results"])
        for key, items in full.items():
            if key in report:
                report[key].extend(items[len(report[key]):round(share * len(items))])
        prepared.prepare(report)
    assert all(report[key] == items for key, items in full.items() if key in report)
    return prepared


@pytest.mark.parametrize("steps", [None, [4000], [5, 2500, 2500, 4000]])
def test_lists_encoded_ahead_give_the_same_bytes(steps, tmp_path):
    """The result rows, falsification and interference encoded ahead (once, or per group as they
    grow) and put in place by write_json: the very bytes of the report encoded at once (written to a
    file, and fast_encode's)."""
    report = _with_lists(_large({"numpy_float": np.float64(0.1), "int_keys": {1: "a"}}))
    report["results"] += [dict(r, run=f"x{i}") for i, r in enumerate(report["results"][:1999])]   # 4000 rows
    whole = json_out.fast_encode(report)
    prepared = _prepared(report, steps)
    assert set(prepared.fragments(report)) == set(json_out.ENCODED_AHEAD)   # every list encoded ahead: used
    json_out.write_json(report, str(tmp_path / "r.json"), prepared)
    assert (tmp_path / "r.json").read_bytes() == whole
    assert json_out.fast_encode(report, prepared) == whole


@pytest.mark.parametrize("steps", [None, [5, 2500, 2500, 4000]])
def test_empty_lists_encoded_ahead_give_the_same_bytes(steps):
    """An empty interference list (a report without DMA runs), prepared once or per group: ``[]``,
    the same bytes as encoding the report at once; the fragments of the other lists too."""
    report = _with_lists(_large())
    report["results"] += [dict(r, run=f"x{i}") for i, r in enumerate(report["results"][:1999])]
    report["interference"] = []
    prepared = _prepared(report, steps)
    assert set(prepared.fragments(report)) == set(json_out.ENCODED_AHEAD)
    assert json_out.fast_encode(report, prepared) == json_out.fast_encode(report)


def test_lists_changed_after_prepare_are_encoded_again():
    """Items appended after the last prepare, or another list: write_json encodes that list itself
    (its encoded items are not used), and uses the others encoded ahead."""
    report = _with_lists(_large())
    prepared = _prepared(report)
    report["results"].append({"run": "late", "fraction_of_ideal": 0.5})
    assert set(prepared.fragments(report)) == {"falsification", "interference"}
    assert json_out.fast_encode(report, prepared) == json_out.fast_encode(report)
    other = dict(report, results=list(report["results"]), falsification=list(report["falsification"]))
    assert set(prepared.fragments(other)) == {"interference"}
    assert json_out.fast_encode(other, prepared) == json_out.fast_encode(other)


@pytest.mark.parametrize("key, at", [("results", 1500), ("falsification", 7)])
@pytest.mark.parametrize("bad", [math.nan, 2**70])
def test_lists_with_nan_or_what_orjson_refuses_are_left_to_write_json(key, at, bad, tmp_path):
    """A NaN in a list: write_json still refuses the report and names where (that list's encoding
    is not used); a value orjson refuses: the json module writes the report, as without prepare."""
    report = _with_lists(_large())
    field = "fraction_of_ideal" if key == "results" else "ratio"
    report[key][at][field] = bad
    prepared = _prepared(report)
    assert key not in prepared.fragments(report)
    if bad != bad:   # NaN
        with pytest.raises(ValueError, match="not JSON compliant") as caught:
            json_out.write_json(report, str(tmp_path / "r.json"), prepared)
        assert str(caught.value).endswith(f"[{key!r}][{at}][{field!r}]")
    else:
        json_out.write_json(report, str(tmp_path / "r.json"), prepared)
        assert (tmp_path / "r.json").read_text() == json_out.dumps(report)


def test_small_reports_are_not_encoded_ahead():
    small = _with_lists({"results": [{"x": 1.5}]})
    prepared = _prepared(small)
    assert prepared.fragments(small) == {} and json_out.fast_encode(small, prepared) is None
