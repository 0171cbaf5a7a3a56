"""What the phase timer needs from any backend whose GEMMs run through torch: the pre-batch gate
(a GPU spin kernel), and device events addressed by stream. Vendor-neutral: a backend passes its
runtime's EventPool and its clock rate, so CUDA and HIP share one implementation."""

from __future__ import annotations

from typing import Any


def spin(torch, torch_stream, us: float, cycles_per_ms: float) -> None:
    """Enqueue a 1-thread spin kernel of about ``us`` microseconds on ``torch_stream``.

    torch.cuda._sleep spins for a number of GPU clock cycles, so ``cycles_per_ms`` (the clock) turns
    time into cycles only roughly: what a phase took is measured, never assumed.
    """
    with torch.cuda.stream(torch_stream):
        torch.cuda._sleep(max(1, int(us * cycles_per_ms / 1e3)))


class Gate:
    """The pre-batch GPU sleep (see capture/phases.py): long enough for the host to enqueue a batch.

    The host's enqueue cost per repetition is measured as batches are enqueued, and the gate is
    sized to twice that, between 0.2 ms and 50 ms. Costs are kept per ``key`` (the phase timer
    passes its run and phase): a GEMM is one launch, a transfer in 32 chunks is 32, and one scenario's
    runs are measured in the same rounds, so one shared estimate would gate the chunked transfer
    too briefly right after a GEMM batch and time the host's launch gaps. ``agree(ms)`` (multi-GPU
    captures: the longest any rank asks for) makes every rank sleep alike. Over-estimating the clock
    (``cycles_per_ms``) only makes the gate longer, which is harmless.
    """

    def __init__(self, torch, cycles_per_ms: float, agree=None):
        self.torch = torch
        self.cycles_per_ms = cycles_per_ms
        self.ms_per_rep: dict = {}
        self.agree = agree

    def __call__(self, stream, reps: int, key=None) -> None:
        ms = min(50.0, max(0.2, 2.0 * self.ms_per_rep.get(key, 0.2) * reps))
        if self.agree is not None:
            ms = self.agree(ms)
        spin(self.torch, stream.torch, ms * 1e3, self.cycles_per_ms)

    def observe(self, host_ms: float, reps: int, key=None) -> None:
        if reps > 0:
            self.ms_per_rep[key] = max(self.ms_per_rep.get(key, 0.2) * 0.5, host_ms / reps)


def time_ms(make_pool, stream, launch, reps: int = 10, warmup: int = 3) -> list[float]:
    """``launch(i)`` timed ``reps`` times on ``stream`` with device events (after ``warmup`` untimed
    launches), in ms. ``make_pool(n)`` is the runtime's EventPool (CUDA or HIP extension)."""
    pool = make_pool(2 * reps)
    for i in range(warmup):
        launch(i)
    for i in range(reps):
        pool.record(2 * i, stream.dma)
        launch(i)
        pool.record(2 * i + 1, stream.dma)
    pool.synchronize(2 * reps - 1)
    return [pool.elapsed_from(2 * i, [2 * i + 1])[0] for i in range(reps)]


class StreamEventPool:
    """A runtime EventPool (CUDA or HIP extension) addressed with DeviceStreams: the phase timer's
    event pool (c3prof.backends.base.EventPool)."""

    def __init__(self, pool: Any, size: int):
        self._pool = pool
        self.size = size

    def record(self, i: int, stream) -> None:
        self._pool.record(i, stream.dma)

    def wait(self, i: int, stream) -> None:
        self._pool.wait(i, stream.dma)

    def synchronize(self, i: int) -> None:
        self._pool.synchronize(i)

    def elapsed_from(self, base: int, indices) -> list[float]:
        return self._pool.elapsed_from(base, indices)
