"""The c3prof trace: one versioned schema, written append-only, read with validation.

A trace is a JSON Lines file: one JSON object per line, each with a ``record`` field naming its
type. The first line is the ``header``. Records are appended (and flushed to disk) as soon as a
measurement completes, so a capture that is killed keeps everything it finished, and
``c3prof capture --resume`` appends to the same file. docs/trace-format.md documents every field.

Record types (format version 1):

========================  =====================================================================
``header``                format, version, writer, rank/world size, command line
``machine``               GPU, versions, clocks at start; one per capture session (resume adds one)
``ceilings``              measured peak GEMM FLOP/s per dtype and copy bandwidths (the taxonomy's balance)
``engine_evidence``       which engine carried a transport (copy engine or SMs) and the measurement behind it
``phase``                 all repetitions of one phase (gemm, comm, serial, concurrent) of one run
``validation``            byte-exact check of a run's transfer after its timed repetitions
``counters``              hardware counters of one phase (per-phase totals or time series)
``counter_source``        whether a counter source (ncu, nvml_gpm) ran here, and if not, why
``error``                 a run that failed (out of memory, CUDA error): what failed, nothing dropped
``end``                   the capture session finished or was interrupted; clocks at end
========================  =====================================================================

A *run* is one (scenario, strategy, variant); its id is ``"<scenario>/<strategy>/<variant>"``.
Times are milliseconds from CUDA events.
"""

from __future__ import annotations

import gc
import importlib
import json
import math
import os
import re
import socket
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generator, Iterable, Iterator

from c3prof import __version__, trace_parts
from c3prof.errors import ScenarioError, TraceError
from c3prof.inputs import TRACE_MAX_BYTES, check_input_file, foreign_kind
from c3prof.scenarios import Scenario, check_name
from c3prof.trace_fast import PhaseRules, PlainPhases

try:  # the reader's text scan and sample columns in C (_trace_read.pyx); the Python ones when not built
    from c3prof import _trace_read
except ImportError:
    _trace_read = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import numpy as np

    from c3prof.trace_samples import Samples


def _optional_orjson() -> Any:
    """orjson when installed (the `fast` extra: parses records faster, into the same values,
    parse_record), else None. Imported by name so type checking reads the same with or without it."""
    try:
        return importlib.import_module("orjson")
    except ImportError:
        return None


_orjson: Any = _optional_orjson()

FORMAT = "c3prof-trace"
VERSION = 1
PHASES = ("gemm", "comm", "serial", "concurrent")
# Per-repetition series a phase may carry (all in ms). ``total_ms`` is the phase's time:
# T_g, T_c, T_s or T_cc. Starts are offsets from the repetition's start event.
SERIES = ("total_ms", "gemm_ms", "comm_ms", "gemm_start_ms", "comm_start_ms")
# Series that are durations and must be positive; starts may be zero.
POSITIVE_SERIES = ("total_ms", "gemm_ms", "comm_ms")
CARRIERS = ("copy_engine", "sm", "unknown")


def run_id(scenario: str, strategy: str, variant: str) -> str:
    return f"{scenario}/{strategy}/{variant}"


# ------------------------------------------------------------------------------------------------
# Schema: required fields and their types per record. Checked on read (and by the writer's tests).
# ------------------------------------------------------------------------------------------------

_REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "header": {"format": str, "version": int, "c3prof_version": str, "created_utc": str, "trace_id": str,
               "rank": int, "world_size": int},
    "machine": {"gpu": dict, "versions": dict, "clocks_start": dict},
    "ceilings": {"gemm_flops_per_s": dict, "copy_bytes_per_s": dict},
    "engine_evidence": {"transport": str, "carrier": str, "method": str},
    "phase": {"run": str, "scenario": dict, "strategy": str, "variant": str, "params": dict, "phase": str,
              "samples": dict, "stop": dict},
    "validation": {"run": str, "transport": str, "bytes_checked": int, "mismatched_bytes": int, "ok": bool},
    "counters": {"run": str, "phase": str, "source": str, "metrics": dict},
    "counter_source": {"source": str, "available": bool},
    "error": {"message": str},
    "end": {"status": str},
}


def _fail(path, lineno, msg) -> TraceError:
    return TraceError(f"{path}: line {lineno}: {msg}")


# Bounds of the numbers the analysis divides, multiplies and bootstraps. Durations are CUDA-event
# milliseconds: the events resolve about 0.5 us, and no phase repetition lasts a day, so a value
# outside [1 ns, 10^8 ms] is a corrupt file, and a denormal would overflow a ratio to infinity.
MIN_DURATION_MS = 1e-6
MAX_MS = 1e8
MAX_COUNT = 2**62  # byte and counter totals; keeps every sum inside float and int64 range
MAX_VALUE = 1e30   # any other stored number (counter values, ceilings)
MIN_COUNTER_VALUE = 1e-12  # counters count bytes, sectors, cycles, ns or percent: a nonzero value is never tinier
MAX_DEPTH = 16     # nesting of objects and lists; real records use 4
MAX_WORLD_SIZE = 1 << 20


def _check_number(x, where, path, lineno, positive=False, lo=None, hi=MAX_VALUE):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise _fail(path, lineno, f"{where} must be a finite number, got {_short(x)}")
    if (positive or (lo is not None and lo > 0)) and x <= 0:
        raise _fail(path, lineno, f"{where} must be positive, got {x!r}")
    if (lo is not None and x < lo) or x > hi or x < -hi:
        raise _fail(path, lineno, f"{where} = {x!r} is out of range [{lo if lo is not None else -hi:g}, {hi:g}]")


