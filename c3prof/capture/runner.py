"""The capture sweep: for every planned run, measure the phases still missing and append them.

Order of work (each step appended to the trace as soon as it completes):
  1. a ``machine`` record (every session, so a resumed capture records the clocks it ran at);
  2. ``ceilings`` once per trace; ``engine_evidence`` once per transport and trace;
  3. per scenario (buffers allocated once, every variant opened at once): the phases gemm, comm,
     serial, concurrent of *every* run of the scenario, in the same rounds (phases.measure_rounds),
     so strategies are compared on samples taken side by side; each repetition records its round.
     Before each communication batch the destination is poisoned, after it the transfer is
     validated byte for byte (one ``validation`` record per phase covers all its batches). A
     copy-engine run whose transport the engine evidence shows on SMs (same-device copies on
     H200) is not measured: an ``error`` record with ``not_applicable`` says why, with the evidence;
  4. an ``end`` record with the clocks at the end.

Resume: phases already in the trace are skipped, so an interrupted capture loses at most the
scenario it was in (its runs are measured interleaved and written together). A run that fails recoverably (out of memory, a partition the GPU cannot make)
gets an ``error`` record and the sweep continues; anything else stops the capture after an
``end`` record with status "failed".
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, field
from itertools import groupby

from c3prof.capture.phases import Unit, measure_rounds
from c3prof.capture.stopping import StoppingRule
from c3prof.plan.model import RunPlan
from c3prof.trace import (PHASES, Trace, TraceWriter, counter_source_record, end_record, error_record, phase_key, phase_record,
                          validation_record)


@dataclass
class CaptureOptions:
    rule: StoppingRule = field(default_factory=StoppingRule)
    inject_corruption: bool = False    # test hook: flip a destination byte before one validation
    evidence: bool = True
    gpm: bool = False                  # NVML GPM averages per phase (see capture/counters.py)
    ncu: bool = False                  # Nsight Compute per-phase totals after the sweep
    pm_sampling: bool = False          # PM-sampling time series (through ncu) after the sweep
    rocprofv3: bool = False            # rocprofv3 per-phase totals after the sweep (AMD)
    counter_strategies: tuple[str, ...] = ("base", "dma")
    counter_reps: int = 5
    counter_phases: tuple[str, ...] = ("gemm", "comm", "concurrent")
    ncu_replay: str = "app-range"
    # Visits: every scenario measured this many times, the whole plan once per visit, so a scenario's
    # visits lie minutes apart. The report resamples visits (then rounds), so drift between visits of
    # one capture is in the intervals, not only round-to-round noise.
    visits: int = 1


@dataclass
class CaptureSummary:
    phases_measured: int = 0
    runs_failed: list[str] = field(default_factory=list)
    validation_failures: list[str] = field(default_factory=list)
    status: str = "complete"


def decision_carrier(evidence: dict) -> str:
    """The carrier a run's applicability is decided on: the one every rank measured in a multi-GPU
    capture (``carrier_agreed``), else the record's own."""
    return evidence.get("carrier_agreed", evidence["carrier"])


def _phase_record(plan: RunPlan, phase: str, params: dict, result, visit: int = 1) -> dict:
    extra = {} if result.rounds is None else {"rounds": result.rounds, "round_group": result.round_group}
    if visit > 1:
        extra["visit"] = visit
    return phase_record(plan.id, plan.scenario.to_dict(), plan.variant.strategy, plan.variant.name, params, phase,
                        result.samples, result.stop, **extra)


