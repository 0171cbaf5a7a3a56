"""Read trace files and merge them into runs, grouped by platform. Duplicates are resolved here.

Several traces (captures, machines, ranks) make one report. The rules, also printed in the report:

- **Groups.** Runs are compared only within a group. ``split_by="platform"`` (default) groups by GPU
  name from the machine record (every H200 trace is one group); ``"host"`` by GPU name and hostname;
  ``"trace"`` keeps every file (rank) apart. A scenario's ``base`` reference is looked up in the
  same group only.
- **Same file twice.** A trace whose ``trace_id`` was already read is skipped (with a note).
- **Ranks of one distributed capture** (traces sharing ``machine.distributed.capture_id``) are one
  measurement, not several: repetitions are agreed across ranks, and a step ends when its slowest
  rank ends, so per repetition a phase's time is the **maximum over ranks** (start offsets come from
  that slowest rank). ``n`` counts repetitions, not rank-repetitions; each run keeps its per-rank
  medians so the report can show the rank spread. ``split_by="trace"`` keeps every rank apart.
- **Same run in several captures of a group** (a repeated capture): the repetitions of each phase
  are pooled (concatenated in the order the files were given). A series missing from one of the
  pooled parts is dropped from the pooled phase (noted), because the series of a phase must stay
  aligned by repetition.
- **Rounds.** A capture measures all runs of a scenario interleaved in rounds; each repetition carries
  its round (``rounds`` and ``round_group`` of the phase record). Rounds are kept per phase so that
  ratios between runs can be resampled by round (paired), see speedup.py.
- **Links.** Every run moves its bytes over one link (``pcie_h2d``, ``pcie_d2h``, ``pcie_bidir``, ``hbm``,
  ``nvlink``, or ``collective`` for a multi-GPU collective). Traces written before links were recorded
  get the link their transport used. A run is only compared with a base run over the same link.
- **Same run id, different definition** (GEMM, communication or transport differ): an error, since
  pooling would mix two experiments.
- Within one trace ``c3prof.trace.read_trace`` already keeps the latest record of a phase.

Samples become numpy arrays and each Trace object is dropped after merging, so memory stays
linear in the size of the traces.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from c3prof import trace_parts
from c3prof.analysis.stats import fast_median
from c3prof.errors import C3profError
from c3prof.trace import PHASES, Trace, backend_of, gc_paused, read_trace, split_phase_key

SPLIT_MODES = ("platform", "host", "trace")
# Traces written before the link was recorded: the link each of their transports used.
LEGACY_TRANSPORT_LINKS = {"sm_kernel": "hbm", "memcpy_d2d": "hbm", "ce_h2d": "pcie_h2d", "ce_d2h": "pcie_d2h"}
# Series of a phase that are durations: their per-repetition value over ranks is the maximum.
DURATION_SERIES = ("total_ms", "gemm_ms", "comm_ms")


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
    # Per phase: each repetition's round, as an id unique within the group (see Group.round_id).
    rounds: dict[str, np.ndarray] = field(default_factory=dict)
    # Per phase: the total_ms series of each part pooled into it (a rank of a distributed capture,
    # a visit, a trace); rank_medians() gives their medians.
    rank_totals: dict[str, list[np.ndarray]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    validations: list[dict] = field(default_factory=list)
    counters: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    # Cached (as ``link``): a large report asks each run's name and transport some twenty times, and
    # neither the scenario nor the params of a merged run change.
    @functools.cached_property
    def name(self) -> str:
        return self.scenario.get("name", "")

    @functools.cached_property
    def gemm_shape(self) -> tuple:
        """(m, n, k, dtype) of the scenario's GEMM (bf16 where it names none): the falsification and
        interference analyses key runs by it (tens of thousands of times in a large report)."""
        g = self.scenario.get("gemm", {})
        return (g.get("m"), g.get("n"), g.get("k"), g.get("dtype", "bf16"))

    @functools.cached_property
    def transport(self) -> str | None:
        t = self.params.get("transport")
        return t if isinstance(t, str) else None

    @functools.cached_property
    def link(self) -> str:
        """The link the run's bytes cross: recorded in params or the scenario, else from its transport."""
        for value in (self.params.get("link"), self.scenario.get("comm", {}).get("link")):
            if isinstance(value, str) and value:
                return value
        op = self.scenario.get("comm", {}).get("op", "transfer")
        if op == "sleep":   # the concurrency-alone control crosses no link
            return "none"
        if op != "transfer":
            return "collective"
        return LEGACY_TRANSPORT_LINKS.get(self.transport or "", "unknown")

    @property
    def missing_phases(self) -> list[str]:
        return [p for p in PHASES if p not in self.phases]

    @property
    def complete(self) -> bool:
        # A set comparison rather than not missing_phases: asked of every run four or five times.
        return self.phases.keys() >= _ALL_PHASES

    def series(self, phase: str, name: str) -> np.ndarray | None:
        return self.phases.get(phase, {}).get(name)

    def rank_medians(self) -> dict[str, list[float]]:
        """Per phase pooled from two or more parts (ranks, visits or traces): each part's median
        total_ms. Computed when asked: the report asks once per run, and most phases have one part."""
        return {p: [fast_median(t) for t in totals] for p, totals in self.rank_totals.items() if len(totals) > 1}

    def n_reps(self, phase: str) -> int:
        s = self.series(phase, "total_ms")
        return 0 if s is None else int(s.size)


