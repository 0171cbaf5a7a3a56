#!/usr/bin/env python3
"""Write tests/data/synthetic_small.jsonl: a SYNTHETIC c3prof trace. NOT MEASURED ON ANY GPU.

Every number in the output comes from the simple model below plus seeded noise. It exists so the
report's tests have a fixture before real captures exist (the lead adds measured H200 traces as
tests/data/h200_*.jsonl). Files this script writes start with ``synthetic_``; the machine record
says "not measured" in the GPU name. Regenerate with:

    python tests/data/make_synthetic_trace.py            # writes tests/data/synthetic_small.jsonl
    python tests/data/make_synthetic_trace.py OUT.jsonl  # elsewhere

The model (times in ms):
- GEMM alone T_g: 0.200 (4096^3 bf16, compute-bound), 0.260 (64x16384x16384 bf16, memory-bound),
  0.050 (1024^3 fp32); a resource-partitioned (``rp``) GEMM with s SMs takes T_g * 132 / s.
- Communication alone T_c = latency + bytes / rate, a peer copy at 3.9e11 B/s either by an SM
  kernel (``sm_copy``, latency 0.008 ms) or by copy engines (``ce_peer``, latency 0.010 ms); and
  ``ce_d2d_local``, a "DMA" transport that actually ran on SMs (as same-device copies do on H200).
- Serial T_s = T_g + T_c + 0.004. Concurrent: both start together (``sp`` delays one by 3 us);
  while both run, the GEMM progresses at 1/sg of its speed and the copy at 1/sc (per-strategy
  factors in MODELS); whichever ends first frees the other. T_cc = last end + 0.002.
- Every sample gets independent lognormal noise (sigma 0.5%), rounded to 10 ns.

What it covers, on purpose: a size sweep (4 MiB..1 GiB) for the comm taxonomy; a scenario with only
2 repetitions (no intervals), one with identical repetitions (no spread); a scenario without base
run (reference "own"); an incomplete run (no concurrent phase); an error record; a failed
validation; a ``dma`` run whose transport runs on SMs (must be flagged); counters (ncu totals and
a PM-sampling series) for the falsification test.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from c3prof.trace import TraceWriter, run_id  # noqa: E402

MiB = 1 << 20
GPU_NAME = "SYNTHETIC H200-like GPU (not measured)"
SHAPES = {
    "cb4k": ({"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}, 0.200),
    "mb64": ({"m": 64, "n": 16384, "k": 16384, "dtype": "bf16"}, 0.260),
    "tiny": ({"m": 1024, "n": 1024, "k": 1024, "dtype": "fp32"}, 0.050),
}
TRANSPORTS = {  # latency ms, bytes per ms
    "sm_copy": (0.008, 3.9e8),
    "ce_peer": (0.010, 3.9e8),
    "ce_d2d_local": (0.008, 3.9e8),
}
# strategy/variant -> (gemm slowdown, comm slowdown, gemm start, comm start, SMs for the GEMM)
MODELS = {
    ("base", "default"): (1.25, 1.80, 0.0, 0.0, 132),
    ("sp", "comm_first"): (1.20, 1.30, 0.003, 0.0, 132),
    ("sp", "gemm_first"): (1.10, 1.90, 0.0, 0.003, 132),
    ("rp", "sm112"): (1.02, 1.10, 0.0, 0.0, 112),
    ("rp", "sm96"): (1.01, 1.05, 0.0, 0.0, 96),
    ("dma", "ce_peer"): (1.005, 1.01, 0.0, 0.0, 132),
    ("dma", "ce_d2d_local"): (1.25, 1.80, 0.0, 0.0, 132),
}
# (scenario name, shape, bytes, strategy, variant, transport, options)
RUNS = [
    ("cb4k-x-4M", "cb4k", 4 * MiB, "base", "default", "sm_copy", {"reps": 2}),
    ("cb4k-x-32M", "cb4k", 32 * MiB, "base", "default", "sm_copy", {}),
    ("cb4k-x-32M", "cb4k", 32 * MiB, "sp", "comm_first", "sm_copy", {}),
    ("cb4k-x-32M", "cb4k", 32 * MiB, "sp", "gemm_first", "sm_copy", {}),
    ("cb4k-x-32M", "cb4k", 32 * MiB, "rp", "sm112", "sm_copy", {}),
    ("cb4k-x-32M", "cb4k", 32 * MiB, "rp", "sm96", "sm_copy", {}),
    ("cb4k-x-32M", "cb4k", 32 * MiB, "dma", "ce_peer", "ce_peer", {"counters": "ncu3+pm"}),
    ("cb4k-x-64M", "cb4k", 64 * MiB, "base", "default", "sm_copy", {}),
    ("cb4k-x-64M", "cb4k", 64 * MiB, "dma", "ce_peer", "ce_peer", {}),
    ("cb4k-x-256M", "cb4k", 256 * MiB, "base", "default", "sm_copy", {}),
    ("cb4k-x-256M", "cb4k", 256 * MiB, "sp", "comm_first", "sm_copy", {}),
    ("cb4k-x-256M", "cb4k", 256 * MiB, "sp", "gemm_first", "sm_copy", {}),
    ("cb4k-x-256M", "cb4k", 256 * MiB, "rp", "sm112", "sm_copy", {}),
    ("cb4k-x-256M", "cb4k", 256 * MiB, "dma", "ce_peer", "ce_peer", {}),
    ("cb4k-x-256M", "cb4k", 256 * MiB, "dma", "ce_d2d_local", "ce_d2d_local", {}),
    ("cb4k-x-1G", "cb4k", 1024 * MiB, "base", "default", "sm_copy", {"noise": 0.0}),
    ("mb64-x-32M", "mb64", 32 * MiB, "base", "default", "sm_copy", {}),
    ("mb64-x-32M", "mb64", 32 * MiB, "dma", "ce_peer", "ce_peer", {"gemm_slowdown": 1.15, "counters": "ncu1"}),
    ("mb64-x-256M", "mb64", 256 * MiB, "base", "default", "sm_copy", {}),
    ("mb64-x-256M", "mb64", 256 * MiB, "rp", "sm96", "sm_copy", {"skip": "concurrent"}),
    ("mb64-x-256M", "mb64", 256 * MiB, "dma", "ce_peer", "ce_peer", {"mismatch": 4096}),
    ("tiny-x-4M", "tiny", 4 * MiB, "sp", "comm_first", "sm_copy", {}),
]
REPS = 9
NOISE = 0.005
WALL0 = 1_800_000_000.0  # fixed wall_time values keep the file byte-for-byte reproducible


def _noisy(rng, value, n, sigma):
    return np.round(value * rng.lognormal(0.0, sigma, n), 5) if sigma else np.full(n, round(value, 5))


def _contended(tg, tc, sg, sc, g0, c0):
    """Durations of GEMM and copy started at g0 and c0, each slowed by its factor while both run."""
    # Progress before the later one starts (alone, full speed).
    start = max(g0, c0)
    g_left = tg - max(0.0, min(start, g0 + tg) - g0)
    c_left = tc - max(0.0, min(start, c0 + tc) - c0)
    if g_left <= 0 or c_left <= 0:  # no overlap at all
        return tg, tc
    t_g, t_c = g_left * sg, c_left * sc  # time each would still need while contended
    if t_g <= t_c:  # the GEMM ends first; the copy finishes the rest alone
        end_g = start + t_g
        end_c = end_g + (c_left - t_g / sc)
    else:
        end_c = start + t_c
        end_g = end_c + (g_left - t_c / sg)
    return end_g - g0, end_c - c0


def _phase_samples(rng, phase, tg, tc, model, n, sigma):
    sg, sc, g0, c0, _ = model
    if phase == "gemm":
        return {"total_ms": _noisy(rng, tg, n, sigma)}
    if phase == "comm":
        return {"total_ms": _noisy(rng, tc, n, sigma)}
    if phase == "serial":
        g, c = _noisy(rng, tg, n, sigma), _noisy(rng, tc, n, sigma)
        return {"total_ms": np.round(g + c + 0.004, 5), "gemm_ms": g, "comm_ms": c,
                "gemm_start_ms": np.zeros(n), "comm_start_ms": np.round(g + 0.002, 5)}
    g_cc, c_cc = _contended(tg, tc, sg, sc, g0, c0)
    g, c = _noisy(rng, g_cc, n, sigma), _noisy(rng, c_cc, n, sigma)
    gs, cs = np.full(n, g0), np.full(n, c0)
    total = np.round(np.maximum(gs + g, cs + c) + 0.002, 5)
    return {"total_ms": total, "gemm_ms": g, "comm_ms": c, "gemm_start_ms": gs, "comm_start_ms": cs}


def _counters(rng, rid, kind, nbytes):
    """ncu totals (3 replays or 1) per phase, plus a PM-sampling series for the concurrent phase."""
    recs = []
    replays = 3 if kind.startswith("ncu3") else 1
    for phase in ("gemm", "concurrent"):
        for _ in range(replays):
            sm = float(np.round(2.0e8 * rng.lognormal(0, 0.002)))
            extra = 2.0 * nbytes / 32 if phase == "concurrent" else float(np.round(sm * rng.uniform(0, 1e-4)))
            recs.append({"record": "counters", "run": rid, "phase": phase, "source": "ncu",
                         "metrics": {"lts__t_sectors": {"value": sm + extra, "unit": "sector"},
                                     "lts__t_sectors_srcunit_tex": {"value": sm, "unit": "sector"}}})
    if kind.endswith("+pm"):
        t = np.round(np.arange(40) * 0.015, 3)
        sm_series = np.round(1.0e6 * rng.lognormal(0, 0.02, t.size))
        ce = np.where(t < 0.6, 2.0 * nbytes / 32 / 40, 0.0)
        recs.append({"record": "counters", "run": rid, "phase": "concurrent", "source": "pm_sampling",
                     "metrics": {"sample_interval_us": {"value": 15.0, "unit": "us"}},
                     "series": {"t_ms": t.tolist(), "lts__t_sectors": (sm_series + ce).tolist(),
                                "lts__t_sectors_srcunit_tex": sm_series.tolist()}})
    return recs


# The link each synthetic transport crosses: the two peer copies cross the same one, so base (SM)
# and dma (copy engine) move the same bytes over the same link; the same-device "DMA" copy does not.
LINKS = {"sm_copy": "nvlink", "ce_peer": "nvlink", "ce_d2d_local": "hbm"}


def write(path: Path) -> None:
    rng = np.random.default_rng(20241218)
    if path.exists():
        path.unlink()
    records: list[dict] = [
        {"record": "machine", "gpu": {"name": GPU_NAME, "sm_count": 132, "l2_bytes": 60 * MiB,
                                      "memory_bytes": 141 * 1024 * MiB, "synthetic": True},
         "versions": {"driver": "synthetic", "cuda_runtime": "synthetic", "nccl": "synthetic"},
         "clocks_start": {"sm_mhz": 1980, "memory_mhz": 3201}},
        {"record": "ceilings",
         "gemm_flops_per_s": {"bf16": {"value": 6.8e14, "unit": "FLOP/s", "method": "synthetic"},
                              "fp16": {"value": 6.8e14, "unit": "FLOP/s", "method": "synthetic"},
                              "fp32": {"value": 5.0e13, "unit": "FLOP/s", "method": "synthetic"}},
         "copy_bytes_per_s": {"d2d": {"value": 4.2e12, "unit": "B/s read+written", "method": "synthetic"},
                              "peer": {"value": 3.9e11, "unit": "B/s", "method": "synthetic"}}},
        {"record": "engine_evidence", "transport": "sm_copy", "carrier": "sm",
         "method": "synthetic: SM_UTIL 97% while the copy runs alone"},
        {"record": "engine_evidence", "transport": "ce_peer", "carrier": "copy_engine",
         "method": "synthetic: CUPTI channelType ASYNC_MEMCPY, SM_UTIL 0%"},
        {"record": "engine_evidence", "transport": "ce_d2d_local", "carrier": "sm",
         "method": "synthetic: same-device copy ran on SMs (SM_UTIL 96%)"},
    ]
    for name, shape, nbytes, strategy, variant, transport, opt in RUNS:
        gemm, tg0 = SHAPES[shape]
        model = MODELS[(strategy, variant)]
        if "gemm_slowdown" in opt:
            model = (opt["gemm_slowdown"],) + model[1:]
        lat, rate = TRANSPORTS[transport]
        tg, tc = tg0 * 132 / model[4], lat + nbytes / rate
        scenario = {"name": name, "gemm": gemm, "comm": {"op": "transfer", "bytes": nbytes},
                    "tags": ["synthetic"], "description": "synthetic, not measured", "weight": 1.0}
        rid = run_id(name, strategy, variant)
        n, sigma = opt.get("reps", REPS), opt.get("noise", NOISE)
        for phase in ("gemm", "comm", "serial", "concurrent"):
            if opt.get("skip") == phase:
                continue
            samples = {k: [float(x) for x in v] for k, v in _phase_samples(rng, phase, tg, tc, model, n, sigma).items()}
            # Rounds as the interleaving runner records them (3 repetitions per round); the model's
            # noise is independent of the round, so pairing by round changes nothing here.
            records.append({"record": "phase", "run": rid, "scenario": scenario, "strategy": strategy,
                            "variant": variant, "params": {"transport": transport, "streams": 2,
                                                           "link": LINKS[transport]},
                            "phase": phase, "samples": samples, "stop": {"rule": "fixed", "reps": n},
                            "rounds": [i // 3 for i in range(n)], "round_group": f"synthetic:{name}"})
        if "counters" in opt:
            records.extend(_counters(rng, rid, opt["counters"], nbytes))
        if strategy == "dma":
            bad = opt.get("mismatch", 0)
            records.append({"record": "validation", "run": rid, "transport": transport, "bytes_checked": nbytes,
                            "mismatched_bytes": bad, "ok": bad == 0})
    records.append({"record": "error", "run": "mb64-x-1G/base/default", "phase": "serial",
                    "message": "CUDA out of memory (synthetic)"})
    records.append({"record": "end", "status": "complete", "clocks_end": {"sm_mhz": 1980, "memory_mhz": 3201}})

    with TraceWriter(path, fsync=False, command=["tests/data/make_synthetic_trace.py"]) as w:
        for i, rec in enumerate(records):
            rec["wall_time"] = WALL0 + i
            w.write(rec)
    # Fixed header fields: the committed fixture should not change when regenerated.
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header.update(trace_id="synthetic-small-0001", created_utc="2026-11-29T00:00:00Z",
                  hostname="synthetic-host", wall_time=WALL0 - 1, synthetic=True)
    lines[0] = json.dumps(header, separators=(",", ":")) + "\n"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "synthetic_small.jsonl"
    write(out)
    print(f"wrote {out} (synthetic, not measured)")
