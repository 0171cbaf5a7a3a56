"""A stream as both the HIP runtime extension and torch see it, the phase timer's event pool, and
the pre-batch gate. The runtime is passed in (``rt``): the real extension, or the tests' fake."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from c3prof.backends import timing

# torch.cuda._sleep spins for a number of GPU clock cycles; MI300X CUs run at up to 2.1 GHz.
# Over-estimating the clock only makes the gate longer, which is harmless.
_CYCLES_PER_MS = 2.1e6


@dataclass
class DeviceStream:
    dma: Any                        # rt.Stream
    torch: Any = None               # torch.cuda.ExternalStream over the same hipStream_t (None without torch)
    cus: int | None = None          # CUs its kernels may use (None: the whole GPU)
    label: str = ""


def make_stream(rt, torch=None, priority: int = 0, label: str = "", cu_mask=None, cus: int | None = None) -> DeviceStream:
    """A new stream with ``priority``, or restricted to the CUs of ``cu_mask`` (32-bit words)."""
    s = rt.Stream(priority=priority) if cu_mask is None else rt.Stream(cu_mask=cu_mask)
    ext = torch.cuda.ExternalStream(s.handle) if torch is not None else None
    return DeviceStream(dma=s, torch=ext, cus=cus, label=label)


class Gate(timing.Gate):
    """The pre-batch gate (c3prof.backends.timing.Gate) at MI300X's CU clock."""

    def __init__(self, torch, agree=None):
        super().__init__(torch, _CYCLES_PER_MS, agree)


class DeviceEventPool(timing.StreamEventPool):
    """rt.EventPool addressed with DeviceStreams (the phase timer's event pool on HIP)."""

    def __init__(self, rt, size: int):
        super().__init__(rt.EventPool(size), size)
