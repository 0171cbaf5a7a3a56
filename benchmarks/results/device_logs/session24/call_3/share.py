"""Read the 10^6-sample trace in two processes with the parent reading 50%, 55% or 60% of it
(trace_parts.FIRST_SHARE), fresh processes, alternating; prints each share's median and least.
Run from a tree root: python share.py TRACE ROUNDS"""
import statistics
import subprocess
import sys

SHARES = (0.5, 0.55, 0.6)
CODE = ("import sys, time, gc; sys.path.insert(0, '.'); gc.disable(); from c3prof import trace_parts, trace; "
        "trace_parts.FIRST_SHARE = float(sys.argv[1]); t = time.perf_counter(); "
        "trace.read_trace(sys.argv[2], processes=2); print(time.perf_counter() - t)")
times = {s: [] for s in SHARES}
for _ in range(int(sys.argv[2])):
    for share in SHARES:
        done = subprocess.run(["taskset", "-c", "0,1", sys.executable, "-c", CODE, str(share), sys.argv[1]],
                              capture_output=True, text=True, check=True)
        times[share].append(float(done.stdout))
for share, t in times.items():
    print(f"FIRST_SHARE {share}: median {statistics.median(t):.3f} s, least {min(t):.3f} s, "
          f"runs {' '.join(f'{x:.3f}' for x in t)}")
