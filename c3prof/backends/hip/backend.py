"""The AMD backend object the registry hands to capture (see c3prof/backends/base.py).

Importing this module loads nothing from ROCm: the runtime extension and torch are imported by the
methods that need them, so ``c3prof capture --backend hip`` on a machine without them fails with
one line naming what is missing (the extension not built, ROCm's libamdhip64 not loadable, no GPU,
torch not a ROCm build).
"""

from __future__ import annotations

import os
from datetime import timedelta

from c3prof.backends.base import init_torch_process_group, isolated_visible_devices
from c3prof.errors import C3profError


class HipBackend:
    name = "hip"

    def unavailable_reason(self) -> str | None:
        """None where the extension imports and ROCm's libamdhip64 loads (with or without a device):
        without ROCm the backend is unusable, so ``--backend auto`` passes over it."""
        from c3prof.backends.hip.device import load_runtime, runtime_library_missing

        try:
            rt = load_runtime()
        except C3profError as exc:
            return str(exc)
        return runtime_library_missing(rt)

    def prepare_environment(self) -> None:
        from c3prof.backends.hip.device import hip_env_defaults

        hip_env_defaults()

    def device_count(self) -> int:
        from c3prof.backends.hip.device import load_runtime

        rt = load_runtime()
        try:
            return rt.device_count()
        except RuntimeError:     # HipError (no device, no driver)
            return 0

    def open_bench(self, device: int, seed: int, make_timer):
        from c3prof.backends.hip.bench import HipBench

        return HipBench(make_timer=make_timer, device=device, seed=seed)

    def init_process_group(self, dist, device: int, timeout: timedelta, device_collectives: bool) -> None:
        """torch.distributed's "nccl" backend is RCCL on a ROCm build of torch."""
        from c3prof.backends.hip.device import require_torch

        init_torch_process_group(dist, require_torch, device, timeout, device_collectives)

    def isolate_device(self, local_rank: int, share_gpu: bool) -> str:
        """Show this process only its own GPU (HIP_VISIBLE_DEVICES), before HIP initializes."""
        from c3prof.backends.hip.device import node_gpu_count

        value = isolated_visible_devices(local_rank, os.environ.get("HIP_VISIBLE_DEVICES"), node_gpu_count(),
                                         share_gpu, "HIP_VISIBLE_DEVICES")
        os.environ["HIP_VISIBLE_DEVICES"] = value
        return value

    def open_distributed_bench(self, device: int, seed: int, make_timer, agreement, timeout: timedelta, options):
        raise C3profError("multi-GPU capture is not available on the hip backend yet: its IPC DMA collective "
                          "(c3prof/backends/hip/dma_collective.py) is not wired into a distributed bench "
                          "(docs/backends.md); capture single-GPU scenarios, or use --backend cuda")


BACKEND = HipBackend()
