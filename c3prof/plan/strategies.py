"""Strategies (the paper's names) and the concrete variants each one runs.

``base``    GEMM and communication on two default-priority streams, GEMM launched first; the
            communication is carried by SMs (an NCCL-like SM copy kernel over the scenario's link:
            zero-copy reads/writes of pinned host memory for PCIe, a device copy for HBM).
``sp``      schedule prioritization: launch order plus stream priority, two variants:
            ``comm_first`` (communication launched first on the highest-priority stream) and
            ``gemm_first`` (GEMM launched first on the highest-priority stream).
``rp``      resource partitioning: the GEMM and the SM copy kernel on disjoint SM groups (green
            contexts), swept over the GEMM's SM count; plus CTA-limited copy kernels beside an
            unpartitioned GEMM (what NCCL_MAX_CTAS does to a collective).
``dma``     the same bytes over the same link on copy engines (cudaMemcpyAsync).
``dma+rp``  copy-engine communication beside a partitioned GEMM (the sweep of ``rp``).

Strategies choose the carrier only: every variant of a transfer scenario moves the scenario's bytes
over the scenario's link (c3prof.scenarios.LINKS), so every strategy is compared with base on the
same work. A variant fixes everything the runner needs; its ``params`` go into the trace verbatim.
"""

from __future__ import annotations

from c3prof.errors import C3profError
from c3prof.plan.collectives import collective_variants_for
from c3prof.plan.model import (TRANSPORTS, PlanOptions, RunPlan, Variant, base_first, checked_gemm_sms,
                               unknown_strategy)
from c3prof.scenarios import Scenario

# The carrier each strategy asks for; TRANSPORTS (plan/model.py) names the transport per link.
CARRIER = {"base": "sm", "sp": "sm", "rp": "sm", "dma": "copy_engine", "dma+rp": "copy_engine"}
SINGLE_GPU_OPS = ("transfer", "sleep")
# A sleep control (op = "sleep") runs once, as base: a 1-CTA spin kernel on a default-priority stream.
# Other strategies do not apply (no bytes to carry, nothing to partition), so none is planned.
SLEEP_CONTROL = Variant("base", "default", "sm_sleep", carrier="sm")
# CTA counts of the CTA-limited SM copy beside an unpartitioned GEMM (rp), per link, unless given.
RP_COMM_CTAS = {"pcie_h2d": (8,), "pcie_d2h": (8,), "pcie_bidir": (8,), "hbm": (32,)}


def _partition_variants(strategy: str, transport: str, opts: PlanOptions, with_comm_group: bool,
                        **common) -> list[Variant]:
    return [Variant(strategy, f"gemm{g}sm", transport, gemm_sms=g,
                    comm_sms=opts.sm_count - g if with_comm_group else None, **common)
            for g in checked_gemm_sms(opts)]


def variants_for(strategy: str, opts: PlanOptions, link: str = "pcie_h2d") -> list[Variant]:
    """The variants of ``strategy`` for a transfer over ``link``: same bytes, same link, its carrier."""
    if strategy not in CARRIER:
        raise unknown_strategy(strategy)
    carrier = CARRIER[strategy]
    if (link, carrier) not in TRANSPORTS:
        raise C3profError(f"unknown link {link!r} (known: {', '.join(sorted({k for k, _ in TRANSPORTS}))})")
    transport, hi = TRANSPORTS[(link, carrier)], opts.greatest_priority
    common = {"link": link, "carrier": carrier}
    if strategy == "base":
        return [Variant("base", "default", transport, **common)]
    if strategy == "sp":
        return [Variant("sp", "comm_first", transport, order="comm_first", comm_priority=hi, **common),
                Variant("sp", "gemm_first", transport, order="gemm_first", gemm_priority=hi, **common)]
    if strategy == "rp":
        out = _partition_variants("rp", transport, opts, True, **common)
        ctas = opts.rp_comm_ctas if opts.rp_comm_ctas is not None else RP_COMM_CTAS[link]
        return out + [Variant("rp", f"ctas{c}", transport, comm_ctas=c, **common) for c in ctas]
    if strategy == "dma":
        return [Variant("dma", "default", transport, **common)]
    return _partition_variants("dma+rp", transport, opts, False, **common)


def plan_runs(scenarios: list[Scenario], strategies: tuple[str, ...], opts: PlanOptions) -> list[RunPlan]:
    """Every (scenario, variant) to capture, scenario-major so a scenario's buffers are reused and its
    runs are measured interleaved; base first (every other strategy's reference in the report)."""
    for s in scenarios:
        if s.comm.op not in SINGLE_GPU_OPS and not opts.distributed:
            raise C3profError(f"scenario {s.name!r}: {s.comm.op} needs a multi-GPU capture: "
                              f"`torchrun --nproc-per-node N -m c3prof capture ...` or `c3prof capture --gpus N ...` "
                              f"(single-GPU capture runs 'transfer' scenarios)")
    plans = []
    for s in scenarios:
        if s.comm.op == "sleep":
            variants = [SLEEP_CONTROL] if "base" in strategies else []
        elif s.comm.op == "transfer":
            variants = base_first([v for st in strategies for v in variants_for(st, opts, s.comm.link or "pcie_h2d")])
        else:
            variants = collective_variants_for(s.comm.op, strategies, opts)
        plans.extend(RunPlan(s, v) for v in variants)
    return plans
