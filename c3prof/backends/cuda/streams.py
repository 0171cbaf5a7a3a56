"""A stream as both the runtime extension (c3prof.backends.cuda.runtime) and torch see it, so copies,
events and GEMMs share one queue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    """Enqueue a 1-thread spin kernel of about ``us`` microseconds on ``torch_stream`` (the clock
    rate converts cycles to time only roughly: what a phase took is measured, never assumed)."""
    with torch.cuda.stream(torch_stream):
        torch.cuda._sleep(max(1, int(us * _CYCLES_PER_MS / 1e3)))


class Gate:
    """The pre-batch GPU sleep (see capture/phases.py): long enough for the host to enqueue a batch.

    The host's enqueue cost per repetition is measured as batches are enqueued, and the gate is
    sized to twice that, between 0.2 ms and 50 ms. Costs are kept per ``key`` (the phase timer
    passes its run and phase): a GEMM is one launch, a transfer in 32 chunks is 32, and one scenario's
    runs are measured in the same rounds, so one shared estimate would gate the chunked transfer
    too briefly right after a GEMM batch and time the host's launch gaps. ``agree(ms)`` (multi-GPU captures: the longest
    any rank asks for) makes every rank sleep alike.
    """

    def __init__(self, torch, agree=None):
        self.torch = torch
        self.ms_per_rep: dict = {}
        self.agree = agree

    def __call__(self, stream: DeviceStream, reps: int, key=None) -> None:
        ms = min(50.0, max(0.2, 2.0 * self.ms_per_rep.get(key, 0.2) * reps))
        if self.agree is not None:
            ms = self.agree(ms)
        spin(self.torch, stream.torch, ms * 1e3)

    def observe(self, host_ms: float, reps: int, key=None) -> None:
        if reps > 0:
            self.ms_per_rep[key] = max(self.ms_per_rep.get(key, 0.2) * 0.5, host_ms / reps)


class DeviceEventPool:
    """c3prof.backends.cuda.runtime.EventPool addressed with DeviceStreams (the phase timer's event pool on CUDA)."""

    def __init__(self, size: int):
        self._pool = rt.EventPool(size)
        self.size = size

    def record(self, i: int, stream: DeviceStream) -> None:
        self._pool.record(i, stream.dma)

    def wait(self, i: int, stream: DeviceStream) -> None:
        self._pool.wait(i, stream.dma)

    def synchronize(self, i: int) -> None:
        self._pool.synchronize(i)

    def elapsed_from(self, base: int, indices) -> list[float]:
        return self._pool.elapsed_from(base, indices)
