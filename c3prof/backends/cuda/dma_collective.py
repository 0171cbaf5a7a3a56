"""c3prof's own DMA collectives (ConCCL-style): direct all-gather and all-to-all whose shards move by
copy-engine copies between ranks, one process per GPU.

Mechanics (per launch, all on the caller's comm stream unless noted):

1. *ready*: this rank writes the launch's sequence number into every peer's READY[rank] flag
   (a 4-byte copy from a local flag word, as NCCL 2.28's CE collectives do), then waits on the
   device (cuStreamWaitValue32, ``>=``) until every peer's READY flag here reached it. Nobody
   touches a peer's buffers before that peer is ready; sequence numbers only grow, so a peer that
   runs ahead never deadlocks.
2. *copies*: the rank's copy plan (:meth:`Layout.copies`): ``push`` writes its own shard into every
   peer's destination (the copy is issued by the *source* GPU's stream); ``pull`` reads every
   peer's shard into its own destination (issued by the *destination* GPU's stream); ``auto``
   picks one by size (c3prof.plan.dma_schedule.choose_mode). Copies are cut into ``chunks``
   pieces and spread over ``streams`` streams (``None``: chosen by world size and size;
   c3prof.plan.dma_schedule.assign_streams says which peer goes where), forked from and joined
   back to the comm stream with events, and enqueued in one nogil call per stream
   (c3prof.backends.cuda.runtime.CopyBatch / PeerCopyBatch: ``api`` = memcpy | batch | peer).
3. *done* (push only): the rank writes DONE[rank] into every peer and waits for every peer's DONE:
   when the comm stream passes it, every peer finished writing into this rank's destination.

all_to_all's local block (its own block, a same-device copy) needs no peer: with ``local="stream"``
(default) or ``"ce_hint"`` it is issued first, on its own stream, before the ready exchange, so it
overlaps the flags and the peer copies instead of following them (``"inline"``: after the peer
copies on the first stream, as measured on two H200s). It is joined back before the launch ends,
and validated byte for byte with the rest of the destination.

``launch(stream, rep, marks)`` records device events at the stage boundaries when ``marks`` is
given (c3prof/backends/cuda/dma_breakdown.py turns them into the latency breakdown).

Buffers come from cudaMalloc (c3prof.backends.cuda.runtime.DeviceBuffer: one IPC handle per buffer); handles are
exchanged over the control group (gloo), opened with cudaIpcOpenMemHandle +
cudaIpcMemLazyEnablePeerAccess after cudaDeviceEnablePeerAccess to each peer's GPU. What the driver
reports for every mapping (peer GPU visible in this process, peer access possible/enabled, pointer
type) is kept in :attr:`DmaCollective.diagnostics`: docs/multigpu.md explains why that decides
between ~394 GB/s NVLink copies and ~32 GB/s copies staged through the host.
"""

from __future__ import annotations

import os

from c3prof.backends.cuda import runtime as rt
from c3prof.backends.cuda.patterns import count_mismatches, fill_pattern
from c3prof.errors import C3profError
from c3prof.plan.dma_schedule import LOCAL_MODES, assign_streams, auto_streams, choose_mode
from c3prof.plan.layout import Layout

APIS = ("memcpy", "batch", "peer")
# How the ready/done flags are written: a local word copied into each peer (memcpy, as NCCL does),
# cuStreamWriteValue32 into each peer (memop), or every write and every wait of an exchange in one
# cuStreamBatchMemOp call each (batch: two host calls per exchange instead of 2(n-1)+1).
FLAG_WRITES = ("memcpy", "memop", "batch")
_READY, _DONE = 0, 1


