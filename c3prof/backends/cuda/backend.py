"""The NVIDIA backend object the registry hands to capture (see c3prof/backends/base.py).

Importing this module loads nothing from CUDA: the runtime extension, torch and NVML are imported
by the methods that need them, so ``c3prof capture --backend cuda`` on a machine without them
fails with one line instead of an ImportError.
"""

from __future__ import annotations

from datetime import timedelta

from c3prof.backends.base import init_torch_process_group


class CudaBackend:
    name = "cuda"

    def unavailable_reason(self) -> str | None:
        try:
            from c3prof.backends.cuda import runtime  # noqa: F401
        except ImportError as exc:
            from c3prof.extras import missing_extra_message

            # cuda-bindings not installed: name the extra that provides it (c3prof.extras).
            missing = missing_extra_message(exc) if isinstance(exc, ModuleNotFoundError) else None
            return missing or (f"the CUDA runtime extension does not import ({exc}); reinstall c3prof "
                               f"(bash scripts/setup.sh capture)")
        return None

    def prepare_environment(self) -> None:
        from c3prof.backends.cuda.device import cuda_env_defaults

        cuda_env_defaults()

    def device_count(self) -> int:
        from c3prof.backends.cuda import runtime as rt

        try:
            return rt.device_count()
        except rt.CudaError:
            return 0

    def open_bench(self, device: int, seed: int, make_timer):
        from c3prof.backends.cuda.bench import CudaBench

        return CudaBench(device=device, seed=seed, make_timer=make_timer)

    def init_process_group(self, dist, device: int, timeout: timedelta, device_collectives: bool) -> None:
        from c3prof.backends.cuda.device import require_torch

        init_torch_process_group(dist, require_torch, device, timeout, device_collectives)

    def open_distributed_bench(self, device: int, seed: int, make_timer, agreement, timeout: timedelta, options):
        from c3prof.backends.cuda.collectives import DistributedCudaBench

        return DistributedCudaBench(device=device, seed=seed, make_timer=make_timer, ctrl=agreement,
                                    nccl=not options.share_gpu, timeout=timeout, dma_api=options.dma_api,
                                    dma_chunks=options.dma_chunks, dma_streams=options.dma_streams,
                                    inplace=not options.out_of_place, deadline_s=options.collective_timeout,
                                    dma_local=options.dma_local, shares_gpu=options.shares_gpu)

    def isolate_device(self, local_rank: int, share_gpu: bool) -> str:
        """Show this process only its own GPU (CUDA_VISIBLE_DEVICES), before CUDA initializes."""
        from c3prof.backends.cuda.device import isolate_device

        return isolate_device(local_rank, share_gpu)


BACKEND = CudaBackend()
