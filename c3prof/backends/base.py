"""The backend interface: everything `c3prof capture` asks of a vendor's GPU stack.

capture/ (the sweep, the phase timer, the stopping rule, cross-rank agreement, counter
orchestration) is vendor-neutral and talks to a GPU only through these Protocols. A backend is a
folder ``c3prof/backends/<name>/`` whose ``backend.py`` provides a :class:`Backend`, registered
by name in ``c3prof/backends/__init__.py``. A backend never imports ``c3prof.capture``: what it
needs from capture (the phase timer, the cross-rank agreement) is passed in.

Errors: a method may raise :class:`c3prof.errors.C3profError` for a condition the user can act
on (one line, exit status 2 if it ends the capture). Failures that lose one run but not the
capture (out of memory, a partition the device cannot make) are whatever the bench's
:meth:`Bench.recoverable` accepts; anything else stops the capture after an ``end`` record.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Protocol, runtime_checkable

from c3prof.errors import NoGPUError
from c3prof.plan.model import Variant
from c3prof.scenarios import Scenario

# The recorded trace a machine without the backend's GPU is pointed to (scripts/run.sh names the same).
EXAMPLE_TRACE = "tests/data/h200_default_proc2_t.jsonl"


class Workload(Protocol):
    """Work enqueued on a stream: a GEMM or a transport. ``rep`` selects rotating inputs."""

    def launch(self, stream: Any, rep: int) -> None: ...


class Transport(Workload, Protocol):
    """The communication side of a run (a transfer or a collective), validated byte for byte.

    ``launch`` enqueues one repetition without waiting. ``poison`` overwrites the destination
    with bytes that differ from the expected ones everywhere (enqueued or done before the next
    launch). ``validate`` waits for the device and returns ``{"transport", "method",
    "bytes_checked", "mismatched_bytes", "first_mismatch_offset", "ok"}``; ``corrupt=True``
    flips one destination byte first (the test hook that proves validation can fail).
    """

    name: str

    def poison(self) -> None: ...
    def validate(self, corrupt: bool = False) -> dict: ...


class EventPool(Protocol):
    """Device events addressed by index: record on a stream, make a stream wait, read times (ms)."""

    size: int

    def record(self, i: int, stream: Any) -> None: ...
    def wait(self, i: int, stream: Any) -> None: ...
    def synchronize(self, i: int) -> None: ...
    def elapsed_from(self, base: int, indices) -> list[float]: ...


class PhaseTiming(Protocol):
    """What capture's phase timer (c3prof.capture.phases.PhaseTimer) offers a backend, e.g. for
    counter windows that repeat a phase back to back. ``enqueue_batch`` returns the event pool
    that ``finish_batch`` reads; ``finish_batch`` returns samples by key (``total_ms``, ...)."""

    def enqueue_batch(self, phase: str, reps: int, gate: bool = True) -> EventPool: ...
    def finish_batch(self, phase: str, pool: EventPool, reps: int) -> dict[str, list[float]]: ...
    def run_batch(self, phase: str, reps: int) -> dict[str, list[float]]: ...
    def rep_starts(self, phase: str, pool: EventPool, reps: int) -> list[float]: ...


class MakeTimer(Protocol):
    """Capture's timer factory, handed to the backend: ``make_timer(gemm, comm, gemm_stream,
    comm_stream, order, make_pool=..., gate=...)``. ``make_pool(n)`` returns an EventPool of n
    events; ``gate(stream, reps)`` enqueues the pre-batch device sleep (its optional
    ``observe(host_ms, reps, key)`` lets it size itself to the host's enqueue cost, per key: the timer
    passes its run and phase)."""

    def __call__(self, gemm: Workload, comm: Transport, gemm_stream: Any, comm_stream: Any, order: str, *,
                 make_pool: Callable[[int], EventPool], gate: Callable[[Any, int], None]) -> PhaseTiming: ...


class ScenarioSetup(Protocol):
    """A scenario's allocations (GEMM operands, transfer buffers), shared by all its variants."""

    scenario: Scenario

    def close(self) -> None: ...


class VariantSetup(Protocol):
    """One run, ready to time: its timer over the two streams, its transport, and ``params``:
    the variant's parameters as actually granted (SM counts, CTA count), recorded in the trace."""

    timer: PhaseTiming
    transport: Transport
    params: dict

    def close(self) -> None: ...


