"""Assemble the report: one JSON-able dict (the schema in docs/report.md) from the merged traces.

Every output (terminal table, JSON, CSV, figures) renders this one dict, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

from c3prof import __version__, forked, quick_exit
from c3prof.analysis import falsification as fals
from c3prof.analysis import interference
from c3prof.analysis import taxonomy as tax
from c3prof.analysis.dataset import Dataset, Group, display_path
from c3prof.analysis.speedup import (AUTO, BootstrapSettings, Estimate, RunMetrics, SeriesBank, analyze_group,
                                     resolve_jobs)
from c3prof.analysis.stats import MIN_REPS
from c3prof.analysis.counters import perturbation_summary
from c3prof.analysis.strategies import (CI_METHOD, DEFAULT_MIN_IDEAL, joint_repeat_intervals, strategy_order,
                                        summary_rows)

SCHEMA = "c3prof-report"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ReportSettings:
    threshold: float = tax.DEFAULT_THRESHOLD
    plateau_fraction: float = tax.DEFAULT_PLATEAU_FRACTION
    boot: BootstrapSettings = field(default_factory=BootstrapSettings)
    falsification: fals.FalsificationSettings = field(default_factory=fals.FalsificationSettings)
    # Strategy means leave out scenarios whose base ideal speedup is below this (see strategies.py).
    min_ideal: float = DEFAULT_MIN_IDEAL
    # Processes sharing the bootstrap (speedup.analyze_group; AUTO: speedup.auto_jobs decides).
    # Not in to_json: the numbers do not depend on it.
    jobs: int = AUTO

    def to_json(self) -> dict:
        return {"threshold": self.threshold, "plateau_fraction": self.plateau_fraction, "min_ideal": self.min_ideal,
                "confidence": self.boot.confidence, "n_resamples": self.boot.n_resamples, "seed": self.boot.seed,
                "ci_method": "percentile bootstrap (see rules)", "min_reps_for_ci": MIN_REPS,
                **{f"falsification_{k}": v for k, v in asdict(self.falsification).items()}}


def method_rules(settings: ReportSettings, split_by: str) -> list[dict]:
    conf = f"{settings.boot.confidence:.0%}"
    return [
        {"name": "metrics", "rule":
            "medians over repetitions; ideal = T_s,base / max(T_g,base, T_c,base); realized = T_s,base / T_cc; "
            "fraction_of_ideal = (realized - 1) / (ideal - 1); the reference is the scenario's base run in the "
            "same platform group (reference 'own' when there is none: the run's own T_s, T_g, T_c); "
            "gemm_slowdown = median concurrent gemm_ms / median isolated GEMM time of the same run (comm likewise); "
            "fraction undefined (null) when ideal <= 1."},
        {"name": "intervals", "rule":
            f"{conf} percentile bootstrap, {settings.boot.n_resamples} resamples, seed {settings.boot.seed}. "
            "Runs measured interleaved in rounds (every strategy of a scenario in the same rounds) are resampled "
            "by round: each replicate draws the scenario's rounds with replacement and every series of every "
            "run takes the repetitions of the drawn rounds, so against-base ratios are paired and carry the "
            "round-to-round drift ('paired': true). A scenario measured in several complete visits (capture "
            "--visits, or captures of the same runs pooled) is resampled in two stages, visits then rounds within "
            "them, so drift between visits is in the intervals too ('visits' per result). Older captures: each phase's repetitions resampled "
            "independently, medians' replicates drawn from their exact distribution ('paired': false; drift "
            f"between runs is then not in the interval). Null with a reason when a phase has fewer than {MIN_REPS} "
            "repetitions, when the resampled statistic has no spread, or when ideal <= 1 in some resamples."},
        {"name": "strategy_mean", "rule": CI_METHOD + "; 'best_per_scenario' is an oracle choice (biased upward); "
            "'default' is the first variant listed for the strategy in the trace. Inclusion rule, applied to the "
            f"point estimate and to every bootstrap replicate alike: a scenario enters when its ideal speedup is at "
            f"least {settings.min_ideal} (--min-gain) and its fraction is defined; with less to gain, "
            "(realized - 1) / (ideal - 1) divides noise by noise. Fractions above 100% enter but are listed."},
        {"name": "links", "rule":
            "a run is compared with its scenario's base run only when both move their bytes over the same link "
            "(pcie_h2d, pcie_d2h, pcie_bidir, hbm, nvlink); otherwise it is reported against its own phases."},
        {"name": "merging", "rule":
            f"groups by {split_by}; a trace_id read twice is skipped; the rank traces of one distributed capture "
            "are combined per repetition by the maximum over ranks (n counts repetitions; rank_spread shows "
            "the per-rank medians); the same run in several captures of a group has its repetitions pooled "
            "per phase; a run missing a phase is listed as incomplete and left out of the results."},
        *tax.rules(settings.threshold, settings.plateau_fraction),
        {"name": "falsification", "rule": fals.rule_text(settings.falsification)},
    ]


# A result row's estimates: (key, RunMetrics field, key of its interval), in the row's order.
_PRIMARY_ESTIMATES = (("ideal_speedup", "ideal", "ideal_speedup_ci"),
                      ("realized_speedup", "realized", "realized_speedup_ci"),
                      ("fraction_of_ideal", "fraction", "fraction_ci"))
_OWN_ESTIMATES = (("ideal_speedup", "own_ideal", "ideal_speedup_ci"),
                  ("realized_speedup", "own_realized", "realized_speedup_ci"),
                  ("fraction_of_ideal", "own_fraction", "fraction_ci"))
_KERNEL_ESTIMATES = (("gemm_slowdown", "gemm_slowdown", "gemm_slowdown_ci"),
                     ("comm_slowdown", "comm_slowdown", "comm_slowdown_ci"),
                     ("overlap_fraction", "overlap", "overlap_fraction_ci"),
                     ("gemm_drift", "gemm_drift", "gemm_drift_ci"))


def _put_estimates(row: dict, m: RunMetrics, table: tuple, reasons: dict) -> None:
    """Each estimate of ``table`` into ``row``: its value and interval, and into ``reasons`` why it
    has no interval (written in place: a large report has some 100,000 of them)."""
    for key, attr, ci_key in table:
        e: Estimate = getattr(m, attr)
        ci = e.ci
        if ci.low is None and ci.reason:
            reasons[key] = ci.reason
        row[key] = e.value
        row[ci_key] = ci.as_list()


# A run's GEMM alone differing from base's by more than this (and significantly) is flagged.
DRIFT_FLAG = 0.005


def _flags(m: RunMetrics, min_ideal: float) -> list[str]:
    """Plain-language warnings a reader needs before trusting a row's fraction of ideal."""
    out = []
    if m.ideal.value is not None and m.ideal.value < min_ideal:
        out.append(f"ideal {m.ideal.value:.3f} < {min_ideal}: too little to gain, compare realized with ideal "
                   "instead of reading the fraction")
    if m.fraction.value is not None and m.fraction.value > 1.0:
        out.append(f"fraction {m.fraction.value:.0%} > 100%: faster together than the ideal allows; check the "
                   "slowdowns (a kernel ran faster beside the other than alone)")
    if m.reference == "base" and m.run.strategy != "base" and not m.paired:
        out.append("not measured interleaved with base: drift between the runs is not in the intervals")
    d = m.gemm_drift
    if d.value is not None and d.ci.ok and not d.ci.contains(1.0) and abs(d.value - 1) > DRIFT_FLAG:
        out.append(f"GEMM alone differs from base's by {d.value - 1:+.1%} (drift or a different GEMM setup)")
    return out


