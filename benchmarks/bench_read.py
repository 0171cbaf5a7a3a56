#!/usr/bin/env python3
"""Benchmark reading a large SYNTHETIC trace (not measured data): ``read_trace`` and ``dataset.load``, side by side.

The trace is bench_report.py's: ``--samples`` repetitions in total (default 10^6 over 10,000 runs,
40,006 records, about 28 MiB), written to a temporary directory (or ``--trace PATH``, built there if
missing). Each measurement is a fresh ``python`` process that imports c3prof, then times one call:
``read_trace(TRACE)`` (mode ``read``) or ``dataset.load([TRACE])`` (mode ``load``: reading plus merging
into groups, what ``c3prof report`` does before any analysis), and reports its wall time and the
process's peak RSS (``ru_maxrss``). Nothing else of the report runs.

Side by side: ``--baseline REV`` (default ``main``) times the ``c3prof/`` package of git revision
REV as well (extracted with ``git archive``, run by the same interpreter). Old and new alternate
run by run (``--repeat`` each, per mode), so a busy shared machine slows both alike; the load
average is printed before and after, and everything is saved with ``--json PATH``.

    python benchmarks/bench_read.py                       # worktree vs main, 5 runs of each
    python benchmarks/bench_read.py --baseline a720119 --repeat 7 --json /tmp/read.json
    python benchmarks/bench_read.py --same                # same Dataset as main on every committed trace
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_report import build_trace  # noqa: E402
from compare_report import extract  # noqa: E402  (the c3prof/ package of a git revision)

# The child: run from the directory whose c3prof/ it should import (cwd comes first on sys.path).
# Mode ``digest`` loads the traces and prints a hash of everything in the Dataset (every array's
# dtype and bytes, rounds, medians, records, notes, inputs), to show old and new give the same.
CHILD = """
import hashlib, json, resource, sys, time
import numpy, c3prof.trace, c3prof.analysis.dataset as dataset
mode, traces = sys.argv[1], sys.argv[2:]

def canon(x):
    if isinstance(x, numpy.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes().hex())
    if isinstance(x, dict):
        return ("dict", [(canon(k), canon(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [canon(v) for v in x])
    if hasattr(x, "__dataclass_fields__"):
        return (type(x).__name__, [(f, canon(getattr(x, f))) for f in x.__dataclass_fields__])
    return (type(x).__name__, repr(x))

t0 = time.perf_counter()
result = c3prof.trace.read_trace(traces[0]) if mode == "read" else dataset.load(traces)
wall = time.perf_counter() - t0
digest = hashlib.sha256(repr(canon(result)).encode()).hexdigest() if mode == "digest" else None
print(json.dumps({"wall_s": wall, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "c3prof": c3prof.__file__, "digest": digest}))
"""


def measure(cwd: Path, mode: str, *traces: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, *map(str, traces)], cwd=cwd, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"{cwd}: {mode} failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["c3prof"].startswith(str(cwd)):
        raise SystemExit(f"{cwd}: the child imported {result['c3prof']}, not the c3prof under test")
    return result


def same_datasets(args: argparse.Namespace) -> int:
    """Old and new load each trace into Datasets with the same digest (child mode ``digest``)."""
    with tempfile.TemporaryDirectory() as tmp:
        loads = [[Path(t).resolve() for t in arg.split(",")] for arg in args.same]
        if not loads:
            synthetic = args.trace or Path(tmp) / "synthetic.jsonl"
            if not synthetic.exists():
                build_trace(synthetic, args.samples, args.scenarios)
            data = ROOT / "tests" / "data"
            loads = [[synthetic], *([t] for t in sorted(data.glob("*.jsonl")))]
            loads += [sorted(data.glob(pattern)) for pattern in MULTI_TRACE_LOADS]
        base = extract(args.baseline, Path(tmp))
        differ = [ts for ts in loads
                  if measure(ROOT, "digest", *ts)["digest"] != measure(base, "digest", *ts)["digest"]]
    print(f"{len(loads) - len(differ)} of {len(loads)} loads give the same Dataset as {args.baseline}"
          + "".join(f"\n  differs: {','.join(map(str, ts))}" for ts in differ))
    return 1 if differ else 0


# Committed traces the report reads together: ranks of one capture (combined), repeated captures (pooled).
MULTI_TRACE_LOADS = ("h200x2_llama70b.rank*.jsonl", "h200_default_[12].jsonl", "h200_default_pair_*.jsonl",
                     "h200_default_v4_*.jsonl", "h200_default_proc2_*.jsonl", "h200_default_proc_*.jsonl",
                     "h200_interference_controls_s7_*.jsonl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="main", help="git revision to compare with")
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--scenarios", type=int, default=2500)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each candidate per mode")
    ap.add_argument("--modes", default="read,load")
    ap.add_argument("--trace", type=Path, help="reuse (or build) the synthetic trace here")
    ap.add_argument("--json", type=Path, help="save the results")
    ap.add_argument("--same", nargs="*", metavar="TRACE[,TRACE...]",
                    help="only check that both load these traces (comma-joined: in one load) into the same "
                         "Dataset (default: the synthetic one, every tests/data trace, and the committed "
                         "traces the report reads together); exit 1 if not")
    args = ap.parse_args()
    if args.same is not None:
        return same_datasets(args)
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace or Path(tmp) / "synthetic.jsonl"
        if not trace.exists():
            build_trace(trace, args.samples, args.scenarios)
        base = extract(args.baseline, Path(tmp))
        candidates = {"new (worktree)": ROOT, f"old ({args.baseline})": base}
        load_before = os.getloadavg()
        runs: dict[str, dict[str, list[dict]]] = {m: {c: [] for c in candidates} for m in args.modes.split(",")}
        for mode, by_candidate in runs.items():
            for _ in range(args.repeat):
                for label, cwd in candidates.items():
                    by_candidate[label].append(measure(cwd, mode, trace))
        load_after = os.getloadavg()
    print(f"SYNTHETIC trace: {args.samples} samples, {trace.stat().st_size if trace.exists() else '?'} bytes; "
          f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; {args.repeat} runs each, alternating")
    summary = {}
    for mode, by_candidate in runs.items():
        for label, results in by_candidate.items():
            wall = [r["wall_s"] for r in results]
            rss = [r["peak_rss_mb"] for r in results]
            summary[f"{mode} {label}"] = {"median_s": statistics.median(wall), "min_s": min(wall),
                                           "max_s": max(wall), "peak_rss_mb": statistics.median(rss)}
            print(f"{mode:5s} {label:22s} median {statistics.median(wall):6.3f} s (min {min(wall):.3f}, "
                  f"max {max(wall):.3f}), peak RSS {statistics.median(rss):5.0f} MB")
    if args.json:
        args.json.write_text(json.dumps({"samples": args.samples, "load_before": load_before,
                                         "load_after": load_after, "summary": summary, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
