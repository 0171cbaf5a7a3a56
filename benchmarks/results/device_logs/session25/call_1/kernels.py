"""Kernel timings for session 25, call 1: the round medians (use_avx512 on and off, one thread) and the
summary's hierarchical sums (with an inclusion mask, two threads), in the tree of the working
directory (run once in this tree and once in the base tree). SYNTHETIC inputs shaped as the
10^6-sample report's: 25 rounds, 28 series per scenario, 64 scenarios per call, B = 2000; 2500 units."""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

from c3prof.analysis import _bootstrap as kb, stats  # noqa: E402

R, PER, SCEN, B = 25, 28, 64, 2000
rng = np.random.default_rng(0)
draws = [np.stack([np.bincount(row, minlength=R) for row in rng.integers(0, R, (B, R))]).astype(np.int64)
         for _ in range(SCEN)]
values = [rng.normal(1, 0.01, R) for _ in range(SCEN * PER)]
cols = [np.arange(R) for _ in values]
which = [i // PER for i in range(len(values))]


def best(f, n=7):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts), float(np.median(ts))


kb.set_threads(1)
modes = [("default", None)] + ([("avx512 off", False)] if hasattr(kb, "use_avx512") else [])
for label, on in modes:
    if on is not None:
        kb.use_avx512(on)
    lo, med = best(lambda: stats.paired_medians(values, cols, draws, which))
    print(f"paired_medians {label:11s}: {lo / len(values) * 1e6:6.2f} us/series best, {med / len(values) * 1e6:6.2f} median"
          f" (avx512 in use: {kb.use_avx512(True) if hasattr(kb, 'use_avx512') else 'n/a'})")
kb.set_threads(2)
S = 2500
reps = np.random.default_rng(2).normal(0.4, 0.2, (S, B)).astype(np.float32)
inc = (np.random.default_rng(3).random((S, B)) >= 0.05).view(np.uint8)
sums, counts = np.empty(B), np.empty(B, dtype=np.int64)
state = np.random.default_rng(1).bit_generator.state
lo, med = best(lambda: kb.hierarchical_sums(reps, inc, state, sums, counts))
print(f"hierarchical_sums 2 threads, with mask: {lo * 1e3:.1f} ms best, {med * 1e3:.1f} ms median")
