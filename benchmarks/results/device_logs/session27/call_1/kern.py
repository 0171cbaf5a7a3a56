import numpy as np, time
from c3prof.analysis import stats, _bootstrap
_bootstrap.set_threads(1)
S, R, B = 62, 25, 2000
rng = np.random.default_rng(1)
def bench(fn, n=5):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return min(ts)
keys = [("g", f"s{i}") for i in range(S)]
t_counts = bench(lambda: stats.keyed_round_counts([R]*S, B, 7, keys))
draws = stats.keyed_round_counts([R]*S, B, 7, keys)
vals = [np.sort(rng.normal(1, 0.01, R)) for _ in range(S*28)]
cols = [rng.permutation(R) for _ in range(S*28)]
which28 = [i // 28 for i in range(S*28)]
t28 = bench(lambda: stats.paired_medians(vals, cols, draws, which28))
t1 = bench(lambda: stats.paired_medians(vals[:S], cols[:S], draws, list(range(S))))
print(f"counts {t_counts*1e3:.1f} ms; medians 28/draw {t28*1e3:.1f} ms, 1/draw {t1*1e3:.1f} ms; per series {(t28-t1)/(S*27)*1e6:.2f} us; fixed {(t1 - S*(t28-t1)/(S*27))*1e3:.1f} ms")
# numpy transpose cost, for reference
t_tr = bench(lambda: [d.T.astype(np.int8) for d in draws])
print(f"numpy transpose to int8 {t_tr*1e3:.1f} ms")
