"""The kernel classification table: which class a GPU kernel belongs to, from its launching op and name.

Classes (``KernelClass``): ``gemm``, ``conv``, ``attention``, ``compute`` (every other kernel that
computes), ``collective``, plus the activity kinds ``transfer`` (memcpy) and ``memset`` that the
reader tells apart by category.

Evidence, strongest first (``classify_kernel``):

1. **The CPU op that launched the kernel** (``OP_RULES``): ``aten::mm``/``linear``/``_scaled_mm``...
   launch GEMMs, ``aten::convolution``/``cudnn_convolution``... convolutions,
   ``aten::_scaled_dot_product_flash_attention``... attention, ``nccl:*``/``c10d::*`` collectives.
   A helper kernel such an op also launches (a copy, a fill, an elementwise bias add, a layout
   transform: ``HELPER_KERNEL``) is ``compute``, not the op's class.
2. **The kernel name** (``NAME_RULES``), matched on its identifying part (``names.head``: demangled,
   without return type, parameters or template arguments, wrapper kernels by their first template
   argument), so a GEMM library named inside some other kernel's template arguments
   (``moe::finalizeKernel<cutlass::bfloat16_t>``, ``fbgemm``) does not make it a GEMM. The first
   matching rule wins; the order puts collectives, GEMM epilogues, FBGEMM and attention before
   convolutions, and convolutions (cuDNN's ``implicit_gemm``) before GEMMs.

A cuBLASLt epilogue or split-K reduction kernel is ``gemm`` with ``helper=True``: it belongs to the
GEMM its op launched (the analysis extends that GEMM instead of counting a GEMM of its own).

Each rule names its **family** (cuBLAS, CUTLASS, nvjet, hipBLASLt/Tensile, CK, cuDNN, MIOpen,
FBGEMM, Triton, flash-attention...), reported per kernel in the JSON. tests/test_ingest_classify.py
checks the table against real kernel names from public traces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from c3prof.ingest.names import bounded, head

GEMM = "gemm"
CONV = "conv"
ATTENTION = "attention"
COMPUTE = "compute"
COLLECTIVE = "collective"
TRANSFER = "transfer"
MEMSET = "memset"
CLASSES = (GEMM, CONV, ATTENTION, COMPUTE, COLLECTIVE, TRANSFER, MEMSET)


@dataclass(frozen=True)
class KernelClass:
    cls: str
    family: str
    helper: bool = False  # a GEMM epilogue / split-K reduction: part of its GEMM
    by: str = "name"  # "op" when the launching op decided, "name" otherwise


# Launching CPU ops -> class. Collectives are recognized by classify.is_comm_cpu_op.
GEMM_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::matmul", "aten::bmm", "aten::baddbmm",
    "aten::addbmm", "aten::linear", "aten::_scaled_mm", "aten::_grouped_mm", "aten::_scaled_grouped_mm",
    "aten::_int_mm", "aten::addmv", "aten::mv",
})
CONV_OPS = frozenset({
    "aten::convolution", "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::cudnn_convolution", "aten::cudnn_convolution_transpose", "aten::miopen_convolution",
    "aten::miopen_convolution_transpose", "aten::convolution_backward", "aten::conv_transpose2d",
    "aten::_convolution_double_backward", "aten::cudnn_convolution_relu", "aten::cudnn_convolution_add_relu",
})
ATTENTION_OP = re.compile(r"attention|flash_attn|_flash_|_efficient_attention|sdpa|paged_attention", re.I)

# Kernels an op launches around its main kernel(s): never the op's class.
HELPER_KERNEL = re.compile(
    r"elementwise|fill|copy|memcpy|memset|reduce_kernel|nchwToNhwc|nhwcToNchw|transpose|permute|"
    r"index_select|indexing|CatArray|tensorTransform|bn_fw|bn_bw|batch_?norm|softmax", re.I)

GEMM_HELPER = re.compile(r"epilogue::impl::globalKernel|splitKreduce|split_?k_?reduce|reduce_?split_?k|"
                         r"splitKReduction|cublasLt::.*reduce", re.I)

# (family, class, pattern on names.head) -- first match wins.
NAME_RULES: tuple[tuple[str, str, re.Pattern], ...] = tuple((f, c, re.compile(p, re.I)) for f, c, p in (
    ("NCCL/RCCL", COLLECTIVE, r"^(?:nccl|rccl|msccl)|ncclDevKernel|ncclKernel"),
    ("symmetric-memory collective", COLLECTIVE,
     r"multimem_all_reduce|multimem_all_gather|one_shot_all_reduce|two_shot_all_reduce|"
     r"cross_device_reduce|custom_all_?reduce|barrier_kernel"),
    ("FBGEMM", COMPUTE, r"fbgemm|split_embedding|embedding_(?:forward|backward)|permute_pooled|"
                        r"bounds_check_indices|jagged|batched_embedding"),
    ("MoE routing", COMPUTE, r"^moe::|finalize|topk|routing|expand_input|permut"),
    ("attention", ATTENTION, r"flash|fmha|attention|attn|sdpa|xformers|mha_(?:fwd|bwd)|paged_|"
                             r"decode_kernel|prefill|flashinfer|cudnn_generated_fort_native_sdpa"),
    ("cuDNN/MIOpen/CK convolution", CONV,
     r"conv(?!ert)|implicit_?gemm|implicit_convolve|scudnn|hcudnn|xmma_(?:fprop|dgrad|wgrad)|_fprop_|"
     r"dgrad|wgrad|igemm_|winograd|fft2d|fft_|cutlass_cudnn|cask_cudnn|miopen|naive_conv"),
    ("cuBLASLt epilogue / split-K", GEMM, GEMM_HELPER.pattern),
    ("nvjet (cuBLAS)", GEMM, r"^nvjet"),
    ("Tensile/hipBLASLt/rocBLAS", GEMM, r"^Cijk_|hipblaslt|rocblas.*gemm|^gemm_"),
    ("Triton matmul", GEMM, r"^triton_?(?:tem_)?.*(?:_mm|mm_|matmul|bmm|gemm)|^_?matmul_kernel|fused_moe_kernel"),
    ("MoE GEMM (trtllm-gen)", GEMM, r"^bmm_(?:MxE4m3|Bfloat16|E4m3|E2m1|Fp16|MxE2m1)"),
    ("CUTLASS", GEMM, r"cutlass.*(?:gemm|tensorop|wmma|GemmUniversal|sm\d+_)|GemmUniversal|gemm_kernel"),
    ("composable_kernel GEMM", GEMM, r"^ck::.*gemm|kernel_gemm"),
    ("cuBLAS", GEMM, r"gemm|xmma|wgmma|s16816|h16816|s1688|h1688|s884|h884|cublas|gemv|gemmk1|dot_kernel"),
    ("Triton", COMPUTE, r"^triton_"),
))


def classify_by_op(op_name: str, kernel_head: str) -> KernelClass | None:
    """The class the launching op gives a kernel (None: the op says nothing about it)."""
    if not op_name:
        return None
    if GEMM_HELPER.search(kernel_head) and op_name in GEMM_OPS:
        return KernelClass(GEMM, "cuBLASLt epilogue / split-K", helper=True, by="op")
    helper = bool(HELPER_KERNEL.search(kernel_head))
    if op_name in GEMM_OPS:
        return KernelClass(COMPUTE, "helper of a GEMM op", by="op") if helper else KernelClass(GEMM, op_name, by="op")
    if op_name in CONV_OPS:
        return KernelClass(COMPUTE, "helper of a convolution op", by="op") if helper else KernelClass(CONV, op_name, by="op")
    if ATTENTION_OP.search(op_name):
        return None if helper else KernelClass(ATTENTION, op_name, by="op")
    return None


@lru_cache(maxsize=65536)
def classify_name(name: str) -> KernelClass:
    """The class of a kernel from its name alone (``NAME_RULES``); ``compute`` when nothing matches."""
    h = head(bounded(name))
    for family, cls, pattern in NAME_RULES:
        if pattern.search(h):
            return KernelClass(cls, family, helper=cls == GEMM and family.startswith("cuBLASLt epilogue"))
    return KernelClass(COMPUTE, "other")


def classify_kernel(name: str, op_name: str = "", collective_op: bool = False) -> KernelClass:
    """The class of one kernel: its launching op first (``op_name``; ``collective_op`` when it is a
    NCCL/c10d op), then its name."""
    by_name = classify_name(name)
    if by_name.cls in (COLLECTIVE, CONV, ATTENTION):  # names that say it plainly win over the op
        return by_name
    if collective_op and not HELPER_KERNEL.search(head(bounded(name))):
        return KernelClass(COLLECTIVE, "launched by " + op_name, by="op")
    by_op = classify_by_op(op_name, head(bounded(name)))
    return by_op if by_op is not None else by_name
