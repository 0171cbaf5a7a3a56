"""Packaging: metadata, extras and what the installed wheel carries.

CI (.ci/run) builds the sdist, installs it into a fresh venv and runs these tests against that
installation, so the wheel checks below run on a wheel built from the sdist. In an editable
install (scripts/setup.sh) the installed-files check is skipped: there is no wheel to inspect.
"""

import importlib.metadata as md
import os
import tomllib
from pathlib import Path

import pytest

import c3prof

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CUDA_ONLY = ("cuda-bindings", "torch", "nvidia-ml-py", "triton")


def _name(requirement: str) -> str:
    return requirement.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()


def test_report_and_ingest_need_no_cuda_package():
    base = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert base == {"numpy", "scipy", "matplotlib", "rich"}
    assert not base & set(CUDA_ONLY)


def test_capture_extra_pins_the_cuda_bindings_the_extension_is_built_against():
    build = [r for r in PYPROJECT["build-system"]["requires"] if _name(r) == "cuda-bindings"]
    for extra in ("capture", "dev"):   # dev: the GPU-free tests import the extension
        run = [r for r in PYPROJECT["project"]["optional-dependencies"][extra] if _name(r) == "cuda-bindings"]
        assert build and build == run, extra
    assert {"torch", "nvidia-ml-py"} <= {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["capture"]}


def test_hip_extra_pins_the_bindings_the_build_adds():
    import importlib.util

    spec = importlib.util.spec_from_file_location("c3prof_build", ROOT / "build_backend" / "c3prof_build.py")
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    build = [r for r in backend.HIP_BUILD_REQUIRES if _name(r) == "hip-python"]
    run = [r for r in PYPROJECT["project"]["optional-dependencies"]["hip"] if _name(r) == "hip-python"]
    assert build and build == run
    assert PYPROJECT["build-system"]["build-backend"] == "c3prof_build"


def test_extras_exist():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {_name(r) for r in extras["dev"]} >= {"pytest", "hypothesis", "ruff", "mypy", "build"}
    assert {_name(r) for r in extras["bench"]} == {"holistictraceanalysis"}


def test_one_version_and_a_license_file():
    assert md.version("c3prof") == c3prof.__version__
    assert "version" in PYPROJECT["project"]["dynamic"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert PYPROJECT["project"]["license"] == "Apache-2.0"


def test_installed_wheel_carries_cython_sources_not_generated_cpp():
    if Path(c3prof.__file__).resolve().is_relative_to(ROOT):
        pytest.skip("c3prof is imported from this source tree (editable install): no wheel to inspect; "
                    "CI checks the wheel built from the sdist")
    # The distribution installed where c3prof was imported from (not a c3prof.egg-info that another
    # test's sys.path entry may expose, e.g. in an unpacked sdist).
    site = str(Path(c3prof.__file__).resolve().parents[1])
    dist = next(d for d in md.distributions(path=[site]) if d.metadata["Name"] == "c3prof")
    files = [str(f) for f in dist.files or []]
    assert not [f for f in files if f.endswith((".cpp", ".c"))], "generated C/C++ in the wheel"
    for source in ("c3prof/backends/cuda/runtime/streams.pyx", "c3prof/backends/cuda/runtime/streams.pyi",
                   "c3prof/backends/cuda/runtime/streams.pxd", "c3prof/ingest/_kineto.pyx",
                   "c3prof/analysis/_bootstrap.pyx", "c3prof/py.typed"):
        assert source in files, source
    assert any(f.endswith(".so") and "_kineto" in f for f in files)
    assert any(f.endswith(".so") and "analysis/_bootstrap" in f for f in files)
    assert "c3prof/backends/hip/runtime/streams.pyx" in files
    if os.environ.get("C3PROF_BUILD_HIP") == "1":      # CI: the AMD backend's extensions are in the wheel
        assert any(f.endswith(".so") and "backends/hip/runtime/streams" in f for f in files)
