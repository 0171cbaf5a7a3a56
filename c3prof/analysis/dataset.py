"""Read trace files and merge them into runs, grouped by platform. Duplicates are resolved here.

Several traces (captures, machines, ranks) make one report. The rules, also printed in the report:

- **Groups.** Runs are compared only within a group. ``split_by="platform"`` (default) groups by GPU
  name from the machine record (every H200 trace is one group); ``"host"`` by GPU name and hostname;
  ``"trace"`` keeps every file (rank) apart. A scenario's ``base`` reference is looked up in the
  same group only.
- **Same file twice.** A trace whose ``trace_id`` was already read is skipped (with a note).
- **Same run in several traces of a group** (a repeated capture, or the ranks of one collective):
  the repetitions of each phase are pooled (concatenated in the order the files were given), so a
  median is over all repetitions of all ranks. For per-rank numbers use ``split_by="trace"``.
  A series missing from one of the pooled parts is dropped from the pooled phase (noted), because
  the series of a phase must stay aligned by repetition.
- **Same run id, different definition** (GEMM, communication or transport differ): an error, since
  pooling would mix two experiments.
- Within one trace ``c3prof.trace.read_trace`` already keeps the latest record of a phase.

Samples become numpy arrays and each Trace object is dropped after merging, so memory stays
linear in the size of the traces.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from c3prof.errors import C3profError
from c3prof.trace import PHASES, read_trace

SPLIT_MODES = ("platform", "host", "trace")


@dataclass
class InputInfo:
    """One trace file given on the command line, as the report lists it."""

    path: str
    trace_id: str
    rank: int
    world_size: int
    hostname: str
    created_utc: str
    finished: bool
    n_runs: int
    group: str | None
    skipped: str | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class MergedRun:
    """One (scenario, strategy, variant) of one group, repetitions pooled across its traces."""

    id: str
    group: str
    scenario: dict
    strategy: str
    variant: str
    params: dict
    phases: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    validations: list[dict] = field(default_factory=list)
    counters: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.scenario.get("name", "")

    @property
    def transport(self) -> str | None:
        t = self.params.get("transport")
        return t if isinstance(t, str) else None

    @property
    def missing_phases(self) -> list[str]:
        return [p for p in PHASES if p not in self.phases]

    @property
    def complete(self) -> bool:
        return not self.missing_phases

    def series(self, phase: str, name: str) -> np.ndarray | None:
        return self.phases.get(phase, {}).get(name)

    def n_reps(self, phase: str) -> int:
        s = self.series(phase, "total_ms")
        return 0 if s is None else int(s.size)


@dataclass
class Group:
    """All runs of one platform (or host, or trace) and the machine facts they are judged against."""

    key: str
    gpu_name: str
    hosts: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    machines: list[dict] = field(default_factory=list)
    ceilings: dict = field(default_factory=dict)  # the latest ceilings record seen (file order)
    evidence: list[dict] = field(default_factory=list)
    counter_sources: list[dict] = field(default_factory=list)  # whether ncu / GPM ran, and why not
    runs: dict[str, MergedRun] = field(default_factory=dict)
    variant_order: dict[str, list[str]] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)

    @property
    def machine(self) -> dict:
        return self.machines[-1] if self.machines else {}

    def carrier(self, transport: str | None) -> tuple[str, str]:
        """(carrier, how we know) for a transport from this group's engine_evidence records."""
        if transport is None:
            return "unknown", "the run's params name no transport"
        recs = [e for e in self.evidence if e.get("transport") == transport]
        if not recs:
            return "unknown", f"no engine_evidence record for transport {transport!r}"
        carriers = sorted({e["carrier"] for e in recs})
        if len(carriers) > 1:
            return "unknown", f"conflicting engine_evidence for {transport!r}: {', '.join(carriers)}"
        methods = sorted({str(e.get("method", "")) for e in recs})
        return carriers[0], f"engine_evidence ({'; '.join(methods)})"


@dataclass
class Dataset:
    inputs: list[InputInfo]
    groups: list[Group]
    notes: list[str]
    split_by: str

    def all_runs(self):
        for g in self.groups:
            yield from g.runs.values()


def gpu_name(machine: dict) -> str:
    gpu = machine.get("gpu", {}) if machine else {}
    for key in ("name", "model", "product"):
        if isinstance(gpu.get(key), str) and gpu[key]:
            return gpu[key]
    return "unknown GPU"


