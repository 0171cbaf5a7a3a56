"""Which engine carried a transport, by measurement: AMD SMI's GFX activity while it runs alone.

The counterpart of NVML GPM's SM_UTIL on NVIDIA (c3prof/backends/cuda/engine_evidence.py): a copy
carried by the SDMA engines leaves the compute engine idle, a copy kernel (or a blit kernel, which
ROCm uses for same-device copies and whenever HSA_ENABLE_SDMA=0) keeps it busy. The transport runs
back to back, alone, for ``window_s``; ``gfx_activity`` (percent, from amdsmi_get_gpu_activity) is
sampled during the window and after an idle one. The thresholds are the CUDA backend's and have not
been calibrated on an MI300X (docs/backends.md).
"""

from __future__ import annotations

import math
import statistics
import time

from c3prof.trace import engine_evidence_record

BUSY_PCT = 20.0
IDLE_PCT = 5.0
METHOD = "amdsmi_gfx_activity"
RULE = f"copy_engine if gfx_activity <= {IDLE_PCT}%, sm if >= {BUSY_PCT}%, else unknown"
SAMPLE_EVERY_S = 0.02


def classify(activity: float | None) -> str:
    if activity is None:
        return "unknown"
    return "sm" if activity >= BUSY_PCT else "copy_engine" if activity <= IDLE_PCT else "unknown"


def _smi_reader(device: int):
    """A function returning the GPU's gfx_activity (%), or None with the reason AMD SMI is unusable."""
    try:
        import amdsmi
    except ImportError:
        return None, "the amdsmi Python package (ROCm's AMD SMI) is not installed"
    try:
        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handles()[device]
    except Exception as exc:  # any AMD SMI failure makes the evidence unknown, never the capture fail
        return None, f"AMD SMI failed: {exc}"
    return (lambda: float(amdsmi.amdsmi_get_gpu_activity(handle)["gfx_activity"])), None


def _window(read, window_s: float, busy=None) -> float:
    samples, end = [], time.perf_counter() + window_s
    while time.perf_counter() < end:
        if busy is not None:
            busy()
        samples.append(read())
        time.sleep(SAMPLE_EVERY_S)
    return statistics.median(samples)


def probe(rt, transport, stream, device: int, window_s: float = 0.3) -> dict:
    from c3prof.backends.hip.ceilings import time_ms

    one_ms = sorted(time_ms(rt, stream, lambda i: transport.launch(stream, i), reps=3, warmup=1))[1]
    read, why = _smi_reader(device)
    if read is None:
        return engine_evidence_record(transport.name, transport.nbytes, transport.expected_carrier, METHOD, one_ms,
                                      carrier="unknown", reason=why)
    idle = _window(read, window_s)
    per_sample = max(1, math.ceil(SAMPLE_EVERY_S * 1e3 / max(one_ms, 1e-3)))
    busy = _window(read, window_s, busy=lambda: [transport.launch(stream, i) for i in range(per_sample)])
    stream.dma.synchronize()
    out = engine_evidence_record(transport.name, transport.nbytes, transport.expected_carrier, METHOD, one_ms,
                                 carrier=classify(busy), metrics={"gfx_activity": busy}, idle_gfx_activity=idle,
                                 window_s=window_s, rule=RULE)
    if idle > IDLE_PCT and out["carrier"] != "unknown":
        out.update(carrier="unknown", reason=f"the idle window read gfx_activity {idle:.1f}%: not settled")
    return out
