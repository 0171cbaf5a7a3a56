#!/usr/bin/env python3
"""Benchmark ``c3prof report --json`` on a large SYNTHETIC trace (not measured data).

Builds, in a temporary directory, a trace with ``--samples`` repetitions in total (default 10^6:
25 scenarios x 4 strategy/variants x 4 phases x 2500 repetitions; the concurrent phase carries all
five series), then times ``python -m c3prof report TRACE --json OUT --quiet`` in a subprocess and
reports wall time and the child's peak RSS. With ``--scaling`` it also runs at 1/4 of the size,
to show memory growing linearly with the trace. Goal: under 5 s on 2 cores for 10^6 samples.

    python benchmarks/bench_report.py                 # 10^6 samples
    python benchmarks/bench_report.py --scaling       # also 2.5*10^5, prints RSS per sample
    python benchmarks/bench_report.py --check 5       # exit 1 if slower than 5 s
    python benchmarks/bench_report.py --scenarios 250 # 1000 runs of 250 repetitions per phase
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c3prof.trace import TraceWriter, run_id  # noqa: E402

RUNS = (("base", "default", "sm_copy"), ("sp", "comm_first", "sm_copy"), ("sp", "gemm_first", "sm_copy"),
        ("dma", "ce_peer", "ce_peer"))
PHASES = ("gemm", "comm", "serial", "concurrent")


def build_trace(path: Path, samples: int, scenarios: int = 25) -> int:
    """Write a synthetic trace with about ``samples`` repetitions; returns the exact count."""
    reps = max(1, samples // (scenarios * len(RUNS) * len(PHASES)))
    rng = np.random.default_rng(0)
    with TraceWriter(path, fsync=False, command=["benchmarks/bench_report.py"]) as w:
        w.write({"record": "machine", "gpu": {"name": "SYNTHETIC benchmark GPU (not measured)"}, "versions": {},
                 "clocks_start": {}})
        w.write({"record": "ceilings", "gemm_flops_per_s": {"bf16": {"value": 6.8e14}},
                 "copy_bytes_per_s": {"d2d": {"value": 4.2e12}}})
        w.write({"record": "engine_evidence", "transport": "sm_copy", "carrier": "sm", "method": "synthetic"})
        w.write({"record": "engine_evidence", "transport": "ce_peer", "carrier": "copy_engine", "method": "synthetic"})
        for s in range(scenarios):
            nbytes = (1 << 20) * 2 ** (s % 10)
            sc = {"name": f"bench-{s}", "gemm": {"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
                  "comm": {"op": "transfer", "bytes": nbytes}}
            tg, tc = 0.2, 0.008 + nbytes / 3.9e8
            for strategy, variant, transport in RUNS:
                for phase in PHASES:
                    noise = lambda: rng.lognormal(0, 0.01, reps)  # noqa: E731
                    if phase == "gemm":
                        smp = {"total_ms": tg * noise()}
                    elif phase == "comm":
                        smp = {"total_ms": tc * noise()}
                    elif phase == "serial":
                        smp = {"total_ms": (tg + tc + 0.004) * noise()}
                    else:
                        g, c = tg * 1.1 * noise(), tc * 1.3 * noise()
                        smp = {"total_ms": np.maximum(g, c) + 0.002, "gemm_ms": g, "comm_ms": c,
                               "gemm_start_ms": np.zeros(reps), "comm_start_ms": np.zeros(reps)}
                    w.write({"record": "phase", "run": run_id(sc["name"], strategy, variant), "scenario": sc,
                             "strategy": strategy, "variant": variant, "params": {"transport": transport},
                             "phase": phase, "samples": {k: np.round(v, 6).tolist() for k, v in smp.items()},
                             "stop": {}})
        w.write({"record": "end", "status": "complete"})
    return reps * scenarios * len(RUNS) * len(PHASES)


def time_report(trace: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one `c3prof report --json` in a fresh process."""
    cmd = [sys.executable, "-m", "c3prof", "report", str(trace), "--json", str(out), "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"report failed with status {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024.0  # Linux: ru_maxrss is in KiB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--scenarios", type=int, default=25,
                    help="scenarios (x4 runs); more scenarios = more runs with fewer repetitions each")
    ap.add_argument("--scaling", action="store_true", help="also run at a quarter of the size")
    ap.add_argument("--check", type=float, metavar="SECONDS", help="exit 1 if the full-size run is slower")
    args = ap.parse_args()
    sizes = ([args.samples // 4] if args.scaling else []) + [args.samples]
    print(f"c3prof report benchmark: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, synthetic traces")
    wall = 0.0
    with tempfile.TemporaryDirectory(prefix="c3prof-bench-") as tmp:
        for n in sizes:
            trace = Path(tmp) / f"synthetic_bench_{n}.jsonl"
            t0 = time.perf_counter()
            exact = build_trace(trace, n, args.scenarios)
            built = time.perf_counter() - t0
            wall, rss = time_report(trace, Path(tmp) / "report.json")
            mb = trace.stat().st_size / 2**20
            print(f"samples {exact:>9,d}  runs {args.scenarios * len(RUNS):>6,d}  trace {mb:6.1f} MiB (built in {built:.1f} s)  "
                  f"report --json {wall:5.2f} s  peak RSS {rss:6.0f} MiB")
    print(f"(parent RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, not counted)")
    if args.check is not None and wall > args.check:
        print(f"FAIL: {wall:.2f} s > {args.check} s")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
