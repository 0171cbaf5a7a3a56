"""`c3prof capture --backend NAME` end to end through the registry, on a SYNTHETIC backend
(tests/fakes.py: simulated durations, nothing measured). Shows that capture needs nothing from a
backend beyond c3prof/backends/base.py: a second vendor plugs in by registering a module."""

from __future__ import annotations

import sys
import types

from c3prof import backends
from c3prof.cli import main
from c3prof.trace import PHASES, read_trace
from fakes import FakeBench


class FakeBackendBench(FakeBench):
    backend_name, device, seed, sm_count, priority_range = "fake", 0, 0, 132, (0, -5)

    def identity(self):
        return {"name": "FakeGPU (synthetic)"}

    def check_fits(self, scenario, transports):
        pass

    def release_memory(self):
        pass


class FakeBackend:
    name = "fake"
    opened: list = []

    def unavailable_reason(self):
        return None

    def prepare_environment(self):
        pass

    def device_count(self):
        return 1

    def open_bench(self, device, seed, make_timer):
        self.opened.append((device, seed, make_timer.__name__))
        return FakeBackendBench()


def test_capture_runs_on_a_registered_backend(tmp_path, monkeypatch):
    module = types.ModuleType("c3prof_test_fake_backend")
    module.BACKEND = FakeBackend()
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(backends, "REGISTRY", {**backends.REGISTRY, "fake": module.__name__})
    out = tmp_path / "t.jsonl"
    rc = main(["capture", "--backend", "fake", "--suite", "smoke", "--strategies", "base,dma", "--reps", "3",
               "--max-reps", "4", "--warmup", "1", "--quiet", "--seed", "7", "--out", str(out)])
    assert rc == 0
    assert module.BACKEND.opened == [(0, 7, "PhaseTimer")]      # capture's timer, handed to the backend
    t = read_trace(out)
    assert t.finished and t.machine["gpu"]["name"] == "FakeGPU (synthetic)"
    assert len(t.runs) == 2 * 2 and all(set(r.phases) == set(PHASES) for r in t.runs.values())
    # SYNTHETIC durations: GEMM 2 ms, transport 1 ms, no interference, so serial is 3 ms, concurrent 2 ms.
    run = t.runs["smoke-cb2k-x-4M/base/default"]
    assert run.phases["serial"].total_ms[0] == 3.0 and run.phases["concurrent"].total_ms[0] == 2.0
