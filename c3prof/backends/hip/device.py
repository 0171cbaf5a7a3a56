"""Is the HIP runtime here, is there a usable AMD GPU, and the process environment a capture needs."""

from __future__ import annotations

import os

from c3prof.backends.base import EXAMPLE_TRACE
from c3prof.errors import C3profError, NoGPUError

NO_GPU_HINT = ("c3prof capture --backend hip needs an AMD GPU with ROCm; without one, analyze a recorded trace: "
               f"`c3prof report {EXAMPLE_TRACE}`")

# Set (when not already set) before the HIP runtime loads. HSA_ENABLE_SDMA=1 lets hipMemcpy* use the
# SDMA copy engines (0 would turn every copy into a blit kernel on the CUs, the opposite of the dma
# strategy); it is ROCm's default, set here so a stray setting in the shell shows up in the trace
# (the machine record keeps the environment). HSA_FORCE_FINE_GRAIN_PCIE=1 lets peer and host
# memory be accessed at fine grain over XGMI/PCIe, which RCCL recommends. NCCL_* limits apply to
# RCCL, which reads the NCCL names.
HIP_ENV_DEFAULTS = {"HSA_ENABLE_SDMA": "1", "HSA_FORCE_FINE_GRAIN_PCIE": "1"}
# The settings recorded in the machine record: what decides which engine copies and how RCCL runs.
RECORDED_ENV = ("HSA_ENABLE_SDMA", "HSA_FORCE_FINE_GRAIN_PCIE", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                "HSA_CU_MASK", "ROC_GLOBAL_CU_MASK", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_CTAS",
                "NCCL_MIN_CTAS", "RCCL_MSCCL_ENABLE", "NCCL_PROTO", "NCCL_ALGO")


def hip_env_defaults(environ=os.environ) -> None:
    for key, value in HIP_ENV_DEFAULTS.items():
        environ.setdefault(key, value)


def recorded_env(environ=os.environ) -> dict:
    return {k: environ[k] for k in RECORDED_ENV if k in environ}


def load_runtime():
    """The HIP runtime extension (c3prof.backends.hip.runtime), or a one-line C3profError saying what
    is missing: the extension was not built (no HIP bindings or headers at build time)."""
    try:
        from c3prof.backends.hip import runtime
    except ImportError as exc:
        raise C3profError(f"the HIP runtime extension is not built in this installation ({exc}); build it "
                          "with AMD's HIP bindings and headers: C3PROF_BUILD_HIP=1 pip install '.[hip]' "
                          "(docs/backends.md)") from None
    return runtime


def runtime_library_missing(rt) -> str | None:
    """Why ROCm's HIP runtime library cannot be used here (not installed), or None. Any HIP status
    (a device or none) means the library loaded."""
    try:
        rt.device_count()
    except rt.HipError:
        return None
    except RuntimeError as exc:
        # hip-python raises RuntimeError("failed to dlopen ... libamdhip64.so ...") without ROCm.
        return f"ROCm's HIP runtime library is not loadable here ({exc}); install ROCm (docs/backends.md)"
    return None


def require_gpus(rt, count: int = 1) -> int:
    """The number of visible AMD GPUs, or NoGPUError with a one-line reason (no ROCm library, no
    device, too few devices)."""
    try:
        n = rt.device_count()
    except rt.HipError as exc:
        if exc.code in rt.NO_GPU_ERRORS:
            raise NoGPUError(f"no usable AMD GPU ({exc.name}). {NO_GPU_HINT}") from None
        raise NoGPUError(f"cannot query AMD GPUs: {exc}. {NO_GPU_HINT}") from None
    except RuntimeError as exc:
        # hip-python raises RuntimeError("failed to dlopen ... libamdhip64.so ...") without ROCm.
        raise NoGPUError(f"ROCm's HIP runtime library is not loadable here ({exc}). {NO_GPU_HINT}") from None
    if n == 0:
        raise NoGPUError(f"no AMD GPU visible. {NO_GPU_HINT}")
    if n < count:
        raise NoGPUError(f"this capture needs {count} GPUs but {n} are visible")
    return n


def require_torch():
    """torch built for ROCm (torch.version.hip set), or a one-line error saying how to get it."""
    try:
        import torch
    except ImportError:
        raise C3profError("c3prof capture --backend hip needs PyTorch for ROCm (docs/backends.md)") from None
    if getattr(torch.version, "hip", None) is None:
        raise C3profError(f"torch {torch.__version__} is not a ROCm build (torch.version.hip is None): "
                          "install PyTorch for ROCm (docs/backends.md)")
    if not torch.cuda.is_available():
        raise NoGPUError(f"torch {torch.__version__} sees no AMD GPU. {NO_GPU_HINT}")
    return torch


KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"


def node_gpu_count(nodes_dir: str = KFD_NODES) -> int:
    """GPUs on this node without initializing HIP (which would fix the visible set): the amdkfd
    topology nodes with SIMDs (CPU nodes have none); 0 where there is no amdkfd driver."""
    try:
        names = os.listdir(nodes_dir)
    except OSError:
        return 0
    count = 0
    for name in names:
        try:
            with open(os.path.join(nodes_dir, name, "properties")) as f:
                props = dict(line.split(None, 1) for line in f if len(line.split()) == 2)
        except OSError:
            continue
        count += int(props.get("simd_count", "0").strip() or 0) > 0
    return count
