"""Build c3prof's Cython extensions; the CUDA one against the CUDA runtime headers.

The CUDA runtime extensions (c3prof/backends/cuda/runtime/*.pyx) cimport ``cuda.bindings.cyruntime``:
calls go through cuda-bindings, which loads the CUDA runtime at run time, so nothing links against
libcudart and the module imports on a machine without a GPU or driver. Only the headers are needed to compile. They are looked up in
this order (the first directory that holds ``cuda_runtime_api.h`` wins):

1. ``C3PROF_CUDA_INCLUDE`` (an explicit override),
2. the ``nvidia-cuda-runtime`` wheel (``site-packages/nvidia/cu13/include``, a build requirement),
3. ``$CUDA_HOME/include``, ``$CUDA_PATH/include``, ``/usr/local/cuda/include``.

A directory counts only if it also holds ``crt/host_defines.h`` (from nvidia-cuda-crt).

The HIP runtime extensions (c3prof/backends/hip/runtime/*.pyx) cimport ``hip.chip``, the Cython
declarations of AMD's HIP Python bindings (the ``hip-python`` wheel), which likewise load libamdhip64
at run time. ``chip.pxd`` declares HIP's types with ``cdef extern from "hip/hip_runtime.h"`` and
defines structs that embed them, so compiling needs HIP headers of the same HIP version as the
bindings (the library is not needed). They are looked up in this order (first with
``hip/hip_runtime.h`` wins):

1. ``C3PROF_HIP_INCLUDE``,
2. ``$ROCM_PATH/include``, ``$ROCM_HOME/include``, ``$HIP_PATH/include``, ``/opt/rocm/include``,
3. the ``triton`` wheel's AMD backend (``site-packages/triton/backends/amd/include``: triton 3.9
   carries the HIP 7.1 headers, matching ``hip-python==7.1.*``; a build requirement in CI).

``C3PROF_BUILD_HIP`` decides: ``1`` builds them and fails if the bindings or headers are missing
(CI sets it; build_backend/c3prof_build.py then adds hip-python and triton to the build
requirements); ``0`` skips them; unset builds them only when both are there and otherwise says why
it skipped them (an NVIDIA node has neither, and the build must not fail there).
"""

import os
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Cythonize and compile the (8-14) extensions in parallel: one at a time, the C++ compiles were most
# of a fresh `scripts/setup.sh` on a GPU node.
JOBS = os.cpu_count() or 1


class ParallelBuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:            # not given as --parallel/-j
            self.parallel = JOBS

CUDA_RUNTIME_MODULES = ("errors", "device", "streams", "memory", "copies", "ipc")
HIP_RUNTIME_MODULES = ("errors", "device", "streams", "memory", "copies", "ipc")


def _wheel_include_dirs():
    # nvidia-cuda-runtime and nvidia-cuda-crt install into site-packages/nvidia/cu13/include.
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}
    for root in sorted(r for r in roots if r):
        for sub in ("nvidia/cu13/include", "nvidia/cuda_runtime/include"):
            yield Path(root) / sub


def cuda_include_dir() -> str:
    candidates = []
    if os.environ.get("C3PROF_CUDA_INCLUDE"):
        candidates.append(Path(os.environ["C3PROF_CUDA_INCLUDE"]))
    candidates.extend(_wheel_include_dirs())
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for path in candidates:
        # Both the runtime headers and the crt ones they include must be there (a wheel-only
        # environment may have nvidia-cuda-runtime without nvidia-cuda-crt).
        if (path / "cuda_runtime_api.h").is_file() and (path / "crt" / "host_defines.h").is_file():
            return str(path)
    sys.exit(
        "c3prof build: CUDA runtime headers (cuda_runtime_api.h) not found. Install the wheels "
        "'nvidia-cuda-runtime==13.0.*' and 'nvidia-cuda-crt==13.0.*', or set C3PROF_CUDA_INCLUDE."
    )


def _site_dirs():
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}
    return [Path(r) for r in sorted(roots) if r]


def _hip_include_dirs():
    if os.environ.get("C3PROF_HIP_INCLUDE"):
        yield Path(os.environ["C3PROF_HIP_INCLUDE"])
    for var in ("ROCM_PATH", "ROCM_HOME", "HIP_PATH"):
        if os.environ.get(var):
            yield Path(os.environ[var]) / "include"
    yield Path("/opt/rocm/include")
    for root in _site_dirs():
        yield root / "triton" / "backends" / "amd" / "include"


