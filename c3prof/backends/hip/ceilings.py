"""Measured machine ceilings on an AMD GPU (the same record as c3prof/backends/cuda/ceilings.py):
peak GEMM FLOP/s per dtype (torch, hipBLASLt), and SDMA copy rates (pinned host <-> device, 256 MiB)
and the device-to-device copy rate (1 GiB, read + written) timed with the runtime's events."""

from __future__ import annotations

import statistics

from c3prof.backends import timing
from c3prof.backends.torch_gemm import TorchGemm, input_sets
from c3prof.scenarios import GemmSpec
from c3prof.trace import ceilings_record

PEAK_SHAPE = (8192, 8192, 8192)
REPS = 10


def time_ms(rt, stream, launch, reps=REPS, warmup=3) -> list[float]:
    return timing.time_ms(rt.EventPool, stream, launch, reps, warmup)


def _entry(samples_ms, work, unit, **extra) -> dict:
    med = statistics.median(samples_ms)
    return {"value": work / (med * 1e-3), "unit": unit, "median_ms": med, "samples_ms": samples_ms, **extra}


def _torch_gemm(torch, spec, l2_bytes: int):
    return TorchGemm(torch, spec, input_sets(spec, l2_bytes), seed=7)


def measure_ceilings(rt, torch, stream, dtypes, l2_bytes: int, n: int = 2**30, h: int = 256 * 2**20,
                     make_gemm=_torch_gemm) -> dict:
    """``n``: device-to-device copy bytes; ``h``: pinned host copy bytes (smaller in the fake tests)."""
    gemm = {}
    for dtype in sorted(set(dtypes)):
        spec = GemmSpec(*PEAK_SHAPE, dtype=dtype)
        g = make_gemm(torch, spec, l2_bytes)
        gemm[dtype] = _entry(time_ms(rt, stream, lambda i: g.launch(stream, i)), spec.flops, "FLOP/s",
                             shape=list(PEAK_SHAPE))
        g.close()
    src, dst, host = rt.DeviceBuffer(n), rt.DeviceBuffer(n), rt.HostBuffer(h)
    copy = {
        "d2d": _entry(time_ms(rt, stream, lambda i: rt.memcpy_async(dst.ptr, src.ptr, n, stream.dma)), 2 * n, "B/s",
                      bytes=n, counted="read+write", method="hipMemcpyAsync device-to-device"),
        "h2d": _entry(time_ms(rt, stream, lambda i: rt.memcpy_async(dst.ptr, host.ptr, h, stream.dma)), h, "B/s",
                      bytes=h, counted="bytes moved", method="pinned hipMemcpyAsync"),
        "d2h": _entry(time_ms(rt, stream, lambda i: rt.memcpy_async(host.ptr, src.ptr, h, stream.dma)), h, "B/s",
                      bytes=h, counted="bytes moved", method="pinned hipMemcpyAsync"),
    }
    return ceilings_record(gemm, copy)
