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

import json
import math
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

from c3prof import __version__
from c3prof.errors import TraceError

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


def _check_number(x, where, path, lineno, positive=False):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise _fail(path, lineno, f"{where} must be a finite number, got {x!r}")
    if positive and x <= 0:
        raise _fail(path, lineno, f"{where} must be positive, got {x!r}")


def validate_record(rec: dict, path="<trace>", lineno=0) -> None:
    """Raise TraceError if ``rec`` does not follow the schema of its record type."""
    kind = rec.get("record")
    if kind not in _REQUIRED:
        raise _fail(path, lineno, f"unknown record type {kind!r}")
    for key, typ in _REQUIRED[kind].items():
        if key not in rec:
            raise _fail(path, lineno, f"{kind} record lacks '{key}'")
        if not isinstance(rec[key], typ) or (typ is int and isinstance(rec[key], bool)):
            raise _fail(path, lineno, f"{kind}.{key} has type {type(rec[key]).__name__}")
    if kind == "phase":
        if rec["phase"] not in PHASES:
            raise _fail(path, lineno, f"unknown phase {rec['phase']!r} (known: {', '.join(PHASES)})")
        samples = rec["samples"]
        if "total_ms" not in samples:
            raise _fail(path, lineno, "phase samples lack 'total_ms'")
        n = len(samples["total_ms"])
        if n == 0:
            raise _fail(path, lineno, f"phase {rec['run']}:{rec['phase']} has no samples")
        for name, values in samples.items():
            if name not in SERIES:
                raise _fail(path, lineno, f"unknown sample series {name!r}")
            if not isinstance(values, list) or len(values) != n:
                raise _fail(path, lineno, f"series {name} must be a list of {n} numbers")
            positive = name in POSITIVE_SERIES
            for v in values:
                _check_number(v, f"{rec['run']}:{rec['phase']}:{name}", path, lineno, positive=positive)
        if rec["run"] != run_id(rec["scenario"].get("name", ""), rec["strategy"], rec["variant"]):
            raise _fail(path, lineno, f"run id {rec['run']!r} does not match its scenario/strategy/variant")
    elif kind == "engine_evidence" and rec["carrier"] not in CARRIERS:
        raise _fail(path, lineno, f"carrier must be one of {', '.join(CARRIERS)}, got {rec['carrier']!r}")
    elif kind == "validation":
        if rec["bytes_checked"] <= 0 or rec["mismatched_bytes"] < 0:
            raise _fail(path, lineno, "validation byte counts out of range")
        if rec["ok"] != (rec["mismatched_bytes"] == 0):
            raise _fail(path, lineno, "validation 'ok' disagrees with its mismatched_bytes")
    elif kind == "ceilings":
        for group in ("gemm_flops_per_s", "copy_bytes_per_s"):
            for name, entry in rec[group].items():
                if not isinstance(entry, dict) or "value" not in entry:
                    raise _fail(path, lineno, f"ceilings.{group}.{name} needs a 'value'")
                _check_number(entry["value"], f"ceilings.{group}.{name}.value", path, lineno, positive=True)
    elif kind == "header":
        if rec["format"] != FORMAT:
            raise _fail(path, lineno, f"not a c3prof trace (format {rec['format']!r})")


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
        if resume and self.path.exists() and self.path.stat().st_size > 0:
            self.repaired_bytes = _drop_incomplete_tail(self.path)
            self.existing = read_trace(self.path)
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


def _drop_incomplete_tail(path: Path) -> int:
    """Truncate a last line without its newline (an interrupted write). Returns bytes dropped."""
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size == 0:
            return 0
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        # Walk back to the previous newline.
        pos = size - 1
        chunk = 4096
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            buf = f.read(pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                f.truncate(keep)
                return size - keep
            pos = start
        f.truncate(0)
        return size


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------

@dataclass
class Phase:
    """One phase of one run: every repetition's samples (ms)."""

    name: str
    samples: dict[str, list[float]]
    stop: dict
    record: dict

    @property
    def total_ms(self) -> list[float]:
        return self.samples["total_ms"]


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
        return {(r.id, p) for r in self.runs.values() for p in r.phases}


def iter_records(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) after checking each line; raises TraceError naming the problem."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open trace: {exc.strerror or exc}") from None
    with f:
        lineno = 0
        for raw in f:
            lineno += 1
            if not raw.endswith(b"\n"):
                raise _fail(path, lineno, "truncated (the last line is incomplete, as left by an interrupted "
                                          "write; `c3prof capture --resume` repairs and continues it)")
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise _fail(path, lineno, f"not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})") from None
            if not isinstance(rec, dict):
                raise _fail(path, lineno, "a record must be a JSON object")
            if lineno == 1:
                if rec.get("record") != "header" or rec.get("format") != FORMAT:
                    raise _fail(path, lineno, "not a c3prof trace (the first line must be its header)")
                if rec.get("version") != VERSION:
                    raise _fail(path, lineno, f"trace format version {rec.get('version')!r} is not supported "
                                              f"(this c3prof {__version__} reads version {VERSION})")
            validate_record(rec, path, lineno)
            yield lineno, rec
        if lineno == 0:
            raise TraceError(f"{path}: empty file, not a c3prof trace")


def read_trace(path: str | Path) -> Trace:
    """Read and validate a whole trace into runs and their phases."""
    trace: Trace | None = None
    for lineno, rec in iter_records(path):
        kind = rec["record"]
        if kind == "header":
            if trace is not None:
                raise _fail(path, lineno, "a second header inside the trace")
            trace = Trace(path=str(path), header=rec)
            continue
        assert trace is not None  # line 1 is always the header (checked above)
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
        elif kind == "phase":
            run = trace.runs.get(rec["run"])
            if run is None:
                run = trace.runs[rec["run"]] = Run(
                    id=rec["run"], scenario=rec["scenario"], strategy=rec["strategy"], variant=rec["variant"],
                    params=rec["params"], source=str(path))
            # A resumed capture never re-measures a finished phase; if one appears twice, keep the latest.
            run.phases[rec["phase"]] = Phase(name=rec["phase"], samples=rec["samples"], stop=rec["stop"], record=rec)
        elif kind in ("validation", "counters", "error"):
            rid = rec.get("run")
            if kind == "error":
                trace.errors.append(rec)
            if rid is None or rid not in trace.runs:
                if kind != "error":
                    raise _fail(path, lineno, f"{kind} record for unknown run {rid!r}")
                continue
            getattr(trace.runs[rid], {"validation": "validations", "counters": "counters",
                                      "error": "errors"}[kind]).append(rec)
    assert trace is not None
    return trace


# ------------------------------------------------------------------------------------------------
# Record constructors: how writers build each record type (docs/trace-format.md lists the fields).
# Capture and the backends call these instead of writing dict literals, so a field is named once.
# ------------------------------------------------------------------------------------------------

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