class _CudaArray:
    """A raw device allocation presented to torch through __cuda_array_interface__ (zero copy)."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


def as_tensor(torch, ptr: int, nbytes: int, device: int):
    return torch.as_tensor(_CudaArray(ptr, nbytes), device=torch.device("cuda", device))


def peer_device_index(bus_id: str) -> int | None:
    """This process's index of the GPU at ``bus_id``, or None when that GPU is not visible here
    (e.g. each process launched with its own CUDA_VISIBLE_DEVICES)."""
    try:
        return rt.device_by_pci_bus_id(bus_id)
    except rt.CudaError:
        return None


class DmaCollective:
    """One rank's side of a DMA all-gather or all-to-all (Transport-like: launch/poison/validate)."""

    expected_carrier = "copy_engine"

    def __init__(self, torch, ctrl, layout: Layout, device: int, mode: str, *, api: str = "memcpy",
                 chunks: int = 1, streams: int | None = 1, seed: int = 0, flag_write: str = "memcpy",
                 local: str = "stream"):
        if layout.op not in ("all_gather", "all_to_all"):
            raise C3profError(f"c3prof's DMA collectives implement all_gather and all_to_all, not {layout.op}")
        if api not in APIS or flag_write not in FLAG_WRITES or local not in LOCAL_MODES:
            raise C3profError(f"DMA collective: api {api!r} flag_write {flag_write!r} local {local!r} "
                              f"(known: {'|'.join(APIS)}, {'|'.join(FLAG_WRITES)}, {'|'.join(LOCAL_MODES)})")
        if chunks < 1 or (streams is not None and streams < 1):
            raise C3profError("DMA collective: chunks and streams must be >= 1")
        self.torch, self.ctrl, self.layout, self.device = torch, ctrl, layout, device
        self.requested_mode = mode
        self.mode = choose_mode(mode, layout.op, layout.nbytes, layout.world)
        self.api, self.chunks, self.local = api, chunks, local
        self.n_streams = streams if streams is not None else auto_streams(layout.world, layout.nbytes, layout.op)
        self.streams_rule = "given" if streams is not None else "auto (c3prof.plan.dma_schedule.auto_streams)"
        self.flag_write, self.seed = flag_write, seed
        self.name = f"dma_{mode}"
        self.nbytes = layout.nbytes
        self.rank, self.world = layout.rank, layout.world
        self.seq = 0
        self.breakdown: dict | None = None   # filled by dma_breakdown.measure_breakdown when asked
        self._opened: list[int] = []
        self._closed = False
        rt.set_device(device)
        # Local allocations first (may fail alone); the caller agrees on success before exchange().
        self.dst = rt.DeviceBuffer(layout.dst_bytes)
        self.src = rt.DeviceBuffer(layout.src_bytes) if layout.src_bytes else None
        self.flags = rt.DeviceBuffer(max(256, 4 * (2 * self.world + 4)))
        s = rt.Stream()
        rt.memset_async(self.flags.ptr, 0, self.flags.nbytes, s)
        s.synchronize()
        self.dst_t = as_tensor(torch, self.dst.ptr, layout.dst_bytes, device)
        self.src_t = as_tensor(torch, self.src.ptr, layout.src_bytes, device) if self.src else None
        buf, off = layout.own_source()
        own = (self.dst_t if buf == "dst" else self.src_t)[off:off + (layout.block if layout.op == "all_gather"
                                                                       else layout.src_bytes)]
        fill_pattern(torch, own, seed, self.rank, 0)
        torch.cuda.synchronize(device)

    # -- setup (collective: every rank calls it at the same point) ------------------------------

    def exchange(self) -> None:
        me = {"rank": self.rank, "pid": os.getpid(), "pci_bus_id": rt.pci_bus_id(self.device),
              "dst": self.dst.ipc_handle(), "src": self.src.ipc_handle() if self.src else None,
              "flags": self.flags.ipc_handle()}
        infos = self.ctrl.all_gather(me)
        self.ptr: list[dict] = []
        self.dev_of: list[int] = []
        self.diagnostics = []
        for p, info in enumerate(infos):
            if p == self.rank:
                self.ptr.append({"dst": self.dst.ptr, "src": self.src.ptr if self.src else 0, "flags": self.flags.ptr})
                self.dev_of.append(self.device)
                continue
            dev = peer_device_index(info["pci_bus_id"])
            diag = {"peer": p, "peer_pci_bus_id": info["pci_bus_id"], "peer_visible": dev is not None,
                    "peer_device_here": dev, "same_device": dev == self.device}
            if dev is not None and dev != self.device:
                diag["can_access_peer"] = rt.can_access_peer(self.device, dev)
                if diag["can_access_peer"]:
                    rt.enable_peer_access(dev)
                    diag["peer_access_enabled"] = True
            ptrs = {}
            for key in ("dst", "src", "flags"):
                if info[key] is None:
                    ptrs[key] = 0
                    continue
                ptrs[key] = rt.ipc_open_mem_handle(info[key])
                self._opened.append(ptrs[key])
            diag["mapped_dst"] = rt.pointer_info(ptrs["dst"])
            self.ptr.append(ptrs)
            # cudaMemcpyPeerAsync needs a device index; an invisible peer keeps ours (the driver then
            # resolves the address itself, which is what a staged copy looks like).
            self.dev_of.append(dev if dev is not None else self.device)
            self.diagnostics.append(diag)
        if self.diagnostics and all(d["same_device"] for d in self.diagnostics):
            self.expected_carrier = "sm"   # ranks sharing one GPU (the IPC test): same-device copies use SMs
        self._build()
        self.ctrl.barrier()

    def _batch(self, cs: list, prefer_overlap: bool = False):
        """One enqueue call for the copies ``cs`` (all issued by this rank)."""
        dsts = [self.ptr[c.dst_rank][c.dst_buf] + c.dst_offset for c in cs]
        srcs = [self.ptr[c.src_rank][c.src_buf] + c.src_offset for c in cs]
        sizes = [c.length for c in cs]
        if prefer_overlap:
            return rt.CopyBatch(dsts, srcs, sizes, mode="batch", prefer_overlap=True)
        if self.api == "peer":
            return rt.PeerCopyBatch(dsts, [self.dev_of[c.dst_rank] for c in cs], srcs,
                                    [self.dev_of[c.src_rank] for c in cs], sizes)
        return rt.CopyBatch(dsts, srcs, sizes, mode=self.api)

    def _build(self) -> None:
        copies = self.layout.copies(self.mode, self.chunks)
        remote = [c for c in copies if not c.local]
        local = [c for c in copies if c.local]
        plan = assign_streams([c.dst_rank if self.mode == "push" else c.src_rank for c in remote], self.n_streams)
        per_stream = [[remote[i] for i in idx] for idx in plan.per_stream]
        self.stream_rule = plan.rule
        self.local_batch = None
        if local and self.local == "inline":
            per_stream[0].extend(local)   # after the peer copies (the measured two-H200 behaviour)
        elif local:
            self.local_batch = self._batch(local, prefer_overlap=self.local == "ce_hint")
        self.batches = [self._batch(cs) if cs else None for cs in per_stream]
        self.copies_per_stream = [len(cs) for cs in per_stream]
        self.local_bytes = sum(c.length for c in local)
        self.remote_bytes = sum(c.length for c in remote)
        self.n_copies = len(copies)
        self._extra: dict[int, list] = {}   # comm-stream priority -> extra streams (copies, then the local block)
        self._fork, self._fork_local = rt.Event(timing=False), rt.Event(timing=False)
        self._joins = [rt.Event(timing=False) for _ in range(self.n_streams + 1)]
        self._peers = self.layout.peer_order()
        self._seq_word = self.flags.ptr + 4 * (2 * self.world)
        self._flag_batches = {}
        if self.flag_write == "batch" and self._peers:
            for kind in (_READY, _DONE):
                self._flag_batches[kind, "write"] = rt.FlagBatch([self._flag(p, kind, self.rank) for p in self._peers],
                                                                 "write")
                self._flag_batches[kind, "wait"] = rt.FlagBatch([self._flag(self.rank, kind, p) for p in self._peers],
                                                                "wait")

    def enqueue_calls(self) -> dict:
        """Host calls one launch makes, by kind (what the latency breakdown's host time is made of),
        counted from the code path of launch()."""
        peers = len(self._peers)
        per_exchange = {"memcpy": 2 * peers + 1, "memop": 2 * peers, "batch": 2}[self.flag_write]
        flag_ops = 0 if self.world == 1 else (2 if self.mode == "push" else 1) * per_exchange
        batches = [b for b in self.batches if b is not None]
        copy_calls = len(batches) if self.api == "batch" else sum(b.count for b in batches)
        event_ops = 1 + 3 * (self.n_streams - 1) if self.n_streams > 1 else 0   # fork; wait, join, wait per stream
        if self.local_batch is not None:
            copy_calls += 1 if getattr(self.local_batch, "mode", None) == "batch" else self.local_batch.count
            event_ops += 4                                                       # fork, wait, join, wait
        return {"flag_ops": flag_ops, "copy_batches": len(batches) + (self.local_batch is not None),
                "copy_calls": copy_calls, "event_ops": event_ops}

    def params(self) -> dict:
        return {"impl": self.name, "mode": self.mode, "requested_mode": self.requested_mode, "api": self.api,
                "chunks": self.chunks, "streams": self.n_streams, "streams_rule": self.streams_rule,
                "stream_assignment": self.stream_rule, "copies_per_stream": self.copies_per_stream,
                "local": self.local, "flag_write": self.flag_write, "inplace": self.layout.inplace,
                "copies_per_launch": self.n_copies, "remote_bytes": self.remote_bytes,
                "local_bytes": self.local_bytes, "world_size": self.world, "rank": self.rank,
                "enqueue_calls": self.enqueue_calls(), "peers": self.diagnostics}

    # -- one launch ------------------------------------------------------------------------------

    def _flag(self, rank: int, kind: int, slot: int) -> int:
        return self.ptr[rank]["flags"] + 4 * (kind * self.world + slot)

    def _signal(self, s, kind: int) -> None:
        if self.flag_write == "batch":
            self._flag_batches[kind, "write"].enqueue(self.seq, s)
            return
        if self.flag_write == "memop":
            for p in self._peers:
                rt.stream_write_value32(self._flag(p, kind, self.rank), self.seq, s)
            return
        rt.stream_write_value32(self._seq_word, self.seq, s)
        for p in self._peers:
            rt.memcpy_async(self._flag(p, kind, self.rank), self._seq_word, 4, s)

    def _wait(self, s, kind: int) -> None:
        if self.flag_write == "batch":
            self._flag_batches[kind, "wait"].enqueue(self.seq, s)
            return
        for p in self._peers:
            rt.stream_wait_value32(self._flag(self.rank, kind, p), self.seq, s)

    def _streams(self, s) -> list:
        """The comm stream, the extra copy streams and (last) the local block's stream, at ``s``'s priority."""
        extra = self._extra.get(s.priority)
        if extra is None:
            extra = self._extra[s.priority] = [rt.Stream(priority=s.priority) for _ in range(self.n_streams)]
        return [s, *extra]

    def launch(self, stream, rep: int, marks=None) -> None:
        """One collective on ``stream`` (enqueued, not waited for). ``marks``: four timing events
        recorded on the comm stream at start, after the ready wait, after the copies, at the end."""
        s = stream.dma
        streams = self._streams(s)
        local_s = streams[-1]
        self.seq += 1
        if marks is not None:
            marks[0].record(s)
        if self.local_batch is not None:          # no peer involved: start it before anything else
            self._fork_local.record(s)
            local_s.wait(self._fork_local)
            self.local_batch.enqueue(local_s)
            self._joins[-1].record(local_s)
        if self.world > 1:
            self._signal(s, _READY)
            self._wait(s, _READY)
        if marks is not None:
            marks[1].record(s)
        if self.n_streams > 1:                    # peer copies start only once every peer is ready
            self._fork.record(s)
        for x in streams[1:self.n_streams]:
            x.wait(self._fork)
        for x, b in zip(streams[:self.n_streams], self.batches):
            if b is not None:
                b.enqueue(x)
        for i in range(1, self.n_streams):
            self._joins[i].record(streams[i])
            s.wait(self._joins[i])
        if marks is not None:
            marks[2].record(s)
        if self.mode == "push" and self.world > 1:
            self._signal(s, _DONE)
            self._wait(s, _DONE)
        if self.local_batch is not None:
            s.wait(self._joins[-1])
        if marks is not None:
            marks[3].record(s)

    # -- validation ------------------------------------------------------------------------------

    def poison(self) -> None:
        for seg in self.layout.poison_segments():
            fill_pattern(self.torch, self.dst_t[seg.dst_offset:seg.dst_offset + seg.length], self.seed,
                         seg.src_rank, seg.src_offset, invert=True)
        self.torch.cuda.synchronize(self.device)

    def validate(self, corrupt: bool = False) -> dict:
        return validate_segments(self.torch, self.dst_t, self.layout, self.seed, self.name, self.device, corrupt)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.torch.cuda.synchronize(self.device)
        self.ctrl.barrier()          # no peer may still be copying from or into our mappings
        for p in self._opened:
            rt.ipc_close_mem_handle(p)
        self._opened = []


def validate_segments(torch, dst_t, layout: Layout, seed: int, name: str, device: int, corrupt: bool) -> dict:
    """Compare a rank's whole destination with the regenerated reference, segment by segment.
    ``corrupt`` flips one byte a correct collective must have written (a deliberate fault)."""
    torch.cuda.synchronize(device)
    segs = layout.segments()
    if corrupt:
        target = (layout.poison_segments() or segs)[0]
        i = target.dst_offset + target.length // 3
        dst_t[i:i + 1].bitwise_not_()
    count, first = 0, None
    for seg in segs:
        c, f = count_mismatches(torch, dst_t[seg.dst_offset:seg.dst_offset + seg.length], seed, seg.src_rank,
                                seg.src_offset)
        if c and first is None:
            first = seg.dst_offset + f
        count += c
    return {"transport": name, "bytes_checked": layout.nbytes, "mismatched_bytes": count,
            "first_mismatch_offset": first, "ok": count == 0, "rank": layout.rank,
            "method": "device compare with every rank's source regenerated locally (seeded pattern)"}
