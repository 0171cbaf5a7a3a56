"""Fit the advice model on measured scenarios, with its empirical prediction interval.

The interval comes from a leave-one-scenario-out pass over the training scenarios: each is
predicted by tables fitted on the others, and the 2.5% / 97.5% quantiles of log(measured /
predicted) T_cc become the interval of later predictions: per candidate and link class (HBM or
PCIe) where it has at least ``MIN_RESIDUALS`` residuals, else per candidate, else over all
candidates; with fewer than that overall (a training set of one or two scenarios) there is no
interval.
"""

from __future__ import annotations

import math

import numpy as np

from c3prof.advise.data import MeasuredScenario
from c3prof.advise.model import AdviceModel, TableRows, fit_tables
from c3prof.advise.predict import Inputs, predict_one, residual_key
from c3prof.errors import C3profError

MIN_RESIDUALS = 10
CAPTURE_SOURCE = "capture (base run)"


def capture_inputs(s: MeasuredScenario) -> Inputs:
    """A measured scenario's inputs: its base run's isolated times."""
    return Inputs(name=s.name, gemm=s.gemm, comm=s.comm, t_g=s.base_t_g, t_c=s.base_t_c, source=CAPTURE_SOURCE)


def loso_residuals(scenarios: list[MeasuredScenario],
                   rows: TableRows | None = None) -> list[tuple[str, str | None, float]]:
    """(candidate, link, log(measured / predicted) T_cc) of every run, each scenario predicted
    without itself. ``rows``: the scenarios' table rows, kept between the folds' fits."""
    rows = rows if rows is not None else TableRows()
    out = []
    for s in scenarios:
        sub = fit_tables([o for o in scenarios if o.definition != s.definition], rows)
        for key, run in s.runs.items():
            if key not in sub.params:
                continue
            p = predict_one(sub, capture_inputs(s), key)
            if not isinstance(p, str):
                out.append((key, s.comm.link, math.log(run.t_cc / p.t_cc)))
    return out


def fit(scenarios: list[MeasuredScenario], rows: TableRows | None = None) -> AdviceModel:
    """The model fitted on ``scenarios``, with its interval. ``rows``: the scenarios' table rows,
    kept between fits (evaluate.loso fits once per held-out scenario)."""
    if not scenarios:
        raise C3profError("no training scenario to fit the advice model on")
    rows = rows if rows is not None else TableRows()
    model = fit_tables(scenarios, rows)
    res = loso_residuals(scenarios, rows) if len(scenarios) > 2 else []
    model.n_residuals = len(res)
    model.residual_q = _quantiles([r for *_, r in res])
    if len(res) >= MIN_RESIDUALS:
        model.typical_error = float(np.median(np.abs([r for *_, r in res])))
    groups: dict[str, list[float]] = {}
    for key, link, r in res:   # per candidate over its link class, and per candidate over any link
        groups.setdefault(residual_key(key, link), []).append(r)
        groups.setdefault(key, []).append(r)
    for key, values in groups.items():
        q = _quantiles(values)
        if q is not None:
            model.residual_q_by_key[key] = q
    return model


def _quantiles(values: list[float]) -> tuple[float, float] | None:
    if len(values) < MIN_RESIDUALS:
        return None
    lo, hi = np.quantile(values, [0.025, 0.975])
    return float(lo), float(hi)
