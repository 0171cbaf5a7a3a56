import sys, time, gc, os, resource
from c3prof.report.heap import keep_freed_memory
keep_freed_memory()
from c3prof.analysis import dataset, speedup
from c3prof.report.build import ReportSettings
def flt(): return int(open("/proc/self/stat").read().rsplit(")",1)[1].split()[7])
jobs = int(sys.argv[2])
gc.disable()
ds = dataset.load([sys.argv[1]], jobs=2)
s = ReportSettings(); g = ds.groups[0]
acc = {}
for name in ("_unpack_metrics", "_pack_metrics", "_analyze_scenarios"):
    f = getattr(speedup, name)
    def w(*a, _f=f, _n=name, **k):
        t = time.perf_counter()
        try: return _f(*a, **k)
        finally: acc[_n] = acc.get(_n, 0) + time.perf_counter() - t
    setattr(speedup, name, w)
a = flt(); t = time.perf_counter(); c0 = time.process_time()
m = speedup.analyze_group(g, speedup.SeriesBank(s.boot), jobs)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"jobs {jobs}: analyze {time.perf_counter() - t:.3f} s, parent cpu {time.process_time()-c0:.3f}, children cpu {ru.ru_utime+ru.ru_stime:.3f} (sys {ru.ru_stime:.3f}), parent faults {flt() - a}, children faults {ru.ru_minflt}", {k: round(v, 3) for k, v in acc.items()})
os._exit(0)