_NUMBER_TYPES = {float, int}


def _numbers_in_range(values: list, lo: float, hi: float) -> bool:
    """True when ``values`` is a non-empty list of finite numbers in [lo, hi] (bools refused),
    checked with C-speed built-ins."""
    if values and set(map(type, values)) <= _NUMBER_TYPES:
        try:
            total = math.fsum(values)
        except (OverflowError, ValueError):
            total = math.inf
        return math.isfinite(total) and min(values) >= lo and max(values) <= hi
    return False


def _check_numbers(values: list, where, path, lineno, lo: float, hi: float) -> None:
    """Every element a finite number in [lo, hi] (bools refused). The common all-good list is checked
    with C-speed built-ins; otherwise each element is looked at, to name the bad one."""
    if _numbers_in_range(values, lo, hi):
        return
    for v in values:
        _check_number(v, where, path, lineno, lo=lo, hi=hi)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_values(obj, path, lineno, where: str, depth: int = 0) -> None:
    """Every number finite, every string valid Unicode without NUL, nesting bounded (the whole record)."""
    if depth > MAX_DEPTH:
        raise _fail(path, lineno, f"{where}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise _fail(path, lineno, f"{where}: number out of range ({obj!r})")
    elif isinstance(obj, str):
        if _BAD_TEXT.search(obj):
            raise _fail(path, lineno, f"{where}: text holds a NUL or a lone surrogate (not valid Unicode)")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if _BAD_TEXT.search(k):
                raise _fail(path, lineno, f"{where}: a key holds a NUL or a lone surrogate")
            _check_values(v, path, lineno, f"{where}.{k}"[:200], depth + 1)
    elif isinstance(obj, list):
        try:
            total = math.fsum(obj)  # a list of numbers (the common case) checked at C speed
        except (TypeError, ValueError, OverflowError):
            total = None  # not all numbers, or inf - inf, or an overflowing sum: look at each
        if total is not None and math.isfinite(total):
            return
        for v in obj:
            _check_values(v, path, lineno, where, depth + 1)


_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
# What in a record's JSON text could make _check_values fail: a \u escape (the only way a NUL or a
# lone surrogate gets past the UTF-8 decoder and the JSON parser), or a number that may overflow to
# inf (a three-digit exponent or a 300-digit mantissa). Matching is conservative: a match only means
# the full walk runs. The number patterns are searched as substrings of the text with every digit
# made '0', 'E' made 'e' and '+' made '-' (bytes.translate): the same matches as the regular
# expressions [eE][+-]?\d{3} and \d{300}, at a fraction of their cost (a regex tries a match at every
# digit of every sample).
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789E+", b"0000000000e-")
_BIG_EXPONENTS = (b"e000", b"e-000")
_LONG_NUMBER = b"0" * 300
# Every integer of fewer digits fits in an int64 (parse_record's orjson condition).
_INT64_DIGITS = b"0" * 19


def _is_simple_json(raw: bytes, digits: bytes) -> bool:
    """parse_record's ``simple``: no integer beyond 64 bits (a run of 19 digits), at most MAX_DEPTH
    brackets. ``digits``: ``raw.translate(_DIGITS_AS_ZERO)``."""
    return _INT64_DIGITS not in digits and raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH


def _is_plain_json(raw: bytes, digits: bytes | None = None) -> bool:
    """True when the record text ``raw`` cannot fail _check_values: no suspicious escape or number,
    and fewer brackets than the nesting limit (so no value can be nested deeper than it).
    ``digits``: ``raw.translate(_DIGITS_AS_ZERO)``, when the caller has it already."""
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH or b"\\u" in raw:
        return False
    if digits is None:
        digits = raw.translate(_DIGITS_AS_ZERO)
    return _LONG_NUMBER not in digits and _BIG_EXPONENTS[0] not in digits and _BIG_EXPONENTS[1] not in digits


def _text_kind(raw: bytes, max_depth: int = MAX_DEPTH) -> tuple[bool, bool]:
    """(_is_simple_json, _is_plain_json) of a record's text, sharing their work: the text translated
    once, and brackets counted once. With no run of 19 digits there is no run of 300 either.
    (``max_depth`` is MAX_DEPTH; the reader calls _trace_read.text_kind, the same scan in C, when built.)"""
    if raw.count(b"[") + raw.count(b"{") > max_depth:
        return False, False
    digits = raw.translate(_DIGITS_AS_ZERO)
    if _INT64_DIGITS in digits:
        return False, _is_plain_json(raw, digits)
    return True, b"\\u" not in raw and _BIG_EXPONENTS[0] not in digits and _BIG_EXPONENTS[1] not in digits


def _check_types(rec: dict, kind: str, path, lineno) -> None:
    for key, typ in _REQUIRED[kind].items():
        if key not in rec:
            raise _fail(path, lineno, f"{kind} record lacks '{key}'")
        if not isinstance(rec[key], typ) or (typ is int and isinstance(rec[key], bool)):
            raise _fail(path, lineno, f"{kind}.{key} has type {type(rec[key]).__name__}")
    for key, typ in _OPTIONAL.get(kind, {}).items():
        if key in rec and rec[key] is not None and (not isinstance(rec[key], typ) or isinstance(rec[key], bool)):
            raise _fail(path, lineno, f"{kind}.{key} has type {type(rec[key]).__name__}")


# Optional fields the analysis reads, and their types (null allowed).
_OPTIONAL: dict[str, dict[str, type | tuple[type, ...]]] = {
    "header": {"hostname": str, "command": list},
    "error": {"run": str, "phase": str},
    "counters": {"series": dict, "perturbation": (int, float)},
    "phase": {"rounds": list, "round_group": str, "visit": int},
}
MAX_ROUND = 2**31 - 1


def validate_record(rec: dict, path="<trace>", lineno=0, plain_text: bool = False,
                    batch: Samples | None = None) -> None:
    """Raise TraceError if ``rec`` does not follow the schema of its record type.

    ``plain_text``: the caller saw in the record's JSON text that it cannot hold what _check_values
    looks for (see _is_plain_json), so that walk over every value is skipped. ``batch``: a phase
    record's sample values are left to it (trace_samples.py); the caller must check it."""
    kind = rec.get("record")
    if not isinstance(kind, str) or kind not in _REQUIRED:
        raise _fail(path, lineno, f"unknown record type {_short(kind)}")
    _check_types(rec, kind, path, lineno)
    if not plain_text:
        _check_values({k: v for k, v in rec.items() if k != "samples"}, path, lineno, kind)
    if kind == "phase":
        _validate_phase(rec, path, lineno, batch)
    else:
        _VALIDATORS.get(kind, lambda *a: None)(rec, path, lineno)


def _validate_header(rec, path, lineno) -> None:
    if rec["format"] != FORMAT:
        raise _fail(path, lineno, f"not a c3prof trace (format {_short(rec['format'])})")
    if not 1 <= rec["world_size"] <= MAX_WORLD_SIZE or not 0 <= rec["rank"] < rec["world_size"]:
        raise _fail(path, lineno, f"header rank {rec['rank']} / world_size {rec['world_size']} out of range")


# Run identities (scenario text, strategy, variant, run id) already found valid. A run's four phase
# records repeat the same identity, and parsing the scenario was a fifth of reading a large trace.
# repr (not ==) keys it, so 1 and 1.0 or True stay apart; bounded, as a trace may hold many runs.
_VALID_IDENTITIES: set[tuple[str, str, str, str]] = set()
_MAX_VALID_IDENTITIES = 4096


def _validate_phase(rec, path, lineno, batch: Samples | None = None) -> None:
    if rec["phase"] not in PHASES:
        raise _fail(path, lineno, f"unknown phase {_short(rec['phase'])} (known: {', '.join(PHASES)})")
    visit = rec.get("visit")
    if visit is not None and not 1 <= visit <= MAX_VISITS:
        raise _fail(path, lineno, f"phase visit must be between 1 and {MAX_VISITS}, got {_short(visit)}")
    identity = (repr(rec["scenario"]), repr(rec["strategy"]), repr(rec["variant"]), repr(rec["run"]))
    if identity not in _VALID_IDENTITIES:
        _validate_run_identity(rec, path, lineno, identity[0])
        if len(_VALID_IDENTITIES) >= _MAX_VALID_IDENTITIES:
            _VALID_IDENTITIES.clear()
        _VALID_IDENTITIES.add(identity)
    _validate_samples(rec, path, lineno, batch)


def _validate_run_identity(rec, path, lineno, scenario_text: str | bytes) -> None:
    """The phase's scenario, strategy and variant are valid, and its run id is the one they name.
    ``scenario_text``: the scenario's repr, or its exact JSON (trace_fast: both tell 1, 1.0 and
    true apart), which keys the cache of scenarios found valid."""
    try:
        name = _valid_scenario_name(rec["scenario"], scenario_text)
        for field_name in ("strategy", "variant"):
            check_name(rec[field_name], f"phase.{field_name}")
    except ScenarioError as exc:
        raise _fail(path, lineno, str(exc)) from None
    if rec["run"] != run_id(name, rec["strategy"], rec["variant"]):
        raise _fail(path, lineno, f"run id {_short(rec['run'])} does not match its scenario/strategy/variant")


# Scenarios already found valid (keyed by repr, as _VALID_IDENTITIES, or by exact JSON, as trace_fast),
# and their names: the runs of a scenario (one per strategy and variant) repeat it, and parsing it was
# most of checking a new run.
_VALID_SCENARIOS: dict[str | bytes, str] = {}


def _valid_scenario_name(scenario: dict, text: str | bytes) -> str:
    """The name of a valid phase scenario (ScenarioError if it is not valid); ``text`` is its repr
    (or its exact JSON: bytes, so the two kinds of key never meet)."""
    name = _VALID_SCENARIOS.get(text)
    if name is None:
        name = Scenario.from_dict(_known_scenario_fields(scenario), "phase.scenario", capture_rules=False).name
        _check_transfer_fields(scenario["comm"], "phase.scenario")
        if len(_VALID_SCENARIOS) >= _MAX_VALID_IDENTITIES:
            _VALID_SCENARIOS.clear()
        _VALID_SCENARIOS[text] = name
    return name


def _known_scenario_fields(d: dict) -> dict:
    """The scenario fields c3prof knows, for validation; a newer writer's extra fields are ignored
    (as extra record fields are), while every known field must hold a valid value."""
    out = {k: v for k, v in d.items() if k in _SCENARIO_FIELDS}
    for part in ("gemm", "comm"):
        if isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if k in _SCENARIO_FIELDS[part]}
    return out


