"""The advise JSON: training summary (the fitted tables, stated), advice per target, validation.

Format ``c3prof-advise`` version 1 (docs/advise.md describes every field).
"""

from __future__ import annotations

from typing import Any

from c3prof import __version__
from c3prof.advise.data import MeasuredSet
from c3prof.advise.evaluate import ScenarioScore, interval_coverage, near_ties, summarize
from c3prof.advise.inputs import Target
from c3prof.advise.model import AdviceModel
from c3prof.advise.predict import Advice, Prediction
from c3prof.advise.settings import DEFAULT_SMS, settings_for

FORMAT = "c3prof-advise"
VERSION = 1
HIT_RULE = ("a choice is a hit when its median T_cc is the lowest measured in the scenario, or its T_cc "
            "interval (round-paired bootstrap of the median, --confidence) overlaps that best run's interval (a tie); "
            "loss = T_cc(choice) / T_cc(best) - 1 on medians")
PREDICTION_LABEL = "PREDICTION from the fitted model (not a measurement)"


def interference_json(train: MeasuredSet) -> list[dict]:
    """Copy-engine interference, as the interference study measures it: per dma run carried by copy
    engines, the dose (bytes / time alone, GB/s) and the GEMM slowdown beside it with its interval.
    The model uses it through the dma rows of its tables; this lists it so the advice can be checked."""
    out = []
    for s in train.scenarios:
        r = s.runs.get("dma/default")
        if r is not None and r.carrier == "copy_engine":
            moved = s.comm.bytes * (2 if s.comm.link == "pcie_bidir" else 1)
            out.append({"scenario": s.name, "link": s.comm.link, "rate_gbps": moved / r.t_c / 1e6,
                        "gemm_slowdown": r.gemm_slowdown, "gemm_slowdown_ci": r.gemm_slowdown_ci})
    return sorted(out, key=lambda x: (x["link"], x["rate_gbps"]))


def model_json(model: AdviceModel) -> dict:
    rates = model.rates
    return {
        "training_scenarios": model.training,
        "gemm_partition_factor": {str(sms): [{"scenario": r.scenario, "factor": r.value} for r in rows]
                                  for sms, rows in sorted(model.gemm_partition.items())},
        "comm_factor": {k: [{"scenario": r.scenario, "link": r.shape.link, "factor": r.value} for r in rows]
                        for k, rows in model.comm_factor.items()},
        "overlap_efficiency": {k: [{"scenario": r.scenario, "link": r.shape.link, "efficiency": r.value,
                                    "log2_tc_over_tg": r.log_ratio, "log2_hbm_demand": r.log_demand} for r in rows]
                               for k, rows in model.overlap.items()},
        "rates": {
            "gemm_tflops": rates.peak_flops_per_ms / 1e9, "gemm_hbm_gbps": rates.peak_bytes_per_ms / 1e6,
            "transfer": [{"link": link, "carrier": carrier, "latency_us_per_copy": lat * 1e3, "gbps": rate / 1e6}
                         for (link, carrier), (lat, rate) in sorted(model.rates.transfer.items())]},
        "interval": {"method": "2.5%/97.5% quantiles of log(measured/predicted) T_cc, leave-one-scenario-out "
                               "on the training scenarios; per candidate and link class (hbm, pcie) with >= 10 "
                               "residuals, else per candidate, else pooled",
                     "n_residuals": model.n_residuals, "pooled_log_ratio": model.residual_q,
                     "typical_error_log_ratio": model.typical_error,
                     "per_candidate_log_ratio": model.residual_q_by_key},
    }


def _pred_json(model: AdviceModel, p: Prediction | None, op: str | None = None) -> dict | None:
    if p is None:
        return None
    return dict(p.to_json(), settings=settings_for(p.key, model.params.get(p.key, {}),
                                                     model.sm_count or DEFAULT_SMS, op))


# What a traced job ran, by the carrier the trace shows: copy engines (a memcpy) or SMs (default streams).
TRACED_AS = {"copy_engine": "dma/default", "sm": "base/default"}


def _saved(t: Target, adv: Advice) -> dict[str, Any] | None:
    """Expected time saved per step in a traced job if the advice were applied (a prediction).

    Both sides come from the model (what the job runs now, by its traced carrier, and the advice),
    so the difference is like for like; the traced overlapped time is listed beside the model's
    figure for what the job runs now, as a check of the model on this job. The interval combines
    the two prediction intervals without assuming they move together (conservative)."""
    if t.region is None or adv.best is None:
        return None
    reg = t.region
    per_step = reg.instances / reg.steps if reg.steps else reg.instances
    now = next((p for p in adv.ranked if p.key == TRACED_AS.get(reg.carrier)), None)
    out: dict[str, Any] = {
        "label": PREDICTION_LABEL, "per": "step" if reg.steps else "trace (no ProfilerStep annotations)",
        "instances_per_step": per_step, "traced_t_cc_ms": reg.t_cc_ms, "traced_carrier": reg.carrier,
        "traced_as": TRACED_AS.get(reg.carrier), "predicted_now_t_cc_ms": None if now is None else now.t_cc,
        "saved_ms": None, "saved_interval_ms": None}
    if now is None:
        out["note"] = f"the traced carrier {reg.carrier!r} maps to no candidate the model predicts"
        return out
    best = adv.best
    out["saved_ms"] = (now.t_cc - best.t_cc) * per_step
    if now.key == best.key:
        out["saved_interval_ms"] = [0.0, 0.0]
        out["note"] = "the job already runs the recommended strategy"
    elif now.t_cc_interval is not None and best.t_cc_interval is not None:
        out["saved_interval_ms"] = [(now.t_cc_interval[0] - best.t_cc_interval[1]) * per_step,
                                    (now.t_cc_interval[1] - best.t_cc_interval[0]) * per_step]
    return out


def advice_json(model: AdviceModel, t: Target, adv: Advice) -> dict:
    i = t.inputs
    return {"scenario": i.name, "gemm": i.gemm.to_dict(), "comm": i.comm.to_dict(),
            "inputs": {"t_g_ms": i.t_g, "t_c_ms": i.t_c, "source": i.source},
            "label": PREDICTION_LABEL,
            "recommended": _pred_json(model, adv.best, i.comm.op),
            "runner_up": _pred_json(model, adv.runner_up, i.comm.op),
            "runner_up_margin": adv.margin, "near_tie": adv.near_tie,
            "candidates": [p.to_json() for p in adv.ranked], "not_predicted": adv.unavailable,
            "time_saved": _saved(t, adv)}


def validation_json(scores: list[ScenarioScore], kind: str, sources: list[str]) -> dict:
    return {"kind": kind, "sources": sources, "hit_rule": HIT_RULE,
            "all_held_out": all(s.held_out for s in scores),
            "summary": summarize(scores), "interval_coverage": interval_coverage(scores),
            "near_ties": near_ties(scores),
            "scenarios": [s.to_json() for s in scores]}


def build(train: MeasuredSet, model: AdviceModel, advice: list[dict], validations: list[dict],
          notes: list[str]) -> dict:
    return {"format": FORMAT, "version": VERSION, "c3prof_version": __version__,
            "training": {"platform": train.platform, "sources": train.sources, "notes": train.notes,
                         "model": model_json(model), "copy_engine_interference": interference_json(train)},
            "advice": advice, "validation": validations, "notes": notes}