_ALL_PHASES = frozenset(PHASES)


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
    _round_ids: dict[tuple[str, int], int] = field(default_factory=dict)
    _round_memo: dict[tuple[str, str, bytes], np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    # round_ids' answers by the very array asked (with the array, which keeps its id from being reused)
    _round_memo_by_array: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)
    round_sweep: dict[int, str] = field(default_factory=dict)   # round id -> its sweep (round_group)
    _carriers: dict[tuple[str | None, int], tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)

    def round_id(self, round_group: str, index: int) -> int:
        """A group-wide integer for round ``index`` of the interleaved sweep ``round_group``."""
        return self._new_round_ids(round_group, [index])[0]

    def round_ids(self, round_group: str, indices: np.ndarray) -> np.ndarray:
        """round_id of each index (a read-only array): calling round_id on each in turn, which gives
        new ids in the order the indices first appear. Every phase of every run of a scenario repeats
        its sweep's indices, and an index's id never changes once given, so the answer is kept per
        (sweep, indices) and a repeat is one lookup: by the array itself when it cannot change (the
        read-only arrays _rounds_array shares between the phases of a trace; the merge of a
        10^6-sample trace asks 40,000 times, for 2500 distinct lists), else by its bytes."""
        fixed = not indices.flags.writeable and indices.base is None
        if fixed:
            seen = self._round_memo_by_array.get((round_group, id(indices)))
            if seen is not None and seen[0] is indices:
                return seen[1]
        key = (round_group, indices.dtype.str, indices.tobytes())
        out = self._round_memo.get(key)
        if out is None:
            out = np.array(self._new_round_ids(round_group, indices.ravel().tolist()), dtype=np.int64)
            out.flags.writeable = False   # shared by every phase with these indices
            self._round_memo[key] = out
        if fixed:
            self._round_memo_by_array[(round_group, id(indices))] = (indices, out)
        return out

    def _new_round_ids(self, round_group: str, indices: list[int]) -> list[int]:
        """round_id of each index in turn, in one loop: the lists are short (a sweep's rounds, tens),
        where np.unique's sorting cost more than the lookups, but 2500 scenarios ask for 62,500."""
        ids, sweep = self._round_ids, self.round_sweep
        out = []
        for index in indices:
            rid = ids.get((round_group, index))
            if rid is None:
                rid = ids[(round_group, index)] = len(ids)
                sweep[rid] = round_group
            out.append(rid)
        return out

    @property
    def machine(self) -> dict:
        return self.machines[-1] if self.machines else {}

    @property
    def backends(self) -> list[str]:
        """The backends (cuda, hip) that captured this group's traces, in order of appearance."""
        return list(dict.fromkeys(backend_of(m) for m in self.machines)) or [backend_of({})]

    def carrier(self, transport: str | None) -> tuple[str, str]:
        """(carrier, how we know) for a transport from this group's engine_evidence records.

        Asked once per run, so the answer is kept per transport (and per evidence count: records
        added later give a new answer)."""
        key = (transport, len(self.evidence))
        if key not in self._carriers:
            self._carriers[key] = self._find_carrier(transport)
        return self._carriers[key]

    def _find_carrier(self, transport: str | None) -> tuple[str, str]:
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


