"""The CUDA bench of a multi-GPU capture: CudaBench plus collectives, with cross-rank agreement.

Each rank runs this bench on its own GPU. Everything that would let ranks drift apart is agreed
over the control group: setups (a failure anywhere fails the run everywhere), the gate before each
batch (everyone sleeps as long as the slowest enqueuer needs, after a barrier), and host waits
poll with a deadline and the abort key instead of blocking on a GPU stuck waiting for a dead peer.
Transfer scenarios in a multi-GPU capture still run their single-GPU transports on every rank.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from c3prof import _dma
from c3prof.backends.cuda.bench import CudaBench, ScenarioSetup, VariantSetup
from c3prof.backends.cuda.engine_evidence import METRICS, classify
from c3prof.backends.cuda.gemm import TorchGemm, input_sets, set_bytes
from c3prof.backends.cuda.partition import GreenPartition
from c3prof.backends.cuda.streams import DeviceEventPool, Gate, make_stream
from c3prof.capture.phases import PhaseTimer
from c3prof.capture.strategies import Variant
from c3prof.collectives import EXPECTED_CARRIER
from c3prof.collectives.layout import Layout
from c3prof.errors import C3profError
from c3prof.scenarios import Scenario

EVIDENCE_BYTES = 256 * 2**20
COLLECTIVE_TRANSPORTS = ("nccl", "nccl_ce", "dma_push", "dma_pull")


class PollingEventPool(DeviceEventPool):
    """DeviceEventPool whose synchronize polls (cudaEventQuery) with a deadline and the abort key,
    so a rank whose GPU waits forever for a dead peer fails with a message instead of hanging."""

    def __init__(self, size: int, deadline_s: float, check_abort):
        super().__init__(size)
        self.deadline_s = deadline_s
        self.check_abort = check_abort

    def synchronize(self, i: int) -> None:
        t0 = time.monotonic()
        pause = 0.0
        while not _dma.event_pool_query(self._pool, i):
            waited = time.monotonic() - t0
            if waited > self.deadline_s:
                from c3prof.capture.distributed import PeerFailed

                raise PeerFailed(f"GPU work did not finish within {self.deadline_s:.0f} s: a peer rank is stuck "
                                 f"or gone (raise --collective-timeout for very long phases)")
            self.check_abort()
            time.sleep(pause)
            pause = min(1e-3, pause + 2e-5)


class AgreedGate(Gate):
    """Barrier, then a GPU sleep as long as the longest any rank needs to enqueue its batch."""

    def __init__(self, torch, ctrl):
        super().__init__(torch)
        self.ctrl = ctrl

    def __call__(self, stream, reps: int) -> None:
        want = min(50.0, max(0.2, 2.0 * self.ms_per_rep * reps))
        ms = max(self.ctrl.all_gather(want))
        from c3prof.backends.cuda.streams import _CYCLES_PER_MS

        with self.torch.cuda.stream(stream.torch):
            self.torch.cuda._sleep(int(ms * _CYCLES_PER_MS))


@dataclass
class CollectiveScenarioSetup(ScenarioSetup):
    collectives: dict = field(default_factory=dict)

    def close(self):
        for c in self.collectives.values():
            c.close()
        self.collectives = {}
        super().close()


class DistributedCudaBench(CudaBench):
    def __init__(self, device: int, seed: int, ctrl, rank: int, world: int, nccl: bool, timeout,
                 dma_api: str = "memcpy", dma_chunks: int = 1, dma_streams: int = 1, inplace: bool = True,
                 deadline_s: float = 300.0):
        super().__init__(device=device, seed=seed)
        self.ctrl, self.rank, self.world = ctrl, rank, world
        self.dma = {"api": dma_api, "chunks": dma_chunks, "streams": dma_streams}
        self.inplace = inplace
        self.deadline_s = deadline_s
        self.gate = AgreedGate(self.torch, ctrl)
        self.nccl_groups = None
        if nccl:
            from c3prof.collectives.nccl import NcclGroups

            self.nccl_groups = NcclGroups(self.torch, device, timeout)
        self.distributed_info: dict = {}

    # -- agreement --------------------------------------------------------------------------------

    def _agreed(self, what: str, fn):
        """Run a local step on every rank; unless it succeeded everywhere, raise the same
        C3profError everywhere (the runner records the run as failed and moves on)."""
        result, err = None, None
        try:
            result = fn()
        except Exception as exc:
            if not self._locally_recoverable(exc):
                self.ctrl.abort(f"rank {self.rank}: {type(exc).__name__}: {exc}")
                raise
            err = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        errors = self.ctrl.all_gather(err)
        if any(errors):
            closer = getattr(result, "close", None)
            if closer is not None:
                try:
                    closer()
                except Exception:
                    pass
            r = next(i for i, e in enumerate(errors) if e)
            raise C3profError(f"{what} failed on rank {r}: {errors[r]}")
        return result

    def _locally_recoverable(self, exc) -> bool:
        return isinstance(exc, (C3profError, self.torch.cuda.OutOfMemoryError))

    # -- records ----------------------------------------------------------------------------------

    def machine_record(self) -> dict:
        rec = super().machine_record()
        rec["distributed"] = dict(self.distributed_info)
        try:
            rec["distributed"]["pci_bus_id"] = _dma.pci_bus_id(self.device)
        except _dma.CudaError:
            pass
        return rec

    def engine_evidence_record(self, transport_name: str) -> dict:
        if transport_name not in COLLECTIVE_TRANSPORTS:
            return super().engine_evidence_record(transport_name)
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
        from c3prof.backends.cuda import device as dev

        n_sets = input_sets(scenario.gemm, self.props["l2_bytes"])
        # Every implementation keeps its own destination (+ source) for the scenario's duration.
        per_impl = 2 * scenario.comm.bytes
        impls = {t for t in transports if t in COLLECTIVE_TRANSPORTS}
        free_b, _ = _dma.mem_get_info()
        dev.check_fits(f"scenario {scenario.name!r}", n_sets * set_bytes(scenario.gemm) + len(impls) * per_impl,
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
        if t in ("dma_push", "dma_pull"):
            from c3prof.collectives.dma import DmaCollective

            coll = self._agreed(f"{t} buffers", lambda: DmaCollective(
                self.torch, self.ctrl, layout, self.device, t.split("_")[1], api=self.dma["api"],
                chunks=self.dma["chunks"], streams=self.dma["streams"], seed=self.seed))
        elif t in ("nccl", "nccl_ce"):
            if self.nccl_groups is None:
                raise C3profError("NCCL is not available in this capture (--share-gpu)")
            from c3prof.collectives.nccl import NcclCollective

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
        timer = PhaseTimer(setup.gemm, coll, gemm_stream, comm_stream, v.order,
                           make_pool=lambda n: PollingEventPool(n, self.deadline_s, self.ctrl.check_abort),
                           gate=self.gate)
        closers.insert(0, lambda: (gemm_stream.dma.synchronize(), comm_stream.dma.synchronize()))
        return VariantSetup(timer=timer, transport=coll, params=params, _closers=closers)

    def recoverable(self, exc: BaseException) -> bool:
        # Only agreed failures (raised identically on every rank) may be skipped; anything else
        # leaves the ranks out of step and must stop the capture.
        return isinstance(exc, C3profError)


def collective_evidence(torch, nvml, coll, stream, ctrl, window_s: float = 0.3) -> dict:
    """engine_evidence for a collective: every rank runs it alone, back to back, for the same number
    of launches (agreed), while NVML GPM samples this rank's SM utilization."""
    from c3prof.backends.cuda.ceilings import _time_ms

    one_ms = sorted(_time_ms(stream, lambda i: coll.launch(stream, i), reps=3, warmup=1))[1]
    one_ms = max(ctrl.all_gather(one_ms))
    reps = min(20000, max(1, math.ceil((window_s + 0.25) * 1e3 / max(one_ms, 1e-3))))
    ctrl.barrier()

    def busy():
        for i in range(reps):
            coll.launch(stream, i)
        return stream.dma.synchronize

    result = nvml.gpm_window(METRICS, window_s, busy)
    ctrl.barrier()
    rec = {"record": "engine_evidence", "transport": coll.name, "bytes": coll.nbytes, "op": coll.layout.op,
           "expected_carrier": coll.expected_carrier or EXPECTED_CARRIER.get(coll.name, "unknown"),
           "method": "nvml_gpm_sm_util", "single_transfer_ms": one_ms, "rank": coll.layout.rank,
           "world_size": coll.layout.world, "params": coll.params()}
    return {**rec, **classify(result)}
