"""Classification of Kineto activities: GEMM shapes, collective sizes, copy-engine transfers."""

from __future__ import annotations

from pathlib import Path

import pytest

from c3prof.ingest.classify import (classify, comm_from_args, comm_from_kernel_name, gemm_from_args,
                                    is_collective_kernel_name, is_gemm_kernel_name, keep_cpu_op,
                                    normalize_collective)
from c3prof.ingest.events import COLLECTIVE, GEMM, TRANSFER

DATA = Path(__file__).parent / "data"
import c3prof.ingest._kineto  # noqa: E402,F401  (built by pip install -e .; missing fails, not skips)
MiB = 1 << 20


@pytest.mark.parametrize("name", [
    "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
    "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8",
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(Params)",
    "triton_tem_fused_mm_0",
])
def test_gemm_kernel_names(name):
    assert is_gemm_kernel_name(name)
    assert not is_collective_kernel_name(name)


@pytest.mark.parametrize("name", [
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, ...)",
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
    "my_custom_kernel",
])
def test_not_gemm_kernel_names(name):
    assert not is_gemm_kernel_name(name)


@pytest.mark.parametrize("name, op", [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_reduce"),
    ("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "all_gather"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reduce_scatter"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "send_recv"),
    ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "unknown"),
])
def test_collective_kernel_names(name, op):
    assert is_collective_kernel_name(name)
    assert comm_from_kernel_name(name).op == op


@pytest.mark.parametrize("raw, op", [
    ("allreduce", "all_reduce"), ("allreduce_coalesced", "all_reduce"), ("_allgather_base", "all_gather"),
    ("allgather_into_tensor_coalesced", "all_gather"), ("_reduce_scatter_base", "reduce_scatter"),
    ("reduce_scatter_tensor_coalesced", "reduce_scatter"), ("all_to_all", "all_to_all"), ("alltoall_base", "all_to_all"),
    ("all_to_allv", "all_to_all"), ("broadcast", "broadcast"), ("send", "send_recv"), ("recv", "send_recv"),
    ("barrier", "barrier"), ("reduce", "reduce"), ("gather", "gather"), ("scatter", "scatter"),
])
def test_normalize_collective(raw, op):
    assert normalize_collective(raw) == op


def _args(coll, n_in, n_out, dtype="BFloat16", group=8):
    return {"Collective name": coll, "In msg nelems": n_in, "Out msg nelems": n_out, "dtype": dtype,
            "Group size": group, "Process Group Name": "3"}


def test_collective_bytes_follow_nccl_tests_convention():
    # all_gather: the gathered output; reduce_scatter: the full input; all_reduce/all_to_all: per-rank buffer
    assert comm_from_args(_args("_allgather_base", 1 << 20, 8 << 20)).bytes == 16 * MiB
    assert comm_from_args(_args("_reduce_scatter_base", 8 << 20, 1 << 20)).bytes == 16 * MiB
    assert comm_from_args(_args("allreduce", 1 << 20, 1 << 20, "Float")).bytes == 4 * MiB
    assert comm_from_args(_args("all_to_all", 1 << 20, 1 << 20, "Float8_e4m3fn")).bytes == 1 * MiB
    c = comm_from_args(_args("allreduce", 10, 10))
    assert (c.group_size, c.dtype, c.process_group, c.carrier) == (8, "bfloat16", "3", "sm")
    assert comm_from_args({"dtype": "Float"}) is None


@pytest.mark.parametrize("op, dims, types, expect", [
    ("aten::mm", [[128, 256], [256, 512]], ["c10::BFloat16"] * 2, (128, 512, 256, "bf16", 1)),
    ("aten::addmm", [[512], [128, 256], [256, 512], [], []], ["c10::Half"] * 3, (128, 512, 256, "fp16", 1)),
    ("aten::linear", [[4, 32, 256], [512, 256], [512]], ["float"] * 3, (128, 512, 256, "fp32", 1)),
    ("aten::matmul", [[4, 32, 256], [256, 512]], ["c10::BFloat16"] * 2, (128, 512, 256, "bf16", 1)),
    ("aten::matmul", [[4, 32, 256], [4, 256, 512]], ["c10::BFloat16"] * 2, (32, 512, 256, "bf16", 4)),
    ("aten::bmm", [[8, 64, 32], [8, 32, 16]], ["c10::BFloat16"] * 2, (64, 16, 32, "bf16", 8)),
    ("aten::baddbmm", [[8, 64, 16], [8, 64, 32], [8, 32, 16], [], []], ["c10::BFloat16"] * 3, (64, 16, 32, "bf16", 8)),
    ("aten::_scaled_mm", [[128, 256], [256, 512], [], []], ["c10::Float8_e4m3fn"] * 2, (128, 512, 256, "fp8_e4m3", 1)),
])
def test_gemm_shapes(op, dims, types, expect):
    g = gemm_from_args(op, {"Input Dims": dims, "Input type": types})
    assert (g.m, g.n, g.k, g.dtype, g.batch) == expect
    assert g.op == op


