"""Validation: how often the advice picks the measured best, and what it costs when it does not.

Per evaluated scenario, among the runs measured in it:

- **measured best**: the run with the lowest median T_cc. **Ties**: every run whose T_cc interval
  (95% round-paired bootstrap of the median) overlaps the best run's interval counts as best too,
  since the capture cannot tell them apart. A choice is a **hit** when it is the best or a tie.
- **loss**: T_cc(chosen) / T_cc(best) - 1 (medians; 0 for the best itself, small for a tie).

Methods compared: the model's advice, the oracle (the measured best: hit rate 1, loss 0 by
construction), and fixed rules: always base, always sp (communication launched first on the
highest-priority stream), always dma (base where the scenario has no dma run: no copy-engine path
on that link), and the published rule "launch the smaller grid first" (sp with the side whose grid
has fewer CTAs first; the GEMM's grid is estimated as ceil(m/128) * ceil(n/128) tiles, the SM copy
kernel's as c3prof's default: 16 CTAs over PCIe, two per SM over HBM).

The model chooses among the runs measured in the scenario (only those can be scored). Under
leave-one-scenario-out (``loso``) each scenario is advised by a model fitted on the others
(scenarios of the same definition left out with it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from c3prof.advise.data import MeasuredRun, MeasuredScenario
from c3prof.advise.fit import capture_inputs, fit
from c3prof.advise.model import AdviceModel, TableRows, gemm_tiles
from c3prof.advise.predict import Advice, advise

H200_SMS = 132            # the smaller-grid rule's SM count when no run of the scenario split the SMs
PCIE_COPY_CTAS = 16       # c3prof's SM copy kernel over PCIe (backends/cuda/transports.default_sm_ctas)
RULES = ("advice", "oracle", "always base", "always sp", "always dma", "smaller grid first")


def comm_grid(s: MeasuredScenario) -> int:
    return PCIE_COPY_CTAS if (s.comm.link or "").startswith("pcie") else 2 * (s.sm_count or H200_SMS)


def rule_choice(rule: str, s: MeasuredScenario) -> str:
    if rule == "always base":
        return "base/default"
    if rule == "always sp":
        return "sp/comm_first"
    if rule == "always dma":
        return "dma/default" if "dma/default" in s.runs else "base/default"
    if rule == "smaller grid first":
        return "sp/comm_first" if comm_grid(s) < gemm_tiles(s.gemm) else "sp/gemm_first"
    raise ValueError(rule)


def _overlaps(a: MeasuredRun, b: MeasuredRun) -> bool:
    if a.t_cc_ci is None or b.t_cc_ci is None:
        return a.t_cc == b.t_cc
    return a.t_cc_ci[0] <= b.t_cc_ci[1] and b.t_cc_ci[0] <= a.t_cc_ci[1]


def measured_best(s: MeasuredScenario) -> tuple[str, list[str]]:
    """(the best run, the runs tied with it: its own name included)."""
    best = min(s.runs.values(), key=lambda r: r.t_cc)
    return best.key, [r.key for r in s.runs.values() if r.key == best.key or _overlaps(r, best)]


@dataclass
class Choice:
    key: str | None
    hit: bool
    loss: float | None
    note: str | None = None

    def to_json(self) -> dict:
        return {"choice": self.key, "hit": self.hit, "loss": self.loss, "note": self.note}


@dataclass
class ScenarioScore:
    scenario: str
    best: str
    ties: list[str]
    held_out: bool                 # the scenario's (GEMM, communication) is not in the training set
    choices: dict[str, Choice]
    advice: Advice
    measured: dict[str, MeasuredRun] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "measured_best": self.best, "ties": self.ties,
                "held_out": self.held_out, "choices": {k: c.to_json() for k, c in self.choices.items()},
                "runner_up_margin": self.advice.margin, "near_tie": self.advice.near_tie,
                "runs": [_run_json(self.measured[p.key], p) for p in self.advice.ranked],
                "not_predicted": self.advice.unavailable}


def _run_json(m: MeasuredRun, p) -> dict:
    return {"candidate": m.key, "measured_t_cc_ms": m.t_cc, "measured_t_cc_ci_ms": m.t_cc_ci,
            "predicted_t_cc_ms": p.t_cc, "predicted_t_cc_interval_ms": p.t_cc_interval,
            "measured_fraction_of_ideal": m.fraction, "predicted_fraction_of_ideal": p.fraction}


def _choice(s: MeasuredScenario, key: str | None, ties: list[str], best: str, note: str | None = None) -> Choice:
    if key is None or key not in s.runs:
        return Choice(key, False, None, note or "not measured in this scenario")
    return Choice(key, key in ties, s.runs[key].t_cc / s.runs[best].t_cc - 1.0, note)


def score(model: AdviceModel, s: MeasuredScenario) -> ScenarioScore:
    best, ties = measured_best(s)
    adv = advise(model, capture_inputs(s), candidates=list(s.runs))
    choices = {"advice": _choice(s, adv.best.key if adv.best else None, ties, best),
               "oracle": _choice(s, best, ties, best)}
    for rule in RULES[2:]:
        key = rule_choice(rule, s)
        note = "no dma run: base" if rule == "always dma" and key == "base/default" else None
        choices[rule] = _choice(s, key, ties, best, note)
    return ScenarioScore(scenario=s.name, best=best, ties=ties, held_out=s.definition not in model.definitions,
                         choices=choices, advice=adv, measured=dict(s.runs))


def loso(scenarios: list[MeasuredScenario], progress: Callable[[int, int], None] | None = None) -> list[ScenarioScore]:
    """Each scenario advised by a model fitted on all the others, leaving out every scenario of the
    same definition (the same GEMM and transfer under another name, e.g. in another suite) too.
    The folds share the scenarios' table rows (model.TableRows). ``progress(done, total)`` is told
    before each fold."""
    rows = TableRows()
    out = []
    for at, s in enumerate(scenarios):
        if progress is not None:
            progress(at, len(scenarios))
        out.append(score(fit([o for o in scenarios if o.definition != s.definition], rows), s))
    return out


def held_out(model: AdviceModel, scenarios: list[MeasuredScenario]) -> list[ScenarioScore]:
    return [score(model, s) for s in scenarios]


def near_ties(scores: list[ScenarioScore]) -> dict:
    """How many scenarios the advice flagged as near ties (runner-up within the model's typical
    error), and how many of the misses it had flagged: whether the flag points at the risky choices."""
    flagged = [sc for sc in scores if sc.advice.near_tie]
    misses = [sc for sc in scores if not sc.choices["advice"].hit]
    return {"flagged": len(flagged), "misses": len(misses),
            "misses_flagged": sum(sc.advice.near_tie for sc in misses),
            "scenarios_flagged": [sc.scenario for sc in flagged]}


def interval_coverage(scores: list[ScenarioScore]) -> dict:
    """How often the measured median T_cc of a run lies inside its predicted interval (the interval
    claims 95%; on scenarios unlike the training ones it may cover less, and this says so)."""
    pairs = [(sc.measured[p.key].t_cc, p.t_cc_interval) for sc in scores for p in sc.advice.ranked
             if p.t_cc_interval is not None]
    inside = sum(lo <= t <= hi for t, (lo, hi) in pairs)
    return {"runs": len(pairs), "inside": inside, "share": inside / len(pairs) if pairs else None}


def summarize(scores: list[ScenarioScore]) -> list[dict]:
    """Per method: hits, hit rate, and the loss in T_cc (max, mean over all, mean over misses)."""
    rows = []
    for rule in RULES:
        cs = [sc.choices[rule] for sc in scores]
        losses = [c.loss for c in cs if c.loss is not None]
        misses = [c.loss for c in cs if not c.hit and c.loss is not None]
        rows.append({"method": rule, "n": len(cs), "hits": sum(c.hit for c in cs),
                     "hit_rate": (sum(c.hit for c in cs) / len(cs)) if cs else None,
                     "max_loss": max(losses) if losses else None,
                     "mean_loss": float(np.mean(losses)) if losses else None,
                     "mean_loss_when_missed": float(np.mean(misses)) if misses else None,
                     "unscored": sum(c.loss is None for c in cs)})
    return rows
