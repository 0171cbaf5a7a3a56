"""Kernel names made readable: demangled, reduced to the function (and, for wrapper kernels, the
kernel template they run), shortened with one stable rule. The full name is always kept beside it.

The rule (``short_name``), applied to the demangled name:

1. drop a leading return type (``void ``) and everything from the parameter list ``(`` on;
2. drop template arguments ``<...>``, except for wrapper kernels whose real identity is their first
   template argument (``cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>``,
   ``cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>``): for those the first argument's own
   base name is kept, in angle brackets;
3. longer than ``MAX_SHORT`` characters: the first ``MAX_SHORT - 8`` characters, an ellipsis and a
   6-digit hash of the full name, so two different long names never print alike.

Names are bounded first (``MAX_NAME_CHARS``): a kernel name of hundreds of megabytes is handled
through its first ``MAX_NAME_CHARS`` characters, so no step is slower than linear in that bound.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

MAX_NAME_CHARS = 16384
MAX_SHORT = 72
# Kernels that only wrap the kernel template doing the work (CUTLASS, CUTLASS 3 device kernels).
_WRAPPER = re.compile(r"(?:^|::)(?:Kernel|Kernel2|device_kernel)$|^cutlass_kernel$")
_LEADING_TYPE = re.compile(r"^(?:void|int|__global__ void)\s+")


def bounded(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS]


def json_name(name: str) -> str:
    """A name as the JSON output keeps it: whole up to MAX_NAME_CHARS, else cut with its length said."""
    if len(name) <= MAX_NAME_CHARS:
        return name
    return f"{name[:MAX_NAME_CHARS]}...[{len(name)} characters in all]"


def demangled(name: str) -> str:
    """C++ demangling of an Itanium-mangled name (``_Z...``); other names unchanged. A mangled name
    the C++ runtime cannot demangle (some NVCC-generated ones) gets the readable approximation of
    ``_approximate``."""
    name = bounded(name)
    if not name.startswith("_Z"):
        return name
    try:
        from c3prof.ingest._kineto import demangle
    except ImportError:  # the reader needs the extension anyway; names stay mangled without it
        return _approximate(name)
    out = demangle(name.encode("utf-8", "replace"))
    return out if out else _approximate(name)


_SOURCE_NAME = re.compile(r"(\d+)")


def _identifiers(mangled: str, limit: int = 8) -> list[str]:
    """The first source names (<length><identifier>) of a mangled name, in order."""
    out: list[str] = []
    i = 2
    while i < len(mangled) and len(out) < limit:
        m = _SOURCE_NAME.match(mangled, i)
        if not m:
            i += 1
            continue
        n, j = int(m.group(1)), m.end()
        ident = mangled[j:j + n]
        if n and len(ident) == n and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident):
            out.append(ident)
            i = j + n
        else:
            i = m.end()
    return out


def _approximate(mangled: str) -> str:
    """``_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel...`` -> ``cutlass_cudnn_train::Kernel<conv::kernel::...>``:
    the nested name's two first identifiers, then the next three in angle brackets."""
    ids = _identifiers(mangled)
    if not ids:
        return mangled
    head, rest = "::".join(ids[:2]), ids[2:5]
    return f"{head}<{'::'.join(rest)}>" if rest else head


def _strip_brackets(text: str) -> tuple[str, str]:
    """(text outside the outermost ``<...>``, the first top-level template argument)."""
    out: list[str] = []
    arg: list[str] = []
    depth, first_arg, done = 0, "", False
    for ch in text:
        if ch == "<":
            depth += 1
            if depth == 1:
                continue
        elif ch == ">" and depth > 0:
            depth -= 1
            if depth == 0:
                if not done:
                    first_arg, done = "".join(arg), True
                continue
        elif ch == "," and depth == 1 and not done:
            first_arg, done = "".join(arg), True
        if depth == 0:
            out.append(ch)
        elif not done:
            arg.append(ch)
    return "".join(out), first_arg.strip()


def _base(name: str) -> tuple[str, str]:
    """(function name without return type, parameters or template arguments; first template arg)."""
    s = _LEADING_TYPE.sub("", name.strip())
    # The parameter list starts at the first '(' outside template brackets.
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            s = s[:i]
            break
    base, first = _strip_brackets(s)
    return base.strip(), first


@lru_cache(maxsize=65536)
def head(name: str) -> str:
    """The identifying part of a kernel name (steps 1-2 of the rule), from the demangled name.
    Cached: classification, the kernel table and the labels ask for the same few hundred names."""
    base, first = _base(demangled(name))
    if first and _WRAPPER.search(base):
        inner, _ = _base(first)
        return f"{base}<{inner}>"
    return base or name[:MAX_SHORT]


def short_name(name: str) -> str:
    """The readable label of a kernel: ``head`` shortened (step 3)."""
    h = head(name)
    if len(h) <= MAX_SHORT:
        return h
    key = f"{len(name)}:{bounded(name)}"
    digest = hashlib.sha1(key.encode("utf-8", "replace")).hexdigest()[:6]
    return f"{h[:MAX_SHORT - 8]}…#{digest}"
