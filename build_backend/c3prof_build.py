"""c3prof's build backend: setuptools', plus AMD's HIP bindings and headers when asked.

The HIP runtime extensions cimport ``hip.chip``, so building them needs the ``hip-python`` wheel in
the (isolated) build environment, and HIP headers of the same HIP version (setup.py says where it
looks; without ROCm, the triton wheel carries them). These cannot be fixed build requirements:
NVIDIA machines do not need them, and nodes without a package registry do not have them. With
``C3PROF_BUILD_HIP=1`` (CI sets it) this backend adds them; otherwise the requirements are
setuptools' own and setup.py builds the HIP extensions only if bindings and headers happen to be there.
"""

import contextlib
import os

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403  (every hook setuptools defines)

# hip-python must be the version the `hip` extra installs (pyproject.toml); triton 3.9 carries the
# HIP 7.1 headers that hip-python 7.1's declarations were generated from.
HIP_BUILD_REQUIRES = ["hip-python==7.1.*", "triton==3.9.*"]


def _hip() -> list[str]:
    return HIP_BUILD_REQUIRES if os.environ.get("C3PROF_BUILD_HIP") == "1" else []


@contextlib.contextmanager
def _hip_off():
    # setuptools runs setup.py to list requirements, before the ones added here are installed:
    # setup.py must not insist on the HIP bindings during that run.
    saved = os.environ.get("C3PROF_BUILD_HIP")
    os.environ["C3PROF_BUILD_HIP"] = "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["C3PROF_BUILD_HIP"]
        else:
            os.environ["C3PROF_BUILD_HIP"] = saved


def get_requires_for_build_wheel(config_settings=None):
    hip = _hip()
    with _hip_off():
        return _orig.get_requires_for_build_wheel(config_settings) + hip


def get_requires_for_build_editable(config_settings=None):
    hip = _hip()
    with _hip_off():
        return _orig.get_requires_for_build_editable(config_settings) + hip


def get_requires_for_build_sdist(config_settings=None):
    with _hip_off():
        return _orig.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory, config_settings=None):
    # An sdist ships sources only: nothing is compiled, so the HIP bindings are not needed for it.
    with _hip_off():
        return _orig.build_sdist(sdist_directory, config_settings)
