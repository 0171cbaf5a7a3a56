"""Predicted T_cc of every candidate of a scenario, its interval, and the recommendation.

The interval is empirical: the 2.5% and 97.5% quantiles of log(measured / predicted) T_cc over a
leave-one-scenario-out pass on the training captures (fit.py), applied to the point prediction:
the candidate's own residuals over the same link class (``residual_key``) where it has at least
``fit.MIN_RESIDUALS``, else the candidate's over any link, else all candidates'.
It carries how wrong the model was on scenarios it had not seen, not measurement noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from c3prof.advise.model import (LINK_DISTANCE, AdviceModel, Lookup, Row, Shape, comm_distance, concurrent_time,
                                 gemm_distance, hbm_demand, link_distance, nearest)
from c3prof.analysis.strategies import DEFAULT_MIN_IDEAL
from c3prof.scenarios import CommSpec, GemmSpec


@dataclass(frozen=True)
class Inputs:
    """What a prediction starts from: the scenario and its isolated times (and where they came from)."""

    name: str
    gemm: GemmSpec
    comm: CommSpec
    t_g: float          # GEMM alone on the whole GPU, ms
    t_c: float          # communication alone on the SM carrier, ms
    source: str         # "capture (base run)" or "rate model"


@dataclass
class Prediction:
    key: str
    t_g: float
    t_c: float
    efficiency: float
    t_cc: float
    t_cc_interval: list[float] | None
    fraction: float | None
    fraction_interval: list[float] | None
    neighbours: dict[str, list] = field(default_factory=dict)
    hbm_demand: float | None = None   # the pair's device-memory demand the overlap was read at

    def to_json(self) -> dict:
        return {"candidate": self.key, "t_cc_ms": self.t_cc, "t_cc_interval_ms": self.t_cc_interval,
                "fraction_of_ideal": self.fraction, "fraction_interval": self.fraction_interval,
                "t_g_ms": self.t_g, "t_c_ms": self.t_c, "overlap_efficiency": self.efficiency,
                "hbm_demand": self.hbm_demand,
                "neighbours": self.neighbours}


def _overlap_distance(shape: Shape, log_ratio: float, log_demand: float):
    """Similar link, time ratio T_c'/T_g', copy count, and device-memory demand of the pair
    (model.hbm_demand). The demand stands for the GEMM here: what two kernels on the same HBM do to
    each other depends on how much bandwidth they need together, not on the GEMM's shape alone."""
    def distance(r: Row) -> float:
        return (link_distance(shape.link, r.shape.link) + abs(log_ratio - r.log_ratio)
                + abs(shape.log_copies - r.shape.log_copies) / 2 + abs(log_demand - r.log_demand))
    return distance


def _partition_factor(model: AdviceModel, key: str, shape: Shape) -> Lookup | None:
    sms = model.params[key].get("gemm_sms")
    if sms is None:
        return Lookup(1.0, [])
    return nearest(model.gemm_partition.get(int(sms), []), lambda r: gemm_distance(shape, r.shape))


def _comm_factor(model: AdviceModel, key: str, shape: Shape) -> Lookup | None:
    """From the same kind of link only (PCIe directions stand in for each other, at a distance):
    a carrier's factor over PCIe says nothing about it inside HBM."""
    rows = [r for r in model.comm_factor.get(key, [])
            if link_distance(shape.link, r.shape.link) < LINK_DISTANCE["other"]]
    return nearest(rows, lambda r: link_distance(shape.link, r.shape.link) + comm_distance(shape, r.shape))


def _fraction(inp: Inputs, t_cc: float) -> float | None:
    """Fraction of ideal against base's isolated times; None below the report's minimum ideal speedup
    (with less to gain the fraction divides small differences by a small number, as in the report)."""
    ideal = (inp.t_g + inp.t_c) / max(inp.t_g, inp.t_c)
    return None if ideal < DEFAULT_MIN_IDEAL else ((inp.t_g + inp.t_c) / t_cc - 1.0) / (ideal - 1.0)


