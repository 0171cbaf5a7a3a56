"""How c3prof's DMA collectives schedule their copies: push or pull, how many copy streams, which
peers share a stream, where the all-to-all local block goes. GPU-free; docs/multigpu.md gives the
reasoning and says which of the numbers below were measured.

Measured on two H200s (NVLink, one host; benchmarks/results/h200x2_collectives.json):

* push is faster at 1 MB (all_gather 27.4 us push vs 41.0 us pull; all_to_all 40.1 vs 51.7 us),
  pull from 16 MB up (all_gather 41.4 vs 48.3 us at 16 MB; 365 vs 269 GB/s busbw at 1 GB). The
  crossover lies between 1 and 16 MB; :data:`PUSH_BELOW` puts it at 4 MiB (not measured there).
* one copy-engine copy to one peer reached about 394 GB/s one way (one process, peer pointers),
  most of the ~450 GB/s NVLink one-way bandwidth of an H200: at large sizes one or two streams of
  copies can fill a GPU's links; more streams only add contention (assumption, not measured on
  4 or 8 GPUs).

Not measured (waits for a 4- or 8-GPU machine): the per-copy start-up cost that parallel streams
hide at small sizes. :func:`auto_streams` gives small blocks one stream per peer up to
:data:`MAX_SMALL_STREAMS`, large blocks at most :data:`MAX_LARGE_STREAMS`; both are defaults to be
replaced by the measured latency breakdown (bench_collectives ``--breakdown``).
"""

from __future__ import annotations

from dataclasses import dataclass

from c3prof.errors import C3profError

MODES = ("push", "pull", "auto")
# Where all_to_all's local block (a same-device copy) is issued:
#   stream  - first, on its own stream, overlapped with the flag exchange and the peer copies;
#   ce_hint - the same, as a cudaMemcpyBatchAsync with cudaMemcpyFlagPreferOverlapWithCompute
#             (asks the driver for a copy engine; which engine it uses is measured, not assumed);
#   inline  - after the peer copies on the first stream (the behaviour measured on two H200s).
LOCAL_MODES = ("stream", "ce_hint", "inline")
PUSH_BELOW = 4 * 2**20          # bytes per peer block under which "auto" pushes
SMALL_BLOCK = 4 * 2**20         # per-peer block under which copies are latency-bound
MAX_SMALL_STREAMS = 4
MAX_LARGE_STREAMS = 2


def block_bytes(op: str, nbytes: int, world: int) -> int:
    """Bytes each (source, destination) pair exchanges (nccl-tests sizes: all_gather's nbytes is the output)."""
    return nbytes // world


def choose_mode(mode: str, op: str, nbytes: int, world: int) -> str:
    """``mode`` itself, or for "auto" push below :data:`PUSH_BELOW` bytes per block and pull above."""
    if mode not in MODES:
        raise C3profError(f"DMA mode {mode!r} (known: {', '.join(MODES)})")
    if mode != "auto":
        return mode
    return "push" if block_bytes(op, nbytes, world) < PUSH_BELOW else "pull"


def auto_streams(world: int, nbytes: int, op: str = "all_to_all") -> int:
    """Copy streams for the peer copies of one launch (see the module docstring)."""
    peers = max(1, world - 1)
    if block_bytes(op, nbytes, world) < SMALL_BLOCK:
        return min(peers, MAX_SMALL_STREAMS)
    return min(peers, MAX_LARGE_STREAMS)


@dataclass(frozen=True)
class StreamPlan:
    """Which copy (by index in the remote copy list) goes on which stream, and why."""

    per_stream: tuple[tuple[int, ...], ...]
    rule: str


def assign_streams(copy_peers: list[int], streams: int) -> StreamPlan:
    """Spread remote copies (given by their peer, in issue order) over ``streams`` streams.

    With at most one stream per peer, every peer's copies (all its chunks) stay on one stream and
    peers are dealt round-robin in issue order (peer groups). With more streams than peers, copies
    are dealt round-robin one by one, so the chunks of one peer spread over several streams (the
    rule measured on two H200s with ``--dma-chunks 4 --dma-streams 3``)."""
    if streams < 1:
        raise C3profError("DMA collective: streams must be >= 1")
    peers = list(dict.fromkeys(copy_peers))
    out: list[list[int]] = [[] for _ in range(streams)]
    if streams <= max(1, len(peers)):
        slot = {p: k % streams for k, p in enumerate(peers)}
        for i, p in enumerate(copy_peers):
            out[slot[p]].append(i)
        return StreamPlan(tuple(map(tuple, out)), "peer groups")
    for i in range(len(copy_peers)):
        out[i % streams].append(i)
    return StreamPlan(tuple(map(tuple, out)), "round-robin copies")