def expand_paths(paths: list[str]) -> list[Path]:
    """Files as given; a directory stands for the ``*.jsonl`` files in it (sorted)."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise C3profError(f"{path}: directory holds no *.jsonl trace files")
            out.extend(found)
        else:
            out.append(path)  # read_trace reports a missing or unreadable file as one line
    return out


def _group_key(split_by: str, gpu: str, header: dict, path: Path) -> str:
    if split_by == "platform":
        return gpu
    host = header.get("hostname", "?")
    if split_by == "host":
        return f"{gpu} @ {host}"
    return f"{gpu} @ {host} rank {header.get('rank', 0)} [{path.name}]"


def _definition(scenario: dict, params: dict) -> tuple:
    return (repr(scenario.get("gemm")), repr(scenario.get("comm")), params.get("transport"))


def _pool_phase(run: MergedRun, phase_name: str, samples: dict, notes: list[str], where: str) -> None:
    new = {k: np.asarray(v, dtype=float) for k, v in samples.items()}
    old = run.phases.get(phase_name)
    if old is None:
        run.phases[phase_name] = new
        return
    common = [k for k in old if k in new]
    dropped = sorted(set(old) ^ set(new))
    if dropped:
        notes.append(f"{run.group}: {run.id} {phase_name}: series {', '.join(dropped)} not in every pooled "
                     f"trace ({where}); dropped from the pooled phase")
    run.phases[phase_name] = {k: np.concatenate([old[k], new[k]]) for k in common}


def load(paths: list[str], split_by: str = "platform") -> Dataset:
    """Read every trace (raising TraceError with file and line on bad input) and merge into groups."""
    if split_by not in SPLIT_MODES:
        raise C3profError(f"--split-by must be one of {', '.join(SPLIT_MODES)}, got {split_by!r}")
    files = expand_paths(paths)
    if not files:
        raise C3profError("no trace files given")
    inputs: list[InputInfo] = []
    groups: dict[str, Group] = {}
    notes: list[str] = []
    seen_ids: dict[str, str] = {}
    for path in files:
        trace = read_trace(path)
        h = trace.header
        info = InputInfo(path=str(path), trace_id=h["trace_id"], rank=h["rank"], world_size=h["world_size"],
                         hostname=str(h.get("hostname", "")), created_utc=h["created_utc"],
                         finished=trace.finished, n_runs=len(trace.runs), group=None)
        inputs.append(info)
        if h["trace_id"] in seen_ids:
            info.skipped = f"same trace_id as {seen_ids[h['trace_id']]}: read once"
            notes.append(f"{path}: {info.skipped}")
            continue
        seen_ids[h["trace_id"]] = str(path)
        if not trace.finished:
            status = trace.ends[-1].get("status") if trace.ends else "no end record"
            notes.append(f"{path}: capture did not finish ({status}); its completed phases are used")
        gpu = gpu_name(trace.machine)
        key = _group_key(split_by, gpu, h, path)
        info.group = key
        g = groups.setdefault(key, Group(key=key, gpu_name=gpu))
        src = f"{path.name} (rank {h['rank']})"
        g.sources.append(src)
        if info.hostname and info.hostname not in g.hosts:
            g.hosts.append(info.hostname)
        g.machines.extend(trace.machines)
        if trace.ceilings:
            g.ceilings = trace.latest_ceilings
        g.evidence.extend(trace.engine_evidence)
        g.counter_sources.extend(getattr(trace, "counter_sources", []))  # traces before the record existed
        g.errors.extend(dict(e, _trace=src) for e in trace.errors)
        for rid, r in trace.runs.items():
            run = g.runs.get(rid)
            if run is None:
                run = g.runs[rid] = MergedRun(id=rid, group=key, scenario=r.scenario, strategy=r.strategy,
                                              variant=r.variant, params=r.params)
                order = g.variant_order.setdefault(r.strategy, [])
                if r.variant not in order:
                    order.append(r.variant)
            elif _definition(run.scenario, run.params) != _definition(r.scenario, r.params):
                raise C3profError(f"{path}: run {rid} differs from the same run in {', '.join(run.sources)} "
                                  f"(GEMM, communication or transport); cannot pool them: use --split-by trace")
            run.sources.append(src)
            for pname, phase in r.phases.items():
                _pool_phase(run, pname, phase.samples, notes, src)
            # ``_trace`` names the file a record came from (``source`` is a counters field already).
            run.validations.extend(dict(v, _trace=src) for v in r.validations)
            run.counters.extend(dict(c, _trace=src) for c in r.counters)
            run.errors.extend(dict(e, _trace=src) for e in r.errors)
        del trace  # keep memory linear: only the numpy copies of the samples stay
    return Dataset(inputs=inputs, groups=list(groups.values()), notes=notes, split_by=split_by)


def display_path(path: str) -> str:
    """Paths relative to the working directory when shorter (reports stay readable and portable)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if len(rel) < len(path) else path
