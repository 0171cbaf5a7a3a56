"""Build c3prof's Cython extensions; the CUDA one against the CUDA runtime headers.

The CUDA runtime extensions (c3prof/backends/cuda/runtime/*.pyx) cimport ``cuda.bindings.cyruntime``:
calls go through cuda-bindings, which loads the CUDA runtime at run time, so nothing links against
libcudart and the module imports on a machine without a GPU or driver. Only the headers are needed to compile. They are looked up in
this order (the first directory that holds ``cuda_runtime_api.h`` wins):

1. ``C3PROF_CUDA_INCLUDE`` (an explicit override),
2. the ``nvidia-cuda-runtime`` wheel (``site-packages/nvidia/cu13/include``, a build requirement),
3. ``$CUDA_HOME/include``, ``$CUDA_PATH/include``, ``/usr/local/cuda/include``.

A directory counts only if it also holds ``crt/host_defines.h`` (from nvidia-cuda-crt).
"""

import os
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup

CUDA_RUNTIME_MODULES = ("errors", "device", "streams", "memory", "copies", "ipc")


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
    return cythonize([*cuda_modules, kineto], language_level=3, compiler_directives={"embedsignature": True})


setup(ext_modules=extensions())
