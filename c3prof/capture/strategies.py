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

from dataclasses import asdict, dataclass

from c3prof.errors import C3profError
from c3prof.scenarios import Scenario

STRATEGIES = ("base", "sp", "rp", "dma", "dma+rp")
DEFAULT_STRATEGIES = ("base", "sp", "rp", "dma")
# Transports carry a transfer scenario on one GPU. Which engine really carried each is measured
# at capture time (engine_evidence records), not assumed from this table.
SM_TRANSPORTS = ("sm_kernel", "memcpy_d2d")
DMA_TRANSPORTS = ("ce_h2d", "ce_d2h")


@dataclass(frozen=True)
class Variant:
    strategy: str
    name: str
    transport: str
    order: str = "gemm_first"          # which side is launched first in the concurrent phase
    gemm_priority: int = 0             # CUDA stream priority (lower is higher)
    comm_priority: int = 0
    gemm_sms: int | None = None        # SMs of the GEMM's green context (None: the whole GPU)
    comm_sms: int | None = None        # SMs of the communication's green context (None: whole GPU)
    comm_ctas: int | None = None       # CTAs of the SM copy kernel (None: 2 per SM of its group)

    def params(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PlanOptions:
    sm_count: int
    greatest_priority: int = -5        # from cudaDeviceGetStreamPriorityRange
    rp_gemm_sms: tuple[int, ...] = (96, 112, 120)
    rp_comm_ctas: tuple[int, ...] = (32,)
    sm_transport: str = "sm_kernel"
    dma_transport: str = "ce_h2d"
    # Multi-GPU captures (c3prof/collectives/variants.py plans their collective scenarios).
    distributed: bool = False
    dma_collectives: tuple[str, ...] = ("nccl_ce", "dma_push", "dma_pull")


@dataclass(frozen=True)
class RunPlan:
    scenario: Scenario
    variant: Variant

    @property
    def id(self) -> str:
        return f"{self.scenario.name}/{self.variant.strategy}/{self.variant.name}"


def parse_strategies(text: str | list[str]) -> tuple[str, ...]:
    items = text if isinstance(text, list) else [t for t in text.replace(" ", "").split(",") if t]
    if not items:
        raise C3profError("no strategies given")
    unknown = [s for s in items if s not in STRATEGIES]
    if unknown:
        raise C3profError(f"unknown strategy {unknown[0]!r} (known: {', '.join(STRATEGIES)})")
    return tuple(dict.fromkeys(items))


def _partition_variants(strategy: str, transport: str, opts: PlanOptions, with_comm_group: bool) -> list[Variant]:
    out = []
    for g in opts.rp_gemm_sms:
        if not 0 < g < opts.sm_count:
            raise C3profError(f"--rp-gemm-sms {g} must be between 1 and {opts.sm_count - 1} on this GPU")
        comm = opts.sm_count - g if with_comm_group else None
        out.append(Variant(strategy, f"gemm{g}sm", transport, gemm_sms=g, comm_sms=comm))
    return out


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
    raise C3profError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")


def plan_runs(scenarios: list[Scenario], strategies: tuple[str, ...], opts: PlanOptions) -> list[RunPlan]:
    """Every (scenario, variant) to capture, scenario-major so a scenario's buffers are reused."""
    for s in scenarios:
        if s.comm.op != "transfer" and not opts.distributed:
            raise C3profError(f"scenario {s.name!r}: {s.comm.op} needs a multi-GPU capture: "
                              f"`torchrun --nproc-per-node N -m c3prof capture ...` or `c3prof capture --gpus N ...` "
                              f"(single-GPU capture runs 'transfer' scenarios)")
    variants = [v for st in strategies for v in variants_for(st, opts)]
    # base first: it is every other strategy's reference in the report.
    variants.sort(key=lambda v: v.strategy != "base")
    if all(s.comm.op == "transfer" for s in scenarios):
        return [RunPlan(s, v) for s in scenarios for v in variants]
    from c3prof.collectives.variants import collective_variants_for

    return [RunPlan(s, v) for s in scenarios
            for v in (variants if s.comm.op == "transfer" else collective_variants_for(s.comm.op, strategies, opts))]
