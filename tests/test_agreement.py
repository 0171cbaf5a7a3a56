"""Cross-rank agreement (c3prof/capture/agreement.py) on one process: a SYNTHETIC control group
whose all-gather returns the peers' answers given by the test, and an in-memory store."""

from __future__ import annotations

import pytest

from c3prof.capture.agreement import ABORT_KEY, Control
from c3prof.errors import C3profError, PeerFailed


class FakeDist:
    """all_gather_object: this rank's object followed by the scripted peers' objects."""

    def __init__(self, peers):
        self.peers = peers

    def all_gather_object(self, out, obj, group=None):
        out[:] = [obj, *self.peers]


class FakeStore:
    def __init__(self):
        self.data = {}

    def set(self, key, value):
        self.data[key] = value.encode() if isinstance(value, str) else value

    def check(self, keys):
        return all(k in self.data for k in keys)

    def get(self, key):
        return self.data[key]


def control(peers, store=None):
    return Control(FakeDist(peers), None, store or FakeStore(), rank=0, world=1 + len(peers), timeout_s=5)


class Closable:
    closed = False

    def close(self):
        self.closed = True


def test_agreed_step_returns_when_every_rank_succeeded():
    assert control([None]).agreed("setup", lambda: 42, lambda exc: True) == 42


def test_a_peer_failure_fails_here_too_and_closes_the_local_result():
    made = Closable()
    with pytest.raises(C3profError, match="setup failed on rank 1: OutOfMemory: 2 GiB"):
        control(["OutOfMemory: 2 GiB"]).agreed("setup", lambda: made, lambda exc: True)
    assert made.closed


def test_a_local_unrecoverable_failure_aborts_every_rank():
    store = FakeStore()

    def boom():
        raise RuntimeError("driver gone")

    with pytest.raises(RuntimeError):
        control([None], store).agreed("setup", boom, lambda exc: False)
    assert store.get(ABORT_KEY).decode() == "rank 0: RuntimeError: driver gone"


def test_agree_max_and_wait_until():
    ctrl = control([3.0, 1.0])
    assert ctrl.agree_max(2.0) == 3.0
    ticks = iter([False, False, True])
    ctrl.wait_until(lambda: next(ticks), deadline_s=5)
    with pytest.raises(PeerFailed, match="did not finish within 0 s"):
        ctrl.wait_until(lambda: False, deadline_s=0.01)


def test_wait_until_stops_when_a_peer_announced_a_failure():
    store = FakeStore()
    ctrl = control([None], store)
    store.set(ABORT_KEY, "rank 1: out of memory")
    with pytest.raises(PeerFailed, match="rank 1: out of memory"):
        ctrl.wait_until(lambda: False, deadline_s=30)
