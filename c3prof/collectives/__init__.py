"""Multi-GPU collectives for c3prof (issue 5): the communication side of C3 on N GPUs.

Three implementations of the same collectives, measured side by side and validated byte for byte:

``nccl``      NCCL's SM kernels through torch.distributed (optionally CTA-limited: ``max_ctas``)
``nccl_ce``   NCCL's copy-engine collectives (NCCL >= 2.28: CTA policy zero + buffers registered as
              symmetric windows through torch's NCCL symmetric memory)
``dma_push``  c3prof's own DMA collectives: shards moved by copy-engine copies between ranks through
``dma_pull``  CUDA IPC mappings, ordered across ranks with device-side flags (push: the source rank's
              stream writes into the peer; pull: the destination rank's stream reads from the peer)

Pure modules (no torch, no CUDA): :mod:`busbw` (nccl-tests' bandwidth math and table),
:mod:`layout` (buffer layouts, copy plans, deterministic patterns; torch only when filling
tensors), :mod:`variants` (strategy -> variants for collective scenarios).
GPU modules: :mod:`dma`, :mod:`nccl`.
"""

IMPLEMENTATIONS = ("nccl", "nccl_ce", "dma_push", "dma_pull")
DMA_IMPLEMENTATIONS = ("nccl_ce", "dma_push", "dma_pull")
# Which engine each implementation is meant to use (what engine evidence must confirm, not assume).
EXPECTED_CARRIER = {"nccl": "sm", "nccl_ce": "copy_engine", "dma_push": "copy_engine", "dma_pull": "copy_engine"}
COLLECTIVE_OPS = ("all_gather", "all_to_all", "all_reduce")
