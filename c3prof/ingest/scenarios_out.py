"""Turn ingest results into a c3prof scenario file that ``c3prof capture --scenarios`` replays.

One scenario per distinct (GEMM, communication) pair that c3prof capture can run:

* communication sizes are **bucketed** to a quarter-octave grid (2^k x 1, 1.25, 1.5 or 1.75, the
  nearest), so near-equal sizes of one operation (55,539,892 B and 55,599,168 B) become one
  scenario; the exact sizes are listed in its description;
* transfers keep their **direction**: HtoD replays on link ``pcie_h2d``, DtoH on ``pcie_d2h``
  (c3prof.scenarios.LINKS), also in the name and a ``direction:`` tag; their bucketed size is a
  multiple of 16 bytes (capture's copy kernels move 16-byte words); peer copies are not replayed
  (the scenario model has no peer link);
* the collective's dtype, when the trace gives it, is a ``dtype:`` tag (spaces as '_': ``dtype:unsigned_char``);
* ``weight`` = the share of the overlapped GEMM+communication time; the share of the traces' step
  time (summed device spans) is in the description;
* sizes beyond what one GPU node can run (a GEMM dimension over ``MAX_GEMM_DIM``, operands or a
  message over ``MAX_BYTES``) are refused with a note instead of being written.

The TOML is written by c3prof.scenarios.dump_scenarios and read back with parse_scenarios before it
is written, so a file that capture would reject is never produced.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Callable

from c3prof.ingest.summary import TRANSFER_LINKS, ScenarioResult
from c3prof.scenarios import MAX_NAME, CommSpec, GemmSpec, Scenario, dump_scenarios, parse_scenarios
from c3prof.units import format_bytes

MAX_GEMM_DIM = 1 << 24
MAX_BYTES = 1 << 40  # 1 TiB
_STEPS = (1.0, 1.25, 1.5, 1.75, 2.0)


def bucket_bytes(n: int, multiple: int = 1) -> int:
    """The nearest point of the quarter-octave grid 2^k * (1, 1.25, 1.5, 1.75), rounded up to a
    multiple of ``multiple`` (16 for transfers: capture's copy kernels move 16-byte words)."""
    if n <= 1:
        b = max(n, 1)
    else:
        k = int(math.floor(math.log2(n)))
        base = 1 << k
        b = int(round(base * min(_STEPS, key=lambda f: abs(n - base * f))))
    return -(-b // multiple) * multiple


def refusal(r: ScenarioResult) -> str | None:
    """Why a result must not become a scenario (absurd sizes), or None."""
    g = r.gemm
    if g is not None and max(g.m * g.batch, g.n, g.k) > MAX_GEMM_DIM:
        return f"GEMM {g.label}: a dimension above {MAX_GEMM_DIM}, not a GEMM one GPU runs"
    if g is not None and g.dtype in ("bf16", "fp16", "fp32"):
        spec = GemmSpec(m=g.m * g.batch, n=g.n, k=g.k, dtype=g.dtype)
        if spec.min_bytes > MAX_BYTES:
            return f"GEMM {g.label}: operands of {format_bytes(spec.min_bytes)}, above {format_bytes(MAX_BYTES)}"
    if r.comm.bytes > MAX_BYTES:
        return f"{r.comm.op} of {r.comm.bytes} B, above {format_bytes(MAX_BYTES)}"
    return None


def build_scenarios(results: list[ScenarioResult]) -> tuple[list[Scenario], list[str]]:
    """The scenarios to write, and a note per result refused for its size."""
    merged: dict[tuple, list[ScenarioResult]] = {}
    refused = []
    for r in results:
        if r.replay_op is None or r.gemm is None:
            continue
        why = refusal(r)
        if why is not None:
            refused.append(f"{r.scenario}: not written to scenarios.toml ({why})")
            continue
        g = r.gemm
        if r.replay_op == "transfer":  # the copy's direction is the link it crosses
            comm = CommSpec(op="transfer", bytes=bucket_bytes(r.comm.bytes, 16), link=TRANSFER_LINKS[r.comm.direction])
        else:
            comm = CommSpec(op=r.replay_op, bytes=bucket_bytes(r.comm.bytes))
        key = (GemmSpec(m=g.m * g.batch, n=g.n, k=g.k, dtype=g.dtype), comm, r.comm.direction)
        merged.setdefault(key, []).append(r)
    scenarios: list[Scenario] = []
    names: set[str] = set()
    for (spec, comm, direction), rs in merged.items():
        name = _unique(rs[0].scenario, names)
        scenarios.append(Scenario(name=name, gemm=spec, comm=comm, tags=_tags(rs, direction),
                                  description=_description(rs, comm),
                                  weight=float(f"{max(sum(r.time_share for r in rs), 1e-9):.6g}")))
    scenarios.sort(key=lambda s: -s.weight)
    return scenarios, refused


def _unique(name: str, names: set[str]) -> str:
    while name in names:
        name += "-b"
    names.add(name)
    return name


def _tag(text: str) -> str:
    """A tag from trace text. Scenario tags hold no spaces, '/' or invisible characters, and a
    collective's dtype in the op's arguments may be 'unsigned char': any run of characters other
    than letters, digits and ``.:+-`` becomes one '_', within the name length limit."""
    return re.sub(r"[^\w.:+-]+", "_", text)[:MAX_NAME]


def _tags(rs: list[ScenarioResult], direction: str) -> tuple[str, ...]:
    tags = ["ingested"]
    if rs[0].taxonomy:
        tags.append(rs[0].taxonomy)
    if direction:
        tags.append(f"direction:{direction}")
    for r in rs:
        if r.comm.dtype:
            tags.append(_tag(f"dtype:{r.comm.dtype}"))
        if r.replay_op != r.comm.op:
            tags.append(f"mapped-from:{r.comm.op}")
        if r.gemm is not None and r.gemm.batch > 1:
            tags.append("batch-folded")
        if r.flags:
            tags.append("flagged")
    return tuple(dict.fromkeys(tags))


def _description(rs: list[ScenarioResult], comm: CommSpec) -> str:
    sizes = sorted({r.comm.bytes for r in rs})
    step = [r.step_share for r in rs if r.step_share is not None]
    head = (f"{comm.op} sizes {', '.join(f'{b} B' for b in sizes[:6])}{' ...' if len(sizes) > 6 else ''} "
            f"(bucketed to {format_bytes(comm.bytes)})")
    if step:
        head += f"; {100 * sum(step):.2f}% of step time (summed device spans)"
    parts = [head]
    for r in rs:
        assert r.gemm is not None, "build_scenarios merges only results with a GEMM shape"
        part = (f"{r.comm.label} beside {r.gemm.label}: {r.n_instances} overlapped instances, "
                f"{r.overlap_ns / 1e6:.3f} ms ({100 * r.time_share:.1f}% of overlapped time)")
        if r.fraction_of_ideal is not None:
            part += f", fraction of ideal {r.fraction_of_ideal:.2f}"
        part += "".join(f"; {n}" for n in r.notes if n.startswith(("mapped", "batched")))
        part += "".join(f"; flag: {f}" for f in r.flags)
        parts.append(part)
    return "; ".join(parts)


def write_scenarios(scenarios: list[Scenario], path: Path, sources: list[str],
                    writer: Callable[[Path, str, str], None]) -> str:
    description = ("Scenarios found by c3prof ingest in " + ", ".join(sources) +
                   "; weight = share of the overlapped GEMM+communication time")
    text = dump_scenarios(scenarios, description=description)
    parse_scenarios(text, str(path))  # refuse to write what capture would not read
    writer(path, text, "scenario file")
    return text
