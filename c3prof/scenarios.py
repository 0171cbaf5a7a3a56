"""Scenarios: which GEMM runs beside which communication. The first stage of the data path.

A scenario is a pair (GEMM shape, communication operation and size). Strategies (how the pair is
scheduled) are chosen at capture time, not here. Scenarios come from built-in suites
(``c3prof/suites/*.toml``) or from a user's TOML file with the same format (docs/scenarios.md):

    [[scenario]]
    name = "cb8k-x-sm256M"
    gemm = { m = 8192, n = 8192, k = 8192, dtype = "bf16" }
    comm = { op = "transfer", bytes = "256MiB" }
    tags = ["synthetic", "compute-bound"]

Byte sizes follow nccl-tests: ``transfer`` moves ``bytes`` once; for ``all_gather`` ``bytes`` is the
gathered (output) buffer; for ``all_to_all`` and ``all_reduce`` the per-rank buffer.

A ``transfer`` names the **link** its bytes cross (``LINKS``; default ``pcie_h2d``) and may split them
into copies of ``chunk`` bytes (KV-cache blocks, offloaded layers): strategies choose only the
carrier (SM copy kernel or copy engine) of those same bytes over that same link.

    comm = { op = "transfer", link = "pcie_d2h", bytes = "64MiB", chunk = "2MiB" }

Two optional knobs of a transfer serve the interference study: ``ctas`` sets the SM carrier's CTA
count (a rate-matched SM control), ``gap`` pauses between consecutive copies on either carrier (a
throttled copy engine at a fixed copy size). ``op = "sleep"`` (with a ``duration``) is a control that
moves no bytes.
"""

from __future__ import annotations

import json
import math
import tomllib
import unicodedata
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from c3prof.errors import C3profError, ScenarioError
from c3prof.inputs import SCENARIO_MAX_BYTES, check_input_file
from c3prof.units import format_bytes, format_duration_us, parse_bytes, parse_duration_us

# Element size in bytes of the GEMM dtypes c3prof runs.
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
COMM_OPS = ("transfer", "all_gather", "all_to_all", "all_reduce", "sleep")
# ``sleep`` is a control, not communication: one 1-CTA kernel spins for ``duration`` on the
# communication stream and moves no bytes. Beside a GEMM it measures what concurrency alone costs
# (a second stream, one SM taken), the baseline of the interference study.
# Links a single-GPU transfer can cross. pcie_bidir moves ``bytes`` in each direction at once.
LINKS = {
    "pcie_h2d": "pinned host memory -> device, over PCIe",
    "pcie_d2h": "device -> pinned host memory, over PCIe",
    "pcie_bidir": "both directions at once over PCIe (bytes each way)",
    "hbm": "device memory -> device memory on the same GPU",
}
DEFAULT_LINK = "pcie_h2d"
SCENARIO_FORMAT = 1


