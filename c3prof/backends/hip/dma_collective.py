"""c3prof's own DMA all-gather and all-to-all on AMD GPUs: every rank pulls its peers' shards with
hipMemcpyPeerAsync (SDMA over XGMI) from buffers mapped through HIP IPC.

Ordering is device-side, without the host: each rank writes a sequence number into its own flag
(hipStreamWriteValue32, after its input is in place), and before pulling from a peer its stream
waits until that peer's flag (IPC-mapped) reaches the same number (hipStreamWaitValue32, >=), so a
rank that runs ahead never deadlocks. Inputs are filled once with each rank's own random bytes, so
every repetition's output is known and is validated byte for byte.

Collective setup across processes: ``export()`` gives what peers need (IPC handles, device), every
rank gathers all exports (torch.distributed or the capture's agreement) and calls ``connect``. Not
yet wired into a multi-GPU bench (HipBackend.open_distributed_bench says so); tested on the fake
HIP layer only (tests/test_hip_fake.py).
"""

from __future__ import annotations

import numpy as np

from c3prof.backends.hip.transports import host_view

OPS = ("all_gather", "all_to_all")


def rank_input(seed: int, rank: int, nbytes: int) -> np.ndarray:
    return np.random.default_rng([seed, rank]).integers(0, 256, nbytes, dtype=np.uint8)


class IpcDmaCollective:
    def __init__(self, rt, rank: int, world: int, op: str, shard_bytes: int, stream, seed: int = 0,
                 device: int | None = None):
        if op not in OPS:
            raise ValueError(f"unknown DMA collective {op!r} (known: {', '.join(OPS)})")
        self.rt, self.rank, self.world, self.op, self.shard = rt, rank, world, op, shard_bytes
        self.stream, self.seed = stream, seed
        self.device = rank if device is None else device
        in_bytes = shard_bytes * (world if op == "all_to_all" else 1)
        self.input, self.output = rt.DeviceBuffer(in_bytes), rt.DeviceBuffer(world * shard_bytes)
        self.flag = rt.DeviceBuffer(4)
        staging = rt.HostBuffer(in_bytes)
        host_view(staging)[:] = rank_input(seed, rank, in_bytes)
        rt.memcpy_async(self.input.ptr, staging.ptr, in_bytes, stream.dma)
        rt.memset_async(self.flag.ptr, 0, 4, stream.dma)
        stream.dma.synchronize()
        self.expected = rt.HostBuffer(world * shard_bytes)
        host_view(self.expected)[:] = self._expected_output()
        self.scratch = rt.HostBuffer(world * shard_bytes)
        self.mapped: list[int] = []
        self.peer_flags: dict[int, int] = {}
        self.pulls = None

    def _src_offset(self) -> int:
        """Where, in every rank's input, the shard this rank receives starts."""
        return self.rank * self.shard if self.op == "all_to_all" else 0

    def _expected_output(self) -> np.ndarray:
        in_bytes = self.shard * (self.world if self.op == "all_to_all" else 1)
        off = self._src_offset()
        return np.concatenate([rank_input(self.seed, p, in_bytes)[off:off + self.shard] for p in range(self.world)])

    def export(self) -> dict:
        return {"rank": self.rank, "device": self.device, "input": self.rt.ipc_mem_handle(self.input.ptr),
                "flag": self.rt.ipc_mem_handle(self.flag.ptr)}

    def enable_peers(self) -> None:
        for p in range(self.world):
            if p != self.device and self.rt.can_access_peer(self.device, p):
                self.rt.enable_peer_access(p)

    def connect(self, infos: list[dict]) -> None:
        """Map every peer's input and flag, and build the copies (one PeerCopyBatch for the peers,
        one local copy of this rank's own shard)."""
        self.enable_peers()
        dsts, dst_devs, srcs, src_devs = [], [], [], []
        for info in sorted(infos, key=lambda i: i["rank"]):
            p = info["rank"]
            if p == self.rank:
                continue
            peer_input = self.rt.ipc_open_mem_handle(info["input"])
            self.peer_flags[p] = self.rt.ipc_open_mem_handle(info["flag"])
            self.mapped += [peer_input, self.peer_flags[p]]
            dsts.append(self.output.ptr + p * self.shard)
            srcs.append(peer_input + self._src_offset())
            dst_devs.append(self.device)
            src_devs.append(info["device"])
        self.pulls = self.rt.PeerCopyBatch(dsts, dst_devs, srcs, src_devs, [self.shard] * len(dsts))
        self.own = self.rt.CopyBatch([self.output.ptr + self.rank * self.shard], [self.input.ptr + self._src_offset()],
                                     [self.shard])

    def post(self, stream, seq: int) -> None:
        """Tell the peers (device-side) that this rank's input is ready for repetition ``seq``."""
        self.rt.stream_write_value32(self.flag.ptr, seq, stream.dma)

    def pull(self, stream, seq: int) -> None:
        for p in sorted(self.peer_flags):
            self.rt.stream_wait_value32(self.peer_flags[p], seq, stream.dma)
        self.pulls.enqueue(stream.dma)
        self.own.enqueue(stream.dma)

    def launch(self, stream, rep: int) -> None:
        self.post(stream, rep + 1)
        self.pull(stream, rep + 1)

    def poison(self) -> None:
        poison = self.rt.HostBuffer(self.world * self.shard)
        np.bitwise_not(host_view(self.expected), out=host_view(poison))
        self.rt.memcpy_async(self.output.ptr, poison.ptr, self.world * self.shard, self.stream.dma)
        self.stream.dma.synchronize()

    def validate(self, corrupt: bool = False) -> dict:
        self.rt.device_synchronize()
        n = self.world * self.shard
        self.rt.memcpy_async(self.scratch.ptr, self.output.ptr, n, self.stream.dma)
        self.stream.dma.synchronize()
        got = host_view(self.scratch)
        if corrupt:
            got[n // 3] ^= 0xFF
        ne = got != host_view(self.expected)
        count = int(np.count_nonzero(ne))
        return {"transport": f"dma_pull_{self.op}", "bytes_checked": n, "mismatched_bytes": count,
                "first_mismatch_offset": int(np.argmax(ne)) if count else None, "ok": count == 0,
                "method": "the whole output copied to pinned host memory and compared with every rank's known input"}

    def close(self) -> None:
        for ptr in self.mapped:
            self.rt.ipc_close_mem_handle(ptr)
        self.mapped = []
