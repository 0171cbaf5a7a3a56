"""When to stop repeating a phase: an explicit rule, recorded with every phase (as nvbench does).

A phase stops at the first of:
  * ``noise``: at least ``min_reps`` samples and relative noise <= ``max_noise``;
  * ``max_reps``: ``max_reps`` samples;
  * ``timeout``: ``timeout_s`` seconds spent on the phase (with at least ``min_reps`` samples, or
    whatever was gathered when even those take too long).
Relative noise is the robust relative spread 1.4826 * MAD / median (the standard deviation for
normal samples, insensitive to the occasional outlier repetition).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


def relative_noise(samples) -> float:
    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return float("inf")
    med = float(np.median(x))
    if med <= 0:
        return float("inf")
    return float(1.4826 * np.median(np.abs(x - med)) / med)


@dataclass(frozen=True)
class StoppingRule:
    min_reps: int = 9
    max_reps: int = 60
    max_noise: float = 0.01
    timeout_s: float = 10.0
    warmup: int = 2

    def __post_init__(self):
        if self.min_reps < 1 or self.max_reps < self.min_reps:
            raise ValueError(f"need 1 <= min_reps <= max_reps, got {self.min_reps}, {self.max_reps}")
        if self.max_noise <= 0 or self.timeout_s <= 0 or self.warmup < 0:
            raise ValueError("max_noise and timeout_s must be positive, warmup non-negative")

    def stop_reason(self, samples, elapsed_s: float) -> str | None:
        n = len(samples)
        if n >= self.max_reps:
            return "max_reps"
        if n >= self.min_reps and relative_noise(samples) <= self.max_noise:
            return "noise"
        if elapsed_s >= self.timeout_s and n >= 1:
            return "timeout"
        return None

    def settle(self, local: str | None) -> str | None:
        """The decision to act on, given this process's ``local`` stop reason (None: go on). One
        process acts on its own; a multi-GPU capture's rule (capture/agreement.py) agrees across
        ranks, so that every rank stops in the same round. Callers that decide outside
        ``stop_reason`` (a scenario-wide sweep) pass their decision through here."""
        return local

    def next_batch(self, n_done: int) -> int:
        """Repetitions to enqueue next: min_reps first, then half-batches up to max_reps."""
        if n_done == 0:
            return self.min_reps
        return max(1, min(self.max_reps - n_done, max(self.min_reps // 2, 4)))

    def describe(self) -> dict:
        return asdict(self)
