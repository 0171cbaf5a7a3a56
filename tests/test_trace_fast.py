"""read_trace's fast path for phase records (c3prof/trace_fast.py) accepts only what validate_record
accepts, and a trace it doubts reads to the same Trace or the same error as the record-by-record
checks. Also: garbage collection is paused while reading and restored after.

The edited records and traces are SYNTHETIC: phase records of tests/data/synthetic_small.jsonl with
one field changed.
"""

from __future__ import annotations

import copy
import gc
import json
from pathlib import Path

import pytest

from c3prof import trace
from c3prof.errors import TraceError
from c3prof.trace_fast import PlainPhases
from c3prof.trace_samples import SampleBatch

try:
    from c3prof._trace_read import PhaseAcceptor
except ImportError:   # a checkout whose extensions were not built: the Python version alone
    PhaseAcceptor = None
# The fast path's two versions: the Python reference and the compiled one read_trace uses when built.
ACCEPTORS = [PlainPhases] + ([PhaseAcceptor] if PhaseAcceptor is not None else [])

orjson = pytest.importorskip("orjson")   # the fast path runs with orjson only (trace._records_of)

DATA = Path(__file__).parent / "data"
SYNTHETIC = DATA / "synthetic_small.jsonl"
LINES = SYNTHETIC.read_text().splitlines()
PHASE_LINES = [i for i, line in enumerate(LINES) if json.loads(line)["record"] == "phase"]


def _batch() -> SampleBatch:
    return SampleBatch(frozenset(trace.POSITIVE_SERIES), trace.MIN_DURATION_MS, trace.MAX_MS)


def _set(key, value):
    def change(rec):
        rec[key] = value
    return change


def _drop(key):
    return lambda rec: rec.pop(key)


def _in(part, key, value):
    def change(rec):
        rec[part][key] = value
    return change


def _scenario(key, value, part=None):
    def change(rec):
        (rec["scenario"][part] if part else rec["scenario"])[key] = value
    return change


def _samples(change_samples):
    def change(rec):
        change_samples(rec["samples"], len(rec["samples"]["total_ms"]))
    return change


# Each changes one field of a valid phase record; most make it invalid, a few keep it valid.
CHANGES = {
    **{f"no {k}": _drop(k) for k in ("run", "scenario", "strategy", "variant", "params", "phase", "samples", "stop")},
    **{f"{k} as int": _set(k, 3) for k in ("run", "strategy", "variant", "phase")},
    **{f"{k} as list": _set(k, []) for k in ("scenario", "params", "samples", "stop")},
    "record null": _set("record", None), "phase bogus": _set("phase", "warmup"),
    "visit 0": _set("visit", 0), "visit 101": _set("visit", 101), "visit true": _set("visit", True),
    "visit 1.0": _set("visit", 1.0), "visit '2'": _set("visit", "2"), "visit 2": _set("visit", 2),
    "visit null": _set("visit", None),
    "rounds short": _set("rounds", [0]), "rounds bool": lambda r: r.__setitem__("rounds", [True] * len(r["rounds"])),
    "rounds negative": lambda r: r.__setitem__("rounds", [-1] * len(r["rounds"])),
    "rounds huge": lambda r: r.__setitem__("rounds", [2**31] * len(r["rounds"])),
    "rounds float": lambda r: r.__setitem__("rounds", [0.0] * len(r["rounds"])),
    "rounds dict": _set("rounds", {}), "rounds null": _set("rounds", None), "no rounds": _drop("rounds"),
    "round_group int": _set("round_group", 5), "round_group null": _set("round_group", None),
    "total_ms missing": _samples(lambda s, n: s.pop("total_ms")),
    "total_ms empty": _samples(lambda s, n: s.update(total_ms=[])),
    "total_ms dict": _samples(lambda s, n: s.update(total_ms={"a": 1.0})),
    "unknown series": _samples(lambda s, n: s.update(bogus_ms=[1.0] * n)),
    "series short": _samples(lambda s, n: s.update(gemm_ms=[1.0] * (n - 1))),
    "series bool": _samples(lambda s, n: s.update(gemm_ms=[True] * n)),
    "sample negative": _samples(lambda s, n: s["total_ms"].__setitem__(0, -1.0)),
    "sample int": _samples(lambda s, n: s["total_ms"].__setitem__(0, 1)),
    "extra series ok": _samples(lambda s, n: s.update(comm_start_ms=[0] * n)),
    "scenario name bad": _scenario("name", "a b/c"), "scenario no gemm": lambda r: r["scenario"].pop("gemm"),
    "scenario m float": _scenario("m", 4096.0, "gemm"), "scenario m true": _scenario("m", True, "gemm"),
    "scenario weight int": _scenario("weight", 1), "scenario extra field": _scenario("future", [1, 2]),
    "scenario link bad": _scenario("link", "a b", "comm"), "scenario chunk 0": _scenario("chunk", 0, "comm"),
    "run id mismatch": _set("run", "other/base/default"), "strategy bad name": _set("strategy", "a b"),
    "params extra": _in("params", "x", [1, {"y": None}]), "stop extra": _in("stop", "why", "noise"),
}