@dataclass
class PhaseData:
    """One phase of one run as read from one trace (or combined over the ranks of one capture)."""

    series: dict[str, np.ndarray]
    round_group: str | None = None
    rounds: np.ndarray | None = None       # each repetition's round index within round_group
    rank_totals: list[np.ndarray] = field(default_factory=list)   # each part's total_ms (several after combine_ranks)


def _phase_data(phase, rounds_seen: dict[tuple, np.ndarray] | None = None) -> PhaseData:
    """``rounds_seen``: round lists already made arrays (every phase of a scenario's runs repeats its
    list): equal lists share one read-only array instead of each making its own."""
    series = phase.samples   # read-only float64 arrays (trace.read_trace)
    group, rounds = _phase_rounds(phase, rounds_seen)
    return PhaseData(series=series, round_group=group, rounds=rounds, rank_totals=[series["total_ms"]])


def _phase_rounds(phase, rounds_seen: dict[tuple, np.ndarray] | None) -> tuple[str | None, np.ndarray | None]:
    """A trace phase's round group and each repetition's round (_rounds_array); (None, None) where
    it records no usable rounds."""
    recorded = _recorded_rounds(phase)
    if recorded is None:
        return None, None
    return recorded[0], _rounds_array(recorded[1], rounds_seen)


def _recorded_rounds(phase) -> tuple[str, list] | None:
    """A trace phase's round group and its record's list of rounds, one per repetition; None where
    it records no usable rounds."""
    rec = phase.record
    rounds, group = rec.get("rounds"), rec.get("round_group")
    if isinstance(group, str) and isinstance(rounds, list) and len(rounds) == phase.samples["total_ms"].size:
        return group, rounds
    return None


def _rounds_array(rounds: list, seen: dict[tuple, np.ndarray] | None) -> np.ndarray:
    if seen is None:
        return np.asarray(rounds, dtype=np.int64)
    key = tuple(rounds)   # the trace's exact ints (read_trace accepts no bool or float round)
    array = seen.get(key)
    if array is None:
        array = seen[key] = np.asarray(rounds, dtype=np.int64)
        array.flags.writeable = False
    return array


def combine_ranks(parts: list[PhaseData]) -> tuple[PhaseData, str | None]:
    """One phase over the ranks of a distributed capture: per repetition the slowest rank.

    Durations are the maximum over ranks; start offsets come from the rank whose total was largest
    in that repetition. Ranks agree on repetitions, so their series align by index; if a rank has
    fewer (an interrupted capture), the common prefix is used and a note says so.
    """
    n = min(p.series["total_ms"].size for p in parts)
    names = [k for k in parts[0].series if all(k in p.series for p in parts)]
    note = None
    if any(p.series["total_ms"].size != n for p in parts):
        note = f"ranks have different repetition counts; the first {n} of each are combined"
    stack = {k: np.stack([p.series[k][:n] for p in parts]) for k in names}
    slowest = np.argmax(stack["total_ms"], axis=0)
    cols = np.arange(n)
    series = {k: (v.max(axis=0) if k in DURATION_SERIES else v[slowest, cols]) for k, v in stack.items()}
    first = parts[0]
    rounds = first.rounds[:n] if first.rounds is not None else None
    totals = [t for p in parts for t in p.rank_totals]
    return PhaseData(series=series, round_group=first.round_group, rounds=rounds, rank_totals=totals), note