_SCENARIO_FIELDS = {"name": (), "tags": (), "description": (), "weight": (),
                    "gemm": ("m", "n", "k", "dtype"), "comm": ("op", "bytes", "duration_us")}


def _check_transfer_fields(comm: dict, where: str) -> None:
    """``link`` and ``chunk`` of a trace's scenario: the report prints the link, so it must be a valid
    name; the capture-time rules (known links, chunk divides bytes) belong to scenario files, so a
    trace from another c3prof version is still readable."""
    if comm.get("link") is not None:
        check_name(comm["link"], f"{where}.comm.link")
    chunk = comm.get("chunk")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or not 0 < chunk <= 2**40):
        raise ScenarioError(f"{where}.comm.chunk must be a positive byte count, got {_short(chunk)}")


MAX_VISITS = 100


def phase_key(phase: str, visit: int | None = None) -> str:
    """How a run's phases are keyed: ``gemm`` for the first visit, ``gemm@visit2`` for the second..."""
    return phase if not visit or visit == 1 else f"{phase}@visit{visit}"


def split_phase_key(key: str) -> tuple[str, int]:
    """``gemm@visit2`` -> (``gemm``, 2); ``gemm`` -> (``gemm``, 1)."""
    phase, _, visit = key.partition("@visit")
    return phase, int(visit) if visit else 1


