"""GPU tests are marked `gpu` (and `multigpu`); they skip cleanly where there is no usable device."""

import functools

import pytest


@functools.cache
def cuda_device_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def pytest_collection_modifyitems(config, items):
    n = cuda_device_count()
    for item in items:
        if "gpu" in item.keywords and n < 1:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU and torch with CUDA"))
        if "multigpu" in item.keywords and n < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs >= 2 GPUs, {n} visible"))


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: the CLI fuzz suite (tests/test_fuzz_cli.py; about 10,000 cases)")