def _pool_trace_phase(group: Group, run: MergedRun, phase_name: str, phase, seen: _SourceMemo, notes: list[str],
                      where: str) -> None:
    """_pool_phase of one trace's phase (a source of one trace: nothing to combine over ranks),
    without making its PhaseData where the run has no such phase yet: a 10^6-sample trace has
    40,000 phases, whose merge took 0.28-0.33 s against 0.36-0.41 s (dev VM, in-process). Such a
    phase's round ids come from ``seen.round_ids`` after the first phase with its rounds: every
    phase of a scenario's runs repeats its sweep's list, and Group.round_ids, asked for the same
    list again, gives the same array."""
    if phase_name in run.phases:
        _pool_phase(group, run, phase_name, _phase_data(phase, seen.arrays), notes, where)
        return
    series = phase.samples
    run.phases[phase_name] = series
    recorded = _recorded_rounds(phase)
    if recorded is not None:
        round_group, rounds = recorded
        key = (round_group, tuple(rounds))   # the trace's exact ints (read_trace accepts no bool or float round)
        ids = seen.round_ids.get(key)
        if ids is None:
            ids = seen.round_ids[key] = group.round_ids(round_group, _rounds_array(rounds, seen.arrays))
        run.rounds[phase_name] = ids
    run.rank_totals[phase_name] = [series["total_ms"]]


@dataclass
class _SourceMemo:
    """What the merge of one source (_add_source) keeps between its phases."""

    arrays: dict[tuple, np.ndarray] = field(default_factory=dict)   # round lists made arrays (_rounds_array)
    round_ids: dict[tuple, np.ndarray] = field(default_factory=dict)   # (round group, list) -> Group.round_ids


def _first_phase(group: Group, run: MergedRun, phase_name: str, series: dict[str, np.ndarray],
                 round_group: str | None, rounds: np.ndarray | None, rank_totals: list[np.ndarray]) -> None:
    """A phase the run does not have yet, as it is."""
    run.phases[phase_name] = series
    if rounds is not None and round_group is not None:
        run.rounds[phase_name] = group.round_ids(round_group, rounds)
    run.rank_totals[phase_name] = list(rank_totals)


def _pool_phase(group: Group, run: MergedRun, phase_name: str, data: PhaseData, notes: list[str], where: str) -> None:
    old = run.phases.get(phase_name)
    if old is None:
        _first_phase(group, run, phase_name, data.series, data.round_group, data.rounds, data.rank_totals)
        return
    rounds = None
    if data.rounds is not None and data.round_group is not None:
        rounds = group.round_ids(data.round_group, data.rounds)
    new = data.series
    common = [k for k in old if k in new]
    dropped = sorted(set(old) ^ set(new))
    if dropped:
        notes.append(f"{run.group}: {run.id} {phase_name}: series {', '.join(dropped)} not in every pooled "
                     f"trace ({where}); dropped from the pooled phase")
    run.phases[phase_name] = {k: np.concatenate([old[k], new[k]]) for k in common}
    old_rounds = run.rounds.get(phase_name)
    if old_rounds is not None and rounds is not None:
        run.rounds[phase_name] = np.concatenate([old_rounds, rounds])
    elif phase_name in run.rounds:
        del run.rounds[phase_name]
        notes.append(f"{run.group}: {run.id} {phase_name}: pooled with a capture that records no rounds; "
                     "its ratios are resampled unpaired")
    run.rank_totals[phase_name] = run.rank_totals.get(phase_name, []) + list(data.rank_totals)


@dataclass
class _Source:
    """One capture as the report merges it: a single trace, or the rank traces of one distributed capture."""

    paths: list[Path]
    traces: list[Trace]

    @property
    def label(self) -> str:
        if len(self.traces) == 1:
            return f"{self.paths[0].name} (rank {self.traces[0].header['rank']})"
        ranks = ",".join(str(t.header["rank"]) for t in self.traces)
        return f"{self.paths[0].name} +{len(self.paths) - 1} (ranks {ranks}, max over ranks)"


