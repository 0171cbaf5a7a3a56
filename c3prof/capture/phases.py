"""Time the four phases of a run with device events: gemm, comm, serial, concurrent.

Every repetition records five events into an event pool:

    S   the repetition's start, on the stream that launches first
    G0  G1   around the GEMM, on the GEMM stream
    C0  C1   around the communication, on the communication stream

From them each repetition yields ``total_ms`` (first start to last end: T_g, T_c, T_s or T_cc),
each side's duration (``gemm_ms``, ``comm_ms``) and start offsets from S. In the concurrent phase
both sides wait only for S, so they are released together; in the serial phase the second side
waits for the first side's end. Consecutive repetitions never overlap: the first stream of a
repetition waits for the previous repetition's last event on the other stream.

Repetitions are enqueued in batches without host synchronization, behind a short GPU sleep (the
gate) that lets the host enqueue the whole batch before the GPU starts it: otherwise the second
launch of a concurrent pair could reach an idle GPU late, and launch gaps would be timed. The
phases are measured in alternating short batches, so clock and temperature drift cannot bias the
ratios between phases: ``measure_rounds`` measures the phases of *several runs* (every strategy and
variant of a scenario) in the same rounds, so that a ratio between runs (a strategy against base) compares samples taken side by
side, and every repetition records its round for the round-paired bootstrap of the report.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

from c3prof.backends.base import EventPool, Workload
from c3prof.capture.stopping import StoppingRule, relative_noise

S, G0, G1, C0, C1 = range(5)
EVENTS_PER_REP = 5


@dataclass
class PhaseResult:
    samples: dict[str, list[float]]
    stop: dict
    rounds: list[int] | None = None      # each repetition's round (measure_rounds)
    round_group: str | None = None       # names the sweep whose rounds these are


class PhaseTimer:
    """Enqueue and time repetitions of one run's phases on its two streams.

    ``streams`` map "gemm"/"comm" to objects the workloads and the pool understand (the CUDA
    backend passes a pair of runtime-extension and torch streams). ``gate(stream, n_reps, key)``
    enqueues the pre-batch GPU sleep.
    """

    def __init__(self, gemm: Workload, comm: Workload, gemm_stream: Any, comm_stream: Any, order: str,
                 make_pool: Callable[[int], EventPool], gate: Callable[[Any, int], None]):
        if order not in ("gemm_first", "comm_first"):
            raise ValueError(f"unknown launch order {order!r}")
        self.side = {"gemm": (gemm, gemm_stream), "comm": (comm, comm_stream)}
        self.first, self.second = ("gemm", "comm") if order == "gemm_first" else ("comm", "gemm")
        self.make_pool = make_pool
        self.gate = gate
        self._pool: EventPool | None = None
        self._rep = 0  # global repetition counter: rotates the GEMM's input sets

    def _pool_for(self, reps: int) -> EventPool:
        need = reps * EVENTS_PER_REP
        if self._pool is None or self._pool.size < need:
            self._pool = self.make_pool(max(need, 64 * EVENTS_PER_REP))
        return self._pool

    # -- enqueueing ------------------------------------------------------------------------------

    def _launch(self, pool: EventPool, base: int, which: str, start_ev: int, end_ev: int) -> None:
        work, stream = self.side[which]
        pool.record(base + start_ev, stream)
        work.launch(stream, self._rep)
        pool.record(base + end_ev, stream)

    def _enqueue(self, phase: str, pool: EventPool, base: int, prev: int | None) -> None:
        ev = {"gemm": (G0, G1), "comm": (C0, C1)}
        if phase in ("gemm", "comm"):
            # Isolated: one stream, in order; S is the side's own start event.
            self._launch(pool, base, phase, *ev[phase])
            return
        x, y = self.first, self.second
        x_stream, y_stream = self.side[x][1], self.side[y][1]
        if prev is not None:
            pool.wait(prev + ev[y][1], x_stream)   # previous repetition fully done on the other stream
        pool.record(base + S, x_stream)
        if phase == "concurrent":
            pool.wait(base + S, y_stream)
            self._launch(pool, base, x, *ev[x])
            self._launch(pool, base, y, *ev[y])
        else:  # serial: the second side starts when the first ends
            self._launch(pool, base, x, *ev[x])
            pool.wait(base + ev[x][1], y_stream)
            self._launch(pool, base, y, *ev[y])

    # -- reading ---------------------------------------------------------------------------------

    def _read(self, phase: str, pool: EventPool, reps: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"total_ms": []}
        if phase in ("gemm", "comm"):
            e0, e1 = (G0, G1) if phase == "gemm" else (C0, C1)
            for r in range(reps):
                b = r * EVENTS_PER_REP
                (d,) = pool.elapsed_from(b + e0, [b + e1])
                out["total_ms"].append(d)
            return out
        for key in ("gemm_ms", "comm_ms", "gemm_start_ms", "comm_start_ms"):
            out[key] = []
        for r in range(reps):
            b = r * EVENTS_PER_REP
            g0, g1, c0, c1 = pool.elapsed_from(b + S, [b + G0, b + G1, b + C0, b + C1])
            out["gemm_start_ms"].append(g0)
            out["comm_start_ms"].append(c0)
            out["gemm_ms"].append(g1 - g0)
            out["comm_ms"].append(c1 - c0)
            out["total_ms"].append(max(g1, c1) - min(g0, c0))
        return out

    def enqueue_batch(self, phase: str, reps: int, gate: bool = True) -> EventPool:
        """Enqueue ``reps`` repetitions of ``phase``; returns the pool to read after finish_batch."""
        pool = self._pool_for(reps)
        if gate:
            first_stream = self.side[phase if phase in ("gemm", "comm") else self.first][1]
            self.gate(first_stream, reps, key=(id(self), phase))
        t0 = time.perf_counter()
        prev = None
        for r in range(reps):
            base = r * EVENTS_PER_REP
            self._enqueue(phase, pool, base, prev)
            prev = base
            self._rep += 1
        observe = getattr(self.gate, "observe", None)
        if gate and observe is not None:  # lets the gate size itself to the host's enqueue cost
            observe((time.perf_counter() - t0) * 1e3, reps, key=(id(self), phase))
        return pool

    def finish_batch(self, phase: str, pool: EventPool, reps: int) -> dict[str, list[float]]:
        """Wait for the batch's last events and read every repetition's samples."""
        last = (reps - 1) * EVENTS_PER_REP
        for ev in ((G1,) if phase == "gemm" else (C1,) if phase == "comm" else (G1, C1)):
            pool.synchronize(last + ev)
        return self._read(phase, pool, reps)

    def rep_starts(self, phase: str, pool: EventPool, reps: int) -> list[float]:
        """Each repetition's start relative to the first one's (ms), after finish_batch."""
        first = {"gemm": G0, "comm": C0}.get(phase, S)
        return pool.elapsed_from(first, [r * EVENTS_PER_REP + first for r in range(reps)])

    def run_batch(self, phase: str, reps: int) -> dict[str, list[float]]:
        return self.finish_batch(phase, self.enqueue_batch(phase, reps), reps)

    def measure(self, phase: str, rule: StoppingRule) -> PhaseResult:
        """Warm up, then repeat one phase in rounds until the stopping rule says stop."""
        unit = Unit(phase, self, phase)
        return measure_rounds([unit], rule, f"{phase}@single")[id(unit)]


# ------------------------------------------------------------------------------------------------
# Several runs in the same rounds
# ------------------------------------------------------------------------------------------------

MIN_ROUNDS = 6  # a round-paired bootstrap needs several rounds to resample


@dataclass
class Unit:
    """One phase of one run, measured in every round of a scenario's sweep."""

    key: str                      # the run id
    timer: PhaseTimer
    phase: str
    before: Callable[[], None] = lambda: None         # before each measured batch (e.g. poison)
    # Right after each batch, before another unit reuses the scenario's buffers (e.g. validate);
    # gets the round index.
    after: Callable[[int], None] = lambda round_index: None


