"""A stream as both the HIP runtime extension and torch see it, the phase timer's event pool, and
the pre-batch gate. The runtime is passed in (``rt``): the real extension, or the tests' fake."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


class Gate:
    """The pre-batch GPU sleep (capture/phases.py): long enough for the host to enqueue a batch,
    sized per key to twice the host's measured enqueue cost, between 0.2 and 50 ms (as on CUDA)."""

    def __init__(self, torch, agree=None):
        self.torch = torch
        self.ms_per_rep: dict = {}
        self.agree = agree

    def __call__(self, stream: DeviceStream, reps: int, key=None) -> None:
        ms = min(50.0, max(0.2, 2.0 * self.ms_per_rep.get(key, 0.2) * reps))
        if self.agree is not None:
            ms = self.agree(ms)
        with self.torch.cuda.stream(stream.torch):
            self.torch.cuda._sleep(int(ms * _CYCLES_PER_MS))

    def observe(self, host_ms: float, reps: int, key=None) -> None:
        if reps > 0:
            self.ms_per_rep[key] = max(self.ms_per_rep.get(key, 0.2) * 0.5, host_ms / reps)


class DeviceEventPool:
    """rt.EventPool addressed with DeviceStreams (the phase timer's event pool on HIP)."""

    def __init__(self, rt, size: int):
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