def _rank_spread(m: RunMetrics) -> dict | None:
    """Per phase pooled from two or more parts (ranks, visits or traces; the key ``ranks`` counts
    them, whichever they are): each part's median and their max/min ratio."""
    spread = m.run.rank_medians()
    if not spread:
        return None
    return {p: {"ranks": len(v), "medians_ms": v, "max_over_min": max(v) / min(v)} for p, v in spread.items()}


def _result(group: Group, m: RunMetrics, t: tax.RunTaxonomy, min_ideal: float = DEFAULT_MIN_IDEAL) -> dict:
    run = m.run
    carrier, evidence = group.carrier(run.transport)
    reasons: dict[str, str] = {}
    own_reasons: dict[str, str] = {}
    row = {
        "platform": group.key, "scenario": run.name, "strategy": run.strategy, "variant": run.variant,
        "run": run.id, "default_variant": group.variant_order[run.strategy][0] == run.variant,
        "gemm": fals.gemm_json(run), "comm": run.scenario.get("comm", {}),
        "transport": run.transport, "link": run.link, "carrier": carrier, "carrier_evidence": evidence,
        "taxonomy": t.scenario_class, "taxonomy_detail": t.to_json(),
        "reference": m.reference, "reference_note": m.reference_note,
        "n_reps": min(m.n_reps.values()), "n_reps_by_phase": m.n_reps,
        "medians_ms": m.medians, "base_medians_ms": m.base_medians,
    }
    _put_estimates(row, m, _PRIMARY_ESTIMATES, reasons)
    own: dict = {}
    _put_estimates(own, m, _OWN_ESTIMATES, own_reasons)
    own["ci_reasons"] = own_reasons
    row["own"] = own
    _put_estimates(row, m, _KERNEL_ESTIMATES, reasons)
    row.update({
        "paired": m.paired, "visits": m.visits, "rank_spread": _rank_spread(m), "flags": _flags(m, min_ideal),
        "ci_reasons": reasons,
        "validation_ok": (all(v["ok"] for v in run.validations) if run.validations else None),
        "sources": run.sources,
    })
    return row


