"""The CUDA bench of a multi-GPU capture: CudaBench plus collectives, with cross-rank agreement.

Each rank runs this bench on its own GPU. Everything that would let ranks drift apart is agreed
over the control group: setups (a failure anywhere fails the run everywhere), the gate before each
batch (everyone sleeps as long as the slowest enqueuer needs, after a barrier), and host waits
poll with a deadline and the abort key instead of blocking on a GPU stuck waiting for a dead peer.
Transfer scenarios in a multi-GPU capture still run their single-GPU transports on every rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from c3prof.backends.cuda import runtime as rt
from c3prof.backends.cuda.bench import EVIDENCE_BYTES, CudaBench, ScenarioSetup, VariantSetup
from c3prof.backends.cuda.engine_evidence import METHOD, METRICS, classify
from c3prof.backends.capacity import check_fits
from c3prof.backends.torch_gemm import TorchGemm, input_sets, set_bytes
from c3prof.backends.cuda.partition import GreenPartition
from c3prof.backends.cuda.streams import DeviceEventPool, Gate, make_stream
from c3prof.errors import C3profError
from c3prof.plan.layout import Layout
from c3prof.plan.model import EXPECTED_CARRIER, IMPLEMENTATIONS, NCCL_IMPLEMENTATIONS, OWN_DMA_IMPLEMENTATIONS, Variant
from c3prof.scenarios import Scenario
from c3prof.trace import engine_evidence_record


class PollingEventPool(DeviceEventPool):
    """DeviceEventPool whose synchronize polls (cudaEventQuery) through the cross-rank agreement:
    with a deadline and the abort key, so a rank whose GPU waits forever for a dead peer fails
    with a message instead of hanging."""

    def __init__(self, size: int, deadline_s: float, ctrl):
        super().__init__(size)
        self.deadline_s = deadline_s
        self.ctrl = ctrl

    def synchronize(self, i: int) -> None:
        self.ctrl.wait_until(lambda: rt.event_pool_query(self._pool, i), self.deadline_s, "GPU work")


@dataclass
class CollectiveScenarioSetup(ScenarioSetup):
    collectives: dict = field(default_factory=dict)

    def close(self):
        for c in self.collectives.values():
            c.close()
        self.collectives = {}
        super().close()


class DistributedCudaBench(CudaBench):
    """CudaBench as one rank of a multi-GPU capture. ``ctrl`` is capture's cross-rank agreement
    (c3prof.backends.base.Agreement)."""

    def __init__(self, make_timer, device: int, seed: int, ctrl, nccl: bool, timeout,
                 dma_api: str = "memcpy", dma_chunks: int = 1, dma_streams: int = 1, inplace: bool = True,
                 deadline_s: float = 300.0, dma_local: str = "stream", shares_gpu: bool = False):
        super().__init__(make_timer, device=device, seed=seed)
        self.ctrl, self.rank, self.world = ctrl, ctrl.rank, ctrl.world
        self.dma = {"api": dma_api, "chunks": dma_chunks, "streams": dma_streams, "local": dma_local}
        self.shares_gpu = shares_gpu
        self._gpm_agreed: tuple[bool, str | None] | None = None
        self.inplace = inplace
        self.deadline_s = deadline_s
        self.gate = Gate(self.torch, agree=ctrl.agree_max)   # every rank sleeps as long as the slowest needs
        self.nccl_groups = None
        if nccl:
            from c3prof.backends.cuda.nccl import NcclGroups

            self.nccl_groups = NcclGroups(self.torch, device, timeout)
        self.distributed_info: dict = {}

    # -- agreement --------------------------------------------------------------------------------

    def _agreed(self, what: str, fn):
        """``fn`` on every rank, failing everywhere unless it succeeded everywhere (see
        c3prof.backends.base.Agreement.agreed)."""
        return self.ctrl.agreed(what, fn, self._locally_recoverable)

    def _locally_recoverable(self, exc) -> bool:
        return isinstance(exc, (C3profError, self.torch.cuda.OutOfMemoryError))

    # -- records ----------------------------------------------------------------------------------

    def machine_record(self) -> dict:
        rec = super().machine_record()
        rec["distributed"] = dict(self.distributed_info)
        try:
            rec["distributed"]["pci_bus_id"] = rt.pci_bus_id(self.device)
        except rt.CudaError:
            pass
        return rec

    def _in_turns(self, measure):
        """``measure()`` on this rank; ranks sharing a GPU take turns (one rank's GPM probe would
        otherwise see the other's). Only for steps every rank runs (the agreed evidence probes): the
        ceilings are not, on a resume, so ranks sharing a GPU measure them at the same time."""
        if not self.shares_gpu:
            return measure()
        result = None
        for turn in range(self.world):
            if turn == self.rank:
                result = measure()
            self.ctrl.barrier()
        return result

    def engine_evidence_record(self, transport_name: str) -> dict:
        """This rank's evidence (the capture adds the carrier every rank agreed on:
        c3prof.capture.agreement.with_agreed_carrier)."""
        if transport_name not in IMPLEMENTATIONS:
            return self._in_turns(lambda: super(DistributedCudaBench, self).engine_evidence_record(transport_name))
        op = "all_gather" if self.world > 1 else "all_to_all"   # an in-place all-gather of one rank moves nothing
        stream = self.stream
        coll = self._make_collective(Variant("evidence", "evidence", transport_name), Layout(
            op, EVIDENCE_BYTES - EVIDENCE_BYTES % (8 * self.world), self.world, self.rank, self.inplace))
        try:
            return collective_evidence(self.torch, self.nvml, coll, stream, self.ctrl)
        finally:
            coll.close()
            self.torch.cuda.empty_cache()

    # -- capacity ---------------------------------------------------------------------------------

    def check_fits(self, scenario: Scenario, transports) -> None:
        if scenario.comm.op == "transfer":
            return super().check_fits(scenario, transports)
        Layout(scenario.comm.op, scenario.comm.bytes, self.world, self.rank, self.inplace)  # size rules

        n_sets = input_sets(scenario.gemm, self.props["l2_bytes"])
        # Every implementation keeps its own destination (+ source) for the scenario's duration.
        per_impl = 2 * scenario.comm.bytes
        impls = {t for t in transports if t in IMPLEMENTATIONS}
        free_b, _ = rt.mem_get_info()
        check_fits(f"scenario {scenario.name!r}", n_sets * set_bytes(scenario.gemm) + len(impls) * per_impl,
                       0, free_b)

    # -- setups -----------------------------------------------------------------------------------

    def open_scenario(self, scenario: Scenario) -> ScenarioSetup:
        if scenario.comm.op == "transfer":
            return self._agreed(f"scenario {scenario.name!r}", lambda: super(DistributedCudaBench, self)
                                .open_scenario(scenario))

        def local():
            gemm = TorchGemm(self.torch, scenario.gemm, input_sets(scenario.gemm, self.props["l2_bytes"]),
                             seed=self.seed + 1000 * self.rank)
            self.torch.cuda.synchronize()
            return CollectiveScenarioSetup(scenario, gemm, None)

        return self._agreed(f"scenario {scenario.name!r}", local)

    def _make_collective(self, v: Variant, layout: Layout):
        t = v.transport
        if t in OWN_DMA_IMPLEMENTATIONS:
            from c3prof.backends.cuda.dma_collective import DmaCollective

            coll = self._agreed(f"{t} buffers", lambda: DmaCollective(
                self.torch, self.ctrl, layout, self.device, t.split("_")[1], api=self.dma["api"],
                chunks=self.dma["chunks"], streams=self.dma["streams"], seed=self.seed, local=self.dma["local"]))
        elif t in NCCL_IMPLEMENTATIONS:
            if self.nccl_groups is None:
                raise C3profError("NCCL is not available in this capture (--share-gpu)")
            from c3prof.backends.cuda.nccl import NcclCollective

            ce = t == "nccl_ce"
            max_ctas = v.comm_ctas if not ce else None
            group = self.nccl_groups.get(max_ctas=max_ctas, ce=ce)    # collective, same order on every rank
            note = self.nccl_groups.notes.get((max_ctas, ce), "")
            coll = self._agreed(f"{t} buffers", lambda: NcclCollective(
                self.torch, group, layout, self.device, ce=ce, seed=self.seed, max_ctas=max_ctas, group_note=note))
        else:
            raise C3profError(f"unknown collective transport {t!r}")
        self._agreed(f"{t} setup", coll.exchange)
        return coll

    def open_variant(self, setup: ScenarioSetup, v: Variant) -> VariantSetup:
        if setup.scenario.comm.op == "transfer":
            return self._agreed(f"variant {v.strategy}/{v.name}", lambda: super(DistributedCudaBench, self)
                                .open_variant(setup, v))
        torch = self.torch
        scenario = setup.scenario
        layout = Layout(scenario.comm.op, scenario.comm.bytes, self.world, self.rank, self.inplace)
        key = (v.transport, v.comm_ctas if v.transport == "nccl" else None)
        if key not in setup.collectives:
            setup.collectives[key] = self._make_collective(v, layout)
        coll = setup.collectives[key]
        closers = []

        def streams():
            params = v.params()
            if v.gemm_sms is not None:
                part = GreenPartition(torch, v.gemm_sms, self.device, v.gemm_priority, v.comm_priority,
                                      want_comm_group=False)
                closers.append(part.close)
                params.update(gemm_sms=part.gemm_sms, comm_sms=None)
                return part.gemm_stream, make_stream(torch, v.comm_priority, "comm"), params
            return make_stream(torch, v.gemm_priority, "gemm"), make_stream(torch, v.comm_priority, "comm"), params

        gemm_stream, comm_stream, params = self._agreed(f"variant {v.strategy}/{v.name}", streams)
        params.update(coll.params())
        params["expected_carrier"] = coll.expected_carrier
        if v.transport in OWN_DMA_IMPLEMENTATIONS:
            params["latency_breakdown"] = self._breakdown(coll)
        timer = self.make_timer(setup.gemm, coll, gemm_stream, comm_stream, v.order,
                                make_pool=lambda n: PollingEventPool(n, self.deadline_s, self.ctrl), gate=self.gate)
        closers.insert(0, lambda: (gemm_stream.dma.synchronize(), comm_stream.dma.synchronize()))
        return VariantSetup(timer=timer, transport=coll, params=params, _closers=closers)

    # -- GPM counters on every rank ---------------------------------------------------------------

    def gpm_phase_record(self, setup: VariantSetup, phase: str, median_ms: float, run: str,
                         window_s: float = 0.2) -> tuple[dict | None, str | None]:
        """CudaBench's GPM window on every rank at once, with loops of an agreed length (a rank that
        launched one collective more than its peers would wait for them forever)."""
        ok, reason = self._gpm_available()
        if not ok:
            return None, reason
        rec, reason = super().gpm_phase_record(setup, phase, median_ms, run, window_s)
        reasons = self.ctrl.all_gather(reason)
        bad = next((f"rank {r}: {x}" for r, x in enumerate(reasons) if x), None)
        return (None, bad) if bad else (rec, None)

    def _gpm_available(self) -> tuple[bool, str | None]:
        """Whether NVML GPM works on every rank (agreed once)."""
        if self._gpm_agreed is None:
            mine = self.nvml.gpm_support()
            reasons = self.ctrl.all_gather(mine)
            bad = next((f"rank {r}: {x}" for r, x in enumerate(reasons) if x), None)
            self._gpm_agreed = (bad is None, bad)
        return self._gpm_agreed

    def _gpm_loop_length(self, median_ms: float, window_s: float) -> tuple[int, int | None]:
        """Repetitions per batch and batches per loop, the same on every rank: sized by the slowest
        rank's median to cover the ramp-up and the window with a margin."""
        slowest = max(self.ctrl.all_gather(median_ms))
        reps = max(4, min(2000, math.ceil(20.0 / max(slowest, 1e-3))))
        batches = math.ceil(1.5 * (window_s + 0.1) * 1e3 / (reps * max(slowest, 1e-3)))
        return reps, max(2, batches)

    def _gpm_sync(self) -> None:
        self.ctrl.barrier()

    def _breakdown(self, coll) -> dict:
        """The collective's latency breakdown (measured once per collective, in lone launches on
        every rank at the same point: opening a variant is collective)."""
        if coll.breakdown is None:
            from c3prof.backends.cuda.dma_breakdown import measure_breakdown

            coll.breakdown = measure_breakdown(coll, self.stream, deadline_s=self.deadline_s)
        return coll.breakdown

    def recoverable(self, exc: BaseException) -> bool:
        # Only agreed failures (raised identically on every rank) may be skipped; anything else
        # leaves the ranks out of step and must stop the capture.
        return isinstance(exc, C3profError)


def collective_evidence(torch, nvml, coll, stream, ctrl, window_s: float = 0.3) -> dict:
    """engine_evidence for a collective: every rank runs it alone, back to back, for the same number
    of launches (agreed), while NVML GPM samples this rank's SM utilization."""
    from c3prof.backends.cuda.ceilings import time_ms

    one_ms = sorted(time_ms(stream, lambda i: coll.launch(stream, i), reps=3, warmup=1))[1]
    one_ms = max(ctrl.all_gather(one_ms))
    reps = min(20000, max(1, math.ceil((window_s + 0.25) * 1e3 / max(one_ms, 1e-3))))
    ctrl.barrier()

    def busy():
        for i in range(reps):
            coll.launch(stream, i)
        return stream.dma.synchronize

    result = nvml.gpm_window(METRICS, window_s, busy)
    ctrl.barrier()
    return engine_evidence_record(coll.name, coll.nbytes,
                                  coll.expected_carrier or EXPECTED_CARRIER.get(coll.name, "unknown"), METHOD, one_ms,
                                  op=coll.layout.op, rank=coll.layout.rank, world_size=coll.layout.world,
                                  params=coll.params(), **classify(result))
