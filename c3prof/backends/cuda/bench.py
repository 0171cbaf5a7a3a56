"""The CUDA bench: the c3prof.backends.base.Bench interface on one NVIDIA GPU.

The runner (c3prof/capture/runner.py) only calls the interface's methods; a GPU-free fake with the
same methods drives the runner's tests (tests/fakes.py). The phase timer is capture's, passed in
as ``make_timer``, so this backend never imports capture/.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from c3prof.backends.base import release_torch_caches
from c3prof.backends.cuda import device as dev
from c3prof.backends.cuda import runtime as rt
from c3prof.backends.cuda.ceilings import measure_ceilings
from c3prof.backends.cuda.engine_evidence import probe
from c3prof.backends.capacity import check_fits
from c3prof.backends.torch_gemm import TorchGemm, input_sets, set_bytes
from c3prof.backends.cuda.nvml import Nvml
from c3prof.backends.cuda.partition import GreenPartition
from c3prof.backends.cuda.streams import DeviceEventPool, Gate, make_stream
from c3prof.backends.cuda.transports import (LINK_OF, SleepTransport, TransferBuffers, default_sm_ctas,
                                             make_transport)
from c3prof.plan.model import Variant
from c3prof.scenarios import Scenario
from c3prof.trace import counters_record

EVIDENCE_BYTES = 256 * 2**20
# GPM metrics recorded per phase, with their units (NVML reports rates per second, MiB for links).
GPM_PHASE_METRICS = {"SM_UTIL": "%", "SM_OCCUPANCY": "%", "DRAM_BW_UTIL": "%", "ANY_TENSOR_UTIL": "%",
                     "PCIE_TX_PER_SEC": "MiB/s", "PCIE_RX_PER_SEC": "MiB/s",
                     "NVLINK_TOTAL_TX_PER_SEC": "MiB/s", "NVLINK_TOTAL_RX_PER_SEC": "MiB/s"}


@dataclass
class ScenarioSetup:
    scenario: Scenario
    gemm: TorchGemm
    buffers: TransferBuffers | None     # None for a sleep control (no bytes)

    def close(self):
        self.gemm.close()
        self.buffers = None


@dataclass
class VariantSetup:
    timer: Any                     # capture's PhaseTimer (c3prof.backends.base.PhaseTiming)
    transport: Any
    params: dict                   # actual values (SM counts as granted, CTA count) for the trace
    _closers: list = field(default_factory=list)

    def close(self):
        for c in self._closers:
            c()


class CudaBench:
    backend_name = "cuda"

    def __init__(self, make_timer, device: int = 0, seed: int = 0):
        dev.cuda_env_defaults()
        dev.require_gpus(device + 1)
        torch = dev.require_torch()
        torch.cuda.set_device(device)
        rt.set_device(device)
        torch.cuda.init()
        self.torch = torch
        self.device = device
        self.seed = seed
        self.make_timer = make_timer
        self.props = rt.device_properties(device)
        self.sm_count = self.props["sm_count"]
        self.priority_range = rt.stream_priority_range()
        self.nvml = Nvml(device)
        self.stream = make_stream(torch, label="default")
        self.gate = Gate(torch)

    # -- records -------------------------------------------------------------------------------

    def identity(self) -> dict:
        return self.nvml.identity()

    def machine_record(self) -> dict:
        from c3prof.backends.cuda.machine import machine_record

        return machine_record(self.torch, self.nvml, self.device)

    def clocks(self) -> dict:
        return self.nvml.clocks()

    def ceilings_record(self, dtypes) -> dict:
        return measure_ceilings(self.torch, self.stream, dtypes, self.props["l2_bytes"], self.sm_count)

    def engine_evidence_record(self, transport_name: str) -> dict:
        link = LINK_OF[transport_name]
        buffers = TransferBuffers(self.torch, link, EVIDENCE_BYTES, seed=self.seed + 99)
        # Two CTAs per SM whatever the link: the probe asks which engine moves the bytes, and a
        # full-GPU SM carrier makes the answer unmistakable (see engine_evidence.SM_BUSY_PCT).
        t = make_transport(self.torch, transport_name, buffers, ctas=2 * self.sm_count)
        rec = probe(self.torch, self.nvml, t, self.stream)
        rec["link"] = link
        del t, buffers
        self.torch.cuda.empty_cache()
        return rec

    # -- capacity checks (before allocating) -----------------------------------------------------

    def check_fits(self, scenario: Scenario, transports=()) -> None:
        n_sets = input_sets(scenario.gemm, self.props["l2_bytes"])
        comm_device, host = (0, 0) if scenario.comm.op == "sleep" else \
            TransferBuffers.bytes_needed(scenario.comm.link or "pcie_h2d", scenario.comm.bytes)
        device_bytes = n_sets * set_bytes(scenario.gemm) + comm_device
        free_b, _ = rt.mem_get_info()
        check_fits(f"scenario {scenario.name!r}", device_bytes, host, free_b)

    # -- setups ---------------------------------------------------------------------------------

    def open_scenario(self, scenario: Scenario) -> ScenarioSetup:
        gemm = TorchGemm(self.torch, scenario.gemm, input_sets(scenario.gemm, self.props["l2_bytes"]), seed=self.seed)
        buffers = None if scenario.comm.op == "sleep" else \
            TransferBuffers(self.torch, scenario.comm.link or "pcie_h2d", scenario.comm.bytes, seed=self.seed + 1)
        self.torch.cuda.synchronize()
        return ScenarioSetup(scenario, gemm, buffers)

    def open_variant(self, setup: ScenarioSetup, v: Variant) -> VariantSetup:
        torch = self.torch
        closers = []
        params = v.params()
        if v.gemm_sms is not None:
            part = GreenPartition(torch, v.gemm_sms, self.device, v.gemm_priority, v.comm_priority,
                                  want_comm_group=v.comm_sms is not None)
            closers.append(part.close)
            gemm_stream = part.gemm_stream
            comm_stream = part.comm_stream or make_stream(torch, v.comm_priority, "comm")
            params.update(gemm_sms=part.gemm_sms, comm_sms=part.comm_sms)
        else:
            gemm_stream = make_stream(torch, v.gemm_priority, "gemm")
            comm_stream = make_stream(torch, v.comm_priority, "comm")
        transport = self._transport(setup, v, comm_stream, params)
        timer = self.make_timer(setup.gemm, transport, gemm_stream, comm_stream, v.order,
                                make_pool=DeviceEventPool, gate=self.gate)
        # Streams must outlive the timer's queued work; keep them referenced until close().
        closers.insert(0, lambda: (gemm_stream.dma.synchronize(), comm_stream.dma.synchronize()))
        return VariantSetup(timer=timer, transport=transport, params=params, _closers=closers)

    def _transport(self, setup: ScenarioSetup, v: Variant, comm_stream, params: dict):
        """The variant's transport; ``params`` (the trace's record of the run) gets what it chose."""
        comm = setup.scenario.comm
        if comm.op == "sleep":
            params.update(comm_ctas=1, duration_us=comm.duration_us)
            return SleepTransport(self.torch, comm.duration_us)
        ctas = None
        if v.carrier == "sm":
            # The variant's CTA sweep (rp) first, then the scenario's own count, then the link's default.
            ctas = v.comm_ctas or comm.ctas or default_sm_ctas(setup.buffers.link, comm_stream.sms or self.sm_count)
            params["comm_ctas"] = ctas
        params.update(chunk=comm.chunk, gap_us=comm.gap_us)
        return make_transport(self.torch, v.transport, setup.buffers, ctas=ctas, chunk=comm.chunk,
                              priority=v.comm_priority, gap_us=comm.gap_us)

    def gpm_phase_record(self, setup: VariantSetup, phase: str, median_ms: float, run: str,
                         window_s: float = 0.2) -> tuple[dict | None, str | None]:
        """NVML GPM averages while ``phase`` repeats back to back for ``window_s``.

        A thread keeps enqueueing ~20 ms batches of the phase (no gate kernel) while the main
        thread takes the two GPM samples. The same loop first runs as long without sampling:
        the ratio of the two loops' median phase times is GPM's perturbation (a matched pair, so
        the clock drop of a GPU kept busy for a quarter second affects both alike). The record
        also keeps the busy fraction (phase time over loop time): short phases leave the GPU
        idle between launches, which dilutes every GPM average.
        """
        reps, batches = self._gpm_loop_length(median_ms, window_s)

        def looper(timed, failed, stop):
            def loop():
                try:
                    done = 0
                    # Until stopped, or (a multi-GPU rank) exactly ``batches`` batches, as every rank.
                    while not stop.is_set() if batches is None else done < batches:
                        pool = setup.timer.enqueue_batch(phase, reps, gate=False)
                        timed.extend(setup.timer.finish_batch(phase, pool, reps)["total_ms"])
                        done += 1
                except Exception as exc:  # surfaced below, in the capture's thread
                    failed.append(exc)
            return loop

        plain, failed, stop = [], [], threading.Event()
        self._gpm_sync()
        thread = threading.Thread(target=looper(plain, failed, stop), daemon=True)
        thread.start()
        if batches is None:
            stop.wait(window_s + 0.05)
            stop.set()
        thread.join()
        sampled, stop2 = [], threading.Event()
        walls = []

        def busy():
            self._gpm_sync()
            t0 = time.perf_counter()
            th = threading.Thread(target=looper(sampled, failed, stop2), daemon=True)
            th.start()
            return lambda: (stop2.set(), th.join(), walls.append(time.perf_counter() - t0))

        result = self.nvml.gpm_window(list(GPM_PHASE_METRICS), window_s, busy)
        if failed:
            raise failed[0]
        if "error" in result:
            return None, result["error"]
        metrics = {name.lower(): {"value": result["metrics"][name.lower()], "unit": unit}
                   for name, unit in GPM_PHASE_METRICS.items()}
        rec = counters_record(run, phase, "nvml_gpm", metrics, window_s=result["window_s"], reps=len(sampled),
                              timed_samples_ms=sampled[:1000], unprofiled_samples_ms=plain[:1000])
        if sampled and walls:
            rec["busy_fraction"] = min(1.0, sum(sampled) / 1e3 / walls[0])
        if sampled and plain:
            rec["perturbation"] = statistics.median(sampled) / statistics.median(plain)
        return rec, None

    def _gpm_loop_length(self, median_ms: float, window_s: float) -> tuple[int, int | None]:
        """Repetitions per batch (~20 ms batches) and batches per loop (None: until the window closes)."""
        return max(4, min(2000, math.ceil(20.0 / max(median_ms, 1e-3)))), None

    def _gpm_sync(self) -> None:
        """Called before each GPM loop starts (a multi-GPU rank meets its peers there)."""

    # -- profiler-driven counters (c3prof.backends.base.Counters) ---------------------------------

    def profiler_sources(self) -> tuple[str, ...]:
        from c3prof.backends.cuda.counters import SOURCES

        return SOURCES

    def profile(self, source: str, job, note) -> list[dict]:
        from c3prof.backends.cuda.counters import profile

        return profile(source, job, (self.props["cc_major"], self.props["cc_minor"]), note)

    def profiler_start(self) -> None:
        rt.profiler_start()

    def profiler_stop(self) -> None:
        rt.profiler_stop()

    def synchronize(self) -> None:
        rt.device_synchronize()

    def release_memory(self) -> None:
        """Hand cached device and pinned host memory back (Bench.release_memory)."""
        self.torch.cuda.synchronize()
        release_torch_caches(self.torch)

    def recoverable(self, exc: BaseException) -> bool:
        """Failures that lose one run, not the capture: out of memory, a bad partition request."""
        from c3prof.errors import C3profError

        if isinstance(exc, self.torch.cuda.OutOfMemoryError):
            with contextlib.suppress(Exception):
                self.torch.cuda.empty_cache()
            return True
        return isinstance(exc, C3profError)