def capture_id(trace: Trace) -> str | None:
    """The id shared by the rank traces of one distributed capture (None for single-process captures)."""
    dist = trace.machine.get("distributed") if trace.machine else None
    if trace.header.get("world_size", 1) > 1 and isinstance(dist, dict) and isinstance(dist.get("capture_id"), str):
        return dist["capture_id"]
    return None


def _sources(traces: list[tuple[Path, Trace]], split_by: str) -> list[_Source]:
    """Group the rank traces of each distributed capture (unless every file is kept apart)."""
    out: list[_Source] = []
    by_capture: dict[str, _Source] = {}
    for path, trace in traces:
        cid = capture_id(trace) if split_by != "trace" else None
        if cid is None:
            out.append(_Source([path], [trace]))
        elif cid in by_capture:
            by_capture[cid].paths.append(path)
            by_capture[cid].traces.append(trace)
        else:
            by_capture[cid] = _Source([path], [trace])
            out.append(by_capture[cid])
    return out


def _source_phases(src: _Source, notes: list[str]) -> dict[str, tuple[object, dict[str, PhaseData]]]:
    """run id -> (the run as first seen, phase -> PhaseData combined over the source's ranks), for a
    source of several rank traces (_add_source pools a single trace's phases as they are)."""
    runs: dict[str, tuple[object, dict[str, PhaseData]]] = {}
    per_rank: dict[str, dict[str, list[PhaseData]]] = {}
    for trace in src.traces:
        for rid, r in trace.runs.items():
            runs.setdefault(rid, (r, {}))
            for pname, phase in r.phases.items():
                per_rank.setdefault(rid, {}).setdefault(pname, []).append(_phase_data(phase))
    for rid, phases in per_rank.items():
        for pname, parts in phases.items():
            if len(parts) < len(src.traces):
                notes.append(f"{src.label}: {rid} {pname} is missing on {len(src.traces) - len(parts)} rank(s); "
                             "combined over the ranks that have it")
            data, note = combine_ranks(parts) if len(parts) > 1 else (parts[0], None)
            if note:
                notes.append(f"{src.label}: {rid} {pname}: {note}")
            runs[rid][1][pname] = data
    return runs


def _read_all(files: list[Path], notes: list[str], jobs: int) -> tuple[list[InputInfo], list[tuple[Path, Trace]]]:
    inputs: list[InputInfo] = []
    kept: list[tuple[Path, Trace]] = []
    seen_ids: dict[str, str] = {}
    for path in files:
        trace = read_trace(path, processes=trace_parts.processes_for(path, jobs))
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
        kept.append((path, trace))
    return inputs, kept


