"""The compact JSON text of ``json.dumps(obj, separators=(",", ":"), allow_nan=False)``, from orjson.

orjson (optional: the ``fast`` extra) encodes a 10^6-sample report (30 MB) about 8 times faster than
the json module. Its text is the json module's except in three places, each handled here:

- **Floats below 1e-4 or from 1e16 up.** Both print the shortest digits that read back as the same
  double, but in another layout: orjson ``0.00001``, ``1e16``, ``1.5e-7``; Python ``1e-05``,
  ``1e+16``, ``1.5e-07``. Every such number starts with ``0.0000`` or holds an ``e``; those tokens
  (outside strings) are rewritten as ``repr(float(token))``, the json module's own text. Any other
  float is printed alike (tests/test_fast_json.py compares millions of doubles of every exponent).
- **Strings.** The json module escapes every non-ASCII character (``ensure_ascii``); orjson writes
  UTF-8. Escapes of quotes, backslashes and control characters may differ in spelling. A text
  with a non-ASCII byte or any backslash is therefore left to the json module.
- **What orjson refuses** (integers beyond 64 bits, non-string keys, float subclasses such as numpy
  scalars): left to the json module.

One difference remains: a NaN or infinity, which the json module refuses (``allow_nan=False``), is
written as null by orjson. The report has none by construction (every undefined number is null
with a reason), so this changes no report, only which layer would have caught such a bug.
"""

from __future__ import annotations

import importlib
from typing import Any


def _optional_orjson() -> Any:
    try:
        return importlib.import_module("orjson")
    except ImportError:
        return None


_orjson: Any = _optional_orjson()

_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NUMBER_BYTES = frozenset(b"0123456789.-+e")
_BEFORE_NUMBER = frozenset(b":,[")   # compact JSON: a value follows a colon, a comma or a bracket


def compact_dumps(obj: Any) -> str | None:
    """The json module's compact text of ``obj``, or None where orjson cannot give it (not installed,
    a type it refuses, non-ASCII or escaped text): the caller then uses the json module."""
    if _orjson is None:
        return None
    try:
        raw = _orjson.dumps(obj)
    except (TypeError, _orjson.JSONEncodeError):
        return None
    if not raw.isascii() or b"\\" in raw:
        return None
    return _python_floats(raw).decode("ascii")


def _candidates(raw: bytes) -> list[int]:
    """Positions that may lie in a float token orjson lays out differently (with false positives:
    inside strings, or in the middle of a number): every ``e`` after a digit, every ``0.0000``."""
    out = []
    for text, pattern in ((raw.translate(_DIGITS_AS_ZERO), b"0e"), (raw, b"0.0000")):
        at = text.find(pattern)
        while at >= 0:
            out.append(at)
            at = text.find(pattern, at + 1)
    return sorted(out)


def _python_floats(raw: bytes) -> bytes:
    """``raw`` with each float token that orjson lays out differently replaced by Python's repr."""
    parts: list[bytes] = []
    done = 0          # raw[:done] is in parts
    quotes = 0        # quote characters in raw[:scanned]: odd means inside a string (no escapes here)
    scanned = 0
    for at in _candidates(raw):
        if at < done:
            continue  # inside a token already rewritten
        quotes += raw.count(b'"', scanned, at)
        scanned = at
        if quotes % 2:
            continue
        start, end = _token_bounds(raw, at)
        if start == 0 or raw[start - 1] not in _BEFORE_NUMBER:
            continue
        token = raw[start:end]
        if not (b"e" in token or token.lstrip(b"-").startswith(b"0.0000")):
            continue  # a number that merely holds 0.0000 in its fraction (10.00001)
        parts += [raw[done:start], repr(float(token)).encode("ascii")]
        done = end
    if not parts:
        return raw
    parts.append(raw[done:])
    return b"".join(parts)


def _token_bounds(raw: bytes, at: int) -> tuple[int, int]:
    """The run of number characters around position ``at``."""
    start, end = at, at
    while start > 0 and raw[start - 1] in _NUMBER_BYTES:
        start -= 1
    while end < len(raw) and raw[end] in _NUMBER_BYTES:
        end += 1
    return start, end
