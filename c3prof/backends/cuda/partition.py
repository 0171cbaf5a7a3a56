"""SM partitioning with green contexts: the GEMM and the communication kernel on disjoint SM groups.

cuDevSmResourceSplitByCount carves a group of at least ``gemm_sms`` SMs (rounded up to the
hardware's granularity: 8 on H200) out of the device; the rest becomes the communication's
group. Each group gets a green context and a stream; kernels launched on a stream run only on
that group's SMs. The actual SM counts are read back and recorded in the trace.
"""

from __future__ import annotations

from c3prof.errors import C3profError


def _driver():
    from cuda.bindings import driver

    return driver


def _check(result, call: str):
    drv = _driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        raise C3profError(f"{call} failed: {name.decode() if isinstance(name, bytes) else name} ({int(err)})")
    return rest[0] if len(rest) == 1 else rest


class GreenPartition:
    def __init__(self, torch, gemm_sms: int, device: int = 0, gemm_priority: int = 0, comm_priority: int = 0,
                 want_comm_group: bool = True):
        from c3prof.backends.cuda.streams import make_stream

        drv = _driver()
        _check(drv.cuInit(0), "cuInit")
        dev = _check(drv.cuDeviceGet(device), "cuDeviceGet")
        sm_type = drv.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
        whole = _check(drv.cuDeviceGetDevResource(dev, sm_type), "cuDeviceGetDevResource(SM)")
        self.total_sms = int(whole.sm.smCount)
        groups, n_groups, remaining = _check(
            drv.cuDevSmResourceSplitByCount(1, whole, 0, gemm_sms), f"cuDevSmResourceSplitByCount(min {gemm_sms})")
        if n_groups < 1:
            raise C3profError(f"cannot carve a group of {gemm_sms} SMs out of {self.total_sms}")
        self.contexts = []
        self.gemm_sms = int(groups[0].sm.smCount)
        self.gemm_stream = make_stream(torch, label=f"gemm[{self.gemm_sms} SMs]", sms=self.gemm_sms,
                                       handle=self._stream(dev, groups[0], gemm_priority, "GEMM"))
        self.comm_sms = int(remaining.sm.smCount) if want_comm_group else None
        self.comm_stream = None
        if want_comm_group:
            if not self.comm_sms:
                raise C3profError(f"a GEMM group of {self.gemm_sms} SMs leaves none for communication")
            self.comm_stream = make_stream(torch, label=f"comm[{self.comm_sms} SMs]", sms=self.comm_sms,
                                           handle=self._stream(dev, remaining, comm_priority, "communication"))

    def _stream(self, dev, resource, priority: int, side: str) -> int:
        drv = _driver()
        desc = _check(drv.cuDevResourceGenerateDesc([resource], 1), f"cuDevResourceGenerateDesc({side})")
        ctx = _check(drv.cuGreenCtxCreate(desc, dev, drv.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM),
                     f"cuGreenCtxCreate({side})")
        self.contexts.append(ctx)
        stream = _check(drv.cuGreenCtxStreamCreate(ctx, drv.CUstream_flags.CU_STREAM_NON_BLOCKING, priority),
                        f"cuGreenCtxStreamCreate({side})")
        self._streams = getattr(self, "_streams", []) + [stream]
        return int(stream)

    def close(self) -> None:
        drv = _driver()
        for s in getattr(self, "_streams", []):
            drv.cuStreamDestroy(s)
        for ctx in self.contexts:
            drv.cuGreenCtxDestroy(ctx)
        self.contexts = []
        self._streams = []