class Runner:
    def __init__(self, bench, writer: TraceWriter, options: CaptureOptions, progress, existing: Trace | None = None):
        self.bench = bench
        self.writer = writer
        self.options = options
        self.progress = progress
        self.existing = existing
        self.done = existing.completed_phases() if existing else set()
        self.summary = CaptureSummary()
        self.medians: dict[str, dict[str, float]] = {}   # run id -> phase -> median total_ms
        self.visit = 1                                      # the visit being measured (CaptureOptions.visits)
        self._gpm_recorded = False
        # transport -> carrier measured by engine evidence (this session's or the resumed trace's).
        # A multi-GPU rank decides on the carrier every rank measured (``carrier_agreed``), so that
        # all ranks skip or run the same runs.
        self.carriers: dict[str, str] = {e["transport"]: decision_carrier(e)
                                         for e in (existing.engine_evidence if existing else [])}
        # Transports whose evidence is already in the trace; a multi-GPU capture replaces it with
        # the transports every rank has (capture/distributed.py).
        self.evidence_seen: set[str] = {e["transport"] for e in existing.engine_evidence} if existing else set()
        # Runs already reported not applicable (in the resumed trace or earlier in this capture):
        # such a run is never measured, so every visit and every --resume would otherwise report
        # it again (one record per run is enough: it does not depend on the visit).
        self.not_applicable_written: set[str] = {e["run"] for e in (existing.errors if existing else [])
                                                 if e.get("not_applicable")}
        # Applied to every new engine_evidence record before it is used and written (a multi-GPU
        # capture adds the carrier every rank agreed on).
        self.on_evidence = lambda rec: rec

    def todo(self, plans: list[RunPlan], visit: int = 1) -> list[tuple[RunPlan, list[str]]]:
        out = []
        for plan in plans:
            missing = [p for p in PHASES if (plan.id, phase_key(p, visit)) not in self.done]
            if missing:
                out.append((plan, missing))
        return out

    def _preamble(self, plans: list[RunPlan]) -> None:
        # The backend that captured (the report groups platforms by it): the registry's name.
        self.writer.write({**self.bench.machine_record(), "backend": self.bench.backend_name})
        if not (self.existing and self.existing.ceilings):
            self.progress.note("measuring machine ceilings (peak GEMM FLOP/s, copy bandwidths)")
            self.writer.write(self.bench.ceilings_record({p.scenario.gemm.dtype for p in plans}))
        if self.options.evidence:
            seen = self.evidence_seen
            # Copy-engine transports first: a GPM window right after heavy SM work can still show it.
            # A sleep control moves no bytes: no engine to ask about.
            ordered = sorted((p for p in plans if p.scenario.comm.op != "sleep"),
                             key=lambda p: getattr(p.variant, "carrier", None) != "copy_engine")
            for t in dict.fromkeys(p.variant.transport for p in ordered):
                if t not in seen:
                    self.progress.note(f"measuring which engine carries {t}")
                    rec = self.on_evidence(self.bench.engine_evidence_record(t))
                    self.carriers[t] = decision_carrier(rec)
                    self.writer.write(rec)

    def run(self, plans: list[RunPlan]) -> CaptureSummary:
        visits = {v: self.todo(plans, v) for v in range(1, self.options.visits + 1)}
        self.progress.start(total=sum(len(m) for work in visits.values() for _, m in work))
        t0 = time.time()
        status = "failed"
        try:
            self._preamble(plans)
            for self.visit, work in visits.items():
                if self.visit > 1 and work:
                    # Fresh buffers for every visit: the device and pinned host caches are emptied,
                    # so a visit allocates afresh instead of taking the previous visit's cached
                    # blocks, and what depends on where buffers land can vary between visits as it
                    # does between captures (the visits' bootstrap then carries it).
                    self.bench.release_memory()
                for _, group in groupby(work, key=lambda item: item[0].scenario.name):
                    self._scenario(list(group))
            if self.options.ncu or self.options.pm_sampling or self.options.rocprofv3:
                self._profiled_counters(plans)
            status = "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            self.summary.status = status
            self.progress.stop()
            self.writer.write(end_record(status, self.bench.clocks(), round(time.time() - t0, 3),
                                         self.summary.phases_measured, self.summary.runs_failed,
                                         self.summary.validation_failures))
        return self.summary

    def _fail(self, plan_ids: list[str], exc: BaseException) -> None:
        message = f"{type(exc).__name__}: {exc}".splitlines()[0]
        for rid in plan_ids:
            self.writer.write(error_record(rid, message))
            self.summary.runs_failed.append(rid)
        self.progress.note(f"[red]failed[/red] {', '.join(plan_ids)}: {message}")

    def _scenario(self, group: list[tuple[RunPlan, list[str]]]) -> None:
        scenario = group[0][0].scenario
        try:
            setup = self.bench.open_scenario(scenario)
        except Exception as exc:
            if not self.bench.recoverable(exc):
                raise
            self._fail([p.id for p, _ in group], exc)
            self.progress.advance(sum(len(m) for _, m in group))
            return
        opened = []
        try:
            for plan, missing in group:
                if self._not_applicable(plan):
                    self.progress.advance(len(missing))
                    continue
                try:
                    opened.append((plan, missing, self.bench.open_variant(setup, plan.variant)))
                except Exception as exc:
                    if not self.bench.recoverable(exc):
                        raise
                    self._fail([plan.id], exc)
                    self.progress.advance(len(missing))
            if opened:
                self._measure(scenario.name, opened)
        finally:
            for _, _, variant in opened:
                variant.close()
            setup.close()
        self.progress.scenario_done(scenario.name, [(p, self.medians.get(p.id, {})) for p, _ in group])

    def _not_applicable(self, plan: RunPlan) -> bool:
        """A copy-engine run whose transport was measured on another engine: not a DMA transfer here."""
        v = plan.variant
        measured = self.carriers.get(v.transport)
        if v.carrier != "copy_engine" or measured != "sm":   # unknown evidence: measure, the report flags it
            return False
        if plan.id in self.not_applicable_written:
            return True
        self.not_applicable_written.add(plan.id)
        self.writer.write(error_record(plan.id, f"not applicable: {v.strategy} needs a copy-engine path over "
                                                f"{v.link}, but {v.transport} was measured on {measured} "
                                                f"(engine_evidence record of {v.transport}); no other link is "
                                                f"substituted", not_applicable=True, strategy=v.strategy,
                                       link=v.link, transport=v.transport))
        self.progress.note(f"{plan.id}: not applicable ({v.transport} runs on {measured} here)")
        return True

    def _units(self, plan: RunPlan, missing: list[str], variant, checks: dict) -> list[Unit]:
        units = []
        for phase in missing:
            if phase == "gemm" or not getattr(variant.transport, "moves_bytes", True):
                units.append(Unit(plan.id, variant.timer, phase))
                continue
            checks[(plan.id, phase)] = []

            def after(round_index, plan=plan, phase=phase, transport=variant.transport):
                corrupt = self.options.inject_corruption and phase == "concurrent" and round_index == 0
                checks[(plan.id, phase)].append({**transport.validate(corrupt=corrupt), "injected_corruption": corrupt})

            units.append(Unit(plan.id, variant.timer, phase, before=variant.transport.poison, after=after))
        return units

    def _measure(self, scenario: str, opened: list) -> None:
        """Every missing phase of every opened run of one scenario, in the same rounds."""
        checks: dict[tuple[str, str], list[dict]] = {}
        units = {}
        for plan, missing, variant in opened:
            self.progress.describe(plan.id)
            for u in self._units(plan, missing, variant, checks):
                units[(plan.id, u.phase)] = u
        try:
            results = measure_rounds(list(units.values()), self.options.rule, f"{scenario}@{uuid.uuid4().hex[:12]}")
        except Exception as exc:
            if not self.bench.recoverable(exc):
                raise
            self._fail([p.id for p, _, _ in opened], exc)
            self.progress.advance(sum(len(m) for _, m, _ in opened))
            return
        for plan, missing, variant in opened:
            for phase in missing:
                result = results[id(units[(plan.id, phase)])]
                self.writer.write(_phase_record(plan, phase, variant.params, result, self.visit))
                self.medians.setdefault(plan.id, {})[phase] = statistics.median(result.samples["total_ms"])
                self.summary.phases_measured += 1
                if (plan.id, phase) in checks:    # transfers; not the GEMM, nor a sleep control
                    self._validation(plan, phase, checks[(plan.id, phase)])
            if self.options.gpm and self.visit == 1 and plan.variant.strategy in self.options.counter_strategies:
                for phase in missing:
                    self._gpm(variant, plan, phase)
            self.progress.advance(len(missing))

    def _profiled_counters(self, plans: list[RunPlan]) -> None:
        from c3prof.capture.counters import collect_profiled

        self.progress.stop()  # the profiled worker prints its own lines
        self.bench.release_memory()
        o = self.options
        for wanted, source in ((o.ncu, "ncu"), (o.pm_sampling, "pm_sampling"), (o.rocprofv3, "rocprofv3")):
            if not wanted:
                continue
            have = {(c["run"], c["phase"]) for r in (self.existing.runs.values() if self.existing else [])
                    for c in r.counters if c["source"] == source}
            # Only runs this trace holds phases of: a run reported not applicable (or failed) has no
            # timings to explain, and its counters would name a run the trace does not have.
            timed = set(self.medians) | set(self.existing.runs if self.existing else ())
            chosen = [p for p in plans if p.variant.strategy in o.counter_strategies and p.id in timed
                      and any((p.id, ph) not in have for ph in o.counter_phases)]
            if chosen:
                collect_profiled(source, chosen, self.writer, self.bench, o.counter_reps, list(o.counter_phases),
                                 o.ncu_replay, self.progress.note)

    def _gpm(self, variant, plan: RunPlan, phase: str) -> None:
        rec, reason = self.bench.gpm_phase_record(variant, phase, self.medians[plan.id][phase], plan.id)
        if rec is not None:
            if not self._gpm_recorded:
                self.writer.write(counter_source_record("nvml_gpm", True, metrics=sorted(rec["metrics"])))
                self._gpm_recorded = True
            self.writer.write(rec)
            return
        self.writer.write(counter_source_record("nvml_gpm", False, reason=reason))
        self.progress.note(f"counters: NVML GPM unavailable ({reason}); continuing without it")
        self.options.gpm = False

    def _validation(self, plan: RunPlan, phase: str, checks: list[dict]) -> None:
        """One validation record per phase, over every batch of it (each batch poisoned, then checked)."""
        rec = validation_record(plan.id, phase, checks)
        bad = [c for c in checks if not c["ok"]]
        self.writer.write(rec)
        if bad:
            self.summary.validation_failures.append(f"{plan.id}:{phase}")
            self.progress.note(f"[red]VALIDATION FAILED[/red] {plan.id}:{phase}: {rec['mismatched_bytes']} bytes "
                               f"differ in {len(bad)} of {len(checks)} checked batches")