@pytest.mark.parametrize("args", [{}, {"Input Dims": [[4]]}, {"Input Dims": [[0, 3], [3, 4]]},
                                  {"Input Dims": "[[2, 3], [3, 4]]"}, {"Input Dims": [[2, 3], [3]]}])
def test_unreadable_gemm_shapes_are_none(args):
    assert gemm_from_args("aten::mm", args) is None


def test_keep_cpu_op():
    for name in ("aten::mm", "aten::linear", "record_param_comms", "nccl:all_reduce", "c10d::allgather_",
                 "_c10d_functional::all_gather_into_tensor"):
        assert keep_cpu_op(name)
    # convolution and attention ops decide their kernels' class; ProfilerStep marks the iterations
    for name in ("aten::cudnn_convolution", "aten::_scaled_dot_product_flash_attention", "ProfilerStep#1"):
        assert keep_cpu_op(name)
    for name in ("aten::copy_", "aten::add", "cudaLaunchKernel"):
        assert not keep_cpu_op(name)


def test_synthetic_trace_classification():
    from c3prof.ingest.reader import read_kineto

    c = classify(read_kineto(DATA / "synthetic_kineto_rank0.json"), rank=0)
    by_kernel = {}
    for op in c.ops:
        by_kernel.setdefault(op.kernel, set()).add((op.kind, op.label))
    assert by_kernel["nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT"] == {(GEMM, "4096x4096x4096 bf16")}
    # linked through External id to aten::addmm (inside aten::linear)
    (kind, label), = by_kernel[next(k for k in by_kernel if k.startswith("sm90_xmma"))]
    assert (kind, label) == (GEMM, "2048x8192x8192 bf16")
    assert by_kernel[next(k for k in by_kernel if k.startswith("cutlass_80"))] == {(GEMM, "8x1024x1024x128 fp16")}
    # collective args on the kernel (all_reduce), or only on record_param_comms (all_gather)
    assert by_kernel[next(k for k in by_kernel if "AllReduce" in k)] == {(COLLECTIVE, "all_reduce 64MiB x2")}
    assert by_kernel[next(k for k in by_kernel if "AllGather" in k)] == {(COLLECTIVE, "all_gather 64MiB x2")}
    assert by_kernel[next(k for k in by_kernel if "ReduceScatter" in k)] == {(COLLECTIVE, "reduce_scatter 64MiB x2")}
    # copy-engine transfers are communication; the same-device DtoD copy and the memset are not
    assert by_kernel["Memcpy HtoD (Pinned -> Device)"] == {(TRANSFER, "transfer HtoD 16MiB")}
    assert by_kernel["Memcpy DtoH (Device -> Pinned)"] == {(TRANSFER, "transfer DtoH 16MiB")}
    assert "Memcpy DtoD (Device -> Device)" not in by_kernel
    assert c.other_names['my_team_fused_kernel<"v2">'] == 2
    assert c.n_other == 8


def test_links_through_correlation_when_external_id_is_missing():
    """Kernel without External id: found via its cuda_runtime launch and the enclosing CPU op."""
    from c3prof.ingest.reader import read_kineto

    t = read_kineto(DATA / "synthetic_kineto_rank0.json")
    t.gpu["external_id"][:] = -1
    t.gpu["args"][:] = -1  # and no collective metadata on the kernels either
    t.launch["external_id"][:] = -1
    c = classify(t, rank=0)
    labels = {op.label for op in c.ops if op.kind == GEMM}
    assert {"4096x4096x4096 bf16", "2048x8192x8192 bf16"} <= labels
    assert {op.label for op in c.ops if op.kind == COLLECTIVE} >= {"all_gather 64MiB x2", "all_reduce 64MiB x2"}