def _add_source(g: Group, src: _Source, notes: list[str]) -> None:
    label = src.label
    g.sources.append(label)
    for trace in src.traces:
        host = str(trace.header.get("hostname", ""))
        if host and host not in g.hosts:
            g.hosts.append(host)
        g.machines.extend(trace.machines)
        if trace.ceilings:
            g.ceilings = trace.latest_ceilings
        g.evidence.extend(trace.engine_evidence)
        g.counter_sources.extend(trace.counter_sources)
        g.errors.extend(dict(e, _trace=label) for e in trace.errors)
        if trace.orphans:
            runs = sorted({o["run"] for o in trace.orphans})
            notes.append(f"{label}: {len(trace.orphans)} counters/validation records name runs without timed phases "
                         f"({', '.join(runs[:3])}{' ...' if len(runs) > 3 else ''}); ignored")
    # ``_trace`` names the file a record came from (``source`` is a counters field already).
    where = {id(trace): f"{Path(trace.path).name} (rank {trace.header['rank']})" for trace in src.traces}
    single = len(src.traces) == 1   # nothing to combine over ranks: its phases pooled as they are
    seen = _SourceMemo()
    runs = ((rid, r, None) for rid, r in src.traces[0].runs.items()) if single else \
        ((rid, r, phases) for rid, (r, phases) in _source_phases(src, notes).items())
    for rid, r, combined in runs:
        run = g.runs.get(rid)
        if run is None:
            run = g.runs[rid] = MergedRun(id=rid, group=g.key, scenario=r.scenario, strategy=r.strategy,
                                          variant=r.variant, params=r.params)
            order = g.variant_order.setdefault(r.strategy, [])
            if r.variant not in order:
                order.append(r.variant)
        elif _definition(run.scenario, run.params) != _definition(r.scenario, r.params):
            raise C3profError(f"{label}: run {rid} differs from the same run in {', '.join(run.sources)} "
                              f"(GEMM, communication or transport); cannot pool them: use --split-by trace")
        run.sources.append(label)
        # Every visit of a phase (--visits) pools into the phase; its rounds keep their own sweep.
        if combined is None:
            for key, phase in r.phases.items():
                _pool_trace_phase(g, run, split_phase_key(key)[0], phase, seen, notes, label)
        else:
            for key, data in combined.items():
                _pool_phase(g, run, split_phase_key(key)[0], data, notes, label)
        for trace in src.traces:
            tr = trace.runs.get(rid)
            if tr is None:
                continue
            for records, into in ((tr.validations, run.validations), (tr.counters, run.counters),
                                  (tr.errors, run.errors)):
                if records:   # most runs have none of some kinds: no generator made for those
                    into.extend(dict(rec, _trace=where[id(trace)]) for rec in records)


def load(paths: list[str], split_by: str = "platform", jobs: int = 1) -> Dataset:
    """Read every trace (raising TraceError with file and line on bad input) and merge into groups.
    ``jobs``: report's -j (-1: auto): a large trace may be read in two processes (trace_parts.py)."""
    with gc_paused():   # reading and merging make many objects and no cycle (see gc_paused)
        return _load(paths, split_by, jobs)


def _load(paths: list[str], split_by: str, jobs: int) -> Dataset:
    if split_by not in SPLIT_MODES:
        raise C3profError(f"--split-by must be one of {', '.join(SPLIT_MODES)}, got {split_by!r}")
    files = expand_paths(paths)
    if not files:
        raise C3profError("no trace files given")
    notes: list[str] = []
    inputs, traces = _read_all(files, notes, jobs)
    info_by_path = {i.path: i for i in inputs if i.skipped is None}
    groups: dict[str, Group] = {}
    devices: dict[str, set[frozenset[str]]] = {}
    for src in _sources(traces, split_by):
        first = src.traces[0]
        gpu = gpu_name(first.machine)
        key = _group_key(split_by, gpu, first.header, src.paths[0])
        for path in src.paths:
            info_by_path[str(path)].group = key
        _add_source(groups.setdefault(key, Group(key=key, gpu_name=gpu)), src, notes)
        devices.setdefault(key, set()).add(frozenset(str((t.machine or {}).get("gpu", {}).get("uuid", "?"))
                                                     for t in src.traces))
    notes.extend(_several_devices_notes(devices))
    del traces  # keep memory linear: only the numpy copies of the samples stay
    return Dataset(inputs=inputs, groups=list(groups.values()), notes=notes, split_by=split_by)


def _several_devices_notes(devices: dict[str, set[frozenset[str]]]) -> list[str]:
    """A note per group that pools captures taken on different physical GPUs (by UUID): two H200s
    differ (GEMMs by about 2%, small PCIe copies by up to 20% on the committed captures), and the
    pool then reads those differences as differences between visits."""
    notes = []
    for key, sets in devices.items():
        known = {s for s in sets if "?" not in s}
        if len(known) > 1:
            notes.append(f"{key}: pools captures from {len(known)} different GPUs (by UUID): differences between "
                         "the devices enter the intervals as differences between visits; --split-by trace reports "
                         "each capture on its own")
    return notes


def display_path(path: str) -> str:
    """Paths relative to the working directory when shorter (reports stay readable and portable)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if len(rel) < len(path) else path
