"""The HIP backend on a machine without ROCm or an AMD GPU (this one, and CI): it registers, builds
where the bindings were present, and `c3prof capture --backend hip` fails with one line naming
what is missing (exit status 2)."""

import os
import subprocess
import sys

import pytest

from c3prof import backends
from c3prof.backends.hip import device as hip_device
from c3prof.cli import main
from report_helpers import ROOT


def test_registered_and_auto_keeps_cuda_first():
    assert backends.names() == ("cuda", "hip")


def test_built_in_ci():
    """CI sets C3PROF_BUILD_HIP=1 (.ci/run): there the extension must have been built and import."""
    if os.environ.get("C3PROF_BUILD_HIP") != "1":
        pytest.skip("C3PROF_BUILD_HIP is not 1: the HIP extension is optional here")
    from c3prof.backends.hip import runtime as rt

    assert set(rt.HIP_CALLS) and rt.Stream and rt.CopyBatch


def _capture(tmp_path, capsys):
    rc = main(["capture", "--backend", "hip", "--suite", "smoke", "--quiet", "--out", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err.strip()
    return rc, err


def test_capture_without_the_extension_is_one_line(tmp_path, capsys, monkeypatch):
    import c3prof.backends.hip as hip_package

    # As if it was not built: the import fails even where an earlier test imported it.
    monkeypatch.setitem(sys.modules, "c3prof.backends.hip.runtime", None)
    monkeypatch.delattr(hip_package, "runtime", raising=False)
    rc, err = _capture(tmp_path, capsys)
    assert rc == 2 and len(err.splitlines()) == 1
    assert "backend 'hip' is not usable here" in err and "HIP runtime extension is not built" in err
    assert not (tmp_path / "t.jsonl").exists()


def test_capture_without_rocm_is_one_line(tmp_path, capsys):
    try:
        hip_device.load_runtime()
    except Exception:
        pytest.skip("the HIP extension is not built here (covered by the test above)")
    if os.path.exists("/opt/rocm/lib/libamdhip64.so"):
        pytest.skip("ROCm is installed here")
    rc, err = _capture(tmp_path, capsys)
    assert rc == 2 and len(err.splitlines()) == 1
    assert "backend 'hip' is not usable here: ROCm's HIP runtime library is not loadable" in err
    assert "libamdhip64" in err


def test_environment_defaults_force_sdma_without_overriding_the_user():
    env = {"HSA_ENABLE_SDMA": "0"}
    hip_device.hip_env_defaults(env)
    assert env == {"HSA_ENABLE_SDMA": "0", "HSA_FORCE_FINE_GRAIN_PCIE": "1"}    # the user's choice stands
    env = {}
    hip_device.hip_env_defaults(env)
    assert env["HSA_ENABLE_SDMA"] == "1"
    assert hip_device.recorded_env({"NCCL_MAX_CTAS": "8", "PATH": "/bin"}) == {"NCCL_MAX_CTAS": "8"}


def test_backend_module_imports_nothing_from_rocm():
    code = ("import sys, c3prof.backends.hip.backend as b; "
            "bad = [m for m in sys.modules if m == 'hip' or m.startswith(('hip.', 'c3prof.backends.hip.runtime', 'torch'))]; "
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_distributed_capture_says_it_is_not_wired():
    from c3prof.backends.hip.backend import BACKEND
    from c3prof.errors import C3profError

    with pytest.raises(C3profError, match="multi-GPU capture is not available on the hip backend yet"):
        BACKEND.open_distributed_bench(0, 0, None, None, None, None)


def test_mi300x_suite_loads():
    from c3prof.scenarios import load_suite, suite_names

    assert "mi300x" in suite_names()
    scenarios = load_suite("mi300x")
    assert len(scenarios) == 12 and len({s.name for s in scenarios}) == 12
    assert {s.comm.op for s in scenarios} == {"all_gather", "all_to_all"}
    shapes = {(s.gemm.m, s.gemm.n, s.gemm.k) for s in scenarios}
    assert shapes == {(8192, 8192, 8192), (64, 8192, 8192)}                 # compute- and memory-bound
    assert sorted({s.comm.bytes for s in scenarios}) == [16 * 2**20, 128 * 2**20, 2**30]
    assert all("mi300x" in s.tags for s in scenarios)


def test_isolate_devices_counts_amdkfd_gpus_and_sets_hip_visible_devices(tmp_path, monkeypatch):
    """The isolated-devices control on AMD: GPUs counted from the amdkfd topology (a SYNTHETIC tree
    here: one CPU node without SIMDs, two GPU nodes), HIP_VISIBLE_DEVICES set to the rank's GPU."""
    from c3prof.backends.hip import device
    from c3prof.backends.hip.backend import HipBackend

    for i, simds in enumerate((0, 1216, 1216)):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "properties").write_text(f"cpu_cores_count 8\nsimd_count {simds}\n")
    assert device.node_gpu_count(str(tmp_path)) == 2
    assert device.node_gpu_count(str(tmp_path / "missing")) == 0
    monkeypatch.setattr(device, "node_gpu_count", lambda: 2)
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    assert HipBackend().isolate_device(1, False) == "1"
    import os

    assert os.environ["HIP_VISIBLE_DEVICES"] == "1"