def _hip_missing() -> str | None:
    """Why the HIP extensions cannot be built here, or None. Looks for files only: importing the
    bindings is not needed to compile against them."""
    if not any((root / "hip" / "chip.pxd").is_file() for root in _site_dirs()):
        return "AMD's HIP Python bindings are not installed (pip install 'hip-python==7.1.*')"
    if hip_include_dir() is None:
        return ("the HIP headers (hip/hip_runtime.h) are not found: set C3PROF_HIP_INCLUDE or ROCM_PATH, "
                "or install ROCm, or the triton wheel that carries them (pip install 'triton==3.9.*')")
    return None


def hip_include_dir() -> str | None:
    for path in _hip_include_dirs():
        if (path / "hip" / "hip_runtime.h").is_file():
            return str(path)
    return None


def hip_extensions() -> list:
    """The HIP runtime extensions, or [] when C3PROF_BUILD_HIP says not to or they cannot be built."""
    wanted = os.environ.get("C3PROF_BUILD_HIP", "")
    if wanted == "0":
        return []
    missing = _hip_missing()
    if missing:
        if wanted == "1":
            sys.exit(f"c3prof build: C3PROF_BUILD_HIP=1 but {missing}")
        print(f"c3prof build: skipping the HIP backend's extensions: {missing}")
        return []
    include = hip_include_dir()
    print(f"c3prof build: HIP headers from {include}")
    return [
        Extension(
            f"c3prof.backends.hip.runtime.{name}",
            sources=[f"c3prof/backends/hip/runtime/{name}.pyx"],
            include_dirs=[include],
            # Host-only compilation of the HIP headers with the system compiler (as hip-python does).
            define_macros=[("__HIP_PLATFORM_AMD__", "1")],
            language="c++",
            extra_compile_args=["-O2"],
        )
        for name in HIP_RUNTIME_MODULES
    ]


def cythonize_hip(cythonize) -> list:
    """The HIP extensions, cythonized; in the automatic mode a Cython error skips them (said once)."""
    hip = hip_extensions()
    if not hip:
        return []
    required = os.environ.get("C3PROF_BUILD_HIP") == "1"
    try:
        built = cythonize(hip, language_level=3, nthreads=JOBS, compiler_directives={"embedsignature": True})
    except Exception as exc:  # Cython's CompileError: bindings that do not match these sources
        if required:
            raise
        print(f"c3prof build: skipping the HIP backend's extensions: Cython failed on them ({exc})")
        return []
    for ext in built:
        # Unless asked for, a compiler error (bindings and headers of different HIP versions) skips
        # the HIP extensions instead of failing the whole build (setuptools' optional extensions).
        ext.optional = not required
    return built


def extensions():
    from Cython.Build import cythonize

    include = cuda_include_dir()
    print(f"c3prof build: CUDA headers from {include}")
    # The CUDA runtime package: one thin module per concept (c3prof/backends/cuda/runtime/__init__.py).
    cuda_modules = [
        Extension(
            f"c3prof.backends.cuda.runtime.{name}",
            sources=[f"c3prof/backends/cuda/runtime/{name}.pyx"],
            include_dirs=[include],
            # cuda-bindings' generated declarations need C++ (<type_traits>) from 13.x on.
            language="c++",
            extra_compile_args=["-O2"],
        )
        for name in CUDA_RUNTIME_MODULES
    ]
    # The Kineto trace scanner of `c3prof ingest`: plain C++ (vectors), no CUDA headers.
    kineto = Extension(
        "c3prof.ingest._kineto",
        sources=["c3prof/ingest/_kineto.pyx"],
        language="c++",
        extra_compile_args=["-O3"],
    )
    # The report's bootstrap kernels (c3prof/analysis/_bootstrap.pyx): plain C++. No fused multiply-add,
    # whose rounding would differ from the numpy code they reproduce bit for bit. -pthread: they share
    # independent rows over std::threads (glibc before 2.34 keeps those in libpthread).
    bootstrap = Extension(
        "c3prof.analysis._bootstrap",
        sources=["c3prof/analysis/_bootstrap.pyx"],
        language="c++",
        extra_compile_args=["-O3", "-ffp-contract=off", "-pthread"],
        extra_link_args=["-pthread"],
    )
    # The report JSON writer's check for NaN and infinity (c3prof/report/_finite.pyx): plain C.
    finite = Extension("c3prof.report._finite", sources=["c3prof/report/_finite.pyx"], extra_compile_args=["-O2"])
    # The trace reader's text scan and sample columns (c3prof/_trace_read.pyx): plain C++ (vectors).
    trace_read = Extension("c3prof._trace_read", sources=["c3prof/_trace_read.pyx"], language="c++",
                           extra_compile_args=["-O2"])
    return cythonize([*cuda_modules, kineto, bootstrap, finite, trace_read], language_level=3, nthreads=JOBS,
                     compiler_directives={"embedsignature": True}) + cythonize_hip(cythonize)


setup(ext_modules=extensions(), cmdclass={"build_ext": ParallelBuildExt})
