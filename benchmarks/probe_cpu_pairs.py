#!/usr/bin/env python3
"""Whether two CPUs of this machine are two cores: the same CPU-bound loop timed alone on one CPU,
then on two CPUs at once, for several pairs, alternating.

Why: the report benchmark (bench_report.py --cpus 0,1) pins the report to two CPUs of a virtual
machine. A VM's CPUs are threads the hypervisor schedules; two of them may share one physical core
(SMT siblings) or a core with another tenant, which no guest tool (lscpu says one thread per core)
shows. Two real cores run two copies of the loop as fast as one; siblings each run it about 1.3-1.7
times slower. The ratio printed per pair is (time of a copy run beside the other) / (time alone).

    python benchmarks/probe_cpu_pairs.py [--pairs 0,1 0,2 0,8] [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path

LOOP = 3_000_000   # about 0.15-0.3 s of one CPU


def _spin(cpu: int, start, out) -> None:
    os.sched_setaffinity(0, {cpu})
    start.wait()
    t0 = time.perf_counter()
    total = 0
    for i in range(LOOP):
        total += i * i & 0xFFFF
    out.put((cpu, time.perf_counter() - t0))


def _run(cpus: list[int]) -> list[float]:
    """Seconds of the loop on each of ``cpus``, all started together."""
    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(len(cpus) + 1), ctx.Queue()
    procs = [ctx.Process(target=_spin, args=(c, start, out)) for c in cpus]
    for p in procs:
        p.start()
    start.wait()
    got = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return [t for _, t in sorted(got)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    n = os.cpu_count() or 1
    default = [f"0,{c}" for c in sorted({1, 2, n // 4, n // 2, n - 1}) if 0 < c < n]
    ap.add_argument("--pairs", nargs="+", default=default, help="CPU pairs to try (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, metavar="OUT")
    args = ap.parse_args()
    pairs = [[int(c) for c in p.split(",")] for p in args.pairs]
    log: dict[str, list] = {}
    for _ in range(args.repeat):
        for pair in pairs:
            alone = [_run([c])[0] for c in pair]
            together = _run(pair)
            log.setdefault(",".join(map(str, pair)), []).append({"alone_s": alone, "together_s": together})
    print(f"{n} CPUs; the loop alone and beside the other CPU's copy ({args.repeat} rounds, median):")
    for key, rounds in log.items():
        ratios = [t / a for r in rounds for a, t in zip(r["alone_s"], r["together_s"])]
        alone = statistics.median(a for r in rounds for a in r["alone_s"])
        print(f"  CPUs {key:6s} alone {alone:.3f} s, together {statistics.median(ratios):.2f}x "
              f"(range {min(ratios):.2f}-{max(ratios):.2f})")
    if args.json:
        args.json.write_text(json.dumps({"cpus": n, "loop": LOOP, "pairs": log}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
