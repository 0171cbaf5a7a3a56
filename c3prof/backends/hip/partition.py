"""CU partitions with CU masks: the GEMM and the communication on disjoint, XCD-balanced CU groups.

The AMD counterpart of green contexts (c3prof/backends/cuda/partition.py): each group gets a stream
created with hipExtStreamCreateWithCUMask; kernels launched on it run only on the group's CUs. The
masks come from cu_masks.split; the mask the runtime actually applied is read back
(hipExtStreamGetCUMask) and must equal the request, so the CU counts recorded in the trace are the
granted ones. Unlike a green context, a CU-masked stream cannot also have a priority.
"""

from __future__ import annotations

from c3prof.backends.hip import cu_masks
from c3prof.backends.hip.streams import make_stream
from c3prof.errors import C3profError


class CuMaskPartition:
    def __init__(self, rt, torch, gemm_cus: int, cu_count: int, want_comm_group: bool = True):
        self.geometry = cu_masks.geometry_for(cu_count)
        self.split = cu_masks.split(gemm_cus, self.geometry)
        self.gemm_cus = len(self.split.gemm_cus)
        self.comm_cus = len(self.split.comm_cus) if want_comm_group else None
        self.gemm_stream = self._stream(rt, torch, self.split.gemm_mask, self.gemm_cus, "gemm")
        self.comm_stream = None
        if want_comm_group:
            self.comm_stream = self._stream(rt, torch, self.split.comm_mask, len(self.split.comm_cus), "comm")

    def _stream(self, rt, torch, mask: list[int], cus: int, side: str):
        s = make_stream(rt, torch, label=f"{side}[{cus} CUs]", cu_mask=mask, cus=cus)
        applied = list(s.dma.granted_cu_mask(len(mask)))
        if applied != mask:
            s.dma.close()
            raise C3profError(f"the runtime applied a different CU mask to the {side} stream than asked "
                              f"(asked {[hex(w) for w in mask]}, got {[hex(w) for w in applied]})")
        return s

    def params(self) -> dict:
        """The trace's record of the partition: granted CU counts and their spread over XCDs."""
        return {"gemm_cus": self.gemm_cus, "comm_cus": self.comm_cus, "xcds": self.geometry.xcds,
                "gemm_cus_per_xcd": cu_masks.per_xcd(self.split.gemm_cus, self.geometry)}

    def close(self) -> None:
        for s in (self.gemm_stream, self.comm_stream):
            if s is not None:
                s.dma.close()
