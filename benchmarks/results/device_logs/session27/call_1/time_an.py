import sys, time, gc
from c3prof.analysis import dataset, speedup, stats
from c3prof.report.build import ReportSettings
ds = dataset.load([sys.argv[1]], jobs=1)
gc.disable()
s = ReportSettings()
g = ds.groups[0]
acc = {}
def wrap(mod, name):
    f = getattr(mod, name)
    def w(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: acc[name] = acc.get(name, 0) + time.perf_counter() - t
    setattr(mod, name, w)
for n in ("paired_medians", "keyed_round_counts", "row_intervals"):
    wrap(stats, n); wrap(speedup, n) if hasattr(speedup, n) else None
t = time.perf_counter()
m = speedup.analyze_group(g, speedup.SeriesBank(s.boot), 1)
print("analyze", round(time.perf_counter() - t, 3), {k: round(v, 3) for k, v in acc.items()})
