"""Which engine carried a transport, by measurement: NVML GPM SM utilization while it runs alone.

A transfer carried by copy engines leaves the SMs idle (SM_UTIL about 0); one carried by SMs
(a copy kernel, or a same-device cudaMemcpy on this driver) keeps them busy. The transport runs
back to back, alone, for a window of ``window_s`` (GPM needs >= 100 ms); the SM utilization and
link counters over that window are the evidence recorded in the trace.
"""

from __future__ import annotations

import math

from c3prof.backends.cuda.ceilings import time_ms

# A copy engine leaves the SMs idle (SM_UTIL 0.0 measured on H200); an SM carrier keeps its CTAs'
# SMs busy: 16 CTAs of an NCCL-like PCIe copy occupy about 12% of 132 SMs, a device copy 60-98%.
SM_BUSY_PCT = 5.0    # at or above: carried by SMs; at or below SM_IDLE_PCT: copy engine; between: unknown
SM_IDLE_PCT = 1.0
METRICS = ["SM_UTIL", "SM_OCCUPANCY", "DRAM_BW_UTIL", "PCIE_TX_PER_SEC", "PCIE_RX_PER_SEC"]
RULE = f"copy_engine if SM_UTIL <= {SM_IDLE_PCT}%, sm if >= {SM_BUSY_PCT}%, else unknown"


def classify(result: dict) -> dict:
    """Fields for an engine_evidence record from a GPM window's result (see Nvml.gpm_window)."""
    if "error" in result:
        return {"carrier": "unknown", "reason": result["error"]}
    sm = result["metrics"].get("sm_util")
    carrier = "unknown" if sm is None else "sm" if sm >= SM_BUSY_PCT else "copy_engine" if sm <= SM_IDLE_PCT else "unknown"
    return {"carrier": carrier, "metrics": result["metrics"], "window_s": result["window_s"], "rule": RULE}


def probe(torch, nvml, transport, stream, window_s: float = 0.3) -> dict:
    one_ms = sorted(time_ms(stream, lambda i: transport.launch(stream, i), reps=3, warmup=1))[1]
    reps = max(1, math.ceil((window_s + 0.25) * 1e3 / max(one_ms, 1e-3)))

    def busy():
        for i in range(reps):
            transport.launch(stream, i)
        return stream.dma.synchronize

    result = nvml.gpm_window(METRICS, window_s, busy)
    rec = {"record": "engine_evidence", "transport": transport.name, "bytes": transport.nbytes,
           "expected_carrier": transport.expected_carrier, "method": "nvml_gpm_sm_util",
           "single_transfer_ms": one_ms}
    return {**rec, **classify(result)}
