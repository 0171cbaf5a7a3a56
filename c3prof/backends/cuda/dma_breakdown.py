"""Where the time of one DMA collective goes: host enqueue, flag waits, copies, and the rest.

Each sample is one launch, alone (the ranks meet at a barrier first, so the ready wait measures
how long the device waited for the slowest peer, not a queue of earlier launches):

* ``host_enqueue_us``: wall time of ``launch()`` on the host (time.perf_counter_ns): every flag
  operation, fork/join event and copy batch the launch enqueues;
* ``ready_wait_us``: device time from the launch's start until every peer's READY flag arrived
  (the flag writes, the waits, and the peers' host skew);
* ``copies_us``: device time of the peer copies (fork, every stream's batch, join);
* ``done_wait_us``: push only, the DONE exchange after the copies;
* ``local_tail_us``: how long the comm stream still waited for all_to_all's local block after
  the peer copies (0 when the block is hidden under them);
* ``total_us``: start to end on the device.

Per launch counts come from DmaCollective.enqueue_calls (copy batches, driver copy calls, flag
operations). Two parts need more than one size and are computed where a size sweep exists
(:func:`fit_startup`, used by benchmarks/bench_collectives.py): the copy stage's fixed cost
(copy-engine start-up, the intercept of copies_us over bytes) and its per-byte cost.
The marks are extra events on the comm stream, so the breakdown is measured in its own launches,
never inside timed repetitions.
"""

from __future__ import annotations

import statistics
import time

from c3prof.backends.cuda import runtime as rt

PARTS = ("host_enqueue_us", "ready_wait_us", "copies_us", "done_wait_us", "local_tail_us", "total_us")


def _one_launch(coll, stream, rep: int, deadline_s: float) -> dict:
    marks = [rt.Event() for _ in range(4)]
    coll.ctrl.barrier()
    t0 = time.perf_counter_ns()
    coll.launch(stream, rep, marks=marks)
    host_ns = time.perf_counter_ns() - t0
    coll.ctrl.wait_until(marks[3].query, deadline_s, "a DMA collective (latency breakdown)")
    ms = [marks[0].elapsed_ms(m) for m in marks[1:]]
    done_part = ms[2] - ms[1]
    return {"host_enqueue_us": host_ns / 1e3, "ready_wait_us": ms[0] * 1e3, "copies_us": (ms[1] - ms[0]) * 1e3,
            "done_wait_us": done_part * 1e3 if coll.mode == "push" else 0.0,
            "local_tail_us": 0.0 if coll.mode == "push" else done_part * 1e3, "total_us": ms[2] * 1e3}


def measure_breakdown(coll, stream, launches: int = 12, warmup: int = 2, deadline_s: float = 300.0) -> dict:
    """Median of each part over ``launches`` lone launches of ``coll`` (a DmaCollective after
    exchange()), plus the launch's structure. Collective: every rank calls it at the same point."""
    samples = [_one_launch(coll, stream, i, deadline_s) for i in range(warmup + launches)][warmup:]
    parts = {k: statistics.median(s[k] for s in samples) for k in PARTS}
    per_stream = max(coll.copies_per_stream) if coll.copies_per_stream else 0
    return {"parts_us": parts, "launches": launches, "samples_us": {k: [s[k] for s in samples] for k in PARTS},
            "per_copy_us": parts["copies_us"] / per_stream if per_stream else None,
            "copies_per_stream": list(coll.copies_per_stream), "enqueue_calls": coll.enqueue_calls(),
            "method": "device events at the stage boundaries of lone launches after a barrier; host "
                      "time.perf_counter_ns around launch(); medians",
            "note": "done_wait_us is the push DONE exchange; for pull the same interval is local_tail_us "
                    "(waiting for all_to_all's local block after the peer copies)"}


def fit_startup(points: list[tuple[int, float]]) -> dict | None:
    """Least-squares line copies_us = startup_us + bytes / (GB/s * 1e3) over (bytes, copies_us)
    points of one configuration at several sizes; None with fewer than two sizes."""
    import numpy as np

    if len({b for b, _ in points}) < 2:
        return None
    x = np.array([b for b, _ in points], dtype=float)
    y = np.array([t for _, t in points], dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    return {"startup_us": float(intercept), "copy_gbps": float(1e-3 / slope) if slope > 0 else None,
            "sizes": len(points), "method": "least squares of the copy stage's median time over bytes moved"}