@pytest.mark.parametrize("acceptor", ACCEPTORS)
@pytest.mark.parametrize("name", list(CHANGES))
def test_fast_path_accepts_only_what_validate_record_accepts(name, acceptor):
    """Accepted by the fast path => accepted by validate_record, with the same samples taken."""
    for index in PHASE_LINES[:3]:
        rec = json.loads(LINES[index])
        CHANGES[name](rec)
        fast, batch = acceptor(_batch(), trace._phase_rules(orjson)), _batch()
        taken = fast.accept(copy.deepcopy(rec))
        try:
            trace.validate_record(copy.deepcopy(rec), plain_text=True, batch=batch)
        except TraceError:
            assert not taken, f"the fast path accepted what validate_record refuses ({name})"


@pytest.mark.parametrize("acceptor", ACCEPTORS)
def test_fast_path_takes_every_valid_phase_of_the_committed_traces(acceptor):
    """It is not a path that never runs: every phase record of the real traces goes through it."""
    for path in sorted(DATA.glob("*.jsonl")):
        fast = acceptor(_batch(), trace._phase_rules(orjson))
        phases = [rec for _, rec in trace.iter_records(path) if rec["record"] == "phase"]
        assert phases and all(fast.accept(json.loads(json.dumps(rec))) for rec in phases), path.name


