"""A stream as both the runtime extension (c3prof.backends.cuda.runtime) and torch see it, so copies,
events and GEMMs share one queue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from c3prof.backends import timing
from c3prof.backends.cuda import runtime as rt

# torch.cuda._sleep spins for a number of GPU clock cycles; H200 SMs run at up to ~1.98 GHz.
# Over-estimating the clock only makes the gate longer, which is harmless.
_CYCLES_PER_MS = 2.0e6


@dataclass
class DeviceStream:
    dma: rt.Stream
    torch: Any                      # torch.cuda.ExternalStream over the same cudaStream_t
    sms: int | None = None          # SMs its work may use (None: the whole GPU)
    label: str = ""


def make_stream(torch, priority: int = 0, label: str = "", handle: int | None = None,
                sms: int | None = None) -> DeviceStream:
    """A new stream (or a wrapper over ``handle``, e.g. a green-context stream)."""
    s = rt.Stream(priority=priority) if handle is None else rt.Stream(handle=handle)
    return DeviceStream(dma=s, torch=torch.cuda.ExternalStream(s.handle), sms=sms, label=label)


def spin(torch, torch_stream, us: float) -> None:
    """A 1-thread spin kernel of about ``us`` microseconds (c3prof.backends.timing.spin at this clock)."""
    timing.spin(torch, torch_stream, us, _CYCLES_PER_MS)


class Gate(timing.Gate):
    """The pre-batch gate (c3prof.backends.timing.Gate) at the H200's SM clock."""

    def __init__(self, torch, agree=None):
        super().__init__(torch, _CYCLES_PER_MS, agree)


class DeviceEventPool(timing.StreamEventPool):
    """c3prof.backends.cuda.runtime.EventPool addressed with DeviceStreams (the phase timer's event pool on CUDA)."""

    def __init__(self, size: int):
        super().__init__(rt.EventPool(size), size)
