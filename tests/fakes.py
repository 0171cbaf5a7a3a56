"""SYNTHETIC stand-ins for the GPU, for the runner's GPU-free tests. Nothing here is measured.

FakeStream keeps a simulated clock; FakePool records events at the stream's time and makes a
stream wait by advancing its clock, like CUDA's cudaEventRecord / cudaStreamWaitEvent. A
FakeWork advances its stream's clock by a fixed duration, so expected phase times are exact:
isolated T, serial T_g + T_c, concurrent max(T_g, T_c) (no interference is simulated). A shared
FakeClock models the host: after a host synchronize, new work cannot start before that moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeClock:
    now: float = 0.0


@dataclass
class FakeStream:
    name: str
    clock: FakeClock
    t: float = 0.0

    def catch_up(self):
        self.t = max(self.t, self.clock.now)


class FakePool:
    def __init__(self, size: int, clock: FakeClock):
        self.size = size
        self.clock = clock
        self.ev = [None] * size

    def record(self, i, stream):
        stream.catch_up()
        self.ev[i] = stream.t

    def wait(self, i, stream):
        stream.catch_up()
        stream.t = max(stream.t, self.ev[i])

    def synchronize(self, i):
        assert self.ev[i] is not None
        self.clock.now = max(self.clock.now, self.ev[i])

    def elapsed_from(self, base, indices):
        return [self.ev[i] - self.ev[base] for i in indices]


@dataclass
class FakeWork:
    ms: float
    launches: int = 0

    def launch(self, stream, rep):
        self.launches += 1
        stream.catch_up()
        stream.t += self.ms


def no_gate(stream, reps, key=None):
    pass


@dataclass
class FakeTransport(FakeWork):
    name: str = "fake_transport"
    corrupt_next: bool = False
    poisoned: int = 0
    moves_bytes: bool = True       # False: a sleep control (the runner must not validate it)

    def poison(self):
        self.poisoned += 1

    def validate(self, corrupt=False):
        assert self.moves_bytes, "the runner validated a control that moves no bytes"
        bad = 1 if corrupt else 0
        return {"transport": self.name, "bytes_checked": 1024, "mismatched_bytes": bad,
                "first_mismatch_offset": 341 if bad else None, "ok": bad == 0, "method": "fake"}


class FakeOOM(Exception):
    pass


@dataclass
class FakeBench:
    """Implements the Bench methods the runner calls (c3prof/backends/base.py), with fixed simulated durations."""

    backend_name = "fake"                   # the registry name the runner records in the machine record
    gemm_ms: float = 2.0
    comm_ms: float = 1.0
    fail_variant: str | None = None         # variant name whose setup raises FakeOOM
    interrupt_after_scenarios: int | None = None   # Ctrl-C while opening the scenario after this many
    evidence_carrier: str = "unknown"       # what engine_evidence reports for every transport
    runs_started: int = 0
    phases_measured: list = field(default_factory=list)
    opened: list = field(default_factory=list)
    released_after: list = field(default_factory=list)   # len(opened) at each release_memory call

    def machine_record(self):
        return {"record": "machine", "gpu": {"name": "FakeGPU (synthetic)"}, "versions": {}, "clocks_start": {}}

    def clocks(self):
        return {}

    def ceilings_record(self, dtypes):
        return {"record": "ceilings", "gemm_flops_per_s": {d: {"value": 1e15} for d in dtypes},
                "copy_bytes_per_s": {"d2d": {"value": 4e12}}}

    def engine_evidence_record(self, transport):
        return {"record": "engine_evidence", "transport": transport, "carrier": self.evidence_carrier, "method": "fake"}

    def release_memory(self):
        self.released_after.append(len(self.opened))

    def open_scenario(self, scenario):
        bench = self

        class Setup:
            def close(self):
                pass

        if self.interrupt_after_scenarios is not None and len(bench.opened) >= self.interrupt_after_scenarios:
            raise KeyboardInterrupt
        bench.opened.append(scenario.name)
        return Setup()

    def open_variant(self, setup, variant):
        from c3prof.capture.phases import PhaseTimer

        if variant.name == self.fail_variant:
            raise FakeOOM("simulated out of memory")
        bench = self
        transport = FakeTransport(self.comm_ms, name=variant.transport, moves_bytes=variant.transport != "sm_sleep")

        bench.runs_started += 1
        seen: set[str] = set()

        class CountingTimer(PhaseTimer):
            def run_batch(self, phase, reps):
                if phase not in seen:   # each phase of each run counted once
                    seen.add(phase)
                    bench.phases_measured.append(phase)
                return super().run_batch(phase, reps)

        clock = FakeClock()
        timer = CountingTimer(FakeWork(self.gemm_ms), transport, FakeStream("g", clock), FakeStream("c", clock),
                              variant.order, make_pool=lambda n: FakePool(n, clock), gate=no_gate)

        class VariantSetup:
            def __init__(self):
                self.timer, self.transport, self.params = timer, transport, variant.params()

            def close(self):
                pass

        return VariantSetup()

    def recoverable(self, exc):
        return isinstance(exc, FakeOOM)
