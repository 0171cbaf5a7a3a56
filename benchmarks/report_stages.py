#!/usr/bin/env python3
"""Where one ``c3prof report --json`` spends its wall time, stage by stage (for finding what to speed up).

Runs the report in this process with the stages' functions wrapped by timers and prints the wall
seconds each took (nested stages are included in their parents: "analyze" holds "draw" and
"run_metrics"). Timing wrappers add a few microseconds per call; use benchmarks/bench_report.py for
the command's own time.

    python benchmarks/report_stages.py TRACE [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")   # as the c3prof command sets it (c3prof/cli.py)

from c3prof.analysis import dataset, speedup  # noqa: E402
from c3prof.report import build, json_out  # noqa: E402

# (module or class, function, label): wrapped in this order; a label may collect several.
STAGES = [
    (dataset, "read_trace", "read_trace"), (dataset, "_add_source", "merge"),
    (build, "analyze_group", "analyze"), (speedup.SeriesBank, "plan_scenarios", "  plan_rounds"),
    (speedup.SeriesBank, "draw", "  draw"), (speedup, "run_metrics", "  run_metrics"),
    (speedup.PendingCIs, "flush", "  intervals"), (build.tax, "classify_run", "taxonomy"),
    (build, "_result", "result_rows"),
    # The strategy summary's rows left when this process's other work is done: those the forked
    # child has not taken, computed here, then the wait for the child's (report -j).
    (build._StrategiesBeside, "result", "strategies_rest"), (build.forked.Later, "result", "  strategies_wait"),
    (build.fals, "falsify", "falsification"), (build.interference, "dose_response", "interference"),
    (json_out, "write_json", "json"),
]


def _wrap(owner, name: str, label: str, totals: dict[str, float]) -> None:
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[label] = totals.get(label, 0.0) + time.perf_counter() - t0

    setattr(owner, name, timed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--json", type=Path, metavar="OUT", help="also write the stage times as JSON")
    ap.add_argument("-j", "--jobs", default="auto", help="report -j (default: %(default)s, as report's)")
    args = ap.parse_args()
    totals: dict[str, float] = {}
    for owner, name, label in STAGES:
        _wrap(owner, name, label, totals)
    from c3prof import cli

    gc.disable()   # as c3prof report does while it works (report/cli.py _run)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        status = cli.main(["report", args.trace, "--json", str(Path(tmp) / "report.json"), "--quiet",
                                 "-j", args.jobs])
        wall = time.perf_counter() - t0
    print(f"report of {args.trace}: {wall:.2f} s wall in this process (exit {status}); load average "
          f"{os.getloadavg()[0]:.2f}")
    for label in dict.fromkeys(label for _, _, label in STAGES):
        if label in totals:
            print(f"  {label:16s} {totals[label]:6.2f} s")
    if args.json:
        stages = {label.strip(): seconds for label, seconds in totals.items()}
        args.json.write_text(json.dumps({"trace": args.trace, "wall_s": wall, "stages_s": stages}, indent=1) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
