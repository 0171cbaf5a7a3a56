"""Cross-rank agreement of a multi-GPU capture, for any backend.

Everything that would let ranks drift apart is agreed over a host-side control group (gloo),
with an abort key in the rendezvous store that a failing rank sets with its error:

* setups: a local step runs on every rank and fails everywhere, with the same message, unless it
  succeeded everywhere (:meth:`Control.agreed`);
* the pre-batch gate: every rank sleeps as long as the slowest enqueuer needs (:meth:`Control.agree_max`);
* stopping: a phase stops once every rank's local rule says stop (:class:`AgreedStoppingRule`);
* host waits for device work poll with a deadline and the abort key (:meth:`Control.wait_until`),
  so a rank whose device waits forever for a dead peer fails with a message instead of hanging;
* the plan and the phases already captured (:func:`plan_digest`, :func:`check_agreement`,
  :func:`agreed_done`).

A backend receives the :class:`Control` (the c3prof.backends.base.Agreement protocol) and never
imports this module.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from typing import Any, Callable

from c3prof.capture.stopping import StoppingRule
from c3prof.errors import C3profError, PeerFailed

ABORT_KEY = "c3prof/abort"


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (error messages that cross ranks stay one line)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"



class Control:
    """The control group: all-gather over gloo, and the abort key in the rendezvous store."""

    def __init__(self, dist, group, store, rank: int, world: int, timeout_s: float):
        self.dist, self.group, self.store = dist, group, store
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        self._last_check = 0.0

    def all_gather(self, obj) -> list:
        self.check_abort()
        out = [None] * self.world
        try:
            self.dist.all_gather_object(out, obj, group=self.group)
        except Exception as exc:
            self.check_abort(force=True)
            raise PeerFailed(f"a peer rank left or did not answer within {self.timeout_s:.0f} s "
                             f"({first_line(exc)[:200]})") from None
        return out

    def barrier(self) -> None:
        self.all_gather(None)

    def abort(self, message: str) -> None:
        try:
            self.store.set(ABORT_KEY, message)
        except Exception:
            pass

    def check_abort(self, force: bool = False) -> None:
        """Raise PeerFailed if a rank announced a failure (checked at most every 0.5 s)."""
        now = time.monotonic()
        if self.store is None or (not force and now - self._last_check < 0.5):
            return
        self._last_check = now
        try:
            if self.store.check([ABORT_KEY]):
                raise PeerFailed(self.store.get(ABORT_KEY).decode())
        except PeerFailed:
            raise
        except Exception:
            return

    def agree_max(self, value: float) -> float:
        return max(self.all_gather(value))

    def agreed(self, what: str, fn: Callable[[], Any], locally_recoverable: Callable[[BaseException], bool]) -> Any:
        """Run a local step on every rank; unless it succeeded everywhere, raise the same
        C3profError everywhere (the runner records the run as failed and moves on)."""
        result, err = None, None
        try:
            result = fn()
        except Exception as exc:
            if not locally_recoverable(exc):
                self.abort(f"rank {self.rank}: {type(exc).__name__}: {exc}")
                raise
            err = first_line(exc)
        errors = self.all_gather(err)
        if any(errors):
            closer = getattr(result, "close", None)
            if closer is not None:
                try:
                    closer()
                except Exception:
                    pass
            r = next(i for i, e in enumerate(errors) if e)
            raise C3profError(f"{what} failed on rank {r}: {errors[r]}")
        return result

    def wait_until(self, done: Callable[[], bool], deadline_s: float, what: str = "GPU work") -> None:
        t0 = time.monotonic()
        pause = 0.0
        while not done():
            if time.monotonic() - t0 > deadline_s:
                raise PeerFailed(f"{what} did not finish within {deadline_s:.0f} s: a peer rank is stuck "
                                 f"or gone (raise --collective-timeout for very long phases)")
            self.check_abort()
            time.sleep(pause)
            pause = min(1e-3, pause + 2e-5)


class AgreedStoppingRule(StoppingRule):
    """A StoppingRule whose decision is the same on every rank: a phase (or a scenario's sweep of
    rounds) stops when every rank's local rule says stop; the reason recorded is the local one.
    Not a dataclass of its own: the agreement function stays out of describe()/asdict()."""

    def __init__(self, base: StoppingRule, agree):
        super().__init__(**asdict(base))
        object.__setattr__(self, "_agree", agree)

    def settle(self, local: str | None) -> str | None:
        reasons = self._agree(local)
        return local if all(r is not None for r in reasons) else None

    def stop_reason(self, samples, elapsed_s: float):
        return self.settle(super().stop_reason(samples, elapsed_s))


def plan_digest(plans, extra: dict) -> str:
    doc = {"runs": [[p.id, p.scenario.to_dict(), p.variant.params()] for p in plans], "options": extra}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def check_agreement(values: list, what: str) -> None:
    """Raise C3profError (the same message on every rank) unless all ranks hold the same value."""
    if all(v == values[0] for v in values):
        return
    groups: dict = {}
    for r, v in enumerate(values):
        groups.setdefault(json.dumps(v, sort_keys=True, default=str), []).append(r)
    parts = [f"ranks {','.join(map(str, rs))}: {k[:160]}" for k, rs in groups.items()]
    raise C3profError(f"ranks disagree on {what}: " + "; ".join(parts) +
                      " (start every rank with the same command line and scenario files)")


def agreed_done(existing_sets: list[list]) -> set:
    """Phases every rank has completed (a rank that died mid-phase re-measures it with the others)."""
    sets = [set(map(tuple, s)) for s in existing_sets]
    return set.intersection(*sets) if sets else set()


def with_agreed_carrier(evidence: dict, carriers: list[str]) -> dict:
    """An engine_evidence record plus every rank's measured carrier (``carrier_per_rank``) and the
    one the runner decides on (``carrier_agreed``: the common value, else "unknown"), so that every
    rank skips or runs the same runs."""
    agreed = carriers[0] if all(c == carriers[0] for c in carriers) else "unknown"
    return {**evidence, "carrier_per_rank": list(carriers), "carrier_agreed": agreed}