class Bench(Protocol):
    """One device, opened for a capture.

    ``sm_count`` (compute units a partition divides) and ``priority_range`` ((least, greatest)
    stream priority) feed the plan; ``backend_name`` (the registry's name), ``device`` and ``seed``
    let a counter worker process open the same bench again.
    """

    backend_name: str
    device: int
    seed: int
    sm_count: int
    priority_range: tuple[int, int]

    def identity(self) -> dict:
        """The device's identity, at least ``{"name": ...}`` (a resumed capture must match it)."""

    def machine_record(self) -> dict:
        """The ``machine`` trace record: device, versions, clocks at start."""

    def clocks(self) -> dict:
        """Current clocks (the ``end`` record's ``clocks_end``); ``{}`` where unknown."""

    def ceilings_record(self, dtypes) -> dict:
        """The ``ceilings`` record: measured peak GEMM FLOP/s per dtype and copy bandwidths."""

    def engine_evidence_record(self, transport_name: str) -> dict:
        """The ``engine_evidence`` record: which engine carries ``transport_name``, measured."""

    def check_fits(self, scenario: Scenario, transports) -> None:
        """Raise C3profError if ``scenario`` with any of ``transports`` cannot fit, before allocating."""

    def open_scenario(self, scenario: Scenario) -> ScenarioSetup:
        """Allocate what every variant of ``scenario`` shares. May raise recoverably."""

    def open_variant(self, setup: ScenarioSetup, variant: Variant) -> VariantSetup:
        """Streams, partition and transport of one run, with capture's timer. May raise recoverably."""

    def recoverable(self, exc: BaseException) -> bool:
        """True if ``exc`` loses only the current run (it is recorded as an ``error`` and the sweep
        goes on); False stops the capture. On several ranks only failures raised identically on
        every rank may be recoverable."""

    def release_memory(self) -> None:
        """Give cached device and pinned host memory back: before a counter worker process needs it,
        and between visits, so that each visit allocates its buffers afresh (see runner.run)."""


def release_torch_caches(torch) -> None:
    """Empty torch's device caching allocator and its pinned-host cache (``torch._C._host_emptyCache``,
    a private call that torch builds since 2.5 have; older ones keep their pinned blocks)."""
    torch.cuda.empty_cache()
    host_empty = getattr(getattr(torch, "_C", None), "_host_emptyCache", None)
    if host_empty is not None:
        host_empty()


class Counters(Protocol):
    """The counters hook of a bench (optional): per-phase averages in-process (``gpm_phase_record``)
    and profiler-driven sources that re-run phases in a worker process (``profile``)."""

    def gpm_phase_record(self, setup: VariantSetup, phase: str, median_ms: float, run: str,
                         window_s: float = 0.2) -> tuple[dict | None, str | None]:
        """(``counters`` record, None) while ``phase`` repeats back to back, or (None, reason)."""

    def profiler_sources(self) -> tuple[str, ...]:
        """Sources ``profile`` serves, e.g. ("ncu", "pm_sampling")."""

    def profile(self, source: str, job: "ProfileJob", note: Callable[[str], None]) -> list[dict]:
        """Run ``job`` under the vendor profiler for ``source`` and return trace records: one
        ``counters`` record per range in ``job.order`` and one ``counter_source`` record, or only
        a ``counter_source`` record with ``available: False`` and the reason. Never raises for a
        profiler that is missing or refuses."""

    def profiler_start(self) -> None:
        """Open a profiled range (in the worker process)."""

    def profiler_stop(self) -> None:
        """Close it."""

    def synchronize(self) -> None:
        """Wait for all work on the device."""


@runtime_checkable
class ProfileJob(Protocol):
    """A counter worker run prepared by capture (c3prof.capture.counters.ProfiledJob): ``order``
    lists (run id, phase) per range; ``run(wrap)`` runs the worker under ``wrap(worker_cmd,
    log_file)`` (the profiler's command line) and returns (exit code, profiler log, output,
    timed lines); ``timing_fields(k, timed)`` gives range k's timing and perturbation fields."""

    order: list[tuple[str, str]]
    reps: int
    replay: str

    def run(self, wrap: Callable[[list[str], str], list[str]]) -> tuple[int, str, str, list[dict]]: ...
    def timing_fields(self, k: int, timed: list[dict]) -> dict: ...


