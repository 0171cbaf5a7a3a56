#!/usr/bin/env python3
"""What a fresh ``c3prof report`` process spends outside the report's own work: the interpreter's
start, the imports before the work begins, and the exit after the output is written.

Why: on a device host, benchmarks/report_stages.py timed the report in-process at 3.0-3.9 s while
benchmarks/bench_report.py timed the same command in fresh processes at 4.1-5.4 s; on the dev VM
the two differ by 0.2-0.4 s. This probe times what lies outside report_stages' clock, in fresh
processes, alternating:

- ``python -c pass``, ``-S`` (no site), ``-I -S``: the interpreter alone and what site adds;
- ``python -c 'import c3prof.report.cli, ...'``: the modules the report imports before its work;
- ``python -m c3prof report TRACE --json OUT``: wall to its "wrote" line (timestamped
  here as it arrives) and from that line to the exit (freeing the report, interpreter shutdown).

``--bytecode`` gives every process the bytecode of what the report imports, from a private cache
(bench_report.bytecode_prefix), as an installed package has it: run it with and without, on a
host whose packages ship no bytecode, to see what compiling them from source costs.

    python benchmarks/probe_startup.py TRACE [--cpus 0,1] [--repeat 5] [--bytecode] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The modules a report of --json imports before and while it works (none of them imports torch).
IMPORTS = ("c3prof.cli, c3prof.report.cli, c3prof.report.build, c3prof.analysis.dataset, "
           "c3prof.analysis.speedup, c3prof.report.json_out")


def _timed(cmd: list[str], cpus: set[int] | None, watch: str | None = None) -> dict[str, float]:
    """Wall seconds of ``cmd`` in a fresh process; with ``watch``, also when an output line holding it arrived."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=pin, text=True)
    seen = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if watch and seen is None and watch in line:
            seen = time.perf_counter() - t0
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {os.waitstatus_to_exitcode(status)}")
    out = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}
    if watch:
        if seen is None:
            raise SystemExit(f"{' '.join(cmd)}: no output line with {watch!r}")
        out.update(to_line_s=seen, after_line_s=wall - seen)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--cpus", help="pin every timed process to these CPUs (comma-separated)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bytecode", action="store_true",
                    help="bytecode of the report's imports from a private cache (bench_report.bytecode_prefix)")
    ap.add_argument("--json", type=Path, metavar="OUT", help="also write every run's times as JSON")
    args = ap.parse_args()
    cpus = {int(c) for c in args.cpus.split(",")} if args.cpus else None
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "report.json")
        if args.bytecode:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from bench_report import Candidate, bytecode_prefix

            prefix, n, lacking = bytecode_prefix([Candidate("worktree", sys.executable, ROOT)], Path(args.trace),
                                                 Path(tmp))
            os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
            print(f"bytecode of {n} modules in a private cache; {lacking} had none of their own")
        probes = {
            "python -c pass": ([py, "-c", "pass"], None),
            "python -S -c pass": ([py, "-S", "-c", "pass"], None),
            "python -I -S -c pass": ([py, "-I", "-S", "-c", "pass"], None),
            "import numpy": ([py, "-c", "import numpy"], None),
            "report's imports": ([py, "-c", f"import {IMPORTS}"], None),
            "report --json": ([py, "-m", "c3prof", "report", args.trace, "--json", out, "-q"], "wrote"),
        }
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in probes}
        for _ in range(args.repeat):
            for name, (cmd, watch) in probes.items():
                runs[name].append(_timed(cmd, cpus, watch))
    print(f"{py} ({sys.version.split()[0]}), {args.repeat} runs each, alternating, CPUs {args.cpus or 'all'}"
          f"{', bytecode from a private cache' if args.bytecode else ''}:")
    for name, got in runs.items():
        parts = [f"wall {statistics.median(r['wall_s'] for r in got):.3f} s "
                 f"({min(r['wall_s'] for r in got):.3f}-{max(r['wall_s'] for r in got):.3f})",
                 f"CPU {statistics.median(r['cpu_s'] for r in got):.3f} s"]
        if "to_line_s" in got[0]:
            parts += [f"to 'wrote' {statistics.median(r['to_line_s'] for r in got):.3f} s",
                      f"after it {statistics.median(r['after_line_s'] for r in got):.3f} s "
                      f"({min(r['after_line_s'] for r in got):.3f}-{max(r['after_line_s'] for r in got):.3f})"]
        print(f"  {name:22s} " + ", ".join(parts))
    if args.json:
        record = {"python": py, "version": sys.version, "cpus": args.cpus, "bytecode": args.bytecode, "runs": runs}
        args.json.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
