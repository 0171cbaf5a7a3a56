"""Measured machine ceilings: the taxonomy compares against these, never against datasheets.

    gemm_flops_per_s[dtype]   median FLOP/s of an 8192^3 GEMM (rotating inputs) per dtype used
    copy_bytes_per_s[d2d]     bytes read + written per second by a 1 GiB device-to-device copy
                              (the device-memory bandwidth that sets the machine balance)
    copy_bytes_per_s[h2d|d2h] pinned host<->device copy-engine rates (256 MiB)
    copy_bytes_per_s[sm_kernel] the SM copy kernel filling the GPU (1 GiB, read + written)
"""

from __future__ import annotations

import statistics

from c3prof.backends import timing
from c3prof.backends.cuda import runtime as rt
from c3prof.backends.cuda.copy_kernel import launch_copy
from c3prof.backends.torch_gemm import TorchGemm, input_sets
from c3prof.scenarios import GemmSpec
from c3prof.trace import ceilings_record

PEAK_SHAPE = (8192, 8192, 8192)
REPS = 10


def time_ms(stream, launch, reps=REPS, warmup=3) -> list[float]:
    return timing.time_ms(rt.EventPool, stream, launch, reps, warmup)


def _entry(samples_ms, work, unit, **extra) -> dict:
    med = statistics.median(samples_ms)
    return {"value": work / (med * 1e-3), "unit": unit, "median_ms": med, "samples_ms": samples_ms, **extra}


def measure_ceilings(torch, stream, dtypes, l2_bytes: int, sm_count: int) -> dict:
    gemm = {}
    for dtype in sorted(set(dtypes)):
        spec = GemmSpec(*PEAK_SHAPE, dtype=dtype)
        g = TorchGemm(torch, spec, input_sets(spec, l2_bytes), seed=7)
        gemm[dtype] = _entry(time_ms(stream, lambda i: g.launch(stream, i)), spec.flops, "FLOP/s",
                             shape=list(PEAK_SHAPE))
        g.close()
    copy = {}
    n = 2**30
    src = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy["d2d"] = _entry(time_ms(stream, lambda i: rt.memcpy_async(dst.data_ptr(), src.data_ptr(), n, stream.dma)),
                         2 * n, "B/s", bytes=n, counted="read+write", method="cudaMemcpyAsync device-to-device")
    copy["sm_kernel"] = _entry(time_ms(stream, lambda i: launch_copy(torch, [(src, dst)], 2 * sm_count, stream)),
                               2 * n, "B/s", bytes=n, counted="read+write", ctas=2 * sm_count)
    h = 256 * 2**20
    host = rt.HostBuffer(h)
    copy["h2d"] = _entry(time_ms(stream, lambda i: rt.memcpy_async(dst.data_ptr(), host.ptr, h, stream.dma)),
                         h, "B/s", bytes=h, counted="bytes moved", method="pinned cudaMemcpyAsync")
    copy["d2h"] = _entry(time_ms(stream, lambda i: rt.memcpy_async(host.ptr, src.data_ptr(), h, stream.dma)),
                         h, "B/s", bytes=h, counted="bytes moved", method="pinned cudaMemcpyAsync")
    return ceilings_record(gemm, copy)
