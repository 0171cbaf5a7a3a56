"""The runtime settings that apply a recommendation, for PyTorch, NCCL, cuBLASLt and CUDA users.

Each setting says what it does and where it applies; names and semantics follow the vendors'
documentation (NCCL user guide: environment variables, ncclConfig_t, CTA policy flags; cuBLASLt:
cublasLtMatmulDescAttributes_t; CUDA runtime: stream priorities, green contexts; PyTorch:
torch.cuda.Stream, torch.cuda.green_contexts). c3prof measured the strategy with its own kernels
(an SM copy kernel, cudaMemcpyAsync, green contexts); these are the closest knobs a training or
serving stack has, and a setting is only as good as the measurement it stands for.
"""

from __future__ import annotations

PRIORITY = ("torch.cuda.Stream(priority=-1) for the {side} (lower is higher priority; PyTorch clamps to the "
            "device's range, CUDA's is 0 to -5 on an H200) and launch the {side} first. CUDA documents "
            "priority as a scheduling hint: it does not preempt running work, and it affects kernels only, "
            "not copies (cudaStreamCreateWithPriority)")
NCCL_PRIORITY = ("NCCL collectives: ProcessGroupNCCL.Options(is_high_priority_stream=True) gives the "
                 "communicator a high-priority stream")
COPY_ENGINE = ("Transfers: move the bytes with cudaMemcpyAsync between pinned host memory and the device "
               "(in PyTorch tensor.to(device, non_blocking=True) or .copy_(..., non_blocking=True) from pinned "
               "memory): the copy engines carry them and no SM is taken from the GEMM")
NCCL_CE = ("NCCL collectives (NCCL >= 2.28): a communicator with CTA policy NCCL_CTA_POLICY_ZERO "
           "(ncclConfig_t.CTAPolicy; in PyTorch ProcessGroupNCCL.Options().config.cta_policy) and buffers "
           "registered as symmetric windows (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC; in PyTorch "
           "torch.distributed._symmetric_memory with the NCCL backend): NCCL then uses copy engines where it can")
GREEN_CONTEXT = ("Hard SM partition: CUDA green contexts (cuDevSmResourceSplitByCount + cuGreenCtxCreate, CUDA "
                 ">= 12.4; in PyTorch torch.cuda.green_contexts.GreenContext.create(num_sms={g}), beta) with {g} SMs "
                 "for the GEMM's stream and the other {c} for the communication")
SM_TARGET = ("Soft alternative: tell cuBLASLt to plan for {g} SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = {g}; in "
             "PyTorch torch._C._set_sm_carveout_experimental({c}), private and experimental, which sets that "
             "target to the SM count minus {c} for cuBLASLt matmuls). It guides the kernel choice; it does not "
             "fence SMs off")
CTA_LIMIT = ("NCCL collectives: NCCL_MIN_CTAS / NCCL_MAX_CTAS = {n} (environment, NCCL >= 2.17) or ncclConfig_t "
             "minCTAs / maxCTAs (in PyTorch ProcessGroupNCCL.Options().config.max_ctas) cap the communication "
             "at {n} CTAs; c3prof measured its SM copy kernel limited to {n} CTAs")

TRANSFER_CTA_LIMIT = ("Transfers carried by SMs: launch the copy kernel with {n} CTAs (a grid-stride copy; "
                      "c3prof measured its SM copy kernel limited to {n} CTAs)")

DEFAULT_SMS = 132   # an H200's SMs: the split's other side when the captures do not say


def settings_for(key: str, params: dict, sm_count: int = DEFAULT_SMS, op: str | None = None) -> list[str]:
    """The settings that apply candidate ``key`` (strategy/variant) whose plan parameters are ``params``.

    ``op`` is the scenario's communication: a ``transfer`` gets only what applies to copies (no NCCL
    setting); a collective, or an unknown op, gets the NCCL ones too."""
    if op == "transfer" and key.startswith("rp/") and params.get("comm_ctas"):
        return [TRANSFER_CTA_LIMIT.format(n=params["comm_ctas"])]
    out = _settings(key, params, sm_count)
    return [s for s in out if not s.startswith("NCCL")] if op == "transfer" else out


def _settings(key: str, params: dict, sm_count: int) -> list[str]:
    strategy = key.split("/", 1)[0]
    if strategy == "base":
        return ["Nothing to set: GEMM and communication on two default-priority streams, GEMM launched first"]
    if strategy == "sp":
        side = "communication" if params.get("order") == "comm_first" else "GEMM"
        out = [PRIORITY.format(side=side)]
        return out + [NCCL_PRIORITY] if side == "communication" else out
    if strategy in ("dma", "dma+rp"):
        out = [COPY_ENGINE, NCCL_CE]
        if params.get("gemm_sms"):
            out.append(_partition(params, sm_count))
        return out
    if strategy == "rp" and params.get("comm_ctas"):
        return [CTA_LIMIT.format(n=params["comm_ctas"])]
    if strategy == "rp" and params.get("gemm_sms"):
        return [_partition(params, sm_count), SM_TARGET.format(g=params["gemm_sms"], c=sm_count - params["gemm_sms"])]
    return [f"{key}: no settings known for this variant"]


def _partition(params: dict, sm_count: int) -> str:
    g = int(params["gemm_sms"])
    return GREEN_CONTEXT.format(g=g, c=sm_count - g)
