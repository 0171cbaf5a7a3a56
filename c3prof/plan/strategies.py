"""Strategies (the paper's names) and the concrete variants each one runs.

``base``    GEMM and communication on two default-priority streams, GEMM launched first; the
            communication is carried by SMs (an SM copy kernel filling the GPU, NCCL-like).
``sp``      schedule prioritization: launch order plus stream priority, two variants:
            ``comm_first`` (communication launched first on the highest-priority stream) and
            ``gemm_first`` (GEMM launched first on the highest-priority stream).
``rp``      resource partitioning: the GEMM and the SM copy kernel on disjoint SM groups (green
            contexts), swept over the GEMM's SM count; plus CTA-limited copy kernels beside an
            unpartitioned GEMM (what NCCL_MAX_CTAS does to a collective).
``dma``     the communication on copy engines (on one GPU: pinned host<->device copies).
``dma+rp``  copy-engine communication beside a partitioned GEMM (the sweep of ``rp``).

A variant fixes everything the runner needs; its ``params`` go into the trace verbatim.
"""

from __future__ import annotations

from c3prof.errors import C3profError
from c3prof.plan.collectives import collective_variants_for
from c3prof.plan.model import (DMA_TRANSPORTS, SM_TRANSPORTS, PlanOptions, RunPlan, Variant, base_first,
                               checked_gemm_sms, unknown_strategy)
from c3prof.scenarios import Scenario


def _partition_variants(strategy: str, transport: str, opts: PlanOptions, with_comm_group: bool) -> list[Variant]:
    return [Variant(strategy, f"gemm{g}sm", transport, gemm_sms=g,
                    comm_sms=opts.sm_count - g if with_comm_group else None) for g in checked_gemm_sms(opts)]


def variants_for(strategy: str, opts: PlanOptions) -> list[Variant]:
    sm, ce, hi = opts.sm_transport, opts.dma_transport, opts.greatest_priority
    if sm not in SM_TRANSPORTS:
        raise C3profError(f"unknown SM transport {sm!r} (known: {', '.join(SM_TRANSPORTS)})")
    if ce not in DMA_TRANSPORTS:
        raise C3profError(f"unknown DMA transport {ce!r} (known: {', '.join(DMA_TRANSPORTS)})")
    if strategy == "base":
        return [Variant("base", "default", sm)]
    if strategy == "sp":
        return [Variant("sp", "comm_first", sm, order="comm_first", comm_priority=hi),
                Variant("sp", "gemm_first", sm, order="gemm_first", gemm_priority=hi)]
    if strategy == "rp":
        out = _partition_variants("rp", sm, opts, with_comm_group=True)
        if sm == "sm_kernel":
            out += [Variant("rp", f"ctas{c}", sm, comm_ctas=c) for c in opts.rp_comm_ctas]
        return out
    if strategy == "dma":
        return [Variant("dma", "default", ce)]
    if strategy == "dma+rp":
        return _partition_variants("dma+rp", ce, opts, with_comm_group=False)
    raise unknown_strategy(strategy)


def plan_runs(scenarios: list[Scenario], strategies: tuple[str, ...], opts: PlanOptions) -> list[RunPlan]:
    """Every (scenario, variant) to capture, scenario-major so a scenario's buffers are reused."""
    for s in scenarios:
        if s.comm.op != "transfer" and not opts.distributed:
            raise C3profError(f"scenario {s.name!r}: {s.comm.op} needs a multi-GPU capture: "
                              f"`torchrun --nproc-per-node N -m c3prof capture ...` or `c3prof capture --gpus N ...` "
                              f"(single-GPU capture runs 'transfer' scenarios)")
    variants = base_first([v for st in strategies for v in variants_for(st, opts)])
    return [RunPlan(s, v) for s in scenarios
            for v in (variants if s.comm.op == "transfer" else collective_variants_for(s.comm.op, strategies, opts))]
