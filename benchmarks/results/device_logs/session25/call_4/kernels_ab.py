"""The round medians (stats.paired_medians, one thread) of several builds of c3prof.analysis._bootstrap
loaded side by side in one process, alternating call by call: NAME=PATH.so arguments. SYNTHETIC
inputs shaped as the 10^6-sample report's (25 rounds, 28 series a scenario, 64 scenarios, B = 2000).
Prints each build's median and best in us per series, and each build's median difference from the
first build's call just before it."""
import importlib.machinery
import importlib.util
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

from c3prof.analysis import stats  # noqa: E402


def load(path: str, name: str):
    loader = importlib.machinery.ExtensionFileLoader(f"{name}._bootstrap", path)
    spec = importlib.util.spec_from_file_location(f"{name}._bootstrap", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


builds = [(name, load(path, name)) for name, path in (a.split("=", 1) for a in sys.argv[1:])]
R, PER, SCEN, B = 25, 28, 64, 2000
rng = np.random.default_rng(0)
draws = [np.stack([np.bincount(row, minlength=R) for row in rng.integers(0, R, (B, R))]).astype(np.int64)
         for _ in range(SCEN)]
values = [rng.normal(1, 0.01, R) for _ in range(SCEN * PER)]
cols = [np.arange(R) for _ in values]
which = [i // PER for i in range(len(values))]
for _, module in builds:
    module.set_threads(1)
times: dict[str, list[float]] = {name: [] for name, _ in builds}
outs = {}
for _ in range(15):
    for name, module in builds:
        stats._bootstrap = module
        t = time.perf_counter()
        outs[name] = stats.paired_medians(values, cols, draws, which)
        times[name].append((time.perf_counter() - t) / len(values) * 1e6)
first = builds[0][0]
for name, _ in builds:
    assert outs[name][0] == outs[first][0] and np.array_equal(outs[name][1], outs[first][1]), name
    diff = np.array(times[first]) - np.array(times[name])
    print(f"{name:10s} median {np.median(times[name]):6.2f} us/series, best {min(times[name]):6.2f};"
          f" {first} - {name} per round: median {np.median(diff):+.2f}")