def _plain(value):
    if hasattr(value, "tolist"):
        return ("array", value.dtype.str, value.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _contents(t: trace.Trace):
    return (t.header, t.machines, t.ceilings, t.engine_evidence, t.counter_sources, t.errors, t.ends, t.orphans,
            [(rid, r.scenario, r.strategy, r.variant, r.params, r.validations, r.counters, r.errors, r.source,
              [(k, p.name, _plain(p.samples), p.stop, _plain(p.record)) for k, p in r.phases.items()])
             for rid, r in t.runs.items()])


def _outcome(read, path):
    try:
        return "trace", _contents(read(path))
    except TraceError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("name", list(CHANGES))
@pytest.mark.parametrize("which", ["first", "later"])
def test_a_changed_phase_record_reads_as_with_the_exact_checks(tmp_path, name, which):
    """The whole trace, read by read_trace (fast path, batch) and record by record: same Trace or
    same error. "later": a phase of a run whose identity the fast path has already seen."""
    lines = list(LINES)
    index = PHASE_LINES[0] if which == "first" else PHASE_LINES[1]
    rec = json.loads(lines[index])
    CHANGES[name](rec)
    lines[index] = json.dumps(rec)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert _outcome(trace.read_trace, path) == _outcome(lambda p: trace._read_records(p, trace.iter_records(p), None), path)


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_committed_traces_read_as_with_the_exact_checks(path):
    assert _outcome(trace.read_trace, path) == _outcome(lambda p: trace._read_records(p, trace.iter_records(p), None), path)


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_pauses_garbage_collection_and_restores_it(tmp_path, enabled):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(LINES[0] + "\n" + "{not json\n")
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        seen = []
        with trace.gc_paused():
            seen.append(gc.isenabled())
        assert seen == [False] and gc.isenabled() is enabled
        trace.read_trace(SYNTHETIC)
        assert gc.isenabled() is enabled
        with pytest.raises(TraceError):
            trace.read_trace(bad)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_repeated_dicts_are_kept_once():
    """A run's phases share its scenario, params and stop dicts when their JSON is the same (memory);
    the contents are the exact read's (test_committed_traces_read_as_with_the_exact_checks)."""
    t = trace.read_trace(SYNTHETIC)
    for run in t.runs.values():
        for phase in run.phases.values():
            assert phase.record["scenario"] is run.scenario and phase.record["params"] is run.params
    stops = [p.stop for r in t.runs.values() for p in r.phases.values()]
    assert len({id(s) for s in stops}) == len({json.dumps(s) for s in stops}) < len(stops)


def test_text_kind_is_the_two_text_checks():
    """trace._text_kind shares the work of _is_simple_json and _is_plain_json and gives what they give."""
    import random
    pieces = [b'{"a":', b"[", b"{", b"]", b"}", b"1.5", b"0." + b"1" * 18, b"9" * 19, b"7" * 300, b"1e400", b"2E+300",
              b"3e-300", b"4e99", b"\\u0000", b"\\n", b'"x"', b",", b"-12345678901234567890"]
    rng = random.Random(0)
    for _ in range(3000):
        raw = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 24))) + b"\n"
        digits = raw.translate(trace._DIGITS_AS_ZERO)
        assert trace._text_kind(raw) == (trace._is_simple_json(raw, digits), trace._is_plain_json(raw)), raw


@pytest.mark.skipif(PhaseAcceptor is None, reason="the compiled reader (c3prof._trace_read) is not built")
@pytest.mark.parametrize("name", list(CHANGES) + ["rounds beyond 64 bits"])
def test_compiled_acceptor_gives_the_python_verdicts(name):
    """PhaseAcceptor (compiled) and PlainPhases (Python) take the same records and leave them alike."""
    change = CHANGES.get(name) or (lambda r: r.__setitem__("rounds", [2**70] * len(r["rounds"])))
    for index in PHASE_LINES[:3]:
        rec = json.loads(LINES[index])
        change(rec)
        results = []
        for acceptor in (PlainPhases, PhaseAcceptor):
            batch, mine = _batch(), copy.deepcopy(rec)
            taken = acceptor(batch, trace._phase_rules(orjson)).accept(mine)
            results.append((taken, mine if not taken else json.dumps(mine, sort_keys=True), batch.check()))
        assert results[0] == results[1], name


@pytest.mark.parametrize("acceptor", ACCEPTORS, ids=lambda a: a.__module__)
def test_repeated_names_and_round_lists_are_kept_once(acceptor):
    """Equal run ids, strategies, variants, phases, round groups and round lists of the accepted
    records are one object each (a child's part then pickles each once: trace_parts.py); the
    values are the ones read."""
    lines = (DATA / "h200_default_1.jsonl").read_text().splitlines()
    phases = acceptor(_batch(), trace._phase_rules(orjson))
    accepted = []
    for line in lines:
        rec = orjson.loads(line)
        exact = json.loads(line)
        if phases.accept(rec):
            accepted.append(rec)
            assert {k: v for k, v in rec.items() if k != "samples"} == \
                {k: v for k, v in exact.items() if k != "samples"}
    assert len(accepted) > 20 and all("rounds" in rec for rec in accepted)
    for key in ("run", "strategy", "variant", "phase", "round_group", "rounds"):
        values = [rec[key] for rec in accepted]
        assert len({id(v) for v in values}) == len({json.dumps(v) for v in values}) < len(values), key
