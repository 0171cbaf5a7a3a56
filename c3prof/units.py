"""Byte sizes as people write them in scenario files and on the command line."""

import math
import re

from c3prof.errors import C3profError

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_bytes(value, what="size") -> int:
    """'256MiB' -> 268435456; ints pass through. Raises C3profError on anything non-positive or odd."""
    if isinstance(value, bool):
        raise C3profError(f"{what}: expected a byte size, got {value!r}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    elif isinstance(value, str):
        shown = repr(value) if len(value) <= 40 else repr(value[:37] + "...")
        m = _SIZE.match(value) if len(value) <= 100 else None
        if not m or m.group(2).lower() not in _UNITS:
            raise C3profError(f"{what}: cannot read {shown} as a byte size (e.g. 4096, '64KiB', '256MiB', '1GiB')")
        scaled = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if not math.isfinite(scaled):
            raise C3profError(f"{what}: {shown} is too large a byte size")
        if not scaled.is_integer():
            raise C3profError(f"{what}: {shown} is not a whole number of bytes")
        n = int(scaled)
    else:
        raise C3profError(f"{what}: expected a byte size, got {type(value).__name__}")
    if n <= 0:
        raise C3profError(f"{what}: must be positive, got {value!r}")
    return n


def format_bytes(n: int) -> str:
    """268435456 -> '256MiB' (exact binary units when they divide, else bytes)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


_DURATION_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|ms|s)\s*$")


def parse_duration_us(value, what="duration") -> float:
    """'20us' -> 20.0, '1.5ms' -> 1500.0 (microseconds). The unit is required: a bare number is ambiguous."""
    m = _DURATION.match(value) if isinstance(value, str) and len(value) <= 100 else None
    if not m:
        shown = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:37] + "...")
        raise C3profError(f"{what}: cannot read {shown} as a duration (e.g. '20us', '1.5ms')")
    us = float(m.group(1)) * _DURATION_UNITS[m.group(2)]
    if not 0 < us <= 10e6:
        raise C3profError(f"{what}: must be between 0 and 10 s, got {value!r}")
    return us


def format_duration_us(us: float) -> str:
    """1500.0 -> '1.5ms', 20.0 -> '20us' (the shortest exact form parse_duration_us reads back)."""
    return f"{us / 1e3:g}ms" if us >= 1e3 else f"{us:g}us"