def _machine(group: Group) -> dict:
    m = group.machine
    ceil = group.ceilings
    balance = {}
    copy = ceil.get("copy_bytes_per_s", {}).get(tax.BALANCE_COPY, {}).get("value")
    for dtype, entry in ceil.get("gemm_flops_per_s", {}).items():
        if copy:
            balance[dtype] = entry["value"] / copy
    return {"platform": group.key, "gpu_name": group.gpu_name, "backend": ", ".join(group.backends),
            "gpu": m.get("gpu", {}),
            "versions": m.get("versions", {}), "clocks_start": m.get("clocks_start", {}),
            "hosts": group.hosts, "sources": group.sources,
            "ceilings": {k: ceil.get(k, {}) for k in ("gemm_flops_per_s", "copy_bytes_per_s")},
            "machine_balance_flop_per_byte": balance,
            "engine_evidence": [{k: v for k, v in e.items() if k not in ("record", "wall_time")}
                                for e in group.evidence],
            "counter_sources": [{k: v for k, v in c.items() if k not in ("record", "wall_time")}
                                for c in group.counter_sources],
            "counter_perturbation": perturbation_summary(group.runs.values())}


def _strip(rec: dict) -> dict:
    out = {k: v for k, v in rec.items() if k not in ("record", "wall_time", "_trace")}
    out["trace"] = rec.get("_trace")
    return out


class _StrategiesBeside:
    """The strategy summary's rows (strategies.summary_rows), computed beside build_report's other
    work when ``jobs`` allows more than one process for these runs (speedup.resolve_jobs): a forked
    child (forked.in_background) takes rows from the front while this process computes the per-run
    rows, falsification and interference; then this process takes rows from the back (forked.Claims)
    until the two meet, instead of waiting for the child to finish them all. Otherwise every row is
    computed here, at once. The same rows either way: every draw comes from a generator keyed by
    the row's names. The child's compiled kernels keep all their threads: this process's share
    meanwhile is Python on one core."""

    def __init__(self, rows: list[Callable[[], dict]], jobs: int, n_runs: int) -> None:
        self._rows = rows
        self._claims = forked.Claims(len(rows))
        beside = resolve_jobs(jobs, n_runs) >= 2 and forked.can_fork()
        self._child = forked.in_background(self._from_front) if beside else forked.Later.done(self._from_front())

    def _from_front(self) -> dict[int, dict]:
        return {at: self._rows[at]() for at in iter(self._claims.first, None)}

    def result(self, first: Callable[[], None] | None = None) -> list[dict]:
        """Every row, in order: those the child has not taken computed here first. ``first``: work of
        this process's own to do before it takes rows (the child takes more of them meanwhile)."""
        if first is not None:
            first()
        mine = {at: self._rows[at]() for at in iter(self._claims.last, None)}
        done = {**self._child.result(), **mine}
        return [done[at] for at in range(len(self._rows))]


def _add_run_records(report: dict, group: Group) -> None:
    """The group's alerts, incomplete runs, validation failures, unvalidated DMA runs and errors."""
    report["alerts"].extend(dict(a, kind="dma_carrier") for a in fals.carrier_alerts(group))
    for run in group.runs.values():
        if not run.complete:
            report["incomplete"].append({
                "platform": group.key, "run": run.id, "scenario": run.name, "strategy": run.strategy,
                "variant": run.variant, "missing_phases": run.missing_phases,
                "present_phases": sorted(run.phases), "sources": run.sources,
                "errors": [e.get("message") for e in run.errors]})
        for v in run.validations:
            if not v.get("ok"):
                f = dict(_strip(v), platform=group.key)
                report["validation"]["failures"].append(f)
                report["alerts"].append({"platform": group.key, "run": run.id, "kind": "validation",
                                         "message": f"validation FAILED for {run.id}: {v.get('mismatched_bytes')}"
                                                    f" of {v.get('bytes_checked')} bytes differ "
                                                    f"(transport {v.get('transport')!r})"})
        if run.strategy == "dma" and run.complete and not run.validations:
            report["validation"]["unvalidated_dma_runs"].append({"platform": group.key, "run": run.id})
    listed = set()
    for e in group.errors:
        if e.get("not_applicable"):
            # One entry per run: traces captured before 2026-12-02 repeat the record on every
            # visit and --resume (the run is never measured, so it was never marked done).
            if e["run"] not in listed:
                listed.add(e["run"])
                report["not_applicable"].append(dict(_strip(e), platform=group.key))
        else:
            report["errors"].append(dict(_strip(e), platform=group.key))


