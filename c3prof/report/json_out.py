"""``--json FILE``: the report dict as JSON (schema in docs/report.md). ``-`` writes to stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from c3prof.outputs import write_bytes_atomic, write_text_atomic
from c3prof.trace import _orjson

try:  # compiled with the package (c3prof/report/_finite.pyx); without it, large reports use json too
    from c3prof.report import _finite
except ImportError:
    _finite = None  # type: ignore[assignment]

PRETTY_MAX_RESULTS = 2000
# orjson's options for every part of a report (the whole adds OPT_APPEND_NEWLINE).
_OPTIONS = 0 if _orjson is None else _orjson.OPT_NON_STR_KEYS


def dumps(report: dict) -> str:
    # allow_nan=False: JSON has no NaN; every undefined number in the report is null with a reason.
    # Indented for readable, diffable reports; compact above PRETTY_MAX_RESULTS results, because
    # json's indenting encoder is pure Python and several times slower on huge reports.
    if len(report.get("results", [])) <= PRETTY_MAX_RESULTS:
        return json.dumps(report, indent=1, allow_nan=False) + "\n"
    return json.dumps(report, separators=(",", ":"), allow_nan=False) + "\n"


def fast_encode(report: dict, results: ResultRowsJSON | None = None) -> bytes | None:
    """A large report as UTF-8 JSON through orjson when it is installed: the values of dumps(report),
    about six times faster (0.1 s instead of 0.7 s for 10^6 samples); the two spell some floats
    differently (1e-05 / 0.00001). None where dumps must write it (a small report: indented).
    ``results``: its rows encoded already (ResultRowsJSON)."""
    if len(report.get("results", [])) <= PRETTY_MAX_RESULTS:
        return None
    return _orjson_encode(report, results)


def _orjson_encode(report: dict, results: ResultRowsJSON | None = None) -> bytes | None:
    """orjson's compact JSON, or None where the json module must decide (orjson or the NaN check
    missing; a type, an integer over 64 bits, a string or a nesting orjson refuses). ``results``:
    the result rows encoded already (ResultRowsJSON), used where they are the report's rows."""
    if _orjson is None or _finite is None:
        return None
    done = results.fragment(report) if results is not None else None
    body = report if done is None else dict(report, results=done)   # the rows checked and encoded already
    # orjson writes NaN and infinity as null, silently; the json module refuses them (allow_nan=False),
    # and so must this path: a NaN in a report is a bug, not an undefined value.
    where = _finite.non_finite_path(body)
    if where is not None:
        raise ValueError(f"Out of range float values are not JSON compliant: the report's "
                         f"{''.join(f'[{k!r}]' for k in where)}")
    try:
        return _orjson.dumps(body, default=_float_subclass, option=_OPTIONS | _orjson.OPT_APPEND_NEWLINE)
    except TypeError:   # orjson.JSONEncodeError is one
        return None


class ResultRowsJSON:
    """A large report's result rows, checked and encoded as JSON before write_json asks for them.

    Why: the rows are most of a 10^6-sample report's JSON (0.2 s of its 0.3 s of encoding and NaN
    check, on one core while the other has nothing to do). build_report hands the report here
    (``prepare``) while the strategy summary's forked child computes rows, before this process takes
    its share of them (the child then takes more); write_json puts the encoded rows in place
    (orjson.Fragment) and encodes only the rest.
    The same bytes as encoding the whole report at once. Rows added after a ``prepare`` (a report of
    several groups calls it once per group) are encoded at the next one; rows not all encoded, rows
    holding a NaN (write_json names it) or a value orjson refuses leave write_json to encode the rows
    itself, as it would without this; so does an orjson older than 3.9 (no Fragment; the `fast`
    extra asks for 3.9 or later)."""

    def __init__(self) -> None:
        self._rows: list | None = None   # the report's list of rows, as last prepared
        self._pieces: list[bytes] = []   # encoded rows, each piece without its brackets
        self._count = 0                  # rows encoded
        self._usable = _orjson is not None and _finite is not None and hasattr(_orjson, "Fragment")

    def prepare(self, report: dict) -> None:
        """Check and encode the report's result rows added since the last call."""
        rows = report.get("results")
        if not self._usable or not isinstance(rows, list) or len(rows) <= PRETTY_MAX_RESULTS:
            return   # small reports are written indented by the json module
        if rows is not self._rows or len(rows) < self._count:
            self._rows, self._pieces, self._count = rows, [], 0
        new = rows[self._count:]
        if not new:
            return
        if _finite.non_finite_path(new) is not None:
            self._usable = False   # write_json finds it and names where
            return
        try:
            piece = _orjson.dumps(new, default=_float_subclass, option=_OPTIONS)
        except TypeError:
            self._usable = False
            return
        self._pieces.append(piece[1:-1])
        self._count = len(rows)

    def fragment(self, report: dict):
        """The report's rows as one orjson.Fragment, or None unless every row is encoded here."""
        rows = report.get("results")
        if not self._usable or not isinstance(rows, list) or rows is not self._rows or len(rows) != self._count:
            return None
        return _orjson.Fragment(b"[" + b",".join(self._pieces) + b"]")


def _float_subclass(value: Any) -> float:
    """orjson's ``default``: a float subclass (numpy.float64) as the float json writes for it."""
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_atomic(path: str | Path, text: str, what: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file (c3prof.outputs)."""
    write_text_atomic(path, text, what)


def write_json(report: dict, path: str, results: ResultRowsJSON | None = None) -> None:
    """``path`` (``-``: stdout); ``results``: the report's rows encoded already (ResultRowsJSON)."""
    data = fast_encode(report, results)
    if path == "-":
        out = getattr(sys.stdout, "buffer", None)
        sys.stdout.flush()
        if data is not None and out is not None:
            out.write(data)
            out.flush()
        else:
            sys.stdout.write(dumps(report) if data is None else data.decode("utf-8"))
            sys.stdout.flush()
    elif data is not None:
        write_bytes_atomic(path, data, "JSON report")
    else:
        write_text_atomic(path, dumps(report), "JSON report")
