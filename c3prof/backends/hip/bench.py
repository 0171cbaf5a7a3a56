"""The HIP bench: the c3prof.backends.base.Bench interface on one AMD GPU.

Streams, events, buffers and copies go through the HIP runtime extension (``rt``, or the tests'
fake: tests/fake_hip.py); GEMMs through torch for ROCm (hipBLASLt); CU partitions through CU masks.
The phase timer is capture's, passed in as ``make_timer``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable

from c3prof.backends.base import release_torch_caches
from c3prof.backends.hip import device as dev
from c3prof.backends.hip.partition import CuMaskPartition
from c3prof.backends.hip.streams import DeviceEventPool, Gate, make_stream
from c3prof.backends.hip.transports import LINK_OF, TransferBuffers, default_workgroups, make_transport
from c3prof.plan.model import Variant
from c3prof.errors import C3profError
from c3prof.scenarios import Scenario

EVIDENCE_BYTES = 256 * 2**20


@dataclass
class ScenarioSetup:
    scenario: Scenario
    gemm: Any
    buffers: TransferBuffers | None

    def close(self):
        self.gemm.close()
        self.buffers = None


@dataclass
class VariantSetup:
    timer: Any
    transport: Any
    params: dict
    _closers: list = field(default_factory=list)

    def close(self):
        for c in self._closers:
            c()


def _torch_gemm(torch, spec, l2_bytes: int, seed: int):
    from c3prof.backends.torch_gemm import TorchGemm, input_sets   # torch only, nothing CUDA-specific

    return TorchGemm(torch, spec, input_sets(spec, l2_bytes), seed=seed)


class HipBench:
    backend_name = "hip"

    def __init__(self, make_timer, device: int = 0, seed: int = 0, rt=None, torch=None,
                 make_gemm: Callable = _torch_gemm):
        dev.hip_env_defaults()
        self.rt = rt or dev.load_runtime()
        dev.require_gpus(self.rt, device + 1)
        self.torch = torch if torch is not None else dev.require_torch()
        self.torch.cuda.set_device(device)
        self.rt.set_device(device)
        self.device, self.seed, self.make_timer, self.make_gemm = device, seed, make_timer, make_gemm
        self.props = self.rt.device_properties(device)
        self.sm_count = self.props["cu_count"]           # what partitions divide: CUs on AMD
        self.priority_range = self.rt.stream_priority_range()
        self.stream = make_stream(self.rt, self.torch, label="default")
        self.gate = Gate(self.torch)

    def identity(self) -> dict:
        from c3prof.backends.hip.machine import identity

        return identity(self.rt, self.device)

    def machine_record(self) -> dict:
        from c3prof.backends.hip.machine import machine_record

        return machine_record(self.rt, self.torch, self.device)

    def clocks(self) -> dict:
        return {}

    def ceilings_record(self, dtypes) -> dict:
        from c3prof.backends.hip.ceilings import measure_ceilings

        return measure_ceilings(self.rt, self.torch, self.stream, dtypes, self.props["l2_bytes"])

    def engine_evidence_record(self, transport_name: str) -> dict:
        from c3prof.backends.hip.engine_evidence import probe

        link = LINK_OF[transport_name]
        buffers = TransferBuffers(self.rt, self.stream, link, EVIDENCE_BYTES, seed=self.seed + 99)
        t = make_transport(self.rt, transport_name, buffers, self.stream, workgroups=2 * self.sm_count)
        rec = probe(self.rt, t, self.stream, self.device)
        rec["link"] = link
        return rec

    def check_fits(self, scenario: Scenario, transports=()) -> None:
        from c3prof.backends.capacity import check_fits
        from c3prof.backends.torch_gemm import input_sets, set_bytes

        unsupported = _not_on_hip(scenario)
        if unsupported:
            raise C3profError(f"scenario {scenario.name!r}: {unsupported} is not implemented on the hip backend "
                              f"(the CUDA backend runs it; docs/backends.md)")
        comm_device, host = TransferBuffers.bytes_needed(scenario.comm.link or "pcie_h2d", scenario.comm.bytes)
        device_bytes = input_sets(scenario.gemm, self.props["l2_bytes"]) * set_bytes(scenario.gemm) + comm_device
        free_b, _ = self.rt.mem_get_info()
        check_fits(f"scenario {scenario.name!r}", device_bytes, host, free_b)

    def open_scenario(self, scenario: Scenario) -> ScenarioSetup:
        gemm = self.make_gemm(self.torch, scenario.gemm, self.props["l2_bytes"], self.seed)
        buffers = TransferBuffers(self.rt, self.stream, scenario.comm.link or "pcie_h2d", scenario.comm.bytes,
                                  seed=self.seed + 1)
        return ScenarioSetup(scenario, gemm, buffers)

    def _streams(self, v: Variant, params: dict, closers: list):
        if v.gemm_sms is None:
            return (make_stream(self.rt, self.torch, v.gemm_priority, "gemm"),
                    make_stream(self.rt, self.torch, v.comm_priority, "comm"))
        part = CuMaskPartition(self.rt, self.torch, v.gemm_sms, self.sm_count, want_comm_group=v.comm_sms is not None)
        closers.append(part.close)
        params.update(gemm_sms=part.gemm_cus, comm_sms=part.comm_cus, **part.params())
        return part.gemm_stream, part.comm_stream or make_stream(self.rt, self.torch, v.comm_priority, "comm")

    def open_variant(self, setup: ScenarioSetup, v: Variant) -> VariantSetup:
        closers: list = []
        params = v.params()
        gemm_stream, comm_stream = self._streams(v, params, closers)
        workgroups = None
        if v.carrier == "sm":
            # The variant's sweep (rp) first, then the scenario's own count, then the link's default.
            workgroups = v.comm_ctas or setup.scenario.comm.ctas or \
                default_workgroups(setup.buffers.link, comm_stream.cus or self.sm_count)
            params["comm_ctas"] = workgroups
        params["chunk"] = setup.scenario.comm.chunk
        transport = make_transport(self.rt, v.transport, setup.buffers, comm_stream, workgroups=workgroups,
                                   chunk=setup.scenario.comm.chunk, priority=v.comm_priority)
        timer = self.make_timer(setup.gemm, transport, gemm_stream, comm_stream, v.order,
                                make_pool=lambda n: DeviceEventPool(self.rt, n), gate=self.gate)
        # Streams must outlive the timer's queued work; keep them referenced until close().
        closers.insert(0, lambda: (gemm_stream.dma.synchronize(), comm_stream.dma.synchronize()))
        return VariantSetup(timer=timer, transport=transport, params=params, _closers=closers)

    def gpm_phase_record(self, setup, phase: str, median_ms: float, run: str, window_s: float = 0.2):
        """NVML GPM has no in-process AMD counterpart in c3prof: the capture records why and goes on."""
        return None, "NVML GPM is NVIDIA's; on AMD use --counters rocprofv3 (docs/backends.md)"

    def profiler_sources(self) -> tuple[str, ...]:
        from c3prof.backends.hip.counters import SOURCES

        return SOURCES

    def profile(self, source: str, job, note) -> list[dict]:
        from c3prof.backends.hip.counters import profile

        return profile(source, job, note)

    def profiler_start(self) -> None:
        """Open a range: rocprofv3 counts per kernel dispatch, so the range is a time window
        (counters.record_window) that the dispatches are later matched against."""
        from c3prof.backends.hip.counters import clock_ns

        self.rt.device_synchronize()
        self._range_start = clock_ns()

    def profiler_stop(self) -> None:
        """Close it once the range's work has finished (the window must cover its dispatches)."""
        from c3prof.backends.hip.counters import clock_ns, record_window

        self.rt.device_synchronize()
        record_window(self._range_start, clock_ns())

    def synchronize(self) -> None:
        self.rt.device_synchronize()

    def release_memory(self) -> None:
        self.rt.device_synchronize()
        release_torch_caches(self.torch)

    def recoverable(self, exc: BaseException) -> bool:
        """Out of memory and a partition the device refuses lose one run, not the capture."""
        oom = getattr(self.torch.cuda, "OutOfMemoryError", ())
        if oom and isinstance(exc, oom):
            with contextlib.suppress(Exception):
                self.torch.cuda.empty_cache()
            return True
        return isinstance(exc, C3profError)


def _not_on_hip(scenario: Scenario) -> str | None:
    """What a scenario asks that this backend does not implement (None: everything is), so that a
    capture refuses it up front instead of measuring something else."""
    if scenario.comm.op == "sleep":
        return 'op = "sleep" (the concurrency-alone control)'
    if scenario.comm.gap_us:
        return "a transfer's 'gap' between copies"
    return None
