#!/usr/bin/env python3
"""Make a large, real-shaped Kineto trace by replicating the events of a small one.

    python benchmarks/make_large_kineto_trace.py INPUT.json[.gz] OUT.json --size-gb 1.0

The input's ``traceEvents`` are copied again and again, each copy shifted in time (by the input's
span plus a gap) and in identity (``External id``, ``correlation``, ``Ev Idx``, flow ``id`` are
offset so links stay unique and point inside their own copy), until the output reaches the asked
size. Metadata events (``ph: "M"``) and the top-level keys are written once. ``ProfilerStep#N``
annotations are not replicated: a real long trace holds the few steps a profiler schedule records,
so the output gets ``--steps`` of them (default 4) covering equal slices of its time, as if the copies
were the kernels of those steps (HTA's loader, for one, scans every step for every event: thousands
of replicated steps would measure that scan, not loading). The output follows the
layout libkineto writes (one indented block per event, ``ts``/``dur`` in microseconds with three
decimals), so a reader sees the same byte patterns as in a real trace; only its length differs.

Because the generator is a pure function of the input and the size, the benchmark is reproducible.
Keep the output out of git (write it under /tmp): it is >= 1 GB.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from pathlib import Path

ID_ARGS = ("External id", "correlation", "Ev Idx")
STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
GAP_NS = 1_000_000
_PLACEHOLDER = re.compile(r'"@@(\d+)@@"')


def _load(path: Path) -> dict:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def _us(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _layout(ev: dict) -> str:
    """One event in libkineto's layout: the header fields on one line, args one per line."""
    head = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in ev.items() if k != "args")
    if isinstance(ev.get("args"), dict) and ev["args"]:
        args = ",\n".join(f'      "{k}": {json.dumps(v)}' for k, v in ev["args"].items())
        return "  {\n    " + head + ",\n    \"args\": {\n" + args + "\n    }\n  }"
    return "  {\n    " + head + "\n  }"


class _Template:
    """An event serialized once, with holes where the time and the ids change from copy to copy."""

    def __init__(self, ev: dict):
        ev = json.loads(json.dumps(ev))
        self.fields: list[tuple[str, int]] = []  # (kind, base value): kind "time" or "id"

        def hole(kind: str, value: int) -> str:
            self.fields.append((kind, value))
            return f"@@{len(self.fields) - 1}@@"

        for key in ("ts",):
            if isinstance(ev.get(key), (int, float)):
                ev[key] = hole("time", round(ev[key] * 1000))
        if isinstance(ev.get("dur"), (int, float)):
            ev["dur"] = hole("dur", round(ev["dur"] * 1000))
        if ev.get("ph") in ("s", "f", "t") and isinstance(ev.get("id"), int):
            ev["id"] = hole("id", ev["id"])
        args = ev.get("args")
        if isinstance(args, dict):
            for key in ID_ARGS:
                if isinstance(args.get(key), int) and args[key] >= 0:
                    args[key] = hole("id", args[key])
        self.parts = _PLACEHOLDER.split(_layout(ev))

    def render(self, time_shift: int, id_shift: int) -> str:
        out = []
        parts = self.parts
        for i in range(0, len(parts) - 1, 2):
            out.append(parts[i])
            kind, base = self.fields[int(parts[i + 1])]
            if kind == "time":
                out.append(_us(base + time_shift))
            elif kind == "dur":
                out.append(_us(base))
            else:
                out.append(str(base + id_shift))
        out.append(parts[-1])
        return "".join(out)


def _is_step(e: dict) -> bool:
    return isinstance(e.get("name"), str) and bool(STEP_NAME.match(e["name"]))


def generate(src: Path, dst: Path, size_bytes: int, steps: int = 4) -> dict:
    doc = _load(src)
    events = doc.get("traceEvents", [])
    once = [e for e in events if e.get("ph") == "M"]
    step_proto = next((e for e in events if _is_step(e)), None)
    repeat = [e for e in events if e.get("ph") != "M" and "ts" in e and isinstance(e.get("ts"), (int, float))
              and not _is_step(e)]
    if not repeat:
        raise SystemExit(f"{src}: no timed events to replicate")
    starts = [round(e["ts"] * 1000) for e in repeat]
    ends = [round((e["ts"] + (e.get("dur") or 0)) * 1000) for e in repeat]
    span = max(ends) - min(starts) + GAP_NS
    max_id = 0
    for e in repeat:
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        for key in ID_ARGS:
            if isinstance(args.get(key), int):
                max_id = max(max_id, args[key])
        if isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
    id_step = max_id + 1
    templates = [_Template(e) for e in repeat]
    header = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
    header["c3prof_note"] = (f"GENERATED by benchmarks/make_large_kineto_trace.py from {src.name}: its events "
                             "replicated with shifted timestamps and ids (benchmark input, not a measurement)")
    written = copies = n_events = 0
    with open(dst, "w", encoding="utf-8") as f:
        def put(text: str) -> None:
            nonlocal written
            f.write(text)
            written += len(text)

        put("{\n" + "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in header.items()))
        put('  "traceEvents": [\n')
        first = True
        for e in once:
            put(("" if first else ",\n") + _layout(e))
            first = False
            n_events += 1
        while written < size_bytes:
            block = ",\n".join(t.render(copies * span, copies * id_step) for t in templates)
            put(("" if first else ",\n") + block)
            first = False
            copies += 1
            n_events += len(templates)
        if step_proto is not None and steps > 0:
            # A few profiler steps over the whole time range (the order of traceEvents is free).
            t0, total = min(starts) - 1000, copies * span
            for k in range(steps):
                ev = json.loads(json.dumps(step_proto))
                ev["name"] = f"ProfilerStep#{k + 1}"
                ev["ts"] = (t0 + k * total // steps) / 1000
                ev["dur"] = (total // steps) / 1000
                put(",\n" + _layout(ev))
                n_events += 1
        put("\n  ],\n" + f'  "traceName": {json.dumps(str(dst))}\n' + "}\n")
    return {"output": str(dst), "bytes": written, "copies": copies, "events": n_events,
            "events_per_copy": len(templates)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", type=Path, help="a Kineto trace (.json or .json.gz)")
    ap.add_argument("output", type=Path, help="the large trace to write (.json)")
    ap.add_argument("--size-gb", type=float, default=1.0, help="size to reach, in GB (10^9 bytes; default 1.0)")
    ap.add_argument("--steps", type=int, default=4, help="ProfilerStep annotations over the output (default 4)")
    args = ap.parse_args(argv)
    t0 = time.time()
    info = generate(args.input, args.output, int(args.size_gb * 1e9), steps=args.steps)
    info["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
