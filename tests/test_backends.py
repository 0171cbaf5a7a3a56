"""The backend registry and the written interface, GPU-free: selection by name, one-line errors,
and the CUDA backend providing every method the interface names."""

from __future__ import annotations

import inspect
import sys
import types

import pytest

from c3prof import backends
from c3prof.backends import base
from c3prof.errors import C3profError


def protocol_methods(proto) -> set[str]:
    return {n for n, v in vars(proto).items() if inspect.isfunction(v) and not n.startswith("_")}


def test_cuda_is_registered_and_imports_without_a_gpu():
    backend = backends.get_backend("cuda")
    assert backend.name == "cuda" and "cuda" in backends.names()
    assert backend.unavailable_reason() is None
    assert backend.device_count() >= 0          # 0 on a machine without a GPU or driver, no exception


def test_unknown_backend_is_a_one_line_error():
    with pytest.raises(C3profError, match=r"unknown backend 'metal' \(available: cuda, hip, auto\)"):
        backends.get_backend("metal")


def test_unusable_backend_names_the_reason(monkeypatch):
    """SYNTHETIC backend module whose libraries are 'missing'."""
    fake = types.ModuleType("c3prof_test_fake_backend")

    class Missing:
        name = "fake"

        def unavailable_reason(self):
            return "libfake.so not found"

        def device_count(self):
            return 0

    fake.BACKEND = Missing()
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(backends, "REGISTRY", {"fake": fake.__name__, **backends.REGISTRY})
    with pytest.raises(C3profError, match="backend 'fake' is not usable here: libfake.so not found"):
        backends.get_backend("fake")
    # auto skips a backend that does not import and picks one that does.
    assert backends.default_name() == "cuda"


def test_cuda_backend_implements_the_interface():
    from c3prof.backends.cuda.backend import BACKEND
    from c3prof.backends.cuda.bench import CudaBench
    from c3prof.backends.cuda.collectives import DistributedCudaBench

    assert protocol_methods(base.Backend) <= set(dir(BACKEND))
    for bench in (CudaBench, DistributedCudaBench):
        missing = (protocol_methods(base.Bench) | protocol_methods(base.Counters)) - set(dir(bench))
        assert not missing, (bench.__name__, missing)


def test_capture_agreement_implements_the_agreement_interface():
    from c3prof.capture.agreement import Control

    assert protocol_methods(base.Agreement) <= set(dir(Control))


def test_capture_timer_offers_what_backends_use():
    from c3prof.capture.phases import PhaseTimer

    assert protocol_methods(base.PhaseTiming) <= set(dir(PhaseTimer))


def test_runtime_stubs_match_the_compiled_modules():
    """Every public name of each CUDA runtime extension module is in its .pyi stub and vice versa,
    and the package re-exports all of them (the modules import without a GPU)."""
    import ast
    import importlib
    from pathlib import Path

    from c3prof.backends.cuda import runtime

    folder = Path(runtime.__file__).parent
    exported = set()
    for stub in sorted(folder.glob("*.pyi")):
        module = importlib.import_module(f"c3prof.backends.cuda.runtime.{stub.stem}")
        tree = ast.parse(stub.read_text())
        stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        stubbed |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
        public = {n for n in vars(module) if not n.startswith("_") and getattr(vars(module)[n], "__module__", None)
                  == module.__name__} | ({"NO_GPU_ERRORS"} if stub.stem == "errors" else set())
        assert stubbed == public, (stub.name, stubbed ^ public)
        exported |= stubbed
    assert exported == set(runtime.__all__)
    assert sorted(p.stem for p in folder.glob("*.pyx")) == sorted(p.stem for p in folder.glob("*.pyi"))


def test_vendor_backends_do_not_import_each_other():
    """Backends are siblings (Triton proton's layout): what two share lives in c3prof/backends/ itself
    (torch_gemm, triton_copy, capacity, timing, base), so neither vendor's code imports the other's."""
    import ast
    from pathlib import Path

    root = Path(backends.__file__).parent
    vendors = sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert {"cuda", "hip"} <= set(vendors)
    crossings = []
    for vendor in vendors:
        for path in (root / vendor).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names] if isinstance(node, ast.Import) else []
                crossings += [f"{path.relative_to(root)} imports {n}" for n in names for other in vendors
                              if other != vendor and n.startswith(f"c3prof.backends.{other}")]
    assert not crossings, crossings


def test_torch_process_group_uses_the_vendor_library_only_with_device_collectives():
    """CUDA and HIP share init_torch_process_group: gloo without device collectives (torch is not
    even loaded), else the device made current and torch's "nccl" group (RCCL on ROCm) bound to it."""
    from datetime import timedelta

    calls = []
    dist = types.SimpleNamespace(init_process_group=lambda name, **kw: calls.append((name, kw)))
    cuda = types.SimpleNamespace(set_device=lambda d: calls.append(("set_device", d)))
    torch = types.SimpleNamespace(cuda=cuda, device=lambda kind, d: (kind, d))

    def no_torch():
        raise AssertionError("torch loaded for a gloo group")

    t = timedelta(seconds=5)
    base.init_torch_process_group(dist, no_torch, 3, t, device_collectives=False)
    assert calls == [("gloo", {"timeout": t})]
    calls.clear()
    base.init_torch_process_group(dist, lambda: torch, 3, t, device_collectives=True)
    assert calls == [("set_device", 3), ("nccl", {"timeout": t, "device_id": ("cuda", 3)})]
