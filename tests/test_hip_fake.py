"""The HIP backend driven through the FAKE HIP layer (tests/fake_hip.py): the call sequence of real
runs (streams, CU masks, copies, events, validation), error propagation, and the coverage rule:
every HIP call the backend makes (HIP_CALLS, checked against the .pyx sources) is exercised here.
Nothing runs on an AMD GPU; no time or number here is a measurement."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from c3prof.backends.hip import cu_masks, runtime_calls
from c3prof.backends.hip.bench import HipBench
from c3prof.backends.hip.dma_collective import IpcDmaCollective
from c3prof.backends.hip.streams import make_stream
from c3prof.capture.phases import PhaseTimer
from c3prof.errors import C3profError, NoGPUError
from c3prof.plan.model import PlanOptions
from c3prof.plan.strategies import variants_for
from c3prof.scenarios import CommSpec, GemmSpec, Scenario
from fake_hip import NO_DEVICE, FakeHip

RUNTIME = Path(__file__).resolve().parents[1] / "c3prof" / "backends" / "hip" / "runtime"
EXERCISED: set[str] = set()          # HIP calls recorded by the tests of this module (coverage test last)


class FakeTorch:
    """Just what the HIP bench asks of torch when the GEMM is faked (FAKE: no GPU)."""

    __version__ = "fake"

    class version:
        hip = "fake"

    class cuda:
        ExternalStream = staticmethod(lambda handle: ("external", handle))
        stream = staticmethod(lambda s: contextlib.nullcontext())
        _sleep = staticmethod(lambda cycles: None)
        set_device = staticmethod(lambda d: None)
        empty_cache = staticmethod(lambda: None)
        get_device_name = staticmethod(lambda d: "FakeHIP MI300X (synthetic)")


class FakeGemm:
    """Stands in for the torch GEMM: logs one 'kernel' and advances the fake clock by 1 ms."""

    def __init__(self, hip: FakeHip):
        self.hip, self.launches = hip, 0

    def launch(self, stream, rep):
        self.launches += 1
        self.hip.log.append(("GEMM kernel (fake)", f"rep {rep}"))
        self.hip.clock_ms += 1.0

    def close(self):
        pass


@pytest.fixture
def hip():
    fake = FakeHip()
    yield fake
    EXERCISED.update(fake.calls)


def bench_on(hip: FakeHip, seed: int = 0) -> HipBench:
    return HipBench(PhaseTimer, device=0, seed=seed, rt=hip, torch=FakeTorch(),
                    make_gemm=lambda torch, spec, l2, seed: FakeGemm(hip))


def scenario(link: str, nbytes: int = 4096, chunk: int | None = None) -> Scenario:
    return Scenario("fake-" + link, GemmSpec(256, 256, 256, "bf16"), CommSpec("transfer", nbytes, link=link, chunk=chunk))


def since(hip: FakeHip, mark: int) -> list[str]:
    return hip.calls[mark:]


def test_runtime_sources_call_exactly_the_listed_hip_functions():
    called = set()
    for pyx in RUNTIME.glob("*.pyx"):
        called |= set(re.findall(r"\bhip\.(hip\w+)\s*\(", pyx.read_text()))
    assert called == set(runtime_calls.HIP_CALLS)


def test_bench_opens_device_and_reads_properties(hip):
    b = bench_on(hip)
    assert hip.calls[:2] == ["hipGetDeviceCount", "hipSetDevice"]
    assert b.sm_count == 304 and b.priority_range == (0, -1)
    assert b.machine_record()["gpu"]["name"] == "FakeHIP MI300X (synthetic)"
    assert b.identity() == {"name": "FakeHIP MI300X (synthetic)", "pci_bus_id": "0000:0c:00.0"}
    assert {"hipRuntimeGetVersion", "hipDriverGetVersion", "hipMemGetInfo", "hipDeviceGetPCIBusId"} <= set(hip.calls)


@pytest.mark.parametrize("link", ["pcie_h2d", "pcie_d2h", "hbm"])
def test_dma_run_sequence_and_validation(hip, link):
    b = bench_on(hip)
    setup = b.open_scenario(scenario(link, nbytes=8192, chunk=2048))
    (v,) = variants_for("dma", PlanOptions(sm_count=304), link)
    run = b.open_variant(setup, v)
    run.transport.poison()
    assert run.transport.validate()["mismatched_bytes"] == 8192          # poisoned: every byte differs
    mark = len(hip.calls)
    samples = run.timer.run_batch("concurrent", 3)
    batch = since(hip, mark)
    # 3 repetitions x 4 chunks: one hipMemcpyAsync per chunk, each repetition between event records.
    copies = [i for i, c in enumerate(batch) if c == "hipMemcpyAsync"]
    assert len(copies) == 12 and "hipEventRecord" in batch[:copies[0]] and "hipEventRecord" in batch[copies[-1]:]
    assert "hipEventSynchronize" in batch and "hipEventElapsedTime" in batch
    assert len(samples["total_ms"]) == 3 and all(t > 0 for t in samples["total_ms"])   # fake clock, not measured
    mark = len(hip.calls)
    check = run.transport.validate()
    assert check["ok"] and check["bytes_checked"] == 8192
    assert since(hip, mark)[0] == "hipDeviceSynchronize"
    assert run.params["chunk"] == 2048
    run.close()
    assert hip.calls[-2:] == ["hipStreamSynchronize", "hipStreamSynchronize"]


def test_a_scenarios_ctas_sets_the_cu_copy_workgroups(hip):
    b = bench_on(hip)
    s = Scenario("fake-ctas", GemmSpec(256, 256, 256, "bf16"), CommSpec("transfer", 8192, link="hbm", ctas=3))
    (v,) = variants_for("base", PlanOptions(sm_count=304), "hbm")
    run = b.open_variant(b.open_scenario(s), v)
    assert run.params["comm_ctas"] == 3
    run.close()


@pytest.mark.parametrize("comm, what", [
    (CommSpec("sleep", 0, duration_us=1000.0), "sleep"),
    (CommSpec("transfer", 8192, link="pcie_h2d", chunk=2048, gap_us=20.0), "'gap'"),
])
def test_what_the_hip_backend_does_not_run_is_refused_before_anything_runs(hip, comm, what):
    from c3prof.errors import C3profError

    with pytest.raises(C3profError, match=f"{what}.* not implemented on the hip backend"):
        bench_on(hip).check_fits(Scenario("fake-control", GemmSpec(256, 256, 256, "bf16"), comm))


def test_closing_a_scenario_frees_its_buffers(hip):
    import gc

    b = bench_on(hip)
    setup = b.open_scenario(scenario("pcie_bidir", nbytes=1024))
    allocated = hip.calls.count("hipHostMalloc"), hip.calls.count("hipMalloc")
    setup.close()
    gc.collect()
    assert (hip.calls.count("hipHostFree"), hip.calls.count("hipFree")) == allocated


def test_bidirectional_copy_forks_a_second_stream(hip):
    b = bench_on(hip)
    setup = b.open_scenario(scenario("pcie_bidir", nbytes=4096))
    (v,) = variants_for("dma", PlanOptions(sm_count=304), "pcie_bidir")
    mark = len(hip.calls)
    run = b.open_variant(setup, v)
    run.transport.poison()
    run.transport.launch(run.timer.side["comm"][1], 0)
    seq = [c for c in since(hip, mark) if c in ("hipEventRecord", "hipStreamWaitEvent", "hipMemcpyAsync")]
    # fork event, aux waits, copy on each stream, join event, main waits
    assert seq[-6:] == ["hipEventRecord", "hipStreamWaitEvent", "hipMemcpyAsync", "hipMemcpyAsync",
                        "hipEventRecord", "hipStreamWaitEvent"]
    assert run.transport.validate()["ok"]


def test_injected_corruption_is_caught(hip):
    b = bench_on(hip)
    for link in ("pcie_d2h", "hbm"):                 # a host and a device destination
        setup = b.open_scenario(scenario(link, nbytes=3000))
        (v,) = variants_for("dma", PlanOptions(sm_count=304), link)
        run = b.open_variant(setup, v)
        run.transport.launch(run.timer.side["comm"][1], 0)
        bad = run.transport.validate(corrupt=True)
        assert not bad["ok"] and bad["mismatched_bytes"] == 1 and bad["first_mismatch_offset"] == 1000


def test_cu_mask_partition_streams(hip):
    b = bench_on(hip)
    setup = b.open_scenario(scenario("pcie_h2d"))
    v = next(v for v in variants_for("dma+rp", PlanOptions(sm_count=304, rp_gemm_sms=(100,)), "pcie_h2d"))
    mark = len(hip.calls)
    run = b.open_variant(setup, v)
    calls = since(hip, mark)
    assert calls[:2] == ["hipExtStreamCreateWithCUMask", "hipExtStreamGetCUMask"]
    assert run.params["gemm_sms"] == 104 and run.params["gemm_cus_per_xcd"] == [13] * 8    # 100 -> 13 per XCD
    gemm_stream = run.timer.side["gemm"][1]
    assert gemm_stream.dma.cu_mask == tuple(cu_masks.split(100, cu_masks.MI300X).gemm_mask)
    run.timer.run_batch("serial", 2)
    run.close()
    assert "hipStreamDestroy" in hip.calls[mark:]


def test_partition_refuses_a_mask_the_runtime_changed(hip):
    b = bench_on(hip)
    setup = b.open_scenario(scenario("pcie_h2d"))
    v = next(v for v in variants_for("dma+rp", PlanOptions(sm_count=304, rp_gemm_sms=(100,)), "pcie_h2d"))
    original = hip.Stream.granted_cu_mask
    hip.Stream.granted_cu_mask = lambda self, words: tuple([0xFFFFFFFF] * words)
    try:
        with pytest.raises(C3profError, match="applied a different CU mask to the gemm stream"):
            b.open_variant(setup, v)
    finally:
        hip.Stream.granted_cu_mask = original


def _dma_variant(partitioned: bool):
    strategy = "dma+rp" if partitioned else "dma"
    return variants_for(strategy, PlanOptions(sm_count=304, rp_gemm_sms=(100,)), "pcie_h2d")[0]


def _names_the_call(hip, excinfo, call: str, code: int) -> None:
    assert str(excinfo.value).startswith(call) and f"({code})" in str(excinfo.value)
    assert excinfo.value.call.startswith(call)
    assert hip.calls[-2:] == ["hipGetErrorName", "hipGetErrorString"]     # looked up as errors.pyx does


@pytest.mark.parametrize("call", ["hipHostMalloc", "hipMalloc"])
def test_a_failing_allocation_names_itself(hip, call):
    b = bench_on(hip)
    hip.fail(call, 2)
    with pytest.raises(hip.HipError) as excinfo:
        b.open_scenario(scenario("pcie_h2d"))
    _names_the_call(hip, excinfo, call, 2)
    assert "hipErrorOutOfMemory" in str(excinfo.value)


@pytest.mark.parametrize("call,partitioned", [("hipExtStreamCreateWithCUMask", True),
                                              ("hipStreamCreateWithPriority", False)])
def test_a_failing_stream_creation_names_itself(hip, call, partitioned):
    b = bench_on(hip)
    setup = b.open_scenario(scenario("pcie_h2d"))
    hip.fail(call)
    with pytest.raises(hip.HipError) as excinfo:
        b.open_variant(setup, _dma_variant(partitioned))
    _names_the_call(hip, excinfo, call, 1)


@pytest.mark.parametrize("call", ["hipMemcpyAsync", "hipEventRecord", "hipEventElapsedTime"])
def test_a_failing_call_in_a_batch_names_itself_and_stops_the_capture(hip, call):
    b = bench_on(hip)
    run = b.open_variant(b.open_scenario(scenario("pcie_h2d")), _dma_variant(True))
    hip.fail(call)
    with pytest.raises(hip.HipError) as excinfo:
        run.timer.run_batch("comm", 1)
    _names_the_call(hip, excinfo, call, 1)
    assert not b.recoverable(excinfo.value)          # a HIP failure is not one lost run: the capture stops


def test_no_device_is_a_one_line_no_gpu_error(hip):
    hip.fail("hipGetDeviceCount", NO_DEVICE)
    with pytest.raises(NoGPUError, match="no usable AMD GPU \\(hipErrorNoDevice\\)"):
        bench_on(hip)


def test_missing_rocm_library_is_a_one_line_no_gpu_error(hip):
    def no_library():
        raise RuntimeError("failed to dlopen 'b'libamdhip64.so'': cannot open shared object file")
    hip.device_count = no_library
    with pytest.raises(NoGPUError, match="ROCm's HIP runtime library is not loadable here"):
        bench_on(hip)


def test_library_check_tells_missing_rocm_from_a_missing_device(hip):
    from c3prof.backends.hip.device import runtime_library_missing

    assert runtime_library_missing(hip) is None                        # the library answers
    hip.fail("hipGetDeviceCount", NO_DEVICE)
    assert runtime_library_missing(hip) is None                        # no device, but ROCm is there
    hip.device_count = lambda: (_ for _ in ()).throw(RuntimeError("failed to dlopen libamdhip64.so"))
    assert "libamdhip64" in runtime_library_missing(hip)


def test_ceilings_and_profiler_windows(hip, monkeypatch, tmp_path):
    from c3prof.backends.hip.ceilings import measure_ceilings

    b = bench_on(hip)
    rec = measure_ceilings(hip, FakeTorch(), b.stream, ["bf16"], 4 * 2**20, n=4096, h=2048,
                           make_gemm=lambda torch, spec, l2: FakeGemm(hip))
    assert set(rec["copy_bytes_per_s"]) == {"d2d", "h2d", "d2h"} and rec["gemm_flops_per_s"]["bf16"]["value"] > 0
    ranges = tmp_path / "ranges.jsonl"
    monkeypatch.setenv("C3PROF_HIP_RANGES", str(ranges))
    b.profiler_start()
    b.profiler_stop()
    assert len(ranges.read_text().splitlines()) == 1 and hip.calls[-1] == "hipDeviceSynchronize"
    b.release_memory()


def test_ipc_dma_all_gather_and_all_to_all():
    hip = FakeHip(devices=2)
    for op in ("all_gather", "all_to_all"):
        ranks = [IpcDmaCollective(hip, r, 2, op, shard_bytes=1024, stream=make_stream(hip), seed=5) for r in range(2)]
        infos = [c.export() for c in ranks]
        for c in ranks:
            c.connect(infos)
        for c in ranks:
            c.poison()
            assert not c.validate()["ok"]
        for rep in (1, 2):
            for c in ranks:            # every rank marks its input ready before any rank pulls (device-side flags)
                c.post(c.stream, rep)
            for c in ranks:
                c.pull(c.stream, rep)
        assert all(c.validate()["ok"] for c in ranks)
        for c in ranks:
            c.close()
        assert hip.mapped == []
    EXERCISED.update(hip.calls)
    assert {"hipIpcGetMemHandle", "hipIpcOpenMemHandle", "hipMemcpyPeerAsync", "hipStreamWriteValue32",
            "hipStreamWaitValue32", "hipDeviceEnablePeerAccess", "hipIpcCloseMemHandle"} <= set(hip.calls)


def test_peer_access_already_enabled_is_not_an_error():
    hip = FakeHip(devices=2)
    c = IpcDmaCollective(hip, 0, 2, "all_gather", shard_bytes=256, stream=make_stream(hip), seed=1)
    c.enable_peers()
    c.enable_peers()
    EXERCISED.update(hip.calls)
    assert hip.calls.count("hipGetLastError") == 1


def test_zz_every_hip_call_is_exercised_by_these_tests():
    """Runs last in this module (pytest keeps file order): the union of recorded calls covers the list."""
    if not EXERCISED:
        pytest.skip("run the whole module: this test checks what its other tests recorded")
    missing = set(runtime_calls.HIP_CALLS) - EXERCISED
    assert not missing, f"HIP calls no fake-layer test exercises: {sorted(missing)}"
