"""Invariants that every trace in tests/data must satisfy (synthetic now; measured ones when added).

Parametrized over ``tests/data/*.jsonl``: drop a real capture there and it is checked too.
"""

import statistics

import pytest
from report_helpers import phase_samples, records, trace_files

from c3prof.analysis.dataset import load
from c3prof.cli import main
from c3prof.report.build import build_report
from c3prof.report.schema import VERDICTS, check_report

TRACES = trace_files()


@pytest.fixture(scope="module", params=TRACES, ids=[p.name for p in TRACES])
def case(request):
    return request.param, build_report(load([str(request.param)]))


def test_there_is_at_least_one_trace():
    assert TRACES, "tests/data holds no *.jsonl trace"


def test_schema(case):
    _, rep = case
    assert check_report(rep) == []


def test_every_run_is_reported_or_listed(case):
    path, rep = case
    runs = {r["run"] for r in records(path) if r["record"] == "phase"}
    reported = {r["run"] for r in rep["results"]} | {i["run"] for i in rep["incomplete"]}
    assert reported == runs
    errors = [r for r in records(path) if r["record"] == "error"]
    # Runs not applicable on a link are error records the report lists apart from failures.
    # Not applicable: one entry per run (older traces repeat the record on every visit and resume).
    assert len(rep["not_applicable"]) == len({r["run"] for r in errors if r.get("not_applicable")})
    assert len(rep["errors"]) == sum(1 for r in errors if not r.get("not_applicable"))
    failed = [r for r in records(path) if r["record"] == "validation" and not r["ok"]]
    assert len(rep["validation"]["failures"]) == len(failed)


def test_own_metrics_match_raw_medians(case):
    path, rep = case
    samples = {key: s["total_ms"] for key, s in phase_samples(path).items()}   # visits pooled
    for row in rep["results"]:
        m = {p: statistics.median(samples[(row["run"], p)]) for p in ("gemm", "comm", "serial", "concurrent")}
        ideal = m["serial"] / max(m["gemm"], m["comm"])
        assert row["own"]["ideal_speedup"] == pytest.approx(ideal, rel=1e-9)
        assert row["own"]["realized_speedup"] == pytest.approx(m["serial"] / m["concurrent"], rel=1e-9)


def test_intervals_contain_points_or_say_why(case):
    _, rep = case
    for row in rep["results"]:
        for name, ci_key in (("ideal_speedup", "ideal_speedup_ci"), ("realized_speedup", "realized_speedup_ci"),
                             ("fraction_of_ideal", "fraction_ci"), ("gemm_slowdown", "gemm_slowdown_ci"),
                             ("comm_slowdown", "comm_slowdown_ci")):
            value, ci = row[name], row[ci_key]
            if ci is None:
                assert name in row["ci_reasons"], (row["run"], name)
            else:
                assert ci[0] <= value * (1 + 1e-12) and value <= ci[1] * (1 + 1e-12), (row["run"], name, value, ci)


def test_falsification_verdicts_are_known(case):
    _, rep = case
    for f in rep["falsification"]:
        assert f["verdict"] in VERDICTS and f["rule"] and f["premise"]


def test_cli_runs_on_it(case, tmp_path):
    path, _ = case
    assert main(["report", str(path), "--quiet", "--json", str(tmp_path / "r.json")]) == 0