def _validate_rounds(rec, n: int, path, lineno) -> None:
    """``rounds``: each repetition's batch index within ``round_group`` (the analysis pairs by it)."""
    rounds = rec.get("rounds")
    if rounds is None:
        return
    if len(rounds) != n:
        raise _fail(path, lineno, f"phase rounds must be a list of {n} integers, one per repetition")
    if set(map(type, rounds)) == {int} and 0 <= min(rounds) and max(rounds) <= MAX_ROUND:
        return  # the common all-good list, checked at C speed; otherwise find the bad one below
    for r in rounds:
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= MAX_ROUND:
            raise _fail(path, lineno, f"phase rounds must be integers in [0, {MAX_ROUND}], got {_short(r)}")


def _plain_samples(samples: dict, n: int) -> bool:
    """True when every series is a known one, a list of ``n`` numbers within its range: what the
    checks below find, tested on all the series of a range at once (a large trace has 10^5 series)."""
    positive: list = []
    other: list = []
    for name, values in samples.items():
        if type(values) is not list or len(values) != n or name not in SERIES:
            return False
        (positive if name in POSITIVE_SERIES else other).extend(values)
    return _numbers_in_range(positive, MIN_DURATION_MS, MAX_MS) and (not other or _numbers_in_range(other, 0.0, MAX_MS))


def _validate_samples(rec, path, lineno, batch: Samples | None = None) -> None:
    samples = rec["samples"]
    total = samples.get("total_ms")
    if not isinstance(total, list):
        raise _fail(path, lineno, "phase samples lack a 'total_ms' list")
    n = len(total)
    if n == 0:
        raise _fail(path, lineno, f"phase {rec['run']}:{rec['phase']} has no samples")
    if (batch is not None and batch.add(samples, n, SERIES)) or _plain_samples(samples, n):
        _validate_rounds(rec, n, path, lineno)
        return
    for name, values in samples.items():  # something is wrong: find the first problem, and name it
        if name not in SERIES:
            raise _fail(path, lineno, f"unknown sample series {_short(name)}")
        if not isinstance(values, list) or len(values) != n:
            raise _fail(path, lineno, f"series {name} must be a list of {n} numbers")
        lo = MIN_DURATION_MS if name in POSITIVE_SERIES else 0.0
        _check_numbers(values, f"{rec['run']}:{rec['phase']}:{name}", path, lineno, lo, MAX_MS)
    _validate_rounds(rec, n, path, lineno)


def _phase_rules(orjson: Any) -> PhaseRules:
    """The phase rules above, for the fast path (trace_fast.PlainPhases)."""
    return PhaseRules(phases=PHASES, series=SERIES, max_visits=MAX_VISITS, max_round=MAX_ROUND,
                      check_identity=lambda rec, scenario_json: _validate_run_identity(rec, "", 0, scenario_json),
                      dumps=orjson.dumps)


def _validate_validation(rec, path, lineno) -> None:
    if not 0 < rec["bytes_checked"] <= MAX_COUNT or not 0 <= rec["mismatched_bytes"] <= rec["bytes_checked"]:
        raise _fail(path, lineno, "validation byte counts out of range")
    if rec["ok"] != (rec["mismatched_bytes"] == 0):
        raise _fail(path, lineno, "validation 'ok' disagrees with its mismatched_bytes")


def _validate_ceilings(rec, path, lineno) -> None:
    for group in ("gemm_flops_per_s", "copy_bytes_per_s"):
        for name, entry in rec[group].items():
            if not isinstance(entry, dict) or "value" not in entry:
                raise _fail(path, lineno, f"ceilings.{group}.{name} needs a 'value'")
            # At least 1 FLOP/s or B/s: a tinier ceiling overflows the machine balance to infinity.
            _check_number(entry["value"], f"ceilings.{group}.{name}.value", path, lineno, lo=1.0)


