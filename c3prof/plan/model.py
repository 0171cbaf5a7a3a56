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
    rp_gemm_sms: tuple[int, ...] = (104, 120)
    rp_comm_ctas: tuple[int, ...] | None = None   # None: the link's (or collective's) default
    # Multi-GPU captures (c3prof/plan/collectives.py plans their collective scenarios).
    distributed: bool = False
    dma_collectives: tuple[str, ...] = ("nccl_ce", "dma_push", "dma_pull")


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
