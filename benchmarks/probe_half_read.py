#!/usr/bin/env python3
"""Would reading a trace in two processes pay? Times, in one process, reading a whole trace, reading
each half of its phase records as a trace of its own (the header and other leading records kept in
both), and the pickle round trip of the second half's Trace: what a forked child reading that half
would have to send back.

    python benchmarks/probe_half_read.py TRACE [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import pickle
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from c3prof.trace import read_trace  # noqa: E402


def split(trace: Path, folder: Path) -> tuple[Path, Path]:
    """The trace's leading non-phase records, then each half of its phase records, as two files."""
    lines = trace.read_bytes().splitlines(keepends=True)
    first_phase = next(i for i, line in enumerate(lines) if b'"record":"phase"' in line.replace(b" ", b""))
    body = lines[first_phase:]
    halves = (folder / "half1.jsonl", folder / "half2.jsonl")
    for path, part in zip(halves, (body[:len(body) // 2], body[len(body) // 2:])):
        path.write_bytes(b"".join(lines[:first_phase] + part))
    return halves


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    gc.disable()   # as c3prof report reads
    with tempfile.TemporaryDirectory() as tmp:
        half1, half2 = split(args.trace, Path(tmp))
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            whole = read_trace(args.trace)
            t1 = time.perf_counter()
            first = read_trace(half1)
            t2 = time.perf_counter()
            second = read_trace(half2)
            t3 = time.perf_counter()
            data = pickle.dumps(second, protocol=pickle.HIGHEST_PROTOCOL)
            t4 = time.perf_counter()
            pickle.loads(data)
            t5 = time.perf_counter()
            print(f"whole {t1 - t0:.2f} s  half 1 {t2 - t1:.2f} s  half 2 {t3 - t2:.2f} s  pickle {t4 - t3:.2f} s "
                  f"({len(data) / 1e6:.0f} MB)  unpickle {t5 - t4:.2f} s", flush=True)
            del whole, first, second, data
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
