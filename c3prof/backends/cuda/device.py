"""Is there a usable GPU, and does a scenario fit in it? Checked before anything is allocated."""

from __future__ import annotations

import os

from c3prof.backends.base import EXAMPLE_TRACE, isolated_visible_devices
from c3prof.errors import C3profError, NoGPUError

NO_GPU_HINT = (f"c3prof capture needs an NVIDIA GPU; without one, analyze a recorded trace: "
               f"`c3prof report {EXAMPLE_TRACE} --figures out/figures`")


def require_gpus(count: int = 1) -> int:
    """Return the number of visible GPUs, or raise NoGPUError with a one-line explanation."""
    from c3prof.backends.cuda import runtime as rt

    try:
        n = rt.device_count()
    except rt.CudaError as exc:
        if exc.code in rt.NO_GPU_ERRORS:
            raise NoGPUError(f"no usable GPU ({exc.name}). {NO_GPU_HINT}") from None
        raise NoGPUError(f"cannot query GPUs: {exc}. {NO_GPU_HINT}") from None
    if n == 0:
        raise NoGPUError(f"no GPU visible. {NO_GPU_HINT}")
    if n < count:
        raise NoGPUError(f"this capture needs {count} GPUs but {n} are visible")
    return n


def require_torch():
    """Import torch with CUDA, or explain how to get it."""
    try:
        import torch
    except ImportError:
        raise C3profError("c3prof capture needs PyTorch: pip install 'c3prof[capture]'") from None
    if not torch.cuda.is_available():
        raise NoGPUError(f"torch {torch.__version__} sees no CUDA device (a CPU-only build?). {NO_GPU_HINT}")
    return torch


def cuda_env_defaults() -> None:
    """Keep NVLink multicast off in every process c3prof starts (shared machines; see README)."""
    for key, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                       ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(key, value)


def node_gpu_count() -> int:
    """GPUs on this node without initializing CUDA (which would fix the visible set) and whatever
    CUDA_VISIBLE_DEVICES says: NVML, else the driver's /proc entries; 0 if unknown."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        pass
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def isolate_device(local_rank: int, share_gpu: bool) -> str:
    """Set CUDA_VISIBLE_DEVICES to this rank's GPU only (before CUDA initializes); returns it."""
    value = isolated_visible_devices(local_rank, os.environ.get("CUDA_VISIBLE_DEVICES"), node_gpu_count(), share_gpu,
                                     "CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = value
    return value