class Agreement(Protocol):
    """Cross-rank agreement, passed by capture (c3prof.capture.agreement.Control) to a multi-GPU
    bench. Every method is collective: all ranks call it in the same order."""

    rank: int
    world: int

    def all_gather(self, obj) -> list: ...
    def barrier(self) -> None: ...
    def abort(self, message: str) -> None: ...
    def check_abort(self, force: bool = False) -> None: ...

    def agreed(self, what: str, fn: Callable[[], Any], locally_recoverable: Callable[[BaseException], bool]) -> Any:
        """Run ``fn`` on every rank; unless it succeeded everywhere raise the same C3profError on
        every rank (closing a local result that has ``close``). A failure that is not locally
        recoverable aborts every rank and is re-raised."""

    def agree_max(self, value: float) -> float:
        """The largest ``value`` any rank holds."""

    def wait_until(self, done: Callable[[], bool], deadline_s: float, what: str) -> None:
        """Poll ``done`` until true; raise c3prof.errors.PeerFailed after ``deadline_s`` or as soon
        as another rank announced a failure (a device waiting for a dead peer never hangs)."""


class DistributedOptions(Protocol):
    """The multi-GPU options a backend reads (the parsed ``c3prof capture`` arguments)."""

    dma_api: str
    dma_chunks: int
    dma_streams: int
    out_of_place: bool
    share_gpu: bool
    shares_gpu: bool               # ranks share one device (evidence probes then take turns)
    dma_local: str                 # where the DMA all-to-all's local block is copied (plan/dma_schedule.py)
    collective_timeout: float


class Backend(Protocol):
    """A vendor's GPU stack, as the registry hands it to capture."""

    name: str

    def unavailable_reason(self) -> str | None:
        """None if this backend's libraries import here, else a one-line reason (devices are
        checked later, by ``device_count`` and ``open_bench``)."""

    def prepare_environment(self) -> None:
        """Set process environment defaults (before any vendor library or child process starts)."""

    def device_count(self) -> int:
        """Visible devices (0 where none or no driver)."""

    def open_bench(self, device: int, seed: int, make_timer: MakeTimer) -> Bench:
        """Open ``device`` for a single-process capture; NoGPUError (a C3profError) if unusable."""

    def init_process_group(self, dist, device: int, timeout: timedelta, device_collectives: bool) -> None:
        """Make ``device`` current and initialize torch.distributed's default group: the vendor's
        collective library when ``device_collectives``, else gloo."""

    def isolate_device(self, local_rank: int, share_gpu: bool) -> str:
        """Make only this rank's device visible to this process (before the runtime initializes);
        returns what it set. NoGPUError (a C3profError) when the node has too few devices."""

    def open_distributed_bench(self, device: int, seed: int, make_timer: MakeTimer, agreement: Agreement,
                               timeout: timedelta, options: DistributedOptions) -> Bench:
        """Open ``device`` as one rank of a multi-GPU capture; setups agree through ``agreement``."""


def init_torch_process_group(dist, require_torch: Callable[[], Any], device: int, timeout: timedelta,
                             device_collectives: bool) -> None:
    """Backend.init_process_group for a vendor whose torch build names its GPU "cuda" and its
    collective library "nccl" (NCCL on CUDA, RCCL on ROCm): gloo without device collectives."""
    if not device_collectives:
        dist.init_process_group("gloo", timeout=timeout)
        return
    torch = require_torch()
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", device))


def isolated_visible_devices(local_rank: int, visible: str | None, node_gpus: int, share_gpu: bool,
                             variable: str = "CUDA_VISIBLE_DEVICES") -> str:
    """The ``variable`` value (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES) that shows a rank only its own
    GPU (the isolated-devices control). Vendor-neutral: each backend passes its variable and count.

    ``visible`` is the variable as the launcher set it (None: every GPU of the node, ``node_gpus`` of
    them, counted without initializing the runtime, which must not start before the variable is set). Rank
    ``local_rank`` gets entry ``local_rank`` of that list; ranks sharing GPUs (``share_gpu``) wrap
    around it. Raises NoGPUError when there are more ranks than GPUs without ``share_gpu``: the
    check that used to fail here counted GPUs *after* isolation, where every rank sees one.
    """
    entries = [e.strip() for e in visible.split(",") if e.strip()] if visible is not None else \
        [str(i) for i in range(node_gpus)]
    if not entries:
        raise NoGPUError("no GPU to isolate: " + (f"{variable} is empty" if visible is not None
                                                  else "no GPU counted on this node"))
    if local_rank >= len(entries) and not share_gpu:
        raise NoGPUError(f"local rank {local_rank} but only {len(entries)} GPU(s) on this node "
                         f"(use at most --nproc-per-node {len(entries)}, or --share-gpu)")
    return entries[local_rank % len(entries)]
