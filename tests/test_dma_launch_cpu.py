"""The structure of one DMA collective launch, GPU-free: c3prof/backends/cuda/dma_collective.py
driven against a RECORDING FAKE of the CUDA runtime module (every call is logged, nothing runs).

Checks the orderings the device relies on (the all_to_all local block is enqueued before the ready
exchange, on its own stream, and joined before the launch ends; peer copies on extra streams wait on
a fork recorded after the ready wait), that every planned copy is enqueued exactly once, and that
enqueue_calls() counts the host calls launch() really makes. Byte-exactness on a GPU is
tests/test_gpu_dma_paths.py's job.
"""

from __future__ import annotations

import itertools

import pytest

from c3prof.backends.cuda import dma_collective as dc
from c3prof.plan.layout import Layout


class FakeRuntime:
    """The parts of c3prof.backends.cuda.runtime a launch uses; ``log`` gets (kind, stream id, detail)."""

    def __init__(self):
        self.log: list[tuple] = []
        self._ids = itertools.count(1)
        rt = self

        class Stream:
            def __init__(self, priority=0):
                self.priority, self.id = priority, next(rt._ids)

            def wait(self, event):
                rt.log.append(("wait_event", self.id, event.id))

        class Event:
            def __init__(self, timing=True):
                self.id = next(rt._ids)

            def record(self, stream):
                rt.log.append(("record", stream.id, self.id))

        class CopyBatch:
            def __init__(self, dsts, srcs, sizes, mode="memcpy", prefer_overlap=False):
                self.copies, self.mode, self.count = list(zip(dsts, srcs, sizes)), mode, len(sizes)

            def enqueue(self, stream):
                rt.log.append(("copy_batch", stream.id, self))

        class PeerCopyBatch(CopyBatch):
            def __init__(self, dsts, dst_devs, srcs, src_devs, sizes):
                super().__init__(dsts, srcs, sizes)
                del self.mode

        class FlagBatch:
            def __init__(self, addrs, kind):
                self.addrs, self.kind = list(addrs), kind

            def enqueue(self, value, stream):
                rt.log.append(("flag_" + self.kind, stream.id, tuple(self.addrs)))

        self.Stream, self.Event, self.CopyBatch, self.PeerCopyBatch = Stream, Event, CopyBatch, PeerCopyBatch
        self.FlagBatch = FlagBatch

    def stream_write_value32(self, addr, value, stream):
        self.log.append(("flag_write", stream.id, addr))

    def stream_wait_value32(self, addr, value, stream):
        self.log.append(("flag_wait", stream.id, addr))

    def memcpy_async(self, dst, src, n, stream):
        self.log.append(("flag_copy", stream.id, dst))


class Buf:
    def __init__(self, ptr):
        self.ptr = ptr


def _collective(fake, op, world, rank, mode, streams, local, api="memcpy", chunks=1, flag_write="memcpy"):
    """A DmaCollective wired by hand (no torch, no buffers): rank r's buffers at r * 2**40."""
    c = object.__new__(dc.DmaCollective)
    layout = Layout(op, 64 * world * 8, world, rank, inplace=op == "all_gather")
    c.layout, c.rank, c.world, c.mode, c.api, c.chunks, c.local = layout, rank, world, mode, api, chunks, local
    c.n_streams, c.flag_write, c.seq = streams, flag_write, 0
    c.flags = Buf(rank * 2**40 + 2**30)
    c.ptr = [{"dst": r * 2**40, "src": r * 2**40 + 2**20, "flags": r * 2**40 + 2**30} for r in range(world)]
    c.dev_of = [0] * world
    c._build()
    return c


def _launch(fake, c):
    class Comm:
        dma = fake.Stream()
    fake.log.clear()
    c.launch(Comm, 0)
    return Comm.dma.id, list(fake.log)


@pytest.fixture
def fake(monkeypatch):
    f = FakeRuntime()
    monkeypatch.setattr(dc, "rt", f)
    return f


@pytest.mark.parametrize("mode,streams,local,api,flag_write", [
    ("pull", 2, "stream", "memcpy", "memcpy"), ("push", 3, "ce_hint", "batch", "batch"),
    ("pull", 1, "inline", "peer", "memop"), ("push", 1, "stream", "peer", "batch")])
