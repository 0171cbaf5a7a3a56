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
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from c3prof.errors import C3profError, ScenarioError
from c3prof.units import format_bytes, parse_bytes

# Element size in bytes of the GEMM dtypes c3prof runs.
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
COMM_OPS = ("transfer", "all_gather", "all_to_all", "all_reduce")
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

    @property
    def chunks(self) -> int:
        return 1 if not self.chunk else self.bytes // self.chunk

    @property
    def label(self) -> str:
        text = f"{self.op} {format_bytes(self.bytes)}"
        if self.link:
            text += f" {self.link}"
        if self.chunks > 1:
            text += f" ({self.chunks}x{format_bytes(self.chunk)})"
        return text

    def to_dict(self) -> dict:
        d: dict = {"op": self.op, "bytes": self.bytes}
        if self.link:
            d.update(link=self.link, chunk=self.chunk or self.bytes)
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
    def from_dict(cls, d: dict, where: str = "scenario") -> "Scenario":
        return _parse_scenario(d, where, source="")


# ------------------------------------------------------------------------------------------------
# Parsing and validation: every problem names the file, the scenario and the field.
# ------------------------------------------------------------------------------------------------

def _positive_int(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{where} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ScenarioError(f"{where} must be positive, got {value}")
    return value


def _table(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise ScenarioError(f"{where} must be a table, got {type(d).__name__}")
    return d


def _no_unknown(d: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(d) - known)
    if unknown:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")


def _parse_gemm(d, where: str) -> GemmSpec:
    d = _table(d, where)
    _no_unknown(d, {"m", "n", "k", "dtype"}, where)
    for key in ("m", "n", "k"):
        if key not in d:
            raise ScenarioError(f"{where}: missing '{key}'")
    dtype = d.get("dtype", "bf16")
    if dtype not in DTYPE_BYTES:
        raise ScenarioError(f"{where}.dtype: unknown dtype {dtype!r} (known: {', '.join(DTYPE_BYTES)})")
    return GemmSpec(
        m=_positive_int(d["m"], f"{where}.m"),
        n=_positive_int(d["n"], f"{where}.n"),
        k=_positive_int(d["k"], f"{where}.k"),
        dtype=dtype,
    )


def _parse_comm(d, where: str) -> CommSpec:
    d = _table(d, where)
    _no_unknown(d, {"op", "bytes", "link", "chunk"}, where)
    op = d.get("op", "transfer")
    if op not in COMM_OPS:
        raise ScenarioError(f"{where}.op: unknown operation {op!r} (known: {', '.join(COMM_OPS)})")
    if "bytes" not in d:
        raise ScenarioError(f"{where}: missing 'bytes'")
    try:
        nbytes = parse_bytes(d["bytes"], f"{where}.bytes")
        chunk = parse_bytes(d["chunk"], f"{where}.chunk") if "chunk" in d else None
    except C3profError as exc:
        raise ScenarioError(str(exc)) from None
    if op != "transfer":
        if "link" in d or "chunk" in d:
            raise ScenarioError(f"{where}: 'link' and 'chunk' apply to op = \"transfer\" only")
        return CommSpec(op=op, bytes=nbytes)
    link = d.get("link", DEFAULT_LINK)
    if link not in LINKS:
        raise ScenarioError(f"{where}.link: unknown link {link!r} (known: {', '.join(LINKS)})")
    chunk = chunk or nbytes
    if chunk > nbytes or nbytes % chunk:
        raise ScenarioError(f"{where}.chunk: {format_bytes(chunk)} must divide bytes ({format_bytes(nbytes)})")
    if chunk % 16:
        raise ScenarioError(f"{where}.chunk: {chunk} bytes is not a multiple of 16 (copy kernels move 16-byte words)")
    return CommSpec(op=op, bytes=nbytes, link=link, chunk=chunk)


def _parse_scenario(d, where: str, source: str) -> Scenario:
    d = _table(d, where)
    _no_unknown(d, {"name", "gemm", "comm", "tags", "description", "weight"}, where)
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ScenarioError(f"{where}: 'name' must be a non-empty string")
    if "/" in name or any(c.isspace() for c in name):
        raise ScenarioError(f"{where}: name {name!r} must not contain '/' or spaces")
    where = f"{where} ({name!r})"
    if "gemm" not in d or "comm" not in d:
        raise ScenarioError(f"{where}: needs both a 'gemm' and a 'comm' table")
    tags = d.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ScenarioError(f"{where}.tags must be a list of strings")
    weight = d.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
        raise ScenarioError(f"{where}.weight must be a positive number, got {weight!r}")
    return Scenario(
        name=name,
        gemm=_parse_gemm(d["gemm"], f"{where}.gemm"),
        comm=_parse_comm(d["comm"], f"{where}.comm"),
        tags=tuple(tags),
        description=str(d.get("description", "")),
        weight=float(weight),
        source=source,
    )


def parse_scenarios(text: str, source: str) -> list[Scenario]:
    """Parse a scenario TOML document; ``source`` names it in error messages."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from None
    fmt = doc.get("format", SCENARIO_FORMAT)
    if fmt != SCENARIO_FORMAT:
        raise ScenarioError(f"{source}: scenario format {fmt!r} is not supported (this c3prof reads format {SCENARIO_FORMAT})")
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
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario file: {exc.strerror or exc}") from None
    return parse_scenarios(text, str(path))


# ------------------------------------------------------------------------------------------------
# Built-in suites
# ------------------------------------------------------------------------------------------------

def suite_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("c3prof.suites").iterdir() if p.name.endswith(".toml"))


def load_suite(name: str) -> list[Scenario]:
    if name not in suite_names():
        raise ScenarioError(f"unknown suite {name!r} (built-in suites: {', '.join(suite_names())})")
    text = resources.files("c3prof.suites").joinpath(f"{name}.toml").read_text()
    return parse_scenarios(text, f"suite {name}")


def suite_description(name: str) -> str:
    text = resources.files("c3prof.suites").joinpath(f"{name}.toml").read_text()
    return str(tomllib.loads(text).get("description", ""))


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
    fields = [f'op = "{c.op}"']
    if c.link:
        fields.append(f'link = "{c.link}"')
    fields.append(f'bytes = "{format_bytes(c.bytes)}"')
    if c.chunks > 1:
        fields.append(f'chunk = "{format_bytes(c.chunk)}"')
    return "comm = { " + ", ".join(fields) + " }"


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
