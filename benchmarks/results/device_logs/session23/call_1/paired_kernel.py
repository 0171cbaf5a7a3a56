"""stats.paired_medians on one batch of the 10^6-sample report's shape (64 scenarios x 28 series of
25 rounds, 2000 replicates; SYNTHETIC values), one kernel thread: milliseconds per call, median and
least of 15 calls, and the replicates saved to compare the two trees'. Run from a tree's root (its
c3prof is the one timed): python3 paired_kernel.py OUT.npy"""
import sys
import time

import numpy as np

sys.path.insert(0, ".")
from c3prof.analysis import _bootstrap, stats  # noqa: E402

_bootstrap.set_threads(1)
rng = np.random.default_rng(1)
SERIES, SCENARIOS, ROUNDS, B = 28, 64, 25, 2000
draws = stats.keyed_round_counts([ROUNDS] * SCENARIOS, B, 0, [("x", str(i)) for i in range(SCENARIOS)])
values, cols, which = [], [], []
for k in range(SCENARIOS):
    for _ in range(SERIES):
        values.append(rng.normal(1, 0.01, ROUNDS))
        cols.append(np.arange(ROUNDS))
        which.append(k)
times = []
for _ in range(15):
    t0 = time.perf_counter()
    medians, reps = stats.paired_medians(values, cols, draws, which)
    times.append(time.perf_counter() - t0)
np.save(sys.argv[1], reps)
print(f"{np.median(times) * 1e3:.1f} ms (least {min(times) * 1e3:.1f}) per call of {len(values)} series")