def reps_per_round(rule: StoppingRule) -> int:
    return max(1, math.ceil(rule.min_reps / MIN_ROUNDS))


def _sweep_reason(units: list[Unit], samples: dict, rule: StoppingRule, rounds: int, spent: float) -> str | None:
    counts = [len(samples[id(u)]["total_ms"]) for u in units]
    if rounds >= MIN_ROUNDS and min(counts) >= rule.min_reps and all(
            relative_noise(samples[id(u)]["total_ms"]) <= rule.max_noise for u in units):
        return "noise"
    if max(counts) >= rule.max_reps:
        return "max_reps"
    if spent >= rule.timeout_s * len(units):
        return "timeout"
    return None


def measure_rounds(units: list[Unit], rule: StoppingRule, round_group: str) -> dict[int, PhaseResult]:
    """Measure every unit in every round until the scenario-wide stopping rule is met.

    A round gives each unit one batch of ``reps_per_round(rule)`` repetitions, units in a fixed
    order. The sweep stops, for all units together (so they keep equal repetitions and rounds), when
    every unit has at least ``min_reps`` repetitions with relative noise <= ``max_noise`` after at
    least MIN_ROUNDS rounds ("noise"), when a unit reaches ``max_reps``, or when the sweep has spent
    ``timeout_s`` per unit. Returns a PhaseResult per unit (keyed by ``id(unit)``) whose
    ``rounds`` list gives each repetition's round.
    """
    if rule.warmup:
        for u in units:
            u.timer.run_batch(u.phase, rule.warmup)
    n = reps_per_round(rule)
    samples: dict[int, dict[str, list[float]]] = {id(u): {} for u in units}
    rounds_of: dict[int, list[int]] = {id(u): [] for u in units}
    spent, rounds, reason = 0.0, 0, None
    while reason is None:
        for u in units:
            u.before()
            t0 = time.perf_counter()
            for key, values in u.timer.run_batch(u.phase, n).items():
                samples[id(u)].setdefault(key, []).extend(values)
            spent += time.perf_counter() - t0
            rounds_of[id(u)].extend([rounds] * n)
            u.after(rounds)
        rounds += 1
        reason = rule.settle(_sweep_reason(units, samples, rule, rounds, spent))   # agreed across ranks
    out = {}
    for u in units:
        total = samples[id(u)]["total_ms"]
        out[id(u)] = PhaseResult(samples=samples[id(u)], stop={
            "reason": reason, "reps": len(total), "warmup": rule.warmup, "relative_noise":
            round(relative_noise(total), 6), "elapsed_s": round(spent, 4), "rounds": rounds,
            "reps_per_round": n, "interleaved_with": "every phase of every run of the scenario"},
            rounds=rounds_of[id(u)], round_group=round_group)
    return out
