"""What a run plan is made of: strategies, the variant a run measures, the planning options.

Vendor-neutral and GPU-free: the capture sweep and every backend read these, none of them builds
its own. ``Variant.params()`` goes into the trace verbatim.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from c3prof.errors import C3profError
from c3prof.scenarios import Scenario
from c3prof.trace import run_id

STRATEGIES = ("base", "sp", "rp", "dma", "dma+rp")
DEFAULT_STRATEGIES = ("base", "sp", "rp", "dma")
# The transport of a single-GPU transfer per (link, carrier): what the planner names and each
# backend implements (backends/cuda/transports.py). Which engine really carried a transport is
# measured at capture time (engine_evidence records), not assumed from this table.
TRANSPORTS = {
    ("pcie_h2d", "sm"): "sm_zc_h2d", ("pcie_h2d", "copy_engine"): "ce_h2d",
    ("pcie_d2h", "sm"): "sm_zc_d2h", ("pcie_d2h", "copy_engine"): "ce_d2h",
    ("pcie_bidir", "sm"): "sm_zc_bidir", ("pcie_bidir", "copy_engine"): "ce_bidir",
    ("hbm", "sm"): "sm_kernel", ("hbm", "copy_engine"): "ce_d2d",
}
DEFAULT_RP_GEMM_SMS = (104, 120)        # GEMM SM counts swept by rp and dma+rp (of 132 on an H200)

# The implementations of a collective, measured side by side and validated byte for byte:
#   nccl      NCCL's SM kernels through torch.distributed (optionally CTA-limited: max_ctas)
#   nccl_ce   NCCL's copy-engine collectives (NCCL >= 2.28: CTA policy zero + buffers registered
#             as symmetric windows through torch's NCCL symmetric memory)
#   dma_push  c3prof's own DMA collectives: shards moved by copy-engine copies between ranks
#   dma_pull  through IPC mappings, ordered across ranks with device-side flags (push: the source
#             rank's stream writes into the peer; pull: the destination rank's stream reads)
NCCL_IMPLEMENTATIONS = ("nccl", "nccl_ce")
OWN_DMA_IMPLEMENTATIONS = ("dma_push", "dma_pull")
IMPLEMENTATIONS = NCCL_IMPLEMENTATIONS + OWN_DMA_IMPLEMENTATIONS
DMA_IMPLEMENTATIONS = ("nccl_ce", *OWN_DMA_IMPLEMENTATIONS)
# Which engine each implementation is meant to use (what engine evidence must confirm, not assume).
EXPECTED_CARRIER = {"nccl": "sm", "nccl_ce": "copy_engine", "dma_push": "copy_engine", "dma_pull": "copy_engine"}


@dataclass(frozen=True)
class Variant:
    strategy: str
    name: str
    transport: str
    order: str = "gemm_first"          # which side is launched first in the concurrent phase
    gemm_priority: int = 0             # stream priority (lower is higher)
    comm_priority: int = 0
    gemm_sms: int | None = None        # SMs of the GEMM's partition (None: the whole GPU)
    comm_sms: int | None = None        # SMs of the communication's partition (None: whole GPU)
    comm_ctas: int | None = None       # CTAs of the SM copy kernel (None: the link's default)
    link: str | None = None            # the link the bytes cross (transfer scenarios)
    carrier: str | None = None         # "sm" or "copy_engine": what the strategy asks for

    def params(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PlanOptions:
    sm_count: int
    greatest_priority: int = -5        # the device's highest stream priority (CUDA: -5)
    rp_gemm_sms: tuple[int, ...] = DEFAULT_RP_GEMM_SMS
    rp_comm_ctas: tuple[int, ...] | None = None   # None: the link's (or collective's) default
    # Multi-GPU captures (c3prof/plan/collectives.py plans their collective scenarios).
    distributed: bool = False
    dma_collectives: tuple[str, ...] = DMA_IMPLEMENTATIONS


@dataclass(frozen=True)
class RunPlan:
    scenario: Scenario
    variant: Variant

    @property
    def id(self) -> str:
        return run_id(self.scenario.name, self.variant.strategy, self.variant.name)


def parse_strategies(text: str | list[str]) -> tuple[str, ...]:
    items = text if isinstance(text, list) else [t for t in text.replace(" ", "").split(",") if t]
    if not items:
        raise C3profError("no strategies given")
    unknown = [s for s in items if s not in STRATEGIES]
    if unknown:
        raise C3profError(f"unknown strategy {unknown[0]!r} (known: {', '.join(STRATEGIES)})")
    return tuple(dict.fromkeys(items))


def unknown_strategy(strategy: str) -> C3profError:
    return C3profError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")


def checked_gemm_sms(opts: PlanOptions) -> tuple[int, ...]:
    """The ``--rp-gemm-sms`` sweep, each value leaving at least one SM to the other side."""
    for g in opts.rp_gemm_sms:
        if not 0 < g < opts.sm_count:
            raise C3profError(f"--rp-gemm-sms {g} must be between 1 and {opts.sm_count - 1} on this GPU")
    return opts.rp_gemm_sms


def base_first(variants: list[Variant]) -> list[Variant]:
    """base first (stable otherwise): it is every other strategy's reference in the report."""
    return sorted(variants, key=lambda v: v.strategy != "base")