def _validate_counters(rec, path, lineno) -> None:
    if rec["phase"] not in PHASES:
        raise _fail(path, lineno, f"counters: unknown phase {_short(rec['phase'])}")
    for name, entry in rec["metrics"].items():
        if not isinstance(entry, dict) or "value" not in entry:
            raise _fail(path, lineno, f"counters.metrics.{_short(name)} needs a 'value'")
        value = entry["value"]
        _check_number(value, f"counters.metrics.{name}.value", path, lineno, lo=0.0)
        if 0 < value < MIN_COUNTER_VALUE:  # a denormal total overflows the ratios built from it
            raise _fail(path, lineno, f"counters.metrics.{name}.value = {value!r} is out of range "
                                      f"(0 or at least {MIN_COUNTER_VALUE:g})")
    if rec.get("perturbation") is not None:
        _check_number(rec["perturbation"], "counters.perturbation", path, lineno, positive=True)
    for name, values in (rec.get("series") or {}).items():
        if not isinstance(values, list):
            raise _fail(path, lineno, f"counters.series.{_short(name)} must be a list of numbers")
        _check_numbers(values, f"counters.series.{name}", path, lineno, 0.0, MAX_VALUE)


def _validate_engine_evidence(rec, path, lineno) -> None:
    if rec["carrier"] not in CARRIERS:
        raise _fail(path, lineno, f"carrier must be one of {', '.join(CARRIERS)}, got {_short(rec['carrier'])}")


_VALIDATORS = {"header": _validate_header, "phase": _validate_phase, "validation": _validate_validation,
               "ceilings": _validate_ceilings, "counters": _validate_counters,
               "engine_evidence": _validate_engine_evidence}


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------

class TraceWriter:
    """Append records to a trace, one flushed-and-fsynced line each.

    Opening an existing trace for resume first checks it, and drops a final line that an
    interrupted write left incomplete (saying so), so the file stays valid.
    """

    def __init__(self, path: str | Path, *, resume: bool = False, rank: int = 0, world_size: int = 1,
                 command: list[str] | None = None, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        self.repaired_bytes = 0
        self.existing: Trace | None
        if resume and self.path.exists() and self.path.stat().st_size > 0:
            # Validate everything first; only then repair (a torn last line) and append.
            self.existing, tail = read_for_resume(self.path)
            self.repaired_bytes = _repair_tail(self.path, tail)
            self._f: IO[str] = open(self.path, "a", encoding="utf-8")
        else:
            if self.path.exists() and self.path.stat().st_size > 0:
                raise TraceError(f"{self.path}: already exists; use --resume to continue it or choose another --out")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._f = open(self.path, "w", encoding="utf-8")
            except OSError as exc:
                raise TraceError(f"{self.path}: cannot write trace: {exc.strerror or exc}") from None
            self.existing = None
            self.write({
                "record": "header", "format": FORMAT, "version": VERSION, "c3prof_version": __version__,
                "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "trace_id": uuid.uuid4().hex, "rank": rank, "world_size": world_size,
                "hostname": socket.gethostname(), "command": command or [],
            })

    def write(self, record: dict) -> None:
        validate_record(record, self.path, lineno=0)
        record.setdefault("wall_time", time.time())
        line = json.dumps(record, separators=(",", ":"), allow_nan=False)
        self._f.write(line + "\n")
        self._f.flush()
        if self.fsync:
            os.fsync(self._f.fileno())

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_for_resume(path: str | Path) -> tuple["Trace", "Tail"]:
    """Read a trace that ``--resume`` will continue, changing nothing: the Trace and how it ends.

    Raises TraceError (file untouched) for anything but a valid version-1 trace whose only defect
    may be a torn last line.
    """
    tail = Tail()
    return read_trace(path, tail), tail


def _repair_tail(path: Path, tail: "Tail") -> int:
    """Drop a torn last line, or end a complete last record with its newline. Returns bytes dropped."""
    if tail.torn_at is not None:
        with open(path, "rb+") as f:
            f.truncate(tail.torn_at)
        return tail.torn_bytes
    if tail.needs_newline:
        with open(path, "ab") as f:
            f.write(b"\n")
    return 0


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------

@dataclass(slots=True)
class Phase:
    """One phase of one run: every repetition's samples (ms), per series a read-only float64 array
    (read_trace converts the record's lists, trace_samples.py; ``record["samples"]`` is the same dict)."""

    name: str
    samples: dict[str, np.ndarray]
    stop: dict
    record: dict

    @property
    def total_ms(self) -> list[float]:
        """The phase's times as a list (for checks and messages; the analysis takes the array)."""
        return self.samples["total_ms"].tolist()


@dataclass
class Run:
    """One (scenario, strategy, variant) with the phases captured so far."""

    id: str
    scenario: dict
    strategy: str
    variant: str
    params: dict
    phases: dict[str, Phase] = field(default_factory=dict)
    validations: list[dict] = field(default_factory=list)
    counters: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    source: str = ""  # the trace file it came from

    @property
    def complete(self) -> bool:
        return all(p in self.phases for p in PHASES)

    @property
    def missing_phases(self) -> list[str]:
        return [p for p in PHASES if p not in self.phases]


@dataclass
class Trace:
    path: str
    header: dict
    machines: list[dict] = field(default_factory=list)
    ceilings: list[dict] = field(default_factory=list)
    engine_evidence: list[dict] = field(default_factory=list)
    counter_sources: list[dict] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)
    ends: list[dict] = field(default_factory=list)
    # validation/counters records of a run with no phase record (c3prof 0.1.0 profiled runs it had
    # reported not applicable): kept, not attached to any run, and named in the report's notes.
    orphans: list[dict] = field(default_factory=list)

    @property
    def machine(self) -> dict:
        return self.machines[-1] if self.machines else {}

    @property
    def latest_ceilings(self) -> dict:
        return self.ceilings[-1] if self.ceilings else {}

    @property
    def finished(self) -> bool:
        return bool(self.ends) and self.ends[-1].get("status") == "complete"

    def completed_phases(self) -> set[tuple[str, str]]:
        """(run id, phase key) of every phase measured: ``phase_key`` names the visit."""
        return {(r.id, p) for r in self.runs.values() for p in r.phases}


