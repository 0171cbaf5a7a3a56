"""Strategies -> variants for collective scenarios (multi-GPU captures).

The paper's strategies mapped onto collectives (every rank runs the same variant at the same time):

``base``    the collective as NCCL's SM kernels (``nccl``), GEMM launched first, default priorities
``sp``      launch order plus stream priority (torch >= 2.7 runs a synchronous NCCL collective on
            the caller's current stream, so the comm stream's priority applies to NCCL's kernel)
``rp``      the GEMM on a green context of ``g`` SMs beside NCCL limited to the other SMs'
            worth of CTAs (``max_ctas = sm_count - g``), and NCCL limited to ``c`` CTAs beside an
            unpartitioned GEMM (NCCL's ``max_ctas``: the paper's CU-count sweep on NVIDIA)
``dma``     the collective on copy engines: NCCL's CE collectives (``nccl_ce``) and c3prof's own
            DMA collectives (``dma_push``, ``dma_pull``), one variant each
``dma+rp``  each copy-engine collective beside a partitioned GEMM

all_reduce is an SM baseline only (it needs arithmetic; copy engines only move bytes): ``dma`` and
``dma+rp`` plan nothing for it.
"""

from __future__ import annotations

from c3prof.errors import C3profError
from c3prof.plan.model import PlanOptions, Variant, base_first, checked_gemm_sms, unknown_strategy

# The implementations of a collective, measured side by side and validated byte for byte:
#   nccl      NCCL's SM kernels through torch.distributed (optionally CTA-limited: max_ctas)
#   nccl_ce   NCCL's copy-engine collectives (NCCL >= 2.28: CTA policy zero + buffers registered
#             as symmetric windows through torch's NCCL symmetric memory)
#   dma_push  c3prof's own DMA collectives: shards moved by copy-engine copies between ranks
#   dma_pull  through IPC mappings, ordered across ranks with device-side flags (push: the source
#             rank's stream writes into the peer; pull: the destination rank's stream reads)
IMPLEMENTATIONS = ("nccl", "nccl_ce", "dma_push", "dma_pull")
DMA_IMPLEMENTATIONS = ("nccl_ce", "dma_push", "dma_pull")
# Which engine each implementation is meant to use (what engine evidence must confirm, not assume).
EXPECTED_CARRIER = {"nccl": "sm", "nccl_ce": "copy_engine", "dma_push": "copy_engine", "dma_pull": "copy_engine"}
COLLECTIVE_OPS = ("all_gather", "all_to_all", "all_reduce")

# CTA limits of the NCCL collective beside an unpartitioned GEMM (rp), unless --rp-comm-ctas gives them.
COLLECTIVE_RP_CTAS = (32,)


def parse_dma_collectives(text: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(t for t in text.replace(" ", "").split(",") if t))
    unknown = [t for t in items if t not in DMA_IMPLEMENTATIONS]
    if not items or unknown:
        raise C3profError(f"unknown DMA collective {unknown[0] if unknown else text!r} "
                          f"(known: {', '.join(DMA_IMPLEMENTATIONS)})")
    return items


def collective_variants(op: str, strategy: str, opts: PlanOptions) -> list[Variant]:
    hi = opts.greatest_priority
    dma = tuple(getattr(opts, "dma_collectives", DMA_IMPLEMENTATIONS))
    if strategy == "base":
        return [Variant("base", "default", "nccl")]
    if strategy == "sp":
        return [Variant("sp", "comm_first", "nccl", order="comm_first", comm_priority=hi),
                Variant("sp", "gemm_first", "nccl", order="gemm_first", gemm_priority=hi)]
    if strategy == "rp":
        out = [Variant("rp", f"gemm{g}sm", "nccl", gemm_sms=g, comm_ctas=opts.sm_count - g)
               for g in checked_gemm_sms(opts)]
        ctas = opts.rp_comm_ctas if opts.rp_comm_ctas is not None else COLLECTIVE_RP_CTAS
        return out + [Variant("rp", f"ctas{c}", "nccl", comm_ctas=c) for c in ctas]
    if strategy in ("dma", "dma+rp"):
        if op == "all_reduce":
            return []   # SM baseline only
        if strategy == "dma":
            return [Variant("dma", impl, impl) for impl in dma]
        return [Variant("dma+rp", f"{impl}-gemm{g}sm", impl, gemm_sms=g)
                for impl in dma for g in checked_gemm_sms(opts)]
    raise unknown_strategy(strategy)


def collective_variants_for(op: str, strategies: tuple[str, ...], opts: PlanOptions) -> list[Variant]:
    return base_first([v for st in strategies for v in collective_variants(op, st, opts)])
