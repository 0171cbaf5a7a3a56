#!/usr/bin/env python3
"""Compare ``c3prof report`` of this worktree with a git revision's, byte for byte, on every committed trace.

For each ``tests/data/*.jsonl`` (or the traces given), runs ``c3prof report TRACE --json OUT`` with the
terminal report on (100 columns) for the revision's c3prof (its ``c3prof/`` package, extracted with
``git archive``; it has no compiled extension, so it runs the numpy code, which its own tests hold
equal to its kernels) and for this worktree twice: with the compiled kernels and reader scan, and with
them blocked (the numpy and Python fallbacks). The JSON files, the terminal output and the exit
status must be the same.

    python benchmarks/compare_report.py --baseline main          # every committed trace
    python benchmarks/compare_report.py --baseline main tests/data/h200_smoke.jsonl
    python benchmarks/compare_report.py --baseline $(git merge-base HEAD main)   # when main has moved on

The traces are this worktree's (a trace added on main since the branch started is not compared).

Exit status 0 when every trace matches, 1 otherwise (the first differing line is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs the c3prof found first on sys.path (the revision's extracted package, or this worktree's).
# BLOCK: import of the compiled kernels and of the reader's compiled scan refused, so stats.py takes
# its numpy path and trace.py its Python one.
RUNNER = """
import sys
src, block = sys.argv[1], sys.argv[2] == "1"
if src:
    sys.path.insert(0, src)
if block:
    sys.modules["c3prof.analysis._bootstrap"] = None  # `import` of it raises ImportError
    sys.modules["c3prof._trace_read"] = None
from c3prof.cli import main
from c3prof import trace
from c3prof.analysis import stats
assert (stats._bootstrap is None) == block or src, "the kernel was not blocked"
assert getattr(trace, "_trace_read", None) is None or not block, "the reader's scan was not blocked"
sys.exit(main(sys.argv[3:]))
"""


def extract(rev: str, dest: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "c3prof"], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {rev}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def report(src: str, block: bool, trace: Path, out: Path) -> tuple[int, str, bytes]:
    out.unlink(missing_ok=True)  # one output path for every run: the terminal report names it
    env = dict(os.environ, COLUMNS="100", TERM="dumb")
    proc = subprocess.run([sys.executable, "-c", RUNNER, src, "1" if block else "0", "report", str(trace),
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, env=env)
    return proc.returncode, proc.stdout + proc.stderr, out.read_bytes() if out.exists() else b""


def first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}:\n    baseline: {x[:200]}\n    worktree: {y[:200]}"
    return f"lengths differ ({len(a)} vs {len(b)} characters)"


def first_json_difference(a: bytes, b: bytes) -> str:
    """Where two JSON reports first differ, as a key path (the report is one line: a line number
    says nothing); first_difference's lines when either does not parse."""
    try:
        x, y = json.loads(a), json.loads(b)
    except ValueError:
        return first_difference(a.decode(), b.decode())
    path: list[str] = []
    while True:
        if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
            key = next((k for k in x if x[k] != y[k]), None)
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            key = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), None)
        else:
            break
        if key is None:
            return "the same values, written differently"
        path.append(str(key))
        x, y = x[key], y[key]
    return f"at /{'/'.join(path)}:\n    baseline: {json.dumps(x)[:200]}\n    worktree: {json.dumps(y)[:200]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path, help="default: tests/data/*.jsonl")
    ap.add_argument("--baseline", default="main", metavar="REV")
    args = ap.parse_args()
    traces = args.traces or sorted((ROOT / "tests" / "data").glob("*.jsonl"))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="c3prof-compare-") as tmp_name:
        tmp = Path(tmp_name)
        base_src = str(extract(args.baseline, tmp))
        for trace in traces:
            ref = report(base_src, False, trace, tmp / "report.json")
            for label, block in (("kernel", False), ("numpy", True)):
                ours = report("", block, trace, tmp / "report.json")
                what = [name for name, i in (("exit status", 0), ("terminal output", 1), ("JSON", 2))
                        if ref[i] != ours[i]]
                if what:
                    failed += 1
                    print(f"DIFFERS {trace.name} ({label}): {', '.join(what)}")
                    if "JSON" in what:
                        print("  " + first_json_difference(ref[2], ours[2]))
                    elif "terminal output" in what:
                        print("  " + first_difference(ref[1], ours[1]))
                else:
                    print(f"same    {trace.name} ({label}): exit {ref[0]}, {len(ref[2])} JSON bytes, "
                          f"{len(ref[1].splitlines())} terminal lines")
    print(f"{len(traces)} trace(s) x 2 (compiled, numpy/Python fallback) against {args.baseline}: "
          f"{'all identical' if not failed else f'{failed} differ'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
