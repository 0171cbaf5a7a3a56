"""Measured scenarios from c3prof traces: what the model is fitted on and evaluated against.

Every number comes from the analysis layer (c3prof.analysis): traces are merged by
``dataset.load`` (repeated captures of a run pool their repetitions), each scenario's runs are
resampled together by round (``speedup.SeriesBank``), and a run's T_cc interval is the percentile
interval of its median's round-paired bootstrap replicates. Only single-GPU ``transfer`` scenarios
with a complete ``base`` run are kept (base gives the isolated GEMM and SM-carrier times every
prediction starts from), and only runs whose bytes validated; what is left out is noted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from c3prof.analysis.dataset import Group, MergedRun, load
from c3prof.analysis.speedup import BootstrapSettings, SeriesBank, base_runs, run_metrics
from c3prof.analysis.stats import MIN_REPS, percentile_ci
from c3prof.errors import C3profError
from c3prof.scenarios import CommSpec, GemmSpec


def run_key(strategy: str, variant: str) -> str:
    return f"{strategy}/{variant}"


@dataclass(frozen=True)
class MeasuredRun:
    """One (strategy, variant) of a scenario: its own isolated phases and its concurrent time."""

    key: str
    strategy: str
    variant: str
    params: dict
    carrier: str                     # measured (engine evidence), "unknown" without evidence
    t_g: float                       # median GEMM alone, ms (the variant's own: partitioned for rp)
    t_c: float                       # median communication alone, ms (the variant's own carrier)
    t_cc: float                      # median concurrent phase, ms
    t_cc_ci: list[float] | None      # its round-paired bootstrap interval
    fraction: float | None           # fraction of ideal against base (analysis.speedup)
    fraction_ci: list[float] | None
    n_reps: int
    gemm_slowdown: float | None = None        # concurrent gemm_ms / GEMM alone (analysis.speedup)
    gemm_slowdown_ci: list[float] | None = None


@dataclass
class MeasuredScenario:
    name: str
    gemm: GemmSpec
    comm: CommSpec
    base_t_g: float                  # GEMM alone on the whole GPU (base run), ms
    base_t_c: float                  # communication alone on SMs (base run), ms
    runs: dict[str, MeasuredRun] = field(default_factory=dict)

    @property
    def sm_count(self) -> int | None:
        """The GPU's SMs, from a run that split them (gemm_sms + comm_sms); None without one."""
        for r in self.runs.values():
            g, c = r.params.get("gemm_sms"), r.params.get("comm_sms")
            if isinstance(g, int) and isinstance(c, int):
                return g + c
        return None

    @property
    def definition(self) -> tuple:
        """What makes two scenarios the same experiment (names may differ between suites)."""
        return (self.gemm, self.comm)


@dataclass
class MeasuredSet:
    scenarios: list[MeasuredScenario]
    platform: str
    sources: list[str]
    notes: list[str]


def _specs(run: MergedRun) -> tuple[GemmSpec, CommSpec]:
    g, c = run.scenario["gemm"], run.scenario["comm"]
    gemm = GemmSpec(m=int(g["m"]), n=int(g["n"]), k=int(g["k"]), dtype=str(g.get("dtype", "bf16")))
    comm = CommSpec(op="transfer", bytes=int(c["bytes"]), link=run.link, chunk=int(c.get("chunk") or c["bytes"]))
    return gemm, comm


def _measured_run(group: Group, run: MergedRun, base: MergedRun, bank: SeriesBank) -> MeasuredRun:
    m = run_metrics(run, base, bank)
    tcc = bank.get(run, "concurrent", "total_ms")
    assert tcc is not None, "a complete run has a concurrent phase"
    ci = percentile_ci(tcc.replicates, bank.settings.confidence) if tcc.n >= MIN_REPS else None
    return MeasuredRun(key=run_key(run.strategy, run.variant), strategy=run.strategy, variant=run.variant,
                       params=dict(run.params), carrier=group.carrier(run.transport)[0],
                       t_g=_ms(m.medians["T_g"]), t_c=_ms(m.medians["T_c"]), t_cc=float(tcc.median),
                       t_cc_ci=ci.as_list() if ci is not None else None,
                       fraction=m.fraction.value, fraction_ci=m.fraction.ci_list, n_reps=tcc.n,
                       gemm_slowdown=m.gemm_slowdown.value, gemm_slowdown_ci=m.gemm_slowdown.ci_list)


def _ms(value: float | None) -> float:
    assert value is not None, "a complete run has every phase"
    return float(value)


def _median(run: MergedRun, phase: str) -> float:
    values = run.series(phase, "total_ms")
    assert values is not None, "a complete run has every phase"
    return float(np.median(values))


def _group_scenarios(group: Group, boot: BootstrapSettings, notes: list[str]) -> list[MeasuredScenario]:
    bases = base_runs(group)
    by_name: dict[str, list[MergedRun]] = {}
    for run in group.runs.values():
        if run.complete:
            by_name.setdefault(run.name, []).append(run)
    bank = SeriesBank(boot)
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, runs in by_name.items():
            base, why = bases.get(name, (None, "no base run"))
            if runs[0].scenario.get("comm", {}).get("op", "transfer") != "transfer":
                notes.append(f"{name}: a collective scenario; advise covers single-GPU transfers only")
                continue
            if base is None:
                notes.append(f"{name}: left out ({why}): base gives the isolated times")
                continue
            bank.begin_scenario(group.key, name, runs)
            gemm, comm = _specs(base)
            ms = MeasuredScenario(name=name, gemm=gemm, comm=comm,
                                  base_t_g=_median(base, "gemm"), base_t_c=_median(base, "comm"))
            for run in runs:
                if any(not v.get("ok", True) for v in run.validations):
                    notes.append(f"{run.id}: left out: its transfer failed byte validation")
                elif run.link == base.link:
                    r = _measured_run(group, run, base, bank)
                    ms.runs[r.key] = r
            bank.clear()
            out.append(ms)
    return out


def measured_set(paths: list[str], boot: BootstrapSettings | None = None) -> MeasuredSet:
    """The measured scenarios of one platform from trace files (one-line C3profError on bad input)."""
    dataset = load(paths)
    if len(dataset.groups) != 1:
        names = ", ".join(g.key for g in dataset.groups) or "none"
        raise C3profError(f"advise fits one platform at a time; these traces hold {len(dataset.groups)} "
                          f"platform groups ({names})")
    group = dataset.groups[0]
    notes = list(dataset.notes)
    scenarios = _group_scenarios(group, boot or BootstrapSettings(), notes)
    if not scenarios:
        raise C3profError(f"{', '.join(paths)}: no transfer scenario with a complete base run to learn from")
    return MeasuredSet(scenarios=scenarios, platform=group.key, sources=list(group.sources), notes=notes)
