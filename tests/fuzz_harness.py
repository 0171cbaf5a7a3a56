"""A seeded mutator and an in-process runner for fuzzing the c3prof CLI (tests/test_fuzz_cli.py).

Inputs are built from committed files (SYNTHETIC trace and Kineto fixtures, the built-in smoke
suite), then mutated: byte flips, insertions and deletions, truncation, duplicated, swapped and
blank lines, and structured edits that put a hostile value (NaN/Infinity tokens, 1e400, denormals,
huge integers, lone surrogates, bidirectional overrides, wrong types, deep nesting) at a random
place of a random JSON record or TOML field. The mutations are seeded, so a failure reproduces:
the case's seed is in its message.

``run_case`` calls ``c3prof.cli.main(argv)`` in-process (fast: no interpreter start) inside a fresh
directory and classifies the outcome:

- ``ok``: exit status 0;
- ``error``: exit status 2 with exactly one line on stderr (``c3prof ...: error: ...``);
- ``traceback``: anything else, including the catch-all's exit status 1 (a bug) and any
  exception escaping ``main``;
- ``hang``: the case ran past its time limit (SIGALRM interrupts it);
- ``wrote_elsewhere``: a file appeared that is not one of the named outputs;
- ``input_changed``: an input file's SHA-256 changed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import random
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from c3prof.cli import main

# ---------------------------------------------------------------------------------------------
# Hostile values
# ---------------------------------------------------------------------------------------------

# JSON texts (placed verbatim): tokens json.dumps cannot produce, and values of wrong type or range.
JSON_NASTY = [
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e308", "5e-324", "-5e-324", "0", "-1", "-0.0",
    "1" * 30, "9" * 5000, "18446744073709551616", "9223372036854775808", "true", "false", "null", '""',
    '"\\ud800"', '"a\\u0000b"', '"\\u202eevil"', '"zero\\u200bwidth"', '"x/y"', '"' + "A" * 5000 + '"',
    "{}", "[]", "[1,2,3]", '{"value": 1}', '{"value": "x"}', "[" * 2000 + "]" * 2000, '{"a":' * 100 + "1" + "}" * 100,
    '"bf16"', '"base"', '"gemm"', '"header"', '"total_ms"', "1.5", "1e-12", "3", "-3.5", '{"m": 1e30}',
]

# TOML values (placed verbatim as the value of a field).
TOML_NASTY = [
    "nan", "inf", "-inf", "1e300", "1e400", "-1", "0", "5e-324", "1" * 30, "9" * 5000, "true", '""',
    '"\\u202eevil"', '"a\\u0000b"', '"zero\\u200bwidth"', '"x/y"', '"a b"', "{}", "[]", '{ m = 1 }',
    "[1, 2]", '"1e300GiB"', '"1862645149230957031250GiB"', '"-4MiB"', '"4.5B"', "4.5", '"bf16"', '"fp8"',
    '"transfer"', '"all_reduce"', '"hbm"', '"nvlink"', '"17B"', '"3MiB"', "1e12", "2147483648", "65536", '"' + "A" * 5000 + '"', "[" * 500 + "]" * 500,
]

BYTE_JUNK = [b"\x00", b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\n", b"\n\n", b" ", b"{", b"}", b'"', b",",
             b"[", b"]", b":", b"\\", b"\\u", b"\r", b"\t", b"\x1b[31m", b"\xe2\x80\xae"]


def _rand_json_value(rng: random.Random) -> str:
    return rng.choice(JSON_NASTY)


# ---------------------------------------------------------------------------------------------
# Byte-level mutations (any file)
# ---------------------------------------------------------------------------------------------

def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """One to three random byte-level edits."""
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(_BYTE_MUTATIONS)(data, rng)
    return data


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]


def _insert(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(BYTE_JUNK) + data[i:]


def _delete(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, 64):]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def _lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        lines.insert(i, lines[j])           # duplicate a line
    elif op == 1:
        lines[i], lines[j] = lines[j], lines[i]  # swap two lines
    elif op == 2:
        lines.insert(i, b"")               # blank line
    else:
        del lines[i]
    return b"\n".join(lines)


_BYTE_MUTATIONS = [_flip, _insert, _delete, _truncate, _lines]


# ---------------------------------------------------------------------------------------------
# Structured mutations
# ---------------------------------------------------------------------------------------------

_PLACEHOLDER = "\u0001NASTY\u0001"


def _paths(obj, prefix=()):
    """Every (path) to a value inside obj (dict keys and list indices), the root excluded."""
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj[:8])  # a few elements of long lists are enough
    else:
        return
    for k, v in items:
        yield prefix + (k,)
        yield from _paths(v, prefix + (k,))


def mutate_json_value(obj, rng: random.Random) -> str:
    """Serialize ``obj`` with one random value replaced by a hostile JSON text, or a key dropped/added."""
    paths = list(_paths(obj))
    if not paths:
        return _rand_json_value(rng)
    path = rng.choice(paths)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    op = rng.randrange(5)
    if op == 0 and isinstance(parent, dict):
        del parent[path[-1]]
        return json.dumps(obj, separators=(",", ":"))
    if op == 1 and isinstance(parent, dict):
        parent[rng.choice(["extra", "value", "run", "record", "series", "\u202e"])] = _PLACEHOLDER
    else:
        parent[path[-1]] = _PLACEHOLDER
    return json.dumps(obj, separators=(",", ":")).replace(json.dumps(_PLACEHOLDER), _rand_json_value(rng))


def mutate_jsonl(text: str, rng: random.Random) -> bytes:
    """A JSON Lines file: structured edit of one record, or byte-level edits of the whole file."""
    if rng.random() < 0.6:
        lines = text.split("\n")
        idx = [i for i, ln in enumerate(lines) if ln.strip()]
        i = rng.choice(idx)
        lines[i] = mutate_json_value(json.loads(lines[i]), rng)
        out = "\n".join(lines).encode("utf-8", "surrogatepass")
        return mutate_bytes(out, rng) if rng.random() < 0.15 else out
    return mutate_bytes(text.encode(), rng)


def mutate_json_doc(text: str, rng: random.Random) -> bytes:
    """One JSON document (a Kineto trace): a structured edit of one event or field, or byte edits."""
    if rng.random() < 0.6:
        doc = _parsed(text)
        events = doc.get("traceEvents", [])
        if events and rng.random() < 0.8:
            i = rng.randrange(len(events))
            sub = mutate_json_value(json.loads(json.dumps(events[i])), rng)  # edit a copy of one event
            copy = dict(doc, traceEvents=[*events[:i], _PLACEHOLDER, *events[i + 1:]])
            return json.dumps(copy).replace(json.dumps(_PLACEHOLDER), sub).encode("utf-8", "surrogatepass")
        return mutate_json_value(json.loads(text), rng).encode("utf-8", "surrogatepass")
    return mutate_bytes(text.encode(), rng)


@functools.lru_cache(maxsize=4)
def _parsed(text: str):
    """The base document parsed once (never modified: mutations work on copies)."""
    return json.loads(text)


_TOML_FIELD = re.compile(r"(\b(?:name|m|n|k|dtype|op|bytes|link|chunk|weight|format|tags|description)\s*=\s*)"
                         r"(\"[^\"\n]*\"|\[[^\]\n]*\]|[^,}\n]+)")


def mutate_toml(text: str, rng: random.Random) -> bytes:
    """A scenario file: a field's value replaced by a hostile TOML value, or byte-level edits."""
    if rng.random() < 0.6:
        fields = list(_TOML_FIELD.finditer(text))
        f = rng.choice(fields)
        out = text[:f.start(2)] + rng.choice(TOML_NASTY) + text[f.end(2):]
        return out.encode("utf-8", "surrogatepass")
    return mutate_bytes(text.encode(), rng)