@dataclass(frozen=True)
class GemmSpec:
    """C[m, n] = A[m, k] @ B[k, n] in ``dtype``."""

    m: int
    n: int
    k: int
    dtype: str = "bf16"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def min_bytes(self) -> int:
        """Fewest bytes through device memory: each operand read once, the result written once."""
        return (self.m * self.k + self.k * self.n + self.m * self.n) * DTYPE_BYTES[self.dtype]

    @property
    def arithmetic_intensity(self) -> float:
        """FLOP per byte of device-memory traffic, compared with the machine balance for the taxonomy."""
        return self.flops / self.min_bytes

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.dtype}"

    def to_dict(self) -> dict:
        return {"m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype}


@dataclass(frozen=True)
class CommSpec:
    """The communication beside the GEMM: a transfer or a collective of ``bytes`` (nccl-tests' size).

    A transfer crosses ``link`` and moves its bytes in copies of ``chunk`` bytes (``chunk == bytes``:
    one copy). Collectives have no link or chunk (their peers and algorithm decide).
    """

    op: str
    bytes: int
    link: str | None = None
    chunk: int | None = None
    ctas: int | None = None            # CTAs of the SM carrier (None: the link's default)
    gap_us: float | None = None        # pause between consecutive copies (throttles the rate)
    duration_us: float | None = None   # op = "sleep" only: how long the control kernel spins

    @property
    def chunks(self) -> int:
        return 1 if not self.chunk else self.bytes // self.chunk

    @property
    def label(self) -> str:
        if self.op == "sleep":
            return f"sleep {format_duration_us(self.duration_us or 0)}"
        text = f"{self.op} {format_bytes(self.bytes)}"
        if self.link:
            text += f" {self.link}"
        if self.chunk and self.chunks > 1:
            text += f" ({self.chunks}x{format_bytes(self.chunk)})"
        if self.gap_us:
            text += f" gap {format_duration_us(self.gap_us)}"
        if self.ctas:
            text += f" {self.ctas} CTAs"
        return text

    def to_dict(self) -> dict:
        d: dict = {"op": self.op, "bytes": self.bytes}
        if self.link:
            d.update(link=self.link, chunk=self.chunk or self.bytes)
        for key in ("ctas", "gap_us", "duration_us"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        return d


@dataclass(frozen=True)
class Scenario:
    name: str
    gemm: GemmSpec
    comm: CommSpec
    tags: tuple[str, ...] = ()
    description: str = ""
    # Relative importance (ingest sets it to the share of job time); analysis may weight by it.
    weight: float = 1.0
    source: str = field(default="", compare=False)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "gemm": self.gemm.to_dict(),
            "comm": self.comm.to_dict(),
            "tags": list(self.tags),
            "description": self.description,
            "weight": self.weight,
        }

    @classmethod
    def from_dict(cls, d: dict, where: str = "scenario", capture_rules: bool = True) -> "Scenario":
        """``capture_rules=False`` (reading a trace) checks the data but not what only capture needs
        (16-byte transfer words), so traces of other c3prof versions stay readable."""
        return _parse_scenario(d, where, source="", capture_rules=capture_rules)


# ------------------------------------------------------------------------------------------------
# Parsing and validation: every problem names the file, the scenario and the field.
# ------------------------------------------------------------------------------------------------

# Bounds far above any GEMM or transfer a GPU runs, far below what overflows the arithmetic:
# cuBLAS takes 32-bit dimensions, and no operand or transfer reaches 1 TiB on any GPU today.
MAX_DIM = 2**31 - 1
MAX_BYTES = 2**40
MAX_WEIGHT = 1e12
MAX_TEXT = 100_000
MAX_NAME = 200


def _positive_int(value, where: str, maximum: int = MAX_DIM) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{where} must be a positive integer, got {_short(value)}")
    if value <= 0:
        raise ScenarioError(f"{where} must be positive, got {value}")
    if value > maximum:
        raise ScenarioError(f"{where} = {value} is larger than c3prof runs (at most {maximum})")
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _table(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise ScenarioError(f"{where} must be a table, got {type(d).__name__}")
    return d


def _no_unknown(d: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(d) - known)
    if unknown:
        shown = ", ".join(str(u)[:40] for u in unknown[:5])
        raise ScenarioError(f"{where}: unknown field(s) {shown} (known: {', '.join(sorted(known))})")


# Characters no name or text may hold: controls, format characters (bidirectional overrides,
# zero-width joiners and spaces, byte-order marks), surrogates and private or unassigned code points.
# They make a name look like another one, or break the terminal, CSV and TOML writers.
_HIDDEN = ("Cc", "Cf", "Cs", "Co", "Cn")


def text_problem(text: str, *, is_name: bool = False) -> str | None:
    """Why ``text`` is not acceptable as a name (``is_name``) or free text, or None."""
    limit = MAX_NAME if is_name else MAX_TEXT
    if len(text) > limit:
        return f"is longer than {limit} characters"
    if text.isascii() and text.isprintable():
        # The common case at C speed: printable ASCII holds no hidden character, and its one space
        # character is ' ' (a trace of 10^4 runs checks 3 * 10^4 names).
        return "must not contain '/' or spaces" if is_name and ("/" in text or " " in text) else None
    for c in text:
        if c in "\n\t" and not is_name:
            continue  # free text may span lines
        category = unicodedata.category(c)
        if category in _HIDDEN:
            return f"holds the invisible or control character U+{ord(c):04X}"
        if is_name and (c == "/" or category.startswith("Z")):
            return "must not contain '/' or spaces"
    return None


def check_name(name, where: str, error: type[C3profError] = ScenarioError) -> str:
    if not isinstance(name, str) or not name.strip():
        raise error(f"{where} must be a non-empty string, got {_short(name)}")
    problem = text_problem(name, is_name=True)
    if problem:
        raise error(f"{where} {_short(name)} {problem}")
    return name


def _check_tag(tag: str, where: str) -> None:
    """A tag is a short label on one line: spaces allowed (``dtype:unsigned char``), nothing invisible."""
    problem = "is empty" if not tag.strip() else text_problem(tag, is_name=False)
    if problem is None and (len(tag) > MAX_NAME or "\n" in tag or "\t" in tag):
        problem = f"must be one line of at most {MAX_NAME} characters"
    if problem:
        raise ScenarioError(f"{where} {_short(tag)} {problem}")


def _check_text(text, where: str) -> str:
    if not isinstance(text, str):
        raise ScenarioError(f"{where} must be a string, got {type(text).__name__}")
    problem = text_problem(text)
    if problem:
        raise ScenarioError(f"{where} {problem}")
    return text


def _choice(value, known, where: str, what: str) -> str:
    if not isinstance(value, str) or value not in known:
        raise ScenarioError(f"{where}: unknown {what} {_short(value)} (known: {', '.join(known)})")
    return value


def _parse_gemm(d, where: str) -> GemmSpec:
    d = _table(d, where)
    _no_unknown(d, {"m", "n", "k", "dtype"}, where)
    for key in ("m", "n", "k"):
        if key not in d:
            raise ScenarioError(f"{where}: missing '{key}'")
    dtype = _choice(d.get("dtype", "bf16"), tuple(DTYPE_BYTES), f"{where}.dtype", "dtype")
    m, n, k = (_positive_int(d[key], f"{where}.{key}") for key in ("m", "n", "k"))
    largest = max(m * k, k * n, m * n) * DTYPE_BYTES[dtype]
    if largest > MAX_BYTES:
        raise ScenarioError(f"{where}: an operand of {m}x{n}x{k} {dtype} takes {largest} bytes, more than "
                            f"c3prof runs ({format_bytes(MAX_BYTES)})")
    return GemmSpec(m=m, n=n, k=k, dtype=dtype)


def _parse_sleep(d, where: str) -> CommSpec:
    """A sleep control: ``duration`` ('1ms') in scenario files, ``duration_us`` in traces (to_dict)."""
    _no_unknown(d, {"op", "duration", "duration_us", "bytes"}, where)
    if d.get("bytes", 0) != 0:
        raise ScenarioError(f"{where}: op = \"sleep\" moves no bytes; give a 'duration', not 'bytes'")
    try:
        if "duration_us" in d and "duration" not in d:
            us = d["duration_us"]
            if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 < us <= 10e6:
                raise ScenarioError(f"{where}.duration_us must be a number of microseconds up to 10 s, got {_short(us)}")
            return CommSpec(op="sleep", bytes=0, duration_us=float(us))
        if "duration" not in d:
            raise ScenarioError(f"{where}: op = \"sleep\" needs a 'duration' (e.g. '1ms')")
        return CommSpec(op="sleep", bytes=0, duration_us=parse_duration_us(d["duration"], f"{where}.duration"))
    except C3profError as exc:
        raise ScenarioError(str(exc)) from None


def _parse_transfer_knobs(d, where: str) -> dict:
    """The optional ``ctas`` (SM carrier's CTAs) and ``gap`` (pause between copies) of a transfer."""
    out: dict = {}
    if "ctas" in d:
        out["ctas"] = _positive_int(d["ctas"], f"{where}.ctas")
        if out["ctas"] > 4096:
            raise ScenarioError(f"{where}.ctas: {out['ctas']} is more CTAs than a copy kernel runs (4096)")
    if "gap" in d:
        try:
            out["gap_us"] = parse_duration_us(d["gap"], f"{where}.gap")
        except C3profError as exc:
            raise ScenarioError(str(exc)) from None
    elif "gap_us" in d:    # a trace's scenario (to_dict)
        us = d["gap_us"]
        if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 < us <= 10e6:
            raise ScenarioError(f"{where}.gap_us must be a number of microseconds up to 10 s, got {_short(us)}")
        out["gap_us"] = float(us)
    return out


def _parse_comm(d, where: str, capture_rules: bool = True) -> CommSpec:
    d = _table(d, where)
    op = _choice(d.get("op", "transfer"), COMM_OPS, f"{where}.op", "operation")
    if op == "sleep":
        return _parse_sleep(d, where)
    _no_unknown(d, {"op", "bytes", "link", "chunk", "ctas", "gap", "gap_us"}, where)
    if "bytes" not in d:
        raise ScenarioError(f"{where}: missing 'bytes'")
    try:
        nbytes = parse_bytes(d["bytes"], f"{where}.bytes")
        chunk = parse_bytes(d["chunk"], f"{where}.chunk") if "chunk" in d else None
    except C3profError as exc:
        raise ScenarioError(str(exc)) from None
    if nbytes > MAX_BYTES:
        raise ScenarioError(f"{where}.bytes: {nbytes} bytes is more than c3prof moves ({format_bytes(MAX_BYTES)})")
    if op != "transfer":
        if {"link", "chunk", "ctas", "gap", "gap_us"} & set(d):
            raise ScenarioError(f"{where}: 'link', 'chunk', 'ctas' and 'gap' apply to op = \"transfer\" only")
        return CommSpec(op=op, bytes=nbytes)
    link = _choice(d.get("link", DEFAULT_LINK), LINKS, f"{where}.link", "link")
    chunk = chunk or nbytes
    if chunk > nbytes or nbytes % chunk:
        raise ScenarioError(f"{where}.chunk: {format_bytes(chunk)} must divide bytes ({format_bytes(nbytes)})")
    if capture_rules and chunk % 16:
        raise ScenarioError(f"{where}.chunk: {chunk} bytes is not a multiple of 16 (copy kernels move 16-byte words)")
    return CommSpec(op=op, bytes=nbytes, link=link, chunk=chunk, **_parse_transfer_knobs(d, where))


def _parse_weight(weight, where: str) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) \
            or not 0 < weight <= MAX_WEIGHT:
        raise ScenarioError(f"{where}.weight must be a positive number up to {MAX_WEIGHT:g}, got {_short(weight)}")
    return float(weight)


def _parse_scenario(d, where: str, source: str, capture_rules: bool = True) -> Scenario:
    d = _table(d, where)
    _no_unknown(d, {"name", "gemm", "comm", "tags", "description", "weight"}, where)
    name = check_name(d.get("name"), f"{where}: 'name'")
    where = f"{where} ({name!r})"
    if "gemm" not in d or "comm" not in d:
        raise ScenarioError(f"{where}: needs both a 'gemm' and a 'comm' table")
    tags = d.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ScenarioError(f"{where}.tags must be a list of strings")
    for t in tags:
        _check_tag(t, f"{where}.tags: tag")
    return Scenario(
        name=name,
        gemm=_parse_gemm(d["gemm"], f"{where}.gemm"),
        comm=_parse_comm(d["comm"], f"{where}.comm", capture_rules),
        tags=tuple(tags),
        description=_check_text(d.get("description", ""), f"{where}.description"),
        weight=_parse_weight(d.get("weight", 1.0), where),
        source=source,
    )


def parse_scenarios(text: str, source: str) -> list[Scenario]:
    """Parse a scenario TOML document; ``source`` names it in error messages."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: not usable TOML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ScenarioError(f"{source}: not usable TOML: {_short(str(exc))}") from None
    fmt = doc.get("format", SCENARIO_FORMAT)
    if isinstance(fmt, bool) or fmt != SCENARIO_FORMAT:
        raise ScenarioError(f"{source}: scenario format {_short(fmt)} is not supported "
                            f"(this c3prof reads format {SCENARIO_FORMAT})")
    if "description" in doc:
        _check_text(doc["description"], f"{source}: description")
    _no_unknown(doc, {"format", "scenario", "description"}, source)
    entries = doc.get("scenario")
    if not isinstance(entries, list) or not entries:
        raise ScenarioError(f"{source}: no scenarios (expected one or more [[scenario]] tables)")
    scenarios = [_parse_scenario(e, f"{source}: scenario {i + 1}", source) for i, e in enumerate(entries)]
    seen: set[str] = set()
    for s in scenarios:
        if s.name in seen:
            raise ScenarioError(f"{source}: scenario name {s.name!r} appears twice")
        seen.add(s.name)
    return scenarios


def load_scenario_file(path: str | Path) -> list[Scenario]:
    path = Path(path)
    check_input_file(path, "scenario file", SCENARIO_MAX_BYTES, ScenarioError, verb="read")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario file: {exc.strerror or exc}") from None
    return parse_scenarios(decode_utf8(data, str(path), "scenario file"), str(path))


def decode_utf8(data: bytes, source: str, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{source}: {what} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None


# ------------------------------------------------------------------------------------------------
# Built-in suites
# ------------------------------------------------------------------------------------------------

def suite_names() -> list[str]:
    return sorted(p.name[:-5] for p in suites_root().iterdir() if p.name.endswith(".toml"))


def load_suite(name: str) -> list[Scenario]:
    if name not in suite_names():
        raise ScenarioError(f"unknown suite {name!r} (built-in suites: {', '.join(suite_names())})")
    return parse_scenarios(_suite_text(name), f"suite {name}")


def _suite_text(name: str) -> str:
    data = suites_root().joinpath(f"{name}.toml").read_bytes()
    return decode_utf8(data, f"suite {name}", "suite file")


def suites_root():
    """Where the built-in suites live (a function, so tests can point it at a copy)."""
    return resources.files("c3prof.suites")


def suite_description(name: str) -> str:
    """The suite's description; the suite is parsed (and so validated) first."""
    load_suite(name)
    return str(tomllib.loads(_suite_text(name)).get("description", ""))


def dump_scenarios(scenarios: list[Scenario], description: str = "") -> str:
    """Serialize to the TOML scenario format (used by ``c3prof ingest`` to write replayable files)."""
    lines = [f"format = {SCENARIO_FORMAT}"]
    if description:
        lines.append(f"description = {_toml_str(description)}")
    for s in scenarios:
        g, c = s.gemm, s.comm
        lines += [
            "",
            "[[scenario]]",
            f"name = {_toml_str(s.name)}",
            f'gemm = {{ m = {g.m}, n = {g.n}, k = {g.k}, dtype = "{g.dtype}" }}',
            _comm_toml(c),
            "tags = [" + ", ".join(_toml_str(t) for t in s.tags) + "]",
        ]
        if s.description:
            lines.append(f"description = {_toml_str(s.description)}")
        if s.weight != 1.0:
            lines.append(f"weight = {s.weight!r}")
    return "\n".join(lines) + "\n"


def _comm_toml(c: CommSpec) -> str:
    if c.op == "sleep":
        return f'comm = {{ op = "sleep", duration = "{format_duration_us(c.duration_us or 0)}" }}'
    fields = [f'op = "{c.op}"']
    if c.link:
        fields.append(f'link = "{c.link}"')
    fields.append(f'bytes = "{format_bytes(c.bytes)}"')
    if c.chunk and c.chunks > 1:
        fields.append(f'chunk = "{format_bytes(c.chunk)}"')
    if c.ctas:
        fields.append(f"ctas = {c.ctas}")
    if c.gap_us:
        fields.append(f'gap = "{format_duration_us(c.gap_us)}"')
    return "comm = { " + ", ".join(fields) + " }"


def _toml_str(s: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes: \\, \", \n, \t, \uXXXX).
    return json.dumps(s, ensure_ascii=False)