def build_report(dataset: Dataset, settings: ReportSettings | None = None,
                 on_rows_final: Callable[[dict], None] | None = None) -> dict:
    """The report of ``dataset``. ``on_rows_final(report)``: called in each group once the report's
    result rows, falsification and interference so far are final (nothing changes them after), while
    the strategy summary's child computes its rows (an output may prepare them then:
    json_out.ReportListsJSON); the child takes more of the summary's rows meanwhile, so the two
    processes still finish together."""
    settings = settings or ReportSettings()
    bank = SeriesBank(settings.boot)
    report = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "c3prof_version": __version__,
        "settings": settings.to_json(), "split_by": dataset.split_by,
        "inputs": [dict(i.to_json(), path=display_path(i.path)) for i in dataset.inputs],
        "machine": [], "rules": method_rules(settings, dataset.split_by),
        "results": [], "strategies": [], "comm_sweeps": [], "falsification": [],
        "interference": [], "alerts": [], "incomplete": [], "errors": [], "not_applicable": [],
        "validation": {"failures": [], "unvalidated_dma_runs": []},
        "notes": list(dataset.notes),
    }
    for group in dataset.groups:
        report["machine"].append(_machine(group))
        metrics = analyze_group(group, bank, settings.jobs)
        by_id = {m.run.id: m for m in metrics}
        scen_order = {}
        for r in group.runs.values():
            scen_order.setdefault(r.name, len(scen_order))
        strat_order = {s: i for i, s in enumerate(strategy_order(group))}
        ordered = sorted(metrics, key=lambda m: (scen_order[m.run.name], strat_order.get(m.run.strategy, 99),
                                                 group.variant_order[m.run.strategy].index(m.run.variant)))
        # The strategy summary: about a fifth of a large report, mostly compiled resampling.
        summary = _StrategiesBeside(summary_rows(group, ordered, settings.boot, settings.min_ideal), settings.jobs,
                                    len(ordered))
        # After the summary's child is forked: one median per run (0.1 s for 10,000 runs), done beside it.
        sweeps = tax.comm_sweeps(group, settings.plateau_fraction)
        report["comm_sweeps"].extend(dict(s.to_json(), platform=group.key) for s in sweeps.values())
        for m in ordered:
            own = (m.medians["T_g"], m.medians["T_c"])
            base = (m.base_medians["T_g"], m.base_medians["T_c"]) if m.reference == "base" else None
            t = tax.classify_run(m.run, own, base, group, sweeps, settings.threshold)
            report["results"].append(_result(group, m, t, settings.min_ideal))
        differences: fals.DifferenceMemo = {}   # the carrier differences the two share, computed once
        report["falsification"].extend(fals.falsify(group, by_id, settings.falsification, settings.boot, differences))
        dose = interference.dose_response(group, ordered, settings.falsification, settings.boot.confidence,
                                          differences)
        if dose["arms"]:
            report["interference"].append(dose)
        # Before the summary's rows are collected: on one core while the child computes, not after it.
        _add_run_records(report, group)
        strategy_rows = summary.result(None if on_rows_final is None else lambda: on_rows_final(report))
        joint_repeat_intervals(strategy_rows, settings.boot.confidence)
        report["strategies"].extend(strategy_rows)
        # The group's metrics (10,000 runs: some 200,000 estimates, intervals and dicts) are not in the
        # report; freed here, one object at a time, they took 0.035-0.06 s on one core. The c3prof
        # command ends without freeing them instead (quick_exit.py); a caller in-process frees them.
        quick_exit.hold(metrics, by_id, ordered, differences, dose)
    one_visit = sorted({r["scenario"] for r in report["results"] if r["paired"] and r["visits"] == 1})
    if one_visit:
        report["notes"].append(f"{len(one_visit)} scenario(s) measured in one visit: their intervals hold the "
                               "drift between rounds, not between visits minutes apart (capture --visits 2 or more "
                               "measures it)")
    return report