def residual_key(key: str, link: str | None) -> str:
    """A candidate's residuals are pooled per link class: an SM copy inside HBM and a PCIe copy
    interfere with a GEMM differently, and so does the model's error."""
    return f"{key} over {'hbm' if link == 'hbm' else 'pcie'}"


def _interval(model: AdviceModel, key: str, inp: Inputs, t_cc: float) -> tuple[list[float] | None, list[float] | None]:
    q = model.residual_q_by_key.get(residual_key(key, inp.comm.link),
                                    model.residual_q_by_key.get(key, model.residual_q))
    if q is None:
        return None, None
    lo, hi = (t_cc * math.exp(x) for x in q)
    f_lo, f_hi = _fraction(inp, hi), _fraction(inp, lo)   # the fraction falls as T_cc grows
    return [lo, hi], (None if f_lo is None or f_hi is None else [f_lo, f_hi])


def predict_one(model: AdviceModel, inp: Inputs, key: str) -> Prediction | str:
    """The prediction for one candidate, or why the model cannot make it."""
    shape = Shape.of(inp.gemm, inp.comm)
    part = _partition_factor(model, key, shape)
    if part is None:
        return f"no training run of {key} on a partition of this size"
    comm = _comm_factor(model, key, shape)
    if comm is None:
        return f"no training run of {key} over {shape.link} or a link like it"
    t_g, t_c = inp.t_g * part.value, inp.t_c * comm.value
    rows = model.overlap.get(key, [])
    demand = hbm_demand(inp.gemm, inp.comm, t_g, t_c, model.rates.peak_bytes_per_ms)
    eff = nearest(rows, _overlap_distance(shape, math.log2(t_c / t_g), math.log2(demand)))
    if eff is None:
        return f"no training run of {key}"
    t_cc = concurrent_time(t_g, t_c, eff.value)
    interval, f_interval = _interval(model, key, inp, t_cc)
    return Prediction(key=key, t_g=t_g, t_c=t_c, efficiency=eff.value, t_cc=t_cc, t_cc_interval=interval,
                      fraction=_fraction(inp, t_cc), fraction_interval=f_interval, hbm_demand=demand,
                      neighbours={"gemm_partition": part.neighbours, "comm_factor": comm.neighbours,
                                  "overlap": eff.neighbours})


@dataclass
class Advice:
    inputs: Inputs
    ranked: list[Prediction]                  # best (lowest predicted T_cc) first
    unavailable: dict[str, str]               # candidate -> why the model cannot predict it
    typical_error: float | None = None        # the model's (AdviceModel.typical_error)

    @property
    def best(self) -> Prediction | None:
        return self.ranked[0] if self.ranked else None

    @property
    def runner_up(self) -> Prediction | None:
        return self.ranked[1] if len(self.ranked) > 1 else None

    @property
    def margin(self) -> float | None:
        """How much longer the runner-up is predicted to take than the recommendation (relative)."""
        if self.best is None or self.runner_up is None:
            return None
        return self.runner_up.t_cc / self.best.t_cc - 1.0

    @property
    def near_tie(self) -> bool:
        """The runner-up is predicted within the model's typical error of the recommendation: the model
        cannot tell them apart, so both are worth measuring. (On the committed H200 captures every
        leave-one-scenario-out miss, and one of two held-out misses, had the smallest margins.)"""
        return (self.margin is not None and self.typical_error is not None
                and self.margin < math.expm1(self.typical_error))


def advise(model: AdviceModel, inp: Inputs, candidates: list[str] | None = None) -> Advice:
    """Rank the candidates (default: every variant the model was fitted on) by predicted T_cc."""
    preds, why = [], {}
    for key in candidates if candidates is not None else model.keys:
        if key not in model.params:
            why[key] = f"{key} is not in the training captures"
            continue
        p = predict_one(model, inp, key)
        if isinstance(p, str):
            why[key] = p
        else:
            preds.append(p)
    return Advice(inputs=inp, ranked=sorted(preds, key=lambda p: p.t_cc), unavailable=why,
                  typical_error=model.typical_error)