# ---------------------------------------------------------------------------------------------
# Running a case
# ---------------------------------------------------------------------------------------------

class CaseTimeout(BaseException):
    """Raised by SIGALRM inside a case that ran past its limit (BaseException: nothing catches it)."""


@dataclass
class Outcome:
    kind: str  # ok | error | traceback | hang | wrote_elsewhere | input_changed
    rc: int | None
    stderr: str
    seconds: float

    @property
    def where(self) -> str:
        """The deepest c3prof frame of a traceback (e.g. ``c3prof/ingest/_kineto.pyx``), or ''."""
        frames = re.findall(r'File "([^"]*c3prof/[^"]*)"', self.stderr)
        return frames[-1][frames[-1].rindex("c3prof/"):] if frames else ""


@dataclass
class Tally:
    command: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, outcome: Outcome, label: str) -> None:
        self.counts[outcome.kind] = self.counts.get(outcome.kind, 0) + 1
        self.seconds += outcome.seconds
        if outcome.kind not in ("ok", "error"):
            last = outcome.stderr.strip().splitlines()[-1:] or [""]
            self.failures.append(f"{label}: {outcome.kind} rc={outcome.rc} in [{outcome.where}]: {last[0][:400]}")

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    def line(self) -> str:
        c = self.counts
        return (f"fuzz {self.command}: {self.cases} cases, {c.get('error', 0)} one-line errors, "
                f"{c.get('ok', 0)} successes, {c.get('traceback', 0)} tracebacks, {c.get('hang', 0)} hangs, "
                f"{c.get('input_changed', 0)} input changes, {c.get('wrote_elsewhere', 0)} writes elsewhere "
                f"({self.seconds:.1f} s)")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run_case(workdir: Path, argv: list[str], inputs: list[str], outputs: list[str],
             limit_s: float = 10.0) -> Outcome:
    """Run ``c3prof argv`` in ``workdir``; inputs and outputs are names relative to it."""
    before = _listing(workdir)
    hashes = {name: _sha(workdir / name) for name in inputs}
    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    t0 = time.perf_counter()
    rc: int | None = None
    kind = None
    try:
        os.chdir(workdir)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["--debug", *argv])
    except CaseTimeout:
        kind = "hang"
    except SystemExit as exc:  # argparse
        rc = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001  anything escaping main is a failure
        kind = "traceback"
        err.write(f"escaped main: {type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        os.chdir(old_cwd)
    seconds = time.perf_counter() - t0
    stderr = err.getvalue()
    if kind is None:
        kind = _classify(rc, stderr)
    if kind in ("ok", "error"):
        kind = _check_files(workdir, before, hashes, outputs) or kind
    return Outcome(kind, rc, stderr, seconds)


def _alarm(signum, frame):
    raise CaseTimeout()


def _classify(rc, stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if rc == 0:
        return "traceback" if "Traceback" in stderr else "ok"
    if rc == 2 and len(lines) >= 1 and all(": error: " in ln for ln in lines) and "Traceback" not in stderr:
        # one line per failing item (`suites` reports each broken suite on its own line)
        return "error"
    return "traceback"


def _check_files(workdir: Path, before: set[str], hashes: dict[str, str], outputs: list[str]) -> str | None:
    for name, digest in hashes.items():
        p = workdir / name
        if not p.exists() or _sha(p) != digest:
            return "input_changed"
    allowed = {o.rstrip("/") for o in outputs}
    for new in _listing(workdir) - before:
        if not any(new == o or new.startswith(o + "/") for o in allowed):
            return "wrote_elsewhere"
    return None
