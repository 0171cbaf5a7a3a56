"""Pure-Python reference reader: the same columns as the Cython scanner, from ``json.load``.

For tests only (they compare it with c3prof.ingest._kineto on the fixtures). It loads the whole
document, so it is neither streaming nor bounded in memory; production never falls back to it.
"""

from __future__ import annotations

import json

import numpy as np

from c3prof.ingest.events import GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET

_GPU_CATS = {"kernel": GPU_KERNEL, "gpu_memcpy": GPU_MEMCPY, "memcpy": GPU_MEMCPY,
             "gpu_memset": GPU_MEMSET, "memset": GPU_MEMSET}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
_CPU_CATS = {"cpu_op", "user_annotation", "operator"}


def _ns(value) -> int:
    # Kineto writes microseconds with three decimals; round to whole nanoseconds.
    return int(round(float(value) * 1000.0))


def _int(args: dict, key: str) -> int:
    v = args.get(key, -1)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return -1
    return int(v)


# The args the scanner keeps (c3prof.ingest._kineto.is_wanted_arg), in their order of appearance.
WANTED_ARGS = ("Input Dims", "Input type", "Collective name", "dtype", "In msg nelems", "Out msg nelems",
               "Group size", "Process Group Name")


def read_columns(doc: dict, keep_cpu_op) -> dict:
    names: list[str] = []
    ids: dict[str, int] = {}
    keep_cache: dict[str, bool] = {}

    def intern(name: str) -> int:
        if name not in ids:
            ids[name] = len(names)
            names.append(name)
        return ids[name]

    gpu: dict[str, list] = {k: [] for k in ("kind", "name", "device", "stream", "start_ns", "dur_ns", "correlation",
                           "external_id", "bytes", "src_device", "dst_device", "args")}
    launch: dict[str, list] = {k: [] for k in ("correlation", "external_id", "pid", "tid", "start_ns", "name")}
    cpu: dict[str, list] = {k: [] for k in ("name", "pid", "tid", "start_ns", "dur_ns", "external_id", "args")}
    texts: list[bytes] = []
    text_ids: dict[bytes, int] = {}

    def intern_args(args: dict) -> int:
        kept = {k: v for k, v in args.items() if k in WANTED_ARGS}
        if not kept:
            return -1
        text = json.dumps(kept).encode()
        if text not in text_ids:
            text_ids[text] = len(texts)
            texts.append(text)
        return text_ids[text]
    for ev in doc.get("traceEvents", []):
        if ev.get("ph") != "X" or "ts" not in ev or not isinstance(ev.get("cat"), str):
            continue
        cat = ev["cat"].lower()
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        pid = ev.get("pid") if isinstance(ev.get("pid"), int) else -1
        tid = ev.get("tid") if isinstance(ev.get("tid"), int) else -1
        name = ev.get("name") if isinstance(ev.get("name"), str) else ""
        if cat in _GPU_CATS:
            gpu["kind"].append(_GPU_CATS[cat])
            gpu["name"].append(intern(name))
            device = _int(args, "device")
            if device < 0:
                device = _int(args, "inDevice")
            gpu["device"].append(device if device >= 0 else pid)
            stream = _int(args, "stream")
            gpu["stream"].append(stream if stream >= 0 else tid)
            gpu["start_ns"].append(_ns(ev["ts"]))
            gpu["dur_ns"].append(_ns(ev.get("dur", 0)))
            gpu["correlation"].append(_int(args, "correlation"))
            gpu["external_id"].append(_int(args, "External id"))
            gpu["bytes"].append(_int(args, "bytes"))
            gpu["src_device"].append(_int(args, "fromDevice"))
            gpu["dst_device"].append(_int(args, "toDevice"))
            gpu["args"].append(intern_args(args) if "Collective name" in args else -1)
        elif cat in _RUNTIME_CATS:
            if _int(args, "correlation") < 0:
                continue
            launch["correlation"].append(_int(args, "correlation"))
            launch["external_id"].append(_int(args, "External id"))
            launch["pid"].append(pid)
            launch["tid"].append(tid)
            launch["start_ns"].append(_ns(ev["ts"]))
            launch["name"].append(intern(name))
        elif cat in _CPU_CATS:
            if name not in keep_cache:
                keep_cache[name] = bool(keep_cpu_op(name))
            if not keep_cache[name]:
                continue
            cpu["name"].append(intern(name))
            cpu["pid"].append(pid)
            cpu["tid"].append(tid)
            cpu["start_ns"].append(_ns(ev["ts"]))
            cpu["dur_ns"].append(_ns(ev.get("dur", 0)))
            cpu["external_id"].append(_int(args, "External id"))
            cpu["args"].append(intern_args(args))

    def arrays(table, small=("kind",), i32=("name", "args")):
        out = {}
        for k, v in table.items():
            dtype = np.int8 if k in small else np.int32 if k in i32 else np.int64
            out[k] = np.asarray(v, dtype=dtype)
        return out

    top = {k: json.dumps(v).encode() for k, v in doc.items() if k != "traceEvents"}
    return {"names": names, "gpu": arrays(gpu), "launch": arrays(launch), "cpu": arrays(cpu),
            "args": texts, "top_level": top}
