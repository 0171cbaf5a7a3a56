"""Which engine carried a transport, by measurement: NVML GPM SM utilization while it runs alone.

A transfer carried by copy engines leaves the SMs idle (SM_UTIL about 0); one carried by SMs
(a copy kernel, or a same-device cudaMemcpy on this driver) keeps them busy. The transport runs
back to back, alone, for a window of ``window_s`` (GPM needs >= 100 ms); the SM utilization and
link counters over that window are the evidence recorded in the trace.
"""

from __future__ import annotations

import math
import time

from c3prof.backends.cuda.ceilings import time_ms
from c3prof.trace import engine_evidence_record

# A copy engine leaves the SMs idle (SM_UTIL 0-3% measured on H200, from the driver's own work);
# an SM carrier probed with two CTAs per SM keeps them busy (60-98%). The probe uses that CTA count
# for every SM transport: 16 CTAs of an NCCL-like PCIe copy would show only about 10%.
SM_BUSY_PCT = 20.0   # at or above: carried by SMs; at or below SM_IDLE_PCT: copy engine; between: unknown
SM_IDLE_PCT = 5.0
METRICS = ["SM_UTIL", "SM_OCCUPANCY", "DRAM_BW_UTIL", "PCIE_TX_PER_SEC", "PCIE_RX_PER_SEC"]
METHOD = "nvml_gpm_sm_util"
RULE = f"copy_engine if SM_UTIL <= {SM_IDLE_PCT}%, sm if >= {SM_BUSY_PCT}%, else unknown"


def classify(result: dict) -> dict:
    """Fields for an engine_evidence record from a GPM window's result (see Nvml.gpm_window)."""
    if "error" in result:
        return {"carrier": "unknown", "reason": result["error"]}
    sm = result["metrics"].get("sm_util")
    carrier = "unknown" if sm is None else "sm" if sm >= SM_BUSY_PCT else "copy_engine" if sm <= SM_IDLE_PCT else "unknown"
    return {"carrier": carrier, "metrics": result["metrics"], "window_s": result["window_s"], "rule": RULE}


# GPM windows read just after heavy SM work can still show part of it (seen on H200: a copy engine
# probed right after a full-GPU SM copy read 12-33% SM_UTIL, probed first 1.4%). Each probe therefore
# waits this long idle and then measures an idle window first; an idle window that is not idle
# makes the evidence "unknown" instead of a wrong carrier.
SETTLE_S = 0.5


def _idle_window(nvml, window_s: float) -> dict:
    time.sleep(SETTLE_S)
    return nvml.gpm_window(["SM_UTIL"], window_s, lambda: (lambda: None))


def probe(torch, nvml, transport, stream, window_s: float = 0.3) -> dict:
    idle = _idle_window(nvml, window_s)
    one_ms = sorted(time_ms(stream, lambda i: transport.launch(stream, i), reps=3, warmup=1))[1]
    reps = max(1, math.ceil((window_s + 0.25) * 1e3 / max(one_ms, 1e-3)))

    def busy():
        for i in range(reps):
            transport.launch(stream, i)
        return stream.dma.synchronize

    result = nvml.gpm_window(METRICS, window_s, busy)
    out = engine_evidence_record(transport.name, transport.nbytes, transport.expected_carrier, METHOD, one_ms,
                                 **classify(result))
    idle_sm = (idle.get("metrics") or {}).get("sm_util")
    out["idle_sm_util"] = idle_sm
    if idle_sm is not None and idle_sm > SM_IDLE_PCT and out["carrier"] != "unknown":
        out.update(carrier="unknown", reason=f"the idle window before the probe read SM_UTIL {idle_sm:.1f}%: "
                                             "GPM did not settle, so this window cannot tell the engine")
    return out
