import os, sys, time, pickle, tempfile
T0 = time.perf_counter()
from c3prof import trace, trace_parts, forked
from c3prof.analysis import dataset
MODE = os.environ.get("MODE", "pipe")
INTERN = os.environ.get("INTERN") == "1"
def intern(part):
    memo = {}
    prev = {}
    for _, r in part.records:
        for k in ("scenario", "params", "stop", "rounds"):
            v = r.get(k)
            if v is None: continue
            p = prev.get(k)
            if p is not None and p == v:
                r[k] = p
            else:
                prev[k] = v
    return part
def timed(path, first_part, read_part, adopt):
    t = lambda: time.perf_counter() - T0
    middle = trace_parts.split_at(path)
    def rp(start):
        a = t(); p = read_part(start); b = t()
        if INTERN: intern(p)
        if MODE == "file":
            fd, name = tempfile.mkstemp(dir="/dev/shm")
            with os.fdopen(fd, "wb") as f: pickle.dump(p, f, protocol=5)
            p = name
        print(f"  child read {a:.3f}->{b:.3f} sent {t():.3f}", flush=True)
        return p
    second = forked.in_background(lambda: rp(middle))
    a = t()
    lines = yield from first_part(middle)
    b = t(); part = second.result(); c = t()
    if MODE == "file":
        with open(part, "rb") as f: part = pickle.loads(f.read())
        os.unlink
    c2 = t(); adopt(part.samples); d = t()
    print(f"  parent first part {a:.3f}->{b:.3f}; result ->{c:.3f} load ->{c2:.3f}; adopt ->{d:.3f}", flush=True)
    for lineno, rec in part.records:
        yield lines + lineno, rec
    print(f"  assembled child's records ->{t():.3f}", flush=True)
trace_parts.records_in_parts = timed
if os.environ.get("SHARE"): trace_parts.FIRST_SHARE = float(os.environ["SHARE"])
a = time.perf_counter() - T0
tr = trace.read_trace(sys.argv[1], processes=2)
print(f"read {a:.3f}->{time.perf_counter()-T0:.3f}")
os._exit(0)