def test_all_to_all_launch_order_and_call_counts(fake, mode, streams, local, api, flag_write):
    c = _collective(fake, "all_to_all", 4, 1, mode, streams, local, api=api, chunks=2, flag_write=flag_write)
    per_exchange = 1 if flag_write == "batch" else len(c._peers)     # wait calls per flag exchange
    comm, log = _launch(fake, c)
    flags = [i for i, e in enumerate(log) if e[0].startswith("flag")]
    batches = [(i, e) for i, e in enumerate(log) if e[0] == "copy_batch"]
    # Every planned copy enqueued exactly once.
    enqueued = sorted(cp for _, e in batches for cp in e[2].copies)
    assert len(enqueued) == len(layout_copies(c)) == len(set(enqueued))
    local_batches = [(i, e) for i, e in batches if e[2] is c.local_batch]
    if local == "inline":
        assert c.local_batch is None and batches[0][1][1] == comm    # local copies ride on the comm stream
    else:
        (i_local, e_local), = local_batches
        assert i_local < flags[0] and e_local[1] != comm             # before the ready exchange, own stream
        join = next(e[2] for e in log[i_local:] if e[0] == "record" and e[1] == e_local[1])
        assert ("wait_event", comm, join) in log                     # joined back into the comm stream
    waits = [i for i, e in enumerate(log) if e[0] == "flag_wait"]
    ready_done = waits[per_exchange - 1]                             # the last READY wait
    for i, e in batches:
        if e[2] is c.local_batch:
            continue
        assert i > ready_done                                        # peer copies after every READY wait
        if mode == "push":                                           # ... and before the DONE exchange
            assert i < min(j for j in flags if j > ready_done)
        if e[1] != comm:                                             # an extra stream: waited on the fork
            fork = next(x[2] for x in reversed(log[:i]) if x[0] == "record" and x[1] == comm)
            assert ("wait_event", e[1], fork) in log[:i]
    if mode == "push":   # DONE waits on the comm stream come after every extra stream's join
        joins = [i for i, e in enumerate(log) if e[0] == "wait_event" and e[1] == comm]
        assert len(waits) == 2 * per_exchange and all(j < waits[per_exchange] for j in joins[:c.n_streams - 1])
    calls = c.enqueue_calls()
    assert calls["flag_ops"] == len(flags)
    assert calls["copy_batches"] == len(batches)
    assert calls["copy_calls"] == sum(1 if getattr(e[2], "mode", None) == "batch" else e[2].count for _, e in batches)
    assert calls["event_ops"] == sum(1 for e in log if e[0] in ("record", "wait_event"))


def layout_copies(c):
    return c.layout.copies(c.mode, c.chunks)


def test_batched_flags_address_every_peer_once(fake):
    c = _collective(fake, "all_gather", 4, 2, "push", 1, "stream", flag_write="batch")
    _, log = _launch(fake, c)
    flag_calls = [e for e in log if e[0].startswith("flag")]
    assert [e[0] for e in flag_calls] == ["flag_write", "flag_wait", "flag_write", "flag_wait"]   # ready, done
    ready_writes, ready_waits = flag_calls[0][2], flag_calls[1][2]
    assert ready_writes == tuple(c._flag(p, 0, 2) for p in c._peers)          # my slot in every peer's flags
    assert ready_waits == tuple(c._flag(2, 0, p) for p in c._peers)           # every peer's slot in mine


def test_flag_op_params_match_the_driver_struct():
    from c3prof.backends.cuda import runtime as rt

    assert rt.FlagBatch.params_bytes() == 48    # sizeof(CUstreamBatchMemOpParams) in cuda.h


def test_world_size_one_all_to_all_is_only_the_local_block(fake):
    c = _collective(fake, "all_to_all", 1, 0, "pull", 1, "stream")
    _, log = _launch(fake, c)
    assert not [e for e in log if e[0].startswith("flag")]
    assert [e[2] for e in log if e[0] == "copy_batch"] == [c.local_batch] and c.local_bytes == 64 * 8


def test_in_place_all_gather_has_no_local_block(fake):
    c = _collective(fake, "all_gather", 8, 3, "push", 4, "stream")
    assert c.local_batch is None and c.local_bytes == 0
    assert c.copies_per_stream == [2, 2, 2, 1] and c.stream_rule == "peer groups"


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_breakdown_parts_from_the_stage_marks(monkeypatch, mode):
    """dma_breakdown's arithmetic on SYNTHETIC mark times (0, 3, 10, 12 ms on the device)."""
    from c3prof.backends.cuda import dma_breakdown

    times = iter([0.0, 3.0, 10.0, 12.0] * 4)

    class Mark:
        def record(self, stream):
            self.t = next(times)

        def query(self):
            return True

        def elapsed_ms(self, end):
            return end.t - self.t

    class Ctrl:
        barriers = 0

        def barrier(self):
            Ctrl.barriers += 1

        def wait_until(self, done, deadline_s, what):
            assert done()

    class Coll:
        ctrl, copies_per_stream = Ctrl(), [2, 1]

        def __init__(self):
            self.mode = mode

        def launch(self, stream, rep, marks):
            for m in marks:
                m.record(stream)

        def enqueue_calls(self):
            return {"flag_ops": 3}

    monkeypatch.setattr(dma_breakdown.rt, "Event", Mark)
    bd = dma_breakdown.measure_breakdown(Coll(), None, launches=3, warmup=1)
    parts = bd["parts_us"]
    assert parts["ready_wait_us"] == 3000 and parts["copies_us"] == 7000 and parts["total_us"] == 12000
    assert (parts["done_wait_us"], parts["local_tail_us"]) == ((2000, 0) if mode == "push" else (0, 2000))
    assert bd["per_copy_us"] == 3500 and Ctrl.barriers == 4 and len(bd["samples_us"]["total_us"]) == 3
