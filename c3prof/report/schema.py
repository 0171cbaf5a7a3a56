"""The report's JSON schema (version 1) as data, and a checker for consumers and tests.

docs/report.md describes every field in prose; this module is the machine-checkable part: which
keys each object must have and their JSON types. ``check_report(obj)`` returns a list of problems
(empty when the report conforms). Extra keys are allowed: consumers must ignore what they do not know.
"""

from __future__ import annotations

NUM = (int, float)
NULLABLE_NUM = (int, float, type(None))
CI = (list, type(None))  # [low, high] or null (then a reason says why)

TOP = {"schema": str, "schema_version": int, "c3prof_version": str, "settings": dict, "split_by": str,
       "inputs": list, "machine": list, "rules": list, "results": list, "strategies": list, "comm_sweeps": list,
       "falsification": list, "interference": list, "alerts": list, "incomplete": list, "errors": list, "not_applicable": list,
       "validation": dict, "notes": list}

RESULT = {"platform": str, "scenario": str, "strategy": str, "variant": str, "run": str, "default_variant": bool,
          "gemm": dict, "comm": dict, "transport": (str, type(None)), "carrier": str, "taxonomy": str,
          "taxonomy_detail": dict, "reference": str, "n_reps": int, "n_reps_by_phase": dict, "medians_ms": dict,
          "base_medians_ms": dict, "ideal_speedup": NULLABLE_NUM, "ideal_speedup_ci": CI,
          "realized_speedup": NULLABLE_NUM, "realized_speedup_ci": CI, "fraction_of_ideal": NULLABLE_NUM,
          "fraction_ci": CI, "own": dict, "gemm_slowdown": NULLABLE_NUM, "gemm_slowdown_ci": CI,
          "comm_slowdown": NULLABLE_NUM, "comm_slowdown_ci": CI, "overlap_fraction": NULLABLE_NUM,
          "overlap_fraction_ci": CI, "ci_reasons": dict, "validation_ok": (bool, type(None)), "sources": list,
          "link": str, "paired": bool, "visits": int, "gemm_drift": NULLABLE_NUM, "gemm_drift_ci": CI, "flags": list,
          "rank_spread": (dict, type(None))}

STRATEGY = {"platform": str, "strategy": str, "selection": str, "variant": (str, type(None)), "oracle": bool,
            "n_scenarios": int, "scenarios": list, "mean_fraction_of_ideal": NULLABLE_NUM, "mean_fraction_ci": CI,
            "ci_reason": (str, type(None)), "ci_method": str, "excluded": list, "reference_own": list,
            "above_ideal": list, "unpaired": list, "mean_fraction_ci_suite": CI,
            "mean_fraction_pi_repeat": CI, "mean_fraction_pi_repeat_all": CI,
            "mean_fraction_by_visit": (list, type(None)), "ci_suite_method": str}

FALSIFICATION = {"platform": str, "gpu": str, "premise": str, "gemm": dict, "transfer": (dict, type(None)),
                 "sm_transfer": (dict, type(None)), "slowdown": NULLABLE_NUM, "slowdown_ci": CI,
                 "overlap_fraction": NULLABLE_NUM, "sm_slowdown": NULLABLE_NUM, "sm_slowdown_ci": CI,
                 "verdict": str, "reason": str, "rule": str, "evidence": str, "counters": (dict, type(None)),
                 "link": (str, type(None)), "dma_minus_sm": NULLABLE_NUM, "dma_minus_sm_ci": CI, "paired": bool}

MACHINE = {"platform": str, "gpu_name": str, "backend": str, "gpu": dict, "versions": dict, "hosts": list, "sources": list,
           "ceilings": dict, "machine_balance_flop_per_byte": dict, "engine_evidence": list}

INCOMPLETE = {"platform": str, "run": str, "missing_phases": list, "present_phases": list, "sources": list}

RULE = {"name": str, "rule": str}

VERDICTS = ("holds", "refuted", "inconclusive", "not enough data")
SELECTIONS = ("default", "variant", "best_per_scenario")


def _check(obj, spec: dict, where: str, problems: list[str]) -> None:
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected an object")
        return
    for key, typ in spec.items():
        if key not in obj:
            problems.append(f"{where}: missing '{key}'")
        elif not isinstance(obj[key], typ) or (typ is int and isinstance(obj[key], bool)):
            problems.append(f"{where}.{key}: wrong type {type(obj[key]).__name__}")
        elif typ is CI and obj[key] is not None and (len(obj[key]) != 2 or not all(isinstance(v, NUM) for v in obj[key])):
            problems.append(f"{where}.{key}: an interval must be [low, high] or null")


def check_report(rep: dict) -> list[str]:
    problems: list[str] = []
    _check(rep, TOP, "report", problems)
    if problems:
        return problems
    if rep["schema"] != "c3prof-report" or rep["schema_version"] != 1:
        problems.append("report: not a c3prof-report version 1")
    for name, spec in (("results", RESULT), ("strategies", STRATEGY), ("falsification", FALSIFICATION),
                       ("machine", MACHINE), ("incomplete", INCOMPLETE), ("rules", RULE)):
        for i, item in enumerate(rep[name]):
            _check(item, spec, f"{name}[{i}]", problems)
    for i, f in enumerate(rep["falsification"]):
        if f.get("verdict") not in VERDICTS:
            problems.append(f"falsification[{i}].verdict: {f.get('verdict')!r} is not one of {VERDICTS}")
    for i, s in enumerate(rep["strategies"]):
        if s.get("selection") not in SELECTIONS:
            problems.append(f"strategies[{i}].selection: {s.get('selection')!r} is not one of {SELECTIONS}")
    return problems
