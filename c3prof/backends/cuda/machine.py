"""The trace's machine record: what GPU, which software, what clocks."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from c3prof import __version__
from c3prof.backends.cuda import runtime as rt


def _version(dist: str):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_record(torch, nvml, device: int = 0) -> dict:
    props = rt.device_properties(device)
    least, greatest = rt.stream_priority_range()
    free_b, total_b = rt.mem_get_info()
    try:
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # torch built without NCCL
        nccl = None
    gpu = {**nvml.identity(), **props, "device_index": device, "torch_name": torch.cuda.get_device_name(device),
           "memory_free_bytes_at_start": free_b, "memory_total_bytes": total_b}
    return {
        "record": "machine",
        "gpu": gpu,
        "versions": {
            "c3prof": __version__,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cuda_runtime": rt.runtime_version(),
            "cuda_driver": rt.driver_version(),
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "nccl": nccl,
            "cublaslt_from_torch": torch.backends.cuda.preferred_blas_library().name
            if hasattr(torch.backends.cuda, "preferred_blas_library") else None,
            "triton": _version("triton"),
            "cuda_bindings": _version("cuda-bindings"),
            "nvidia_ml_py": _version("nvidia-ml-py"),
        },
        "stream_priority_range": [least, greatest],
        "settings": {"allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32)},
        "clocks_start": nvml.clocks(),
    }
