"""Per-line costs of reading phase records (orjson.loads, text_kind, accept, dumps) on the first 20,000 lines. Session 26, call 1."""
import time, orjson, gc
from c3prof import trace, _trace_read
gc.disable()
lines=[l for l in open('/tmp/rounds.jsonl','rb')][:20000]
lines=[l for l in lines if b'"phase"' in l[:20]]
n=len(lines); stop=sum(map(len,lines))+0
def t(mk, label):
    best=1e9
    for i in range(5):
        f=mk(); t0=time.perf_counter(); f(); best=min(best,time.perf_counter()-t0)
    print(f"{label:30s} {best/n*1e6:6.2f} us/line")
t(lambda: (lambda: [l.strip() for l in lines]), "strip")
t(lambda: (lambda: [_trace_read.text_kind(l, trace.MAX_DEPTH) for l in lines]), "text_kind")
t(lambda: (lambda: [orjson.loads(l) for l in lines]), "orjson.loads")
def mkacc():
    recs2=[orjson.loads(l) for l in lines]
    b=trace._sample_columns(); acc=_trace_read.PhaseAcceptor(b, trace._phase_rules(orjson))
    return lambda: [acc.accept(r) for r in recs2]
t(mkacc, "accept")
def mkwhole():
    b=trace._sample_columns()
    return lambda: list(trace._open_records(trace.Path('/tmp/rounds.jsonl'), None, b, stop=1000000000))
t(mkwhole, "whole file _open_records")
recs2=[orjson.loads(l) for l in lines]
t(lambda: (lambda: [orjson.dumps(r["scenario"]) for r in recs2]), "dumps scenario")
t(lambda: (lambda: [orjson.dumps(r["params"]) for r in recs2]), "dumps params")
t(lambda: (lambda: [orjson.dumps(r["stop"]) for r in recs2]), "dumps stop")
def mkadd():
    rs=[orjson.loads(l) for l in lines]
    b=trace._sample_columns()
    return lambda: [b.add(r["samples"], len(r["samples"]["total_ms"]), trace._phase_rules(orjson).series) for r in rs]
t(mkadd, "batch.add (+rules)")
import collections
print(collections.Counter(len(r["samples"]) for r in recs2), collections.Counter(len(r["samples"]["total_ms"]) for r in recs2))