MAX_RECORD_BYTES = 256 * 1024**2  # one line; the largest real record (a counter time series) is < 1 MB
MAX_INT_DIGITS = 20  # int64 and uint64 fit; Python's own limit (4300 digits) would raise mid-parse


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number (JSON has no NaN or Infinity)")


def _parse_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


# parse_float stays the C default (fast); overflowing floats (1e400 -> inf) are caught by _check_values.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int)


def parse_record(raw: bytes, path, lineno, simple: bool = False) -> dict:
    """One line -> one record dict, or TraceError naming what is wrong (never another exception).

    ``simple``: the caller saw (_is_simple_json) that every integer in ``raw`` fits in 64 bits and
    that it nests no deeper than MAX_DEPTH. orjson (when installed; optional) then gives the json
    module's record: the same correctly rounded floats, ints, strings and last-wins duplicate keys.
    What orjson refuses (lone surrogates, NaN, overflowing exponents, bad UTF-8, bad syntax) goes to
    the json module, which accepts it or names the problem as without orjson. Outside the condition
    they differ: orjson turns larger integers into floats, and accepts deeper nesting than the json
    module (whose refusal is the error the reader reports)."""
    if simple and _orjson is not None:
        try:
            rec = _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
        else:
            if isinstance(rec, dict):
                return rec
    try:
        rec = _DECODER.decode(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _fail(path, lineno, f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise _fail(path, lineno, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise _fail(path, lineno, f"not valid JSON ({str(exc)[:80]})") from None
    except RecursionError:
        raise _fail(path, lineno, "not valid JSON (nested too deeply)") from None
    if not isinstance(rec, dict):
        raise _fail(path, lineno, "a record must be a JSON object")
    return rec


def _check_first(rec: dict, path, lineno) -> None:
    """The first record (after any blank lines) must be a version-1 c3prof header."""
    if rec.get("record") != "header" or rec.get("format") != FORMAT:
        raise _fail(path, lineno, "not a c3prof trace (the first line must be its header)")
    version = rec.get("version")
    if isinstance(version, bool) or version != VERSION:
        raise _fail(path, lineno, f"trace format version {_short(version)} is not supported "
                                  f"(this c3prof {__version__} reads version {VERSION})")


@dataclass
class Tail:
    """How a trace ends, for ``--resume``: a torn last line (and where it starts), or a complete last
    record that only lacks its newline."""

    torn_at: int | None = None
    torn_bytes: int = 0
    needs_newline: bool = False


def iter_records(path: str | Path, tail: Tail | None = None,
                 batch: Samples | None = None) -> Generator[tuple[int, dict], None, int]:
    """Yield (line number, record) after checking each line; raises TraceError naming the problem.

    A last line without a newline is kept when it is a valid record (``tail.needs_newline`` tells
    resume to add the newline), and is the trace's truncation otherwise: an error, or with ``tail``
    (resume) reported in ``tail.torn_at`` (the write that was interrupted) instead. ``batch``: phase samples'
    numbers are left to it (validate_record); the caller checks it after the last record. Returns
    the lines read.
    """
    path = Path(path)
    check_input_file(path, "trace file", TRACE_MAX_BYTES, TraceError)
    return (yield from _open_records(path, tail, batch))


def _open_records(path: Path, tail: Tail | None, batch: Samples | None, start: int = 0,
                  stop: int | None = None) -> Generator[tuple[int, dict], None, int]:
    """_records_of over the lines from offset ``start`` (a line's first byte) to the one at ``stop``."""
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open trace: {exc.strerror or exc}") from None
    with f:
        f.seek(start)
        return (yield from _records_of(f, path, tail, batch, None if stop is None else stop - start, start == 0))


def _records_of(f, path, tail: Tail | None, batch: Samples | None, stop: int | None = None,
                first: bool = True) -> Generator[tuple[int, dict], None, int]:
    """iter_records' loop over ``f`` from where it stands, to its end or to the line that starts at
    offset ``stop`` (of a read that began at offset 0); returns the lines read. ``first``: ``f``
    starts at the trace's first line (which must be a header). Line numbers count from where it
    started."""
    lineno, offset = 0, 0
    # read_trace's fast path for phase records (trace_fast.py): needs the batch and orjson
    # (the compiled PhaseAcceptor when built: the same verdicts)
    acceptor = PlainPhases if _trace_read is None else _trace_read.PhaseAcceptor
    phases = acceptor(batch, _phase_rules(_orjson)) if batch is not None and _orjson is not None else None
    text_kind = _text_kind if _trace_read is None else _trace_read.text_kind
    while (stop is None or offset < stop) and (raw := f.readline(MAX_RECORD_BYTES + 1)):
        lineno += 1
        if len(raw) > MAX_RECORD_BYTES:
            raise _fail(path, lineno, f"a record longer than {MAX_RECORD_BYTES} bytes")
        start, offset = offset, offset + len(raw)
        last_unterminated = not raw.endswith(b"\n")
        if not raw.strip():
            continue
        try:
            simple, plain = text_kind(raw, MAX_DEPTH)
            rec = parse_record(raw, path, lineno, simple=simple)
            if first:
                _check_first(rec, path, lineno)
            if not (simple and plain and phases is not None and phases.accept(rec)):
                validate_record(rec, path, lineno, plain_text=plain, batch=batch)
        except TraceError as exc:
            kind = foreign_kind(path, expected=("c3prof-trace",)) if first else None
            if kind:
                raise _fail(path, lineno, f"not a c3prof trace but {kind}") from exc
            if last_unterminated and tail is not None and not first:
                tail.torn_at, tail.torn_bytes = start, len(raw)
                return lineno - 1
            if last_unterminated and not first:
                raise _fail(path, lineno, "truncated (the last line is incomplete, as left by an interrupted "
                                          "write; `c3prof capture --resume` repairs and continues it, or "
                                          "remove that line to report the rest)") from exc
            raise
        # A last record whose newline alone is missing (an editor, `head -c`) is complete: kept.
        if last_unterminated and tail is not None:
            tail.needs_newline = True
        first = False
        yield lineno, rec
    if first:
        raise TraceError(f"{path}: empty file, not a c3prof trace")
    return lineno


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection off for a while (as it was, after). Reading a trace makes hundreds of
    thousands of dicts and lists and no reference cycle; each collection the allocations triggered
    walked every object kept so far, which was half the time of reading a large trace."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_trace(path: str | Path, tail: Tail | None = None, processes: int = 1) -> Trace:
    """Read and validate a whole trace into runs and their phases (``tail``: see iter_records).

    Without ``tail``, the phases' sample values are checked all at once and become arrays
    (Phase.samples; trace_samples.py); a trace that fails anything there is read again with every
    check made record by record, which raises the error the reader names (file and first bad line).
    ``processes``: 2 reads the two halves of a trace in two processes (trace_parts.py), where the
    compiled reader is built: the same Trace."""
    with gc_paused():
        return _read_trace(path, tail, processes)


def _read_trace(path: str | Path, tail: Tail | None, processes: int = 1) -> Trace:
    if tail is None:
        columns = _sample_columns() if processes > 1 and _trace_read is not None else None
        batch = new_sample_batch() if columns is None else columns
        try:
            if columns is not None:
                # Checked once, here: the split point is sought before either part opens the file.
                check_input_file(Path(path), "trace file", TRACE_MAX_BYTES, TraceError)
                records = trace_parts.records_in_parts(path,
                                                       lambda stop: _open_records(Path(path), None, columns, stop=stop),
                                                       lambda start: _read_part(path, start),
                                                       lambda part: columns.adopt(*part))
            else:
                records = iter_records(path, None, batch)
            trace = _read_records(path, records, batch)
        except TraceError:
            trace = None
        if trace is not None and batch.check():
            return trace
    return _read_records(path, iter_records(path, tail, None), None)


def _read_part(path: str | Path, start: int) -> trace_parts.Part:
    """The records of the lines from offset ``start`` (a line's first byte) to the end, their samples
    left in a SampleColumns of their own (trace_parts.py)."""
    batch = _sample_columns()
    reading = _open_records(Path(path), None, batch, start=start)
    records = []
    while True:
        try:
            records.append(next(reading))
        except StopIteration as end:
            return trace_parts.Part(records, end.value, batch.export())


def new_sample_batch() -> Samples:
    """What read_trace leaves the phases' samples to: the compiled SampleColumns when built, else
    trace_samples.SampleBatch (the same verdicts and arrays)."""
    if _trace_read is not None:
        return _sample_columns()
    from c3prof.trace_samples import SampleBatch   # numpy's: imported when needed (read_ahead.py says why)

    return SampleBatch(*_SAMPLE_RULES)


def _sample_columns() -> _trace_read.SampleColumns:
    """The compiled SampleColumns (built: checked by the caller), which a trace read in parts needs."""
    return _trace_read.SampleColumns(*_SAMPLE_RULES)


# SampleBatch's and SampleColumns' rule: the series that are durations, their least and every series' most.
_SAMPLE_RULES = (frozenset(POSITIVE_SERIES), MIN_DURATION_MS, MAX_MS)


def _read_records(path: str | Path, records: Iterable[tuple[int, dict]], batch: Samples | None) -> Trace:
    """read_trace's pass over the records (line number, record; iter_records' or the parts'). With
    ``batch``, the phases' samples are left to it (their arrays come with batch.check()); without,
    each phase's samples become arrays as it is read."""
    from c3prof.trace_samples import read_only_arrays   # numpy's: imported when needed (read_ahead.py says why)

    trace: Trace | None = None
    runs: dict[str, Run] = {}
    source = str(path)
    for lineno, rec in records:
        kind = rec["record"]
        # Phase records first: a large trace is almost all of them (40,000 of 10^6 samples' 40,012).
        if kind == "phase" and trace is not None:
            run = runs.get(rec["run"])
            if run is None:
                run = runs[rec["run"]] = Run(
                    id=rec["run"], scenario=rec["scenario"], strategy=rec["strategy"], variant=rec["variant"],
                    params=rec["params"], source=source)
            # A resumed capture never re-measures a finished phase; if one appears twice, keep the latest.
            # A capture with several visits (--visits) measures each phase once per visit.
            samples = rec["samples"]
            if batch is None or type(samples["total_ms"]) is list:   # lists the batch did not take
                read_only_arrays(samples)
            name, visit = rec["phase"], rec.get("visit")
            run.phases[name if visit is None else phase_key(name, visit)] = Phase(
                name=name, samples=samples, stop=rec["stop"], record=rec)
            continue
        if kind == "header":
            if trace is not None:
                raise _fail(path, lineno, "a second header inside the trace")
            trace = Trace(path=source, header=rec, runs=runs)
            continue
        assert trace is not None  # the first record is always the header (checked by iter_records)
        if kind == "machine":
            trace.machines.append(rec)
        elif kind == "ceilings":
            trace.ceilings.append(rec)
        elif kind == "engine_evidence":
            trace.engine_evidence.append(rec)
        elif kind == "counter_source":
            trace.counter_sources.append(rec)
        elif kind == "end":
            trace.ends.append(rec)
        elif kind in ("validation", "counters", "error"):
            rid = rec.get("run")
            if kind == "error":
                trace.errors.append(rec)
            if rid is None or rid not in trace.runs:
                if kind != "error":
                    if not isinstance(rid, str):
                        raise _fail(path, lineno, f"{kind} record without a run id")
                    trace.orphans.append(rec)
                continue
            getattr(trace.runs[rid], {"validation": "validations", "counters": "counters",
                                      "error": "errors"}[kind]).append(rec)
    assert trace is not None
    return trace


# ------------------------------------------------------------------------------------------------
# Record constructors: how writers build each record type (docs/trace-format.md lists the fields).
# Capture and the backends call these instead of writing dict literals, so a field is named once.
# ------------------------------------------------------------------------------------------------

# Traces written before the machine record named its backend all came from the CUDA backend.
BACKEND_BEFORE_FIELD = "cuda"


def backend_of(machine: dict) -> str:
    """The backend (``cuda``, ``hip``) that captured on ``machine`` (a ``machine`` record)."""
    value = machine.get("backend") if machine else None
    return value if isinstance(value, str) and value else BACKEND_BEFORE_FIELD


def machine_record(gpu: dict, versions: dict, **fields) -> dict:
    """``machine``: the device (identity and properties) and software versions, plus backend fields
    (clocks_start, stream_priority_range, settings, distributed, ...)."""
    return {"record": "machine", "gpu": gpu, "versions": versions, **fields}


def ceilings_record(gemm_flops_per_s: dict, copy_bytes_per_s: dict) -> dict:
    """``ceilings``: measured peak GEMM FLOP/s per dtype and copy bandwidths per path."""
    return {"record": "ceilings", "gemm_flops_per_s": gemm_flops_per_s, "copy_bytes_per_s": copy_bytes_per_s}


def engine_evidence_record(transport: str, nbytes: int, expected_carrier: str | None, method: str,
                           single_transfer_ms: float, **fields) -> dict:
    """``engine_evidence``: which engine carried ``transport`` (``carrier`` among the fields)."""
    return {"record": "engine_evidence", "transport": transport, "bytes": nbytes,
            "expected_carrier": expected_carrier, "method": method, "single_transfer_ms": single_transfer_ms,
            **fields}


def phase_record(run: str, scenario: dict, strategy: str, variant: str, params: dict, phase: str,
                 samples: dict, stop: dict, **fields) -> dict:
    """``phase``: every repetition of one phase of one run, why the stopping rule stopped, and
    optional fields (``rounds``, ``round_group`` of an interleaved measurement)."""
    return {"record": "phase", "run": run, "scenario": scenario, "strategy": strategy, "variant": variant,
            "params": params, "phase": phase, "samples": samples, "stop": stop, **fields}


def validation_record(run: str, phase: str, checks: list[dict]) -> dict:
    """``validation``: one record per phase over every batch checked in it. Each check is a
    transport's validate() result plus ``injected_corruption``."""
    bad = [c for c in checks if not c["ok"]]
    first = checks[0]
    return {"record": "validation", "run": run, "phase": phase, "transport": first["transport"],
            "method": first["method"], "batches_checked": len(checks), "bytes_per_check": first["bytes_checked"],
            "bytes_checked": sum(c["bytes_checked"] for c in checks),
            "mismatched_bytes": sum(c["mismatched_bytes"] for c in checks),
            "first_mismatch_offset": bad[0]["first_mismatch_offset"] if bad else None,
            "injected_corruption": any(c["injected_corruption"] for c in checks), "ok": not bad}


def counters_record(run: str, phase: str, source: str, metrics: dict, **fields) -> dict:
    """``counters``: hardware counters of one phase from ``source`` (metrics: name -> value, unit)."""
    return {"record": "counters", "run": run, "phase": phase, "source": source, "metrics": metrics, **fields}


def counter_source_record(source: str, available: bool, **fields) -> dict:
    """``counter_source``: whether ``source`` ran here; when not, ``reason`` says why."""
    return {"record": "counter_source", "source": source, "available": available, **fields}


def error_record(run: str, message: str, phase: str | None = None, **fields) -> dict:
    """``error``: a run that failed (or is not applicable here: ``not_applicable``); its measured
    phases stay in the trace."""
    return {"record": "error", "run": run, "phase": phase, "message": message, **fields}


def end_record(status: str, clocks_end: dict, wall_s: float, phases_measured: int, runs_failed: list[str],
               validation_failures: list[str]) -> dict:
    """``end``: the capture session finished (``complete``), was ``interrupted`` or ``failed``."""
    return {"record": "end", "status": status, "clocks_end": clocks_end, "wall_s": wall_s,
            "phases_measured": phases_measured, "runs_failed": runs_failed,
            "validation_failures": validation_failures}
