"""The analysis alone (speedup.analyze_group) of a trace, in the tree of the working directory: the
dataset loaded once, then analyze_group timed REPEAT times with -j 1 and -j 2 alternating; prints
the median of each. For comparing two trees run one after the other on the same host."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")   # as the c3prof command sets it
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import gc  # noqa: E402

from c3prof.analysis import dataset, speedup  # noqa: E402

gc.disable()
group = dataset.load([sys.argv[1]]).groups[0]
times: dict[int, list[float]] = {1: [], 2: []}
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    for jobs in (1, 2):
        t = time.perf_counter()
        speedup.analyze_group(group, speedup.SeriesBank(speedup.BootstrapSettings()), jobs=jobs)
        times[jobs].append(time.perf_counter() - t)
print(" ".join(f"-j {j}: {statistics.median(v):.3f} s (runs {' '.join(f'{x:.2f}' for x in v)})" for j, v in times.items()))