def test_copy_serving_a_collective_is_that_collective(tmp_path):
    """NCCL's single-rank path copies with cudaMemcpyAsync: the copy is the collective."""
    import json

    from c3prof.ingest.reader import read_kineto

    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 0, "dur": 50,
         "args": {"External id": 7, **_args("_allgather_base", 1024, 1024, group=1)}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"External id": 7, "cbid": 41, "correlation": 99}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 20, "ts": 30,
         "dur": 4, "args": {"External id": 7, "device": 0, "stream": 20, "correlation": 99, "bytes": 2048}},
    ]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    (op,) = classify(read_kineto(p), rank=0).ops
    assert op.kind == COLLECTIVE and op.comm.op == "all_gather" and op.comm.bytes == 2048
    assert op.comm.carrier == "sm"  # a same-device copy runs on SMs on Hopper


def test_innermost_enclosing_op_past_finished_siblings(tmp_path):
    """Launch without External id inside aten::mm, after a nested op that already ended."""
    import json

    from c3prof.ingest.reader import read_kineto

    mm = {"Input Dims": [[64, 32], [32, 16]], "Input type": ["c10::BFloat16"] * 2}
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
         "args": {"External id": 1, **mm}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::matmul", "pid": 1, "tid": 1, "ts": 10, "dur": 10,
         "args": {"External id": 2, "Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 0, "dur": 100,
         "args": {"External id": 3, "Input Dims": [[2, 2], [2, 2]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 50, "dur": 5,
         "args": {"cbid": 211, "correlation": 9}},
        {"ph": "X", "cat": "kernel", "name": "nvjet_tst_64x8", "pid": 0, "tid": 7, "ts": 60, "dur": 5,
         "args": {"device": 0, "stream": 7, "correlation": 9}},
    ]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    (op,) = classify(read_kineto(p), rank=0).ops
    assert op.kind == GEMM and op.label == "64x16x32 bf16"


# Kernel names of families absent from the committed traces, as they appear in public traces and
# issue reports (names only; the launching op is not needed for these).
@pytest.mark.parametrize("name, cls", [
    ("multimem_all_reduce_kernel", "collective"),                   # symmetric-memory all-reduce (vLLM)
    ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float>", "collective"),
    ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x8x512u2_s3_et128x8_m128x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100a",
     "gemm"),                                                       # trtllm-gen MoE GEMM
    ("bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x64x64u2_s6_et128x64_m128x64x16_cga1x1x1_16dp256b_TN_sm100a", "gemm"),
    ("void moe::dev::finalize::finalizeKernel<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
     "cutlass::bfloat16_t, float, false> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
     "cutlass::bfloat16_t, float, false>)", "compute"),
    ("void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, false, false>(cublasLt::epilogue::Params)",
     "gemm"),
    ("void ck::kernel_grouped_conv_fwd_xdl_cshuffle<ck::tensor_operation::device::Dev<float> >(float const*)", "conv"),
    ("igemm_fwd_gtcx_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x32", "conv"),
    ("MIOpenConvUni", "conv"),
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >(Flash_fwd_params)", "attention"),
    ("void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwd<2> > >(flash::Params)",
     "attention"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "attention"),
    ("nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "gemm"),
    ("Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1", "gemm"),
    ("triton_tem_fused_mm_0", "gemm"),
    ("triton_red_fused_native_layer_norm_0", "compute"),
    ("void fbgemm_gpu::batched_embedding_forward_kernel<float>", "compute"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >", "compute"),
])
def test_kernel_names_by_family(name, cls):
    from c3prof.ingest.kernel_table import classify_name

    assert classify_name(name).cls == cls


@pytest.mark.parametrize("op, kernel, cls", [
    ("aten::cudnn_convolution", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(Params)", "conv"),
    ("aten::cudnn_convolution", "void cudnn::ops::nchwToNhwcKernel<float>(...)", "compute"),
    ("aten::mm", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >", "compute"),
    ("aten::mm", "some_vendor_kernel_without_gemm_in_its_name", "gemm"),
    ("aten::_scaled_dot_product_flash_attention", "some_attention_impl", "attention"),
    ("nccl:all_to_all", "some_custom_a2a_kernel", "collective"),
    ("aten::addmm", "void splitKreduce_kernel<float, float, float>(...)", "gemm"),
])
def test_launching_op_decides_first(op, kernel, cls):
    from c3prof.ingest.kernel_table import classify_kernel

    assert classify_kernel(kernel, op, collective_op=op.startswith("nccl:")).cls == cls
