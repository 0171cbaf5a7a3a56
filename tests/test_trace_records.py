"""The record constructors of c3prof/trace.py build records the trace schema accepts, with the
fields the readers use. Values are SYNTHETIC (nothing here is measured)."""

from __future__ import annotations

import pytest

from c3prof import trace
from c3prof.errors import TraceError

SCENARIO = {"name": "s", "gemm": {"m": 8, "n": 8, "k": 8, "dtype": "bf16"}, "comm": {"op": "transfer", "bytes": 64}}


def check(rec: dict, kind: str) -> dict:
    assert rec["record"] == kind
    trace.validate_record(rec)
    return rec


def test_every_constructor_passes_the_schema():
    check(trace.machine_record({"name": "GPU"}, {"c3prof": "x"}, clocks_start={}), "machine")
    check(trace.ceilings_record({"bf16": {"value": 1e15}}, {"d2d": {"value": 4e12}}), "ceilings")
    ev = check(trace.engine_evidence_record("ce_h2d", 256, "copy_engine", "nvml_gpm_sm_util", 0.5,
                                            carrier="copy_engine"), "engine_evidence")
    assert ev["bytes"] == 256 and ev["single_transfer_ms"] == 0.5
    ph = check(trace.phase_record(trace.run_id("s", "base", "default"), SCENARIO, "base", "default", {}, "gemm",
                                  {"total_ms": [1.0, 1.1]}, {"reason": "noise"}), "phase")
    assert ph["run"] == "s/base/default"
    check(trace.counters_record("s/base/default", "gemm", "ncu", {"x": {"value": 1.0, "unit": "byte"}}, reps=3),
          "counters")
    check(trace.counter_source_record("ncu", False, reason="not found"), "counter_source")
    check(trace.error_record("s/base/default", "OutOfMemory: 2 GiB"), "error")
    end = check(trace.end_record("complete", {}, 1.5, 4, [], []), "end")
    assert end["phases_measured"] == 4


def test_validation_record_sums_batches_and_keeps_the_first_mismatch():
    ok = {"transport": "ce_h2d", "method": "host_compare", "bytes_checked": 100, "mismatched_bytes": 0,
          "first_mismatch_offset": None, "ok": True, "injected_corruption": False}
    bad = {**ok, "mismatched_bytes": 1, "first_mismatch_offset": 7, "ok": False, "injected_corruption": True}
    rec = check(trace.validation_record("s/dma/default", "concurrent", [ok, bad, {**bad, "first_mismatch_offset": 9}]),
                "validation")
    assert (rec["batches_checked"], rec["bytes_checked"], rec["mismatched_bytes"]) == (3, 300, 2)
    assert rec["first_mismatch_offset"] == 7 and rec["injected_corruption"] and not rec["ok"]
    assert check(trace.validation_record("s/dma/default", "comm", [ok]), "validation")["ok"]


def test_a_phase_record_with_a_wrong_run_id_is_refused():
    rec = trace.phase_record("other/base/default", SCENARIO, "base", "default", {}, "gemm", {"total_ms": [1.0]}, {})
    with pytest.raises(TraceError, match="does not match"):
        trace.validate_record(rec)
