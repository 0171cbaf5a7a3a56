"""``--csv DIR``: flat tables of the report for spreadsheets; intervals become ``_lo``/``_hi`` columns.

Files: results.csv, strategies.csv, falsification.csv, incomplete.csv, errors.csv, alerts.csv,
each written with its header even when empty, so scripts can rely on the columns.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from c3prof.errors import C3profError
from c3prof.report.json_out import write_atomic

MEDIANS = ("T_g", "T_c", "T_s", "T_cc", "T_g_cc", "T_c_cc")
RESULT_METRICS = (("ideal_speedup", "ideal_speedup_ci"), ("realized_speedup", "realized_speedup_ci"),
                  ("fraction_of_ideal", "fraction_ci"), ("gemm_slowdown", "gemm_slowdown_ci"),
                  ("comm_slowdown", "comm_slowdown_ci"), ("overlap_fraction", "overlap_fraction_ci"))
COUNTER_KEYS = ("l2_sectors_ratio", "non_sm_share_gemm", "non_sm_share_concurrent")


def _with_ci(name: str) -> list[str]:
    return [name, f"{name}_lo", f"{name}_hi"]


# The strategy means' other intervals (report JSON key -> CSV column stem): this suite held fixed,
# where a repeat capture's mean lands, and where all strategies' repeat means land at once.
STRATEGY_INTERVALS = {"mean_fraction_ci_suite": "suite", "mean_fraction_pi_repeat": "repeat",
                      "mean_fraction_pi_repeat_all": "repeat_all"}


FIELDS = {
    "results.csv": ["platform", "scenario", "strategy", "variant", "default_variant", "taxonomy", "own_class",
                    "gemm_bound", "arithmetic_intensity", "comm_bound", "gemm", "comm_op", "comm_bytes",
                    "transport", "carrier", "reference", "n_reps", *[f"{k}_ms" for k in MEDIANS],
                    *[c for name, _ in RESULT_METRICS for c in _with_ci(name)],
                    *_with_ci("own_fraction_of_ideal"), "validation_ok", "ci_reasons"],
    "strategies.csv": ["platform", "strategy", "selection", "variant", "oracle", "n_scenarios",
                       *_with_ci("mean_fraction_of_ideal"),
                       *[f"{stem}_{side}" for stem in STRATEGY_INTERVALS.values() for side in ("lo", "hi")],
                       "mean_gemm_slowdown", "mean_comm_slowdown",
                       "scenarios", "ci_reason", "ci_method"],
    "falsification.csv": ["platform", "gpu", "gemm", "transfer", "transport", "carrier", "dma_run",
                          *_with_ci("slowdown"), "overlap_fraction", "sm_run", *_with_ci("sm_slowdown"),
                          *[c for k in COUNTER_KEYS for c in _with_ci(k)], "verdict", "reason", "premise", "rule"],
    "incomplete.csv": ["platform", "run", "scenario", "strategy", "variant", "missing_phases", "present_phases",
                       "sources", "errors"],
    "errors.csv": ["platform", "run", "phase", "message", "trace"],
    "alerts.csv": ["platform", "kind", "run", "message"],
}


def _put_ci(row: dict, name: str, ci) -> None:
    row[f"{name}_lo"], row[f"{name}_hi"] = ci if ci else (None, None)


def _result_row(r: dict) -> dict:
    t = r["taxonomy_detail"]
    row = {k: r[k] for k in ("platform", "scenario", "strategy", "variant", "default_variant", "taxonomy",
                             "transport", "carrier", "reference", "n_reps", "validation_ok")}
    row.update(own_class=t["own_class"], gemm_bound=t["gemm"]["class"],
               arithmetic_intensity=t["gemm"]["arithmetic_intensity"], comm_bound=t["comm"],
               gemm=r["gemm"]["label"], comm_op=r["comm"].get("op"), comm_bytes=r["comm"].get("bytes"))
    row.update({f"{k}_ms": r["medians_ms"].get(k) for k in MEDIANS})
    for name, ci_key in RESULT_METRICS:
        row[name] = r[name]
        _put_ci(row, name, r[ci_key])
    row["own_fraction_of_ideal"] = r["own"]["fraction_of_ideal"]
    _put_ci(row, "own_fraction_of_ideal", r["own"]["fraction_ci"])
    row["ci_reasons"] = "; ".join(f"{k}: {v}" for k, v in r["ci_reasons"].items())
    return row


def _strategy_row(s: dict) -> dict:
    row = dict(s, scenarios=" ".join(s["scenarios"]))
    _put_ci(row, "mean_fraction_of_ideal", s["mean_fraction_ci"])
    for key, stem in STRATEGY_INTERVALS.items():
        _put_ci(row, stem, s.get(key))
    return row


def _falsification_row(f: dict) -> dict:
    t, c = f["transfer"] or {}, f["sm_transfer"] or {}
    row = dict(f, gemm=f["gemm"]["label"], transfer=t.get("label"), transport=t.get("transport"),
               carrier=t.get("carrier"), dma_run=t.get("run"), sm_run=c.get("run"))
    _put_ci(row, "slowdown", f["slowdown_ci"])
    _put_ci(row, "sm_slowdown", f["sm_slowdown_ci"])
    counters = f.get("counters") or {}
    for key in COUNTER_KEYS:
        entry = counters.get(key) or {}
        row[key] = entry.get("value")
        _put_ci(row, key, entry.get("ci"))
    return row


def _incomplete_row(i: dict) -> dict:
    return dict(i, missing_phases=" ".join(i["missing_phases"]), present_phases=" ".join(i["present_phases"]),
                sources=" ".join(i["sources"]), errors=" | ".join(map(str, i["errors"])))


ROWS = {
    "results.csv": lambda rep: [_result_row(r) for r in rep["results"]],
    "strategies.csv": lambda rep: [_strategy_row(s) for s in rep["strategies"]],
    "falsification.csv": lambda rep: [_falsification_row(f) for f in rep["falsification"]],
    "incomplete.csv": lambda rep: [_incomplete_row(i) for i in rep["incomplete"]],
    "errors.csv": lambda rep: rep["errors"],
    "alerts.csv": lambda rep: rep["alerts"],
}


def write_csv(report: dict, directory: str) -> list[Path]:
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise C3profError(f"{out}: --csv needs a directory, and this is a file")
    written = []
    for name, make in ROWS.items():
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FIELDS[name], extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(make(report))
        write_atomic(out / name, buf.getvalue(), "CSV table")
        written.append(out / name)
    return written
