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


def fast_encode(report: dict, ahead: ReportListsJSON | None = None) -> bytes | None:
    """A large report as UTF-8 JSON through orjson when it is installed: the values of dumps(report),
    about six times faster (0.1 s instead of 0.7 s for 10^6 samples); the two spell some floats
    differently (1e-05 / 0.00001). None where dumps must write it (a small report: indented).
    ``ahead``: lists of it encoded already (ReportListsJSON)."""
    if len(report.get("results", [])) <= PRETTY_MAX_RESULTS:
        return None
    return _orjson_encode(report, ahead)


def _orjson_encode(report: dict, ahead: ReportListsJSON | None = None) -> bytes | None:
    """orjson's compact JSON, or None where the json module must decide (orjson or the NaN check
    missing; a type, an integer over 64 bits, a string or a nesting orjson refuses). ``ahead``:
    lists encoded already (ReportListsJSON), used where they are the report's lists."""
    if _orjson is None or _finite is None:
        return None
    done = ahead.fragments(report) if ahead is not None else {}
    body = dict(report, **done) if done else report   # those lists checked and encoded already
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


# The report's lists that build_report has finished when it calls on_rows_final (the result rows,
# falsification and interference of the groups so far): most of a large report's JSON (21, 6 and 1 of
# 28 MB for 10^6 samples).
ENCODED_AHEAD = ("results", "falsification", "interference")


class ReportListsJSON:
    """A large report's longest lists (ENCODED_AHEAD), checked and encoded as JSON before write_json
    asks for them.

    Why: they are most of a 10^6-sample report's JSON (0.3 s of checking and encoding on the dev VM),
    which would otherwise be encoded on one core while the other has nothing to do. build_report
    hands the report here (``prepare``) while the strategy summary's forked child computes rows,
    before this process takes its share of them (the child then takes more); write_json puts the
    encoded lists in place (orjson.Fragment) and encodes only the rest. The same bytes as encoding
    the whole report at once.

    Each list is used or not on its own. Items added after a ``prepare`` (a report of several groups
    calls it once per group) are encoded at the next one; a list not all encoded, holding a NaN
    (write_json names it) or a value orjson refuses is left to write_json to encode, as it would
    without this; so is every list with an orjson older than 3.9 (no Fragment; the `fast` extra asks
    for 3.9 or later)."""

    def __init__(self) -> None:
        self._lists = {key: _EncodedList() for key in ENCODED_AHEAD}
        self._usable = _orjson is not None and _finite is not None and hasattr(_orjson, "Fragment")

    def prepare(self, report: dict) -> None:
        """Check and encode what each list gained since the last call."""
        rows = report.get("results")
        if not self._usable or not isinstance(rows, list) or len(rows) <= PRETTY_MAX_RESULTS:
            return   # small reports are written indented by the json module
        for key, encoded in self._lists.items():
            encoded.prepare(report.get(key))

    def fragments(self, report: dict) -> dict:
        """Each list of ``report`` encoded here in full, as an orjson.Fragment (by key)."""
        if not self._usable:
            return {}
        done = {key: encoded.fragment(report.get(key)) for key, encoded in self._lists.items()}
        return {key: fragment for key, fragment in done.items() if fragment is not None}


class _EncodedList:
    """One list of a report, encoded as it grows (ReportListsJSON)."""

    def __init__(self) -> None:
        self._items: list | None = None   # the list, as last prepared
        self._pieces: list[bytes] = []    # the items each prepare encoded, as a JSON list (brackets kept)
        self._count = 0                   # items encoded
        self._usable = True

    def prepare(self, items) -> None:
        if not self._usable or not isinstance(items, list):
            return
        if items is not self._items or len(items) < self._count:
            self._items, self._pieces, self._count = items, [], 0
        new = items[self._count:]
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
        self._pieces.append(piece)
        self._count = len(items)

    def fragment(self, items):
        """``items`` as one orjson.Fragment, or None unless it is the list prepared, every item encoded.
        One piece (a report of one group) is the fragment as it is; several are joined in one copy
        (the results of 10^6 samples are 21 MB: each copy of them cost the serial end of the report
        about 20 ms and 5000 page faults)."""
        if not self._usable or items is not self._items or not isinstance(items, list) or len(items) != self._count:
            return None
        if not self._pieces:
            return _orjson.Fragment(b"[]")
        if len(self._pieces) == 1:
            return _orjson.Fragment(self._pieces[0])
        parts: list[bytes | memoryview] = [b"["]
        for piece in self._pieces:   # each piece's items (a view: not copied), a comma between pieces
            parts += [memoryview(piece)[1:-1], b","]
        parts[-1] = b"]"             # in place of the last comma
        return _orjson.Fragment(b"".join(parts))


def _float_subclass(value: Any) -> float:
    """orjson's ``default``: a float subclass (numpy.float64) as the float json writes for it."""
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_atomic(path: str | Path, text: str, what: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file (c3prof.outputs)."""
    write_text_atomic(path, text, what)


def write_json(report: dict, path: str, ahead: ReportListsJSON | None = None) -> None:
    """``path`` (``-``: stdout); ``ahead``: lists of the report encoded already (ReportListsJSON)."""
    data = fast_encode(report, ahead)
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
